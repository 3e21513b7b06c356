"""One server per configuration (issue 49): the workloads of one configuration run in turn on one `vllm
serve`, each landing its rows apart; the server's prefix cache is emptied between them; a server killed
during a later workload keeps the earlier workloads' rows, fails that workload with its exit code and log
tail, and the retry measures only what is missing.

Process accounting: every launch of a local server is a line in the campaign's `server-starts.jsonl`
(`accelbench.local.server.LocalServer`'s journal, written as it starts the process)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from accelbench.config import Settings
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.core.workloads import Workload
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import ENVELOPE, RawLocation
from accelbench.lake.store import Lake
from accelbench.local.executor import SERVER_STARTS, campaign_workdir, run_local
from accelbench.report.startups import ready_by_spec

from tests.support.airflow_dags import load_dag, run_dag, task_states
from tests.support.specs import tiny_campaign_conf, tiny_spec

DAY = "2026-11-30"
PREFIX, OWN, PROMPTS = 512, 16, 4  # one prefix shared by a level's prompts (the warm-ups' is another seed's)


def _starts(campaign_id: str) -> list[dict[str, Any]]:
    journal = campaign_workdir(Settings.from_env(), campaign_id) / SERVER_STARTS
    return [json.loads(line) for line in journal.read_text().splitlines()] if journal.exists() else []


@pytest.mark.airflow
@pytest.mark.vllm
def test_a_campaign_of_two_workloads_starts_one_server_and_lands_each_apart(
    airflow_db, tiny_model: Path, vllm_python: Path, accelbench_env: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    conf = tiny_campaign_conf(tiny_model) | {
        "workloads": ["fixed", "shared-prefix"],
        "concurrency": [1],
        "prompts_per_level": 8,
        "execution_mode": "local",
    }
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    run = load_dag(airflow_db, "accelbench_campaign").test(run_conf=conf)
    states = task_states(run)
    assert str(run.state) == "success" and states["benchmark"] == "success", states
    (planned,) = run.get_task_instance("plan").xcom_pull(task_ids="plan")  # one server, both workloads
    group = ServerGroup.model_validate(planned)
    assert [s.load.runs.name for s in group.specs] == ["fixed", "shared-prefix"]
    campaign = group.specs[0].campaign_id
    assert len(_starts(campaign)) == 1  # one `vllm serve` launched for the two workloads
    runs = Lake(str(accelbench_env / "lake")).read("runs").to_pylist()
    # Each workload's level; the server's one drift check, the first workload's level again after the other.
    assert sorted((r["workload"], r["status"], r["completed"], r["recheck"]) for r in runs) == [
        ("fixed", "ok", 8, False),
        ("fixed", "ok", 8, True),
        ("shared-prefix", "ok", 8, False),
    ]
    assert len({r["spec_id"] for r in runs}) == 2 and len({r["matrix_key"] for r in runs}) == 2
    (server_group,) = {r["server_group"] for r in runs}
    assert server_group == group.group_id
    ingested = run.get_task_instance("ingest", map_index=0).xcom_pull(task_ids="ingest", map_indexes=0)
    assert sorted(i["runs_rows"] for i in ingested) == [1, 2]
    # The server's start-up is one row, its first workload's, which both workloads' points are given.
    (startup,) = Lake(str(accelbench_env / "lake")).read("startups").to_pylist()
    (first_spec,) = {r["spec_id"] for r in runs if r["workload"] == "fixed"}
    assert startup["server_group"] == server_group and startup["spec_id"] == first_spec
    ready = ready_by_spec([startup], runs)
    assert set(ready) == {r["spec_id"] for r in runs} and startup["ready_s"] > 0


def _shared_prefix(output_len: int) -> LoadPlan:
    workload = Workload(
        name="custom",
        dataset="prefix_repetition",
        prefix_len=PREFIX,
        input_len=PREFIX + OWN,
        output_len=output_len,
        num_prefixes=1,
    )
    return LoadPlan(
        input_len=PREFIX + OWN,
        output_len=output_len,
        concurrency=(1,),
        prompts_per_level=PROMPTS,
        warmups=1,
        seed=11,
        workload=workload,
    )


def _kill_during(group: ServerGroup, spec: BenchmarkSpec, workdir: Path) -> threading.Thread:
    """Kill the group's server (its process group, SIGKILL) once `spec`'s level has started."""

    def kill() -> None:
        deadline = time.monotonic() + 240
        pid_file = workdir / group.group_id / "server" / "server.pid"
        level_log = workdir / group.group_id / "raw" / spec.spec_id / "c1-r0.log"
        while time.monotonic() < deadline and not level_log.exists():
            time.sleep(0.05)
        time.sleep(0.3)  # inside the level: its requests in flight
        os.killpg(json.loads(pid_file.read_text())["pgid"], signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


@pytest.mark.vllm
def test_workloads_in_turn_get_an_emptied_prefix_cache_and_a_killed_server_is_retried_for_what_is_missing(
    tiny_model: Path, vllm_python: Path, accelbench_env: Path, tmp_path: Path, monkeypatch
) -> None:
    """Three workloads on one server: the same shared prefix twice (two specs: 4 and 5 tokens out), then a
    long fixed one, during which the server is killed. The second shared-prefix workload finds as many
    prefix-cache hits as the first (the server's own counters, per level): nothing the first left was
    reused, where without the reset its first request would hit the whole prefix too."""
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    server = tiny_spec(tiny_model)
    long = LoadPlan(input_len=32, output_len=16, concurrency=(1,), prompts_per_level=400, warmups=1, seed=3)
    specs = [
        BenchmarkSpec(server=server, load=load, campaign_id="one-server")
        for load in (_shared_prefix(4), _shared_prefix(5), long)
    ]
    group = ServerGroup(specs=tuple(specs))
    lake = Lake(str(tmp_path / "lake"))
    workdir = campaign_workdir(Settings.from_env(), "one-server")
    killer = _kill_during(group, specs[2], workdir)
    first = run_local(group, lake, DAY, "attempt-1")
    killer.join(timeout=5)

    # The first two workloads finished; the third failed with the server's exit code and log tail.
    assert [r.spec_id for r in first.runs] == [s.spec_id for s in specs]
    assert [r.failure is None for r in first.runs] == [True, True, False]
    assert "exit code 137" in (first.runs[2].failure or ""), first.runs[2].failure
    (level,) = [lv for lv in _envelope(workdir, group, specs[2])["levels"] if lv["status"] == "failed"]
    assert level["server_exit_code"] == 128 + signal.SIGKILL and level["server_log_tail"]
    # Cache isolation: the second shared-prefix workload's hits are the first's (each level's first request
    # misses: the prefix was emptied between them), and there are hits (the level's later requests).
    hits = [
        _envelope(workdir, group, s)["levels"][0]["server_counters"]["prefix_cache_hits"] for s in specs[:2]
    ]
    assert hits[0] > 0 and hits[1] == hits[0], hits
    assert len(_starts("one-server")) == 1

    # The retry: the two finished workloads are not measured again (their attempt stays the first's), the
    # third is, on a server of its own start.
    again = run_local(group, lake, DAY, "attempt-2")
    assert [(r.attempt, r.failure) for r in again.runs] == [
        ("attempt-1", None),
        ("attempt-1", None),
        ("attempt-2", None),
    ]
    assert len(_starts("one-server")) == 2
    for spec, summary in zip(specs, again.runs, strict=True):
        where = RawLocation("cpu", DAY, spec.campaign_id, spec.spec_id)
        assert ingest_raw(lake, where, "manual__one-server", summary.attempt) is not None
    runs = lake.read("runs").to_pylist()
    assert sorted((r["workload"], r["output_len"], r["status"], r["completed"]) for r in runs) == [
        ("custom", 4, "ok", PROMPTS),
        ("custom", 5, "ok", PROMPTS),
        ("fixed", 16, "ok", 400),
    ]


def _envelope(workdir: Path, group: ServerGroup, spec: BenchmarkSpec) -> dict[str, Any]:
    return json.loads((workdir / group.group_id / "raw" / spec.spec_id / ENVELOPE).read_text())
