"""Where a run was measured: on the instance type it names, on a local stand-in host, or elsewhere by
an importer; and the labels that say so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accelbench.lake.schemas import IMPORTED_MODE

ON_INSTANCE = "instance"  # the host label of a run measured on the instance type it names


def measured_on_instance(run: Mapping[str, Any]) -> bool:
    """Whether the run measured the instance type it names. Rows from before host facts were recorded
    say nothing: a kubernetes run landed on its instance type by node selector, a local one did not."""
    recorded = run.get("measured_on_instance")
    return bool(recorded) if recorded is not None else run.get("execution_mode") != "local"


def measured_where(run: Mapping[str, Any]) -> str:
    """What was measured where, for every label a reader sees: "measured on m8g.xlarge (kubernetes)",
    "imported: g6e.xlarge as stated by the importer", or a local run's real host ("local: ...")."""
    if run.get("execution_mode") == IMPORTED_MODE:
        return f"imported: {run.get('instance_type')} as stated by the importer"
    host = run.get("host") or host_label(run)  # a point has its host label already
    if host != ON_INSTANCE:
        return str(host)
    return f"measured on {run.get('instance_type')} ({run.get('execution_mode') or 'mode not recorded'})"


def host_label(run: Mapping[str, Any]) -> str:
    """ "instance", or "local: <arch> <cpu model>, <n> vCPU[, <GPUs>]" for a run on a stand-in host (the
    GPUs a local GPU run really ran on, as their driver names them)."""
    if measured_on_instance(run):
        return ON_INSTANCE
    what = " ".join(str(run[k]) for k in ("host_architecture", "host_cpu_model") if run.get(k))
    if run.get("host_vcpus"):
        what += f", {run['host_vcpus']} vCPU"
    if run.get("host_accelerators"):
        what += f", {run['host_accelerators']}"
    return f"local: {what.strip(', ') or 'host not recorded'}"
