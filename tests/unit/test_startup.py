"""A local server's start-up in phases (accelbench.core.startup_phases): the boundaries are vLLM 0.32's own
log lines (copied from a real server's log here, and the compiled-mode line as vLLM's v1/engine/core.py prints
it), stamped when the growing log showed them; the phases add up to the whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from accelbench.core.startup_phases import PHASES, LogStamps, local_startup, vllm_figures

LINES = [
    "(APIServer pid=23833) INFO 12-04 00:50:21 [model.py:733] Resolved architecture: LlamaForCausalLM\n",
    "(EngineCore pid=23861) INFO 12-04 00:50:25 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with "
    "config: model='/m'\n",
    "(EngineCore pid=23861) INFO 12-04 00:50:27 [default_loader.py:501] Loading weights took 0.02 seconds\n",
    "(EngineCore pid=23861) INFO 12-04 00:50:29 [core.py:402] init engine (profile, create kv cache, warmup "
    "model) took 1.09 s\n",
    "(APIServer pid=23833) INFO 12-04 00:50:29 [entry.py:140] Starting vLLM server on http://127.0.0.1:46261\n",
]
COMPILED = (
    "(EngineCore pid=1) INFO 12-04 00:50:29 [core.py:396] init engine (profile, create kv cache, warmup "
    "model) took 41.37 s (compilation: 30.12 s)\n"
)


def test_each_boundary_is_stamped_when_its_line_appears_and_the_phases_add_up(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    stamps = LogStamps(log)
    stamps.read(0.5)  # nothing yet
    # The engine line arrives in two writes: read half-written at 2.0, whole at 2.5.
    with log.open("a") as out:
        out.write(LINES[0] + LINES[1][:40])
    stamps.read(2.0)
    assert stamps.seen == {}
    with log.open("a") as out:
        out.write(LINES[1][40:])
    stamps.read(2.5)
    with log.open("a") as out:
        out.write(LINES[2])
    stamps.read(4.25)
    with log.open("a") as out:
        out.write(LINES[3] + LINES[4])
    stamps.read(6.0)
    startup = local_startup(stamps, launched=0.25, healthy=6.75, started_at="2026-12-04T00:50:20+00:00")
    assert startup.phases == {
        "process_start_s": 2.25,
        "model_load_s": 1.75,
        "engine_init_s": 1.75,
        "api_start_s": 0.75,
    }
    assert set(startup.phases) < set(PHASES)  # every phase has its lake column
    assert sum(startup.phases.values()) == pytest.approx(startup.ready_s) == 6.5  # type: ignore[arg-type]
    figures = {"vllm_weights_load_s": 0.02, "vllm_engine_init_s": 1.09, "vllm_compile_s": None}
    assert startup.figures == figures


def test_a_boundary_never_seen_leaves_its_phase_null_and_its_time_in_the_next(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(LINES[0] + LINES[1])
    stamps = LogStamps(log)
    stamps.read(3.0)
    log.write_text(LINES[0] + LINES[1] + COMPILED)  # no "Loading weights took" line: another vLLM's wording
    stamps.read(9.0)
    startup = local_startup(stamps, launched=1.0, healthy=10.0, started_at="2026-12-04T00:50:20+00:00")
    assert startup.phases == {
        "process_start_s": 2.0,
        "model_load_s": None,
        "engine_init_s": 6.0,
        "api_start_s": 1.0,
    }
    assert sum(v for v in startup.phases.values() if v is not None) == startup.ready_s == 9.0
    assert vllm_figures(COMPILED) == {
        "vllm_weights_load_s": None,
        "vllm_engine_init_s": 41.37,
        "vllm_compile_s": 30.12,
    }


def test_a_point_takes_the_median_start_up_of_the_servers_that_measured_it() -> None:
    """accelbench.report.startups: run ids are "<campaign>/<spec>/<level>" (older and imported rows
    "<spec>/<level>"); a point of two campaigns' runs of one spec pools both start-ups."""
    from accelbench.report.startups import median_startup, ready_by_spec

    startups = [
        {"spec_id": "s1", "ready_s": 30.0},
        {"spec_id": "s1", "ready_s": 50.0},
        {"spec_id": "s2", "ready_s": 400.0},
        {"spec_id": "s3", "ready_s": None},
    ]
    points = [
        {"run_ids": ["c-1/s1/c1-r0", "c-2/s1/c1-r0"]},
        {"run_ids": ["s2/c4-r1"]},
        {"run_ids": ["c-1/s3/c1-r0"]},
        {"run_ids": []},
    ]
    ready = ready_by_spec(startups)
    marked = [p | {"startup_s": median_startup(p["run_ids"], ready)} for p in points]
    assert [p["startup_s"] for p in marked] == [40.0, 400.0, None, None]
