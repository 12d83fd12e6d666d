"""The warm engine: one long-lived process per project holds Spark and serves commands.

The first command of a project starts it in the background (:mod:`.client`); it keeps
the Spark driver (and the embedded metastore) warm and runs the commands it is sent in
its own threads (:mod:`.server`), their output streamed back to the thin clients over a
local socket (:mod:`.wire`); where it lives and when a running one fits a command:
:mod:`.place`. docs/architecture.md ("The engine") says why and how.
"""
