"""``run --profile``'s attribution of Spark jobs and stages to dbt nodes (an event log)."""

from __future__ import annotations

import json
from pathlib import Path

from hashcdc.runtime.profile import NODE_PROPERTY, NodeProfile, attribute, read_event_log


def _job(job_id: int, at: int, stages: list[int], node: str | None) -> dict:
    properties = {"callSite.short": f"job {job_id}"}
    if node:
        properties[NODE_PROPERTY] = node
    return {"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": at,
            "Stage IDs": stages, "Properties": properties}  # fmt: skip


def _stage(stage_id: int, at: int) -> dict:
    info = {"Stage ID": stage_id, "Stage Name": f"s{stage_id}", "Submission Time": at,
            "Completion Time": at + 50, "Number of Tasks": 1}  # fmt: skip
    return {"Event": "SparkListenerStageCompleted", "Stage Info": info}


def test_nodes_side_by_side_get_the_jobs_they_submitted(tmp_path: Path) -> None:
    # Two nodes on two dbt threads, their windows overlapping: the node a job names wins
    # over the window; a job naming no node goes by its window, or outside any node.
    events = [
        _job(0, 1_000, [0], "model.p.a_state"), _stage(0, 1_000),
        _job(1, 1_500, [1, 2], "model.p.b_state"), _stage(1, 1_500), _stage(2, 1_600),
        _job(2, 1_700, [3], "model.p.a_state"), _stage(3, 1_700),
        _job(3, 2_500, [4], None), _stage(4, 2_500),
        _job(4, 9_000, [5], None), _stage(5, 9_000),
    ]  # fmt: skip
    log = tmp_path / "app"
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    a = NodeProfile("a_state", 2.0, 900, 2_000, unique_id="model.p.a_state")
    b = NodeProfile("b_state", 2.0, 1_400, 3_000, unique_id="model.p.b_state")
    stages, jobs = read_event_log(log)
    unattributed, outside = attribute([a, b], stages, jobs)
    assert [j.job_id for j in a.jobs] == [0, 2]
    assert [j.job_id for j in b.jobs] == [1, 3]
    assert [s.stage_id for s in a.stages] == [0, 3]
    assert [s.stage_id for s in b.stages] == [1, 2, 4]
    assert [j.job_id for j in outside] == [4] and [s.stage_id for s in unattributed] == [5]
