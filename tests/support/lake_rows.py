"""Lake `runs` (and a search's `capacities`) rows of a spec, written straight into a lake: what "already
measured" reads; and a campaign's spec landed through the real ingest, as a report reads it."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.ingest import Landed, ingest_raw
from accelbench.lake.raw import ENVELOPE, RawLocation
from accelbench.lake.schemas import CAPACITIES, RUNS
from accelbench.lake.store import Lake


def land_runs(
    lake: Lake,
    spec: BenchmarkSpec,
    levels: list[int] | None = None,
    repeats: int | None = None,
    status: str = "ok",
) -> None:
    """`levels` x `repeats` runs of `spec` (default: its own levels and repeats) with `status`, as
    another campaign would have left them."""
    rows = [
        {
            "run_id": f"{spec.spec_id}/c{c}-r{r}",
            "matrix_key": spec.matrix_key,
            "level_kind": "concurrency",
            "level_value": float(c),
            "repeat": r,
            "status": status,
            "instance_type": spec.server.instance_type,
        }
        for c in (spec.load.concurrency if levels is None else levels)
        for r in range(spec.load.repeats if repeats is None else repeats)
    ]
    lake.write_table("runs", pa.Table.from_pylist(rows, schema=RUNS), "cpu", "2026-11-30", spec.spec_id)


def land_search(lake: Lake, spec: BenchmarkSpec, outcome: str = "capacity", probes: int = 3) -> list[str]:
    """A load search of `spec` as another campaign left it: its probes in `runs` (one repeat each) and its
    row in `capacities`, with `outcome`. Returns the probes' run ids."""
    run = "manual__earlier"
    runs = [
        {
            "run_id": f"{spec.spec_id}/p{step}",
            "spec_id": spec.spec_id,
            "dag_run_id": run,
            "matrix_key": spec.matrix_key,
            "level_kind": "concurrency",
            "level_value": float(2**step),
            "repeat": 0,
            "status": "ok",
            "search_step": step,
            "search_phase": "bracket",
        }
        for step in range(probes)
    ]
    found = outcome in ("capacity", "upper_bound")
    row = {"spec_id": spec.spec_id, "dag_run_id": run, "matrix_key": spec.matrix_key, "outcome": outcome}
    row |= {"capacity": float(2 ** (probes - 1)) if found else None, "probes": probes}
    lake.write_table("runs", pa.Table.from_pylist(runs, schema=RUNS), "cpu", "2026-11-30", spec.spec_id)
    lake.write_table(
        "capacities", pa.Table.from_pylist([row], schema=CAPACITIES), "cpu", "2026-11-30", spec.spec_id
    )
    return [r["run_id"] for r in runs]


def land_campaign(
    lake: Lake,
    spec: BenchmarkSpec,
    results: dict[int, dict[str, Any] | list[dict[str, Any]]],
    day: str = "2026-12-01",
) -> Landed:
    """`spec` measured by a kubernetes campaign on its instance type: per concurrency level of `results`
    (level -> that level's `vllm bench serve` result JSON, or a list of them: one per repeat), left in raw/
    as the benchmark pod leaves it and ingested by the real ingest into `runs`/`requests`."""
    where = RawLocation(spec.server.accelerator_type, day, spec.campaign_id, spec.spec_id)
    levels = []
    for level, given in results.items():
        for repeat, result in enumerate(given if isinstance(given, list) else [given]):
            name = f"c{level}-r{repeat}.json"
            lake.put_bytes(json.dumps(result).encode(), *where.parts, name)
            levels.append(
                LevelRecord(
                    run_id=f"{spec.campaign_id}/{spec.spec_id}/c{level}-r{repeat}",
                    level_kind="concurrency",
                    level_value=level,
                    repeat=repeat,
                    seed=spec.load.seed,
                    status="ok",
                    result_file=name,
                    started_at=f"{day}T00:10:00+00:00",
                )
            )
    envelope = Envelope(
        spec=spec,
        spec_id=spec.spec_id,
        loadgen_version="test",
        server={"version": {"version": spec.server.version}},
        levels=levels,
    )
    lake.put_bytes(envelope.model_dump_json().encode(), *where.parts, ENVELOPE)
    landed = ingest_raw(
        lake,
        where,
        "manual__campaign",
        execution_mode="kubernetes",
        host_instance_type=spec.server.instance_type,
        node="ip-10-0-7-21.ec2.internal",
    )
    assert landed is not None
    return landed
