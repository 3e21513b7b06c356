"""Version over version: for each point, the change from the previous vLLM version that has it, tested
from the requests of each point's repeats (`accelbench.report.noise`, `accelbench.core.changes`), with
the false discovery rate controlled across the table. The regression gate reads this table's rule."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from packaging.version import InvalidVersion, Version

from accelbench.core.changes import FDR, Change
from accelbench.report.keys import POINT_KEY
from accelbench.report.model import Point
from accelbench.report.noise import judged, noise_words, point_change, runs_by_id
from accelbench.report.records import records
from accelbench.report.samples import Samples
from accelbench.report.table import Inputs, Section, Table

# The metrics a version delta judges, and the sign of a worse change: a throughput drop, a latency rise.
JUDGED = (("output_throughput", -1), ("p99_ttft_ms", 1), ("p99_tpot_ms", 1))
CV_METRICS = tuple(metric for metric, _ in JUDGED)


def version_key(version: str | None) -> tuple[int, Version | str]:
    try:
        return (1, Version(version or ""))
    except InvalidVersion:
        return (0, version or "")


def _same(a: str | None, b: str) -> bool:
    try:
        return a is not None and Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def version_deltas(
    points: Iterable[Point | Mapping[str, Any]],
    runs: Iterable[Mapping[str, Any]] = (),
    samples: Samples = Samples.EMPTY,
    *,
    touching: str | None = None,
    fdr: float = FDR,
) -> list[dict[str, Any]]:
    """For each matrix point, the change from the previous vLLM version (semantic order) that has it,
    each metric tested from the request samples of the points' repeats (`run_ids`; `runs` give the
    repeats' own figures where there are no samples), judged as one family across all the deltas; with
    `touching`, only the deltas into or out of that version (the gate's family).

    Regressions: a throughput drop or a p99 TTFT/TPOT rise beyond the minimum effect at the FDR;
    improvements the reverse.
    """
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in records(points):  # the points' columns, as the files hold them (not typed yet)
        series[tuple(p[k] for k in POINT_KEY if k != "vllm_version")].append(p)
    by_id = runs_by_id(runs)
    compared: list[tuple[dict[str, Any], dict[str, Change]]] = []
    for key in sorted(series, key=lambda k: tuple(str(v) for v in k)):
        ordered = sorted(series[key], key=lambda p: version_key(p["vllm_version"]))
        for prev, cur in pairwise(ordered):
            if touching is not None and not (
                _same(cur["vllm_version"], touching) or _same(prev["vllm_version"], touching)
            ):
                continue
            row: dict[str, Any] = {k: cur[k] for k in POINT_KEY if k != "vllm_version"}
            row |= {
                "configuration": cur["configuration"].replace(f" · vLLM {cur['vllm_version']}", ""),
                "model_short": cur["model_short"],
                "workload": cur["workload"],
                "level": cur["level"],
                "from_version": prev["vllm_version"],
                "to_version": cur["vllm_version"],
                "repeats_from": prev["repeats"],
                "repeats_to": cur["repeats"],
                "host_drift": "; ".join(d for d in (prev.get("host_drift"), cur.get("host_drift")) if d)
                or None,
            }
            changes = {m: point_change(m, prev, cur, worse, by_id, samples) for m, worse in JUDGED}
            compared.append((row, changes))
    return judged(compared, fdr)


def _rows(inputs: Inputs) -> list[dict[str, Any]]:
    return version_deltas(inputs.points, inputs.runs, inputs.samples)


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
        *(f"{m}_{s}" for m in CV_METRICS for s in ("finding", "verdict")),
        "change_method",
    ),
    section=Section(
        heading="Version-over-version changes",
        anchor="deltas",
        table_id="deltas-table",
        variables=_noise,
        text="""\
<p>For each point, the change from the previous vLLM version that has it, with its {{ confidence }}
interval and q-value. Each repeat gives one figure (its percentile of its own requests, or its
throughput); the two versions' repeats are compared on a log scale (the change is the ratio of their
geometric means) by a pooled two-sample t test, whose spread holds both the requests' sampling noise and
the host's. The null hypothesis is a change of at most {{ min_effect }}, so smaller real changes are never
flagged; the q-values control the false discovery rate (Benjamini-Hochberg) across every row and metric
of the table. A regression or an improvement has q &le; {{ fdr }}; "no change" means the interval lies
within &plusmn;{{ min_effect }}; otherwise "no change beyond &plusmn;X%" is the smallest change these
samples resolve (more repeats, or more prompts per level, resolve smaller ones). The method column says
what each metric was tested from: a point without request samples (imported runs, older lakes) is tested
from its repeats' own figures; with one repeat on each side a percentile is tested from the requests
alone (the host's noise not measured) and a throughput not at all.</p>""",
    ),
)
