"""Task bodies of a campaign DAG besides the benchmark itself: plan, ingest one spec, summarise the run."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import pyarrow.dataset as ds
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from accelbench.airflow.tasks.common import MODE_CHECKS, catalog_engine, fail_on_library_error
from accelbench.campaign import service
from accelbench.campaign.plan import parse_request
from accelbench.config import Settings
from accelbench.core.search import UNITS, capacity_words
from accelbench.core.spec import BenchmarkSpec
from accelbench.errors import AccelbenchError
from accelbench.lake.costs import cost_text, land_costs, total
from accelbench.lake.ingest import StaleEvidence, ingest_raw
from accelbench.lake.quality import land_quality
from accelbench.lake.raw import RawLocation
from accelbench.lake.store import Lake, safe_name
from accelbench.report.hosts import host_label, measured_on_instance
from accelbench.report.labels import bracket_text
from accelbench.report.quality import quality_gate, quality_text
from accelbench.report.sources import price_history

log = logging.getLogger(__name__)


def campaign_id(dag_id: str, run_id: str) -> str:
    """Stable for a DAG run: a retried or cleared task writes the same lake files."""
    return safe_name(f"{dag_id}.{run_id}")


@fail_on_library_error
def plan_benchmarks(
    params: dict[str, Any], campaign_id: str, as_of: datetime | None = None, scheduled: bool = False
) -> list[dict[str, Any]]:
    """First task of a campaign: every problem fails it, with the text naming each field.

    `scheduled`: the run was made by the scheduler (cron, backfill), not by a user, so an install that
    has no model yet skips instead of failing."""
    request = parse_request(params)
    planned = service.plan(
        request, catalog_engine, campaign_id, MODE_CHECKS, price_history, as_of=as_of, scheduled=scheduled
    )
    if planned.skip:
        raise AirflowSkipException(planned.skip)
    return planned.specs_json()


def ingest_spec(
    spec_json: dict[str, Any],
    dag_run_id: str,
    date: str,
    benchmark: dict[str, Any] | None,
    hints: dict[str, Any],
) -> dict[str, Any]:
    """The raw evidence this attempt of the spec's benchmark left (also after a failed level) -> Parquet.

    `benchmark` is the benchmark task's result (its attempt id); without one, or when the raw folder
    holds another attempt's files, this spec's table files are removed (an earlier attempt's rows
    must not pass for this run's) and the task skips, saying why.
    """
    spec = BenchmarkSpec.model_validate(spec_json)
    lake = Lake.from_env()
    where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, spec.spec_id)
    raw_uri = lake.uri_of(lake.path(*where.parts))
    attempt = (benchmark or {}).get("attempt")
    try:
        data = ingest_raw(lake, where, dag_run_id, attempt, **hints) if attempt else None
    except StaleEvidence as exc:
        _forget(lake, where)
        raise AirflowSkipException(f"{exc}; the benchmark's log says why") from exc
    except AccelbenchError as exc:
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc
    if data is None:
        _forget(lake, where)
        raise AirflowSkipException(
            f"no raw evidence for {spec.spec_id} from this attempt at {raw_uri}: the benchmark produced "
            "none (its log says why)"
        )
    ok = sum(s == "ok" for s in data.runs["status"].to_pylist())
    log.info(
        "%s: %d runs rows (%d ok) and %d requests rows into %s, from %s",
        spec.spec_id,
        data.runs.num_rows,
        ok,
        data.request_rows,
        lake.uri,
        raw_uri,
    )
    for c in data.capacities.to_pylist():
        log.info("%s: load search %s, %s", spec.spec_id, c["outcome"], capacity_text(c))
    return {
        "spec_id": spec.spec_id,
        "runs_rows": data.runs.num_rows,
        "ok": ok,
        "requests_rows": data.request_rows,
    }


def _forget(lake: Lake, where: RawLocation) -> None:
    for path in lake.remove_tables(where.accelerator_type, where.date, where.stem):
        log.warning("removed %s: rows of an earlier attempt, not of this one", lake.uri_of(path))


def summarize(campaign: str, date: str) -> dict[str, Any]:
    """Log one line per run of this campaign, read back from its date partition of the lake.

    Skips (so no lake asset event is emitted) when the campaign landed no row at all.
    """
    lake = Lake.from_env()
    where = (ds.field("date") == date) & (ds.field("campaign_id") == campaign)
    mine = sorted(lake.read("runs", where).to_pylist(), key=lambda r: r["run_id"])
    if not mine:
        raise AirflowSkipException(
            f"campaign {campaign} landed no rows in {lake.uri}: nothing new in the lake"
        )
    header = (
        f"{'run':<46}{'status':<8}{'done':>6}{'failed':>7}{'req/s':>8}{'out tok/s':>11}"
        f"{'TTFT p50 ms':>13}{'TPOT p50 ms':>13}  measured on"
    )
    lines = [header]
    for r in mine:
        lines.append(
            f"{r['run_id'].split('/', 1)[-1]:<46}{r['status']:<8}"
            f"{r['completed'] or 0:>6}{r['failed'] or 0:>7}"
            f"{r['request_throughput'] or 0:>8.2f}{r['output_throughput'] or 0:>11.1f}"
            f"{r['p50_ttft_ms'] or 0:>13.1f}{r['p50_tpot_ms'] or 0:>13.2f}  {host_label(r)}"
            + ("  (recheck)" if r.get("recheck") else "")
        )
    drifted = {r["spec_id"]: r["host_drift"] for r in mine if r.get("host_drift")}
    for spec_id, why in sorted(drifted.items()):
        lines.append(f"{spec_id}: {why}; its figures are reported undecided")
    searches = sorted(lake.read("capacities", where).to_pylist(), key=lambda c: c["spec_id"])
    for c in searches:
        lines.append(f"load search {c['spec_id']} on {c['instance_type']}: {capacity_text(c)}")
    quality = land_quality(lake, campaign, date, mine)  # every benchmark has landed: each meets its reference
    lines += [quality_text(q) for q in quality]
    costs = _costs(lake, campaign, date, {r["instance_type"] for r in mine})
    spent, unpriced = total(costs)
    lines += [f"cost: {cost_text(c)}" for c in costs]
    if costs:
        lines.append(
            f"what the campaign cost: {spent:.4f} USD over {len(costs) - unpriced} priced server(s)"
            + (f"; {unpriced} unpriced" if unpriced else "")
        )
    log.info("campaign %s, lake %s:\n%s", campaign, lake.uri, "\n".join(lines))
    return {
        "capacities": {c["spec_id"]: c["capacity"] for c in searches},
        "campaign_id": campaign,
        "runs": len(mine),
        "ok": sum(r["status"] == "ok" for r in mine),
        "errors": sum(r["status"] == "errors" for r in mine),
        "local_host": sum(not measured_on_instance(r) for r in mine),
        "drifted": sorted(drifted),
        "quality": {q["spec_id"]: quality_gate(q)[0] for q in quality},
        "cost_usd": round(spent, 6) if costs else None,
        "unpriced_servers": unpriced,
        "lake": lake.uri,
    }


def _costs(lake: Lake, campaign: str, date: str, instance_types: set[str]) -> list[dict[str, Any]]:
    """Each server's cost at the catalog's prices (accelbench.lake.costs), written to the lake."""
    with catalog_engine() as engine:
        prices = price_history(engine, instance_types)
    return land_costs(lake, campaign, date, prices, Settings.from_env("regions").regions[0])


def capacity_text(c: dict[str, Any]) -> str:
    """A `capacities` row in words: the outcome, the capacity and its bracket, what limited it, the cost."""
    unit, bracket = UNITS[c["variable"]], bracket_text(c["bracket_passing"], c["bracket_failing"]) or "[, ]"
    cost = f"{c['probes']} probes, {c['server_s'] or 0:.0f} server-s"
    why = f": {c['stopped_why']}" if c.get("stopped_why") else ""
    if c["capacity"] is None:
        where = f" at {c['stopped_at']:g} {unit}" if c.get("stopped_at") is not None else ""
        return f"no capacity ({c['outcome']}{where}{why}; bracket {bracket}; {cost})"
    limited = f", limited by {c['limiting_metric']}" if c.get("limiting_metric") else ""
    value = capacity_words(
        c["capacity"],
        unit,
        c.get("capacity_low"),
        c.get("capacity_high"),
        interval=c.get("capacity_method") is not None,
    )
    return f"capacity {value} (bracket {bracket}{limited}{why}; {cost})"
