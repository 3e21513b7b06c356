"""Task body of the import DAG: check the params against the catalog, ingest, say what was refused."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.catalog import queries
from accelbench.config import Settings
from accelbench.errors import ConfigError
from accelbench.lake.imported import ImportTarget, import_results
from accelbench.lake.store import Lake
from accelbench.runtime.version_rules import check_version
from accelbench.tiers import tier

log = logging.getLogger(__name__)
# The params that go to ImportTarget as they are: what the caller says of the server and the workload.
STATED_PARAMS = (
    "image",
    "tensor_parallel_size",
    "quantization",
    "workload",
    "endpoint",
    "dataset",
    "input_len",
    "output_len",
    "range_ratio",
)


@fail_on_library_error
def import_bench_results(params: dict[str, Any], dag_run_id: str) -> dict[str, Any]:
    settings = Settings.from_env()
    try:
        with catalog_engine(settings) as engine:
            (spec,) = queries.instance_specs(engine, [params["instance_type"]])
    except ConfigError as exc:
        raise ConfigError("instance_type", params["instance_type"], "not in the instance catalog") from exc
    if spec.accelerator_type != params["accelerator_type"]:
        raise ConfigError(
            "accelerator_type",
            params["accelerator_type"],
            f"{spec.instance_type} is a {spec.accelerator_type} instance type in the catalog",
        )
    day, version = params.get("date"), params.get("vllm_version") or ""
    stated = {k: params[k] for k in STATED_PARAMS if params.get(k) is not None}  # empty: the default
    of = tier(spec.accelerator_type)
    ranks = of.ranks(spec)
    target = ImportTarget(  # checks every stated field (a ConfigError names the one at fault)
        accelerator_type=spec.accelerator_type,
        runtime=of.runtime,
        max_ranks=ranks.limit,
        rank_unit=ranks.unit,
        instance_type=spec.instance_type,
        accelerator_count=spec.accelerator_count,
        model=params["model"],
        # spelt as the lake spells versions ("v0.11.0" -> "0.11.0"); none given: ImportTarget refuses it
        vllm_version=check_version(version, "vllm_version") if version else "",
        started_at=datetime.fromisoformat(day).replace(tzinfo=UTC) if day else None,
        **stated,
    )
    log.info("importing as %s", target)
    lake = Lake.from_env(settings)
    report = import_results(lake, params["source"], target, dag_run_id, settings.import_roots)
    for copy in report.imported:
        log.info("imported %s", copy)
    for why in report.refused.values():
        log.error("refused %s", why)
    log.info(
        "import done: %d files imported (%d runs, %d requests), %d refused; provenance: "
        "execution_mode=imported, source_uri=the lake copy",
        len(report.imported),
        report.runs,
        report.requests,
        len(report.refused),
    )
    if not report.imported:
        raise AirflowFailException(
            f"no file imported, {len(report.refused)} refused: " + "; ".join(report.refused.values())
        )
    return {
        "imported": report.imported,
        "runs": report.runs,
        "requests": report.requests,
        "refused": report.refused,
    }


def fail_on_refused(result: dict[str, Any]) -> None:
    """The import task succeeded (its rows landed and schedule a report); a refused file still fails
    the DAG run, here, so it is seen."""
    refused = result.get("refused") or {}
    if refused:
        raise AirflowFailException(
            f"{len(refused)} of {len(refused) + len(result['imported'])} files refused "
            f"(the others are imported): " + "; ".join(refused.values())
        )
    log.info("every file imported")
