"""A/B comparisons: the runs of a campaign's variants (`CampaignRequest.variants`, the runs rows'
`ab_comparison` and `variant`), each later variant against the first on every level, each judged metric
tested by the one comparison the version deltas and the regression gate use (`accelbench.report.noise.
compare_pairs`: a t test on the repeats' log figures from their requests, Benjamini-Hochberg across every
row and metric of the table, the interval and what the samples resolve).

A variant's point here is its own runs in its own campaign (its rounds' repeats), never pooled with another
campaign's or another variant's: an A/A comparison's two variants are the same configuration, which the
points table pools, and which this table keeps apart to test the host against itself."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from accelbench.core.changes import FDR
from accelbench.lake.schemas import MEASURED_STATUSES, LakeRow
from accelbench.report.labels import level_label, short_model
from accelbench.report.model import MetricChange, metric_change, prefixed
from accelbench.report.noise import Sides, TestedChanges, compare_pairs, noise_variables
from accelbench.report.samples import Samples
from accelbench.report.table import Inputs, Section, Table

# The metrics an A/B comparison judges, and the sign of a worse change: a throughput drop, a latency rise.
AB_JUDGED = (
    ("output_throughput", -1),
    ("p50_ttft_ms", 1),
    ("p99_ttft_ms", 1),
    ("p50_tpot_ms", 1),
    ("p99_tpot_ms", 1),
    ("p99_e2el_ms", 1),
)
AB_METRICS = tuple(metric for metric, _ in AB_JUDGED)
# What a variant may change (accelbench.campaign.request.VARIANT_FIELDS), as the runs rows name it.
DIFFERS = {
    "engine_args": "engine args",
    "model": "model",
    "quantization": "quantization",
    "vllm_version": "vLLM",
    "instance_type": "instance type",
}


@dataclass(frozen=True, slots=True)
class AbComparison:
    """One variant against the comparison's first (its baseline) at one level of one workload of one
    campaign: what differs between them, their repeats, each judged metric's change (`MetricChange`,
    written under its name), how each was tested, and the row's verdict: "differs" (a metric beyond the
    minimum effect at the FDR), "no difference" (every metric within it), or "undecided"."""

    campaign_id: str
    ab_comparison: str
    model_short: str
    instance_type: str | None
    workload: str
    level: str
    level_kind: str
    level_value: float
    baseline: str
    variant: str
    differs: str
    repeats_baseline: int
    repeats_variant: int
    ab_verdict: str
    output_throughput: MetricChange = field(metadata=prefixed("output_throughput_"))
    p50_ttft_ms: MetricChange = field(metadata=prefixed("p50_ttft_ms_"))
    p99_ttft_ms: MetricChange = field(metadata=prefixed("p99_ttft_ms_"))
    p50_tpot_ms: MetricChange = field(metadata=prefixed("p50_tpot_ms_"))
    p99_tpot_ms: MetricChange = field(metadata=prefixed("p99_tpot_ms_"))
    p99_e2el_ms: MetricChange = field(metadata=prefixed("p99_e2el_ms_"))
    change_method: str = ""
    host_drift: str | None = None

    def change(self, metric: str) -> MetricChange:
        """The change of a judged metric (AB_JUDGED) by its name."""
        return metric_change(self, metric)

    @property
    def flagged(self) -> tuple[str, ...]:
        """The metrics whose change is beyond the minimum effect at the FDR (either way)."""
        return tuple(m for m in AB_METRICS if self.change(m).verdict in ("regression", "improvement"))

    @property
    def line(self) -> str:
        """The row in words, for a task log: "a vs b, b against a at concurrency 8: output tokens/s -45%
        [-47%, -43%], q = 0.001: regression; ..."."""
        findings = "; ".join(str(self.change(m).finding) for m in AB_METRICS)
        return f"{self.ab_comparison}: {self.variant} against {self.baseline} at {self.level}: {findings}"


def _differs(before: Sequence[LakeRow], after: Sequence[LakeRow]) -> str:
    """What the variant changes, from its rows: "engine args: '' -> '--max-num-active-seqs=2'", or "nothing
    (A/A)"."""
    said = []
    for column, name in DIFFERS.items():
        was, now = before[0].get(column), after[0].get(column)
        if (was or "") != (now or ""):
            said.append(f"{name}: {was or ''!r} -> {now or ''!r}")
    return "; ".join(said) or "nothing (A/A: the host's self-check)"


def _verdict(found: TestedChanges, drift: str | None) -> str:
    verdicts = [c.verdict for c in found.changes.values()]
    if drift is None and any(v in ("regression", "improvement") for v in verdicts):
        return "differs"
    if all(v == "no change" for v in verdicts):
        return "no difference"
    return "undecided"


def ab_comparisons(
    runs: Iterable[Mapping[str, Any]], samples: Samples = Samples.EMPTY, fdr: float = FDR
) -> list[AbComparison]:
    """Every variant of every A/B comparison in `runs` (the runs rows; those of no comparison, failed runs
    and rechecks left out) against the comparison's first variant, level by level, judged as one family."""
    groups: dict[tuple[Any, ...], dict[str, list[LakeRow]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if r.get("ab_comparison") and r.get("status") in MEASURED_STATUSES and not r.get("recheck"):
            key = (r["campaign_id"], r["ab_comparison"], r.get("workload") or "fixed", r["level_kind"])
            groups[(*key, r["level_value"])][r["variant"]].append(dict(r))
    pairs: list[tuple[tuple[Any, ...], str, str, list[LakeRow], list[LakeRow]]] = []
    for key in sorted(groups, key=lambda k: tuple(str(v) for v in k)):
        names = str(key[1]).split(" vs ")
        by_variant = groups[key]
        if names[0] not in by_variant:
            continue
        pairs += [
            (key, names[0], v, by_variant[names[0]], by_variant[v]) for v in names[1:] if v in by_variant
        ]
    sides = [
        Sides(_point(a), _point(b), _drift(a, b), by_server=True, peers=_peers(groups[key], base, v))
        for key, base, v, a, b in pairs
    ]
    judged = compare_pairs(sides, AB_JUDGED, runs, samples, fdr)
    return [_row(*pair, found, side.drift) for pair, side, found in zip(pairs, sides, judged, strict=True)]


def _peers(by_variant: Mapping[str, Sequence[LakeRow]], *pair: str) -> tuple[dict[str, Any], ...]:
    """The comparison's other variants at the pair's level: their servers' spread is the host's too."""
    return tuple(_point(rows) for name, rows in sorted(by_variant.items()) if name not in pair)


def _point(rows: Sequence[LakeRow]) -> dict[str, Any]:
    return {"run_ids": [r["run_id"] for r in sorted(rows, key=lambda r: r.get("repeat") or 0)]}


def _drift(*sides: Sequence[LakeRow]) -> str | None:
    return "; ".join(sorted({r["host_drift"] for side in sides for r in side if r.get("host_drift")})) or None


def _row(
    key: tuple[Any, ...],
    baseline: str,
    variant: str,
    before: list[LakeRow],
    after: list[LakeRow],
    found: TestedChanges,
    drift: str | None,
) -> AbComparison:
    campaign, comparison, workload, kind, value = key
    return AbComparison(
        campaign_id=campaign,
        ab_comparison=comparison,
        model_short=short_model(before[0].get("model")),
        instance_type=before[0].get("instance_type"),
        workload=workload,
        level=level_label(kind, value),
        level_kind=kind,
        level_value=value,
        baseline=baseline,
        variant=variant,
        differs=_differs(before, after),
        repeats_baseline=len(before),
        repeats_variant=len(after),
        ab_verdict=_verdict(found, drift),
        change_method=found.method,
        host_drift=drift,
        **{m: found.changes[m] for m in AB_METRICS},
    )


def _rows(inputs: Inputs) -> list[AbComparison]:
    return ab_comparisons(inputs.runs, inputs.samples)


TABLE = Table(
    name="ab_comparisons",
    row=AbComparison,
    compute=_rows,
    columns=(
        "ab_comparison",
        "model_short",
        "instance_type",
        "workload",
        "level",
        "baseline",
        "variant",
        "differs",
        "ab_verdict",
        *(f"{m}_finding" for m in AB_METRICS),
        "change_method",
    ),
    section=Section(
        unmeasured="`variants` (an A/B comparison)",
        heading="A/B comparisons",
        anchor="ab",
        table_id="ab-table",
        variables=noise_variables,
        lead="Each variant against the comparison's first, level by level: a change with its interval, or "
        "the smallest change the samples resolve.",
        text="""\
<p>An A/B comparison is one campaign of two or more variants of a configuration (its <code>variants</code>),
their servers run interleaved on the same host or node type (a, b, a, b ...), so the host's drift falls on
every variant. Each later variant is compared with the first at every level, with the regression gate's
test: each repeat gives one figure (its percentile of its own requests, or its throughput), the two
variants' repeats are compared on a log scale (the change is the ratio of their geometric means) by a pooled
two-sample t test, with its {{ confidence }} interval. The null hypothesis is a change of at most
{{ min_effect }}; the q-values control the false discovery rate (Benjamini-Hochberg) across every row and
metric of the table. "differs": a metric changed beyond {{ min_effect }} at q &le; {{ fdr }} (a regression
is the worse way: a latency up, a throughput down); "no difference": every interval lies within
&plusmn;{{ min_effect }}; otherwise "no change beyond &plusmn;X%" is the smallest change these samples
resolve (more repeats or prompts per level resolve smaller ones). Two variants that change nothing (an A/A)
are the host's self-check: anything they flag is the host's, not the server's.</p>""",
    ),
)
