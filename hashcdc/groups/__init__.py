"""Table groups: tables whose dates are processed together, in one state of the group.

A group's members keep their own configs (columns, types, hashing); they share a stage, a
state and a history in which a row names its member (``table_name``) and holds the
member's columns on the group's typed *slots* (:mod:`hashcdc.groups.slots`). Each member
reads as its own tables through views that name and cast the slots back. The layout and
why: docs/architecture.md, "Table groups".
"""
