"""Version over version: for each point, the change from the previous vLLM version that has it, judged
against run-to-run noise (`accelbench.report.noise`). The regression gate reads this table's rule."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from packaging.version import InvalidVersion, Version

from accelbench.report.keys import POINT_KEY
from accelbench.report.noise import judged, noise_words
from accelbench.report.table import Inputs, Section, Table

# The metrics a version delta judges, and the sign of a worse change: a throughput drop, a latency rise.
JUDGED = (("output_throughput", -1), ("p99_ttft_ms", 1), ("p99_tpot_ms", 1))
CV_METRICS = tuple(metric for metric, _ in JUDGED)


def version_key(version: str | None) -> tuple[int, Version | str]:
    try:
        return (1, Version(version or ""))
    except InvalidVersion:
        return (0, version or "")


def version_deltas(points: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each matrix point, the change from the previous vLLM version (semantic order) that has it.

    Regressions: a throughput drop or a p99 TTFT/TPOT rise beyond noise; improvements the reverse.
    """
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        series[tuple(p[k] for k in POINT_KEY if k != "vllm_version")].append(p)
    deltas = []
    for key in sorted(series, key=lambda k: tuple(str(v) for v in k)):
        ordered = sorted(series[key], key=lambda p: version_key(p["vllm_version"]))
        for prev, cur in pairwise(ordered):
            row: dict[str, Any] = {k: cur[k] for k in POINT_KEY if k != "vllm_version"}
            row |= {
                "configuration": cur["configuration"].replace(f" · vLLM {cur['vllm_version']}", ""),
                "model_short": cur["model_short"],
                "workload": cur["workload"],
                "level": cur["level"],
                "from_version": prev["vllm_version"],
                "to_version": cur["vllm_version"],
            }
            for metric, worse_when in JUDGED:
                row |= judged(metric, prev, cur, worse_when)
            deltas.append(row)
    return deltas


def _rows(inputs: Inputs) -> list[dict[str, Any]]:
    return version_deltas(inputs.points)


def _noise(rows: Sequence[dict[str, Any]]) -> Mapping[str, Any]:
    return noise_words()


TABLE = Table(
    name="version_deltas",
    compute=_rows,
    columns=(
        "configuration",
        "model_short",
        "workload",
        "level",
        "host",
        "from_version",
        "to_version",
        *(f"{m}_{s}" for m in CV_METRICS for s in ("change", "verdict")),
    ),
    section=Section(
        heading="Version-over-version changes",
        anchor="deltas",
        table_id="deltas-table",
        variables=_noise,
        text="""\
<p>For each point, the change from the previous vLLM version that has it. A change is beyond
run-to-run noise when it exceeds max({{ noise_floor }}, {{ noise_factor }} &times; the larger coefficient of
variation of the two points' repeats).</p>""",
    ),
)
