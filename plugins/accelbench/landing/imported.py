"""Results of `vllm bench serve` measured elsewhere, imported into the lake as the import DAG's task calls
it: the params checked against the instance catalog and the tier, the files copied and ingested
(`accelbench.lake.imported`), what was refused said."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from accelbench.catalog import queries
from accelbench.catalog.db import CatalogOpener
from accelbench.config import Settings
from accelbench.errors import ConfigError
from accelbench.lake.imported import ImportReport, ImportTarget, import_results
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


def import_target(params: Mapping[str, Any], catalog: CatalogOpener) -> ImportTarget:
    """The import DAG's params as an ImportTarget: the instance type must be in the catalog, of the stated
    accelerator type; every stated field is checked (a ConfigError names the one at fault)."""
    try:
        with catalog() as engine:
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
    return ImportTarget(
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


def import_bench_results(
    params: Mapping[str, Any], dag_run_id: str, catalog: CatalogOpener, settings: Settings
) -> ImportReport:
    """Import the files of `params["source"]` as `import_target(params)`; log each file imported or refused
    and the totals."""
    target = import_target(params, catalog)
    log.info("importing as %s", target)
    lake = Lake.from_env(settings)
    report = import_results(lake, params["source"], target, dag_run_id, settings.lake.import_roots)
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
    return report


def nothing_imported(report: ImportReport) -> str | None:
    """Why an import failed: not one file imported (each refused one says why); None when one was."""
    if report.imported:
        return None
    return f"no file imported, {len(report.refused)} refused: " + "; ".join(report.refused.values())
