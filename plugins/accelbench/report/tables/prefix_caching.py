"""Prefix caching on vs off: pairs of points identical but for the prefix-caching flag among the engine
arguments, with the TTFT the shared prefix saves, tested by the version deltas' rule
(`accelbench.report.noise`)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from accelbench.report.keys import POINT_KEY
from accelbench.report.labels import configuration_label
from accelbench.report.model import INLINE, MetricChange, Point, PointKey, prefixed
from accelbench.report.noise import Sides, TestedChanges, compare_pairs, noise_words
from accelbench.report.records import Record, record
from accelbench.report.samples import Samples
from accelbench.report.table import Inputs, Section, Table

PREFIX_CACHING_METRICS = ("p50_ttft_ms", "p99_ttft_ms")
PREFIX_CACHING_ON, PREFIX_CACHING_OFF = "--enable-prefix-caching", "--no-enable-prefix-caching"


def prefix_caching_flag(engine_args: str | None) -> tuple[bool | None, str]:
    """(whether the arguments turn prefix caching on (True) or off (False), the other arguments): None when
    neither flag is there (the engine's default, which depends on its version). The last flag wins, as in
    vLLM's argument parser, which also reads `_` in a flag as `-`."""
    state: bool | None = None
    rest = []
    for arg in (engine_args or "").split():
        flag = "--" + arg[2:].replace("_", "-") if arg.startswith("--") else arg
        if flag == PREFIX_CACHING_ON:
            state = True
        elif flag == PREFIX_CACHING_OFF:
            state = False
        else:
            rest.append(arg)
    return state, " ".join(rest)


@dataclass(frozen=True, slots=True)
class PrefixCachingPair:
    """A point with prefix caching on beside the same point with it off (`engine_args`: the arguments both
    share), their p50 and p99 TTFT, and each TTFT's change from off to on (`MetricChange`)."""

    key: PointKey = field(metadata=INLINE)
    configuration: str
    model_short: str
    level: str
    point_id_on: str
    point_id_off: str
    repeats_on: int
    repeats_off: int
    p50_ttft_ms_on: float | None
    p50_ttft_ms_off: float | None
    p99_ttft_ms_on: float | None
    p99_ttft_ms_off: float | None
    p50_ttft_ms: MetricChange = field(metadata=prefixed("p50_ttft_ms_"))
    p99_ttft_ms: MetricChange = field(metadata=prefixed("p99_ttft_ms_"))
    change_method: str = ""


def _pair(on: Point, off: Point, rest: str, found: TestedChanges) -> PrefixCachingPair:
    """One row: the point with caching on beside the same point with it off; `rest` the shared arguments;
    and the change of each TTFT from off to on (a lower TTFT with caching is better)."""
    key = replace(on.key(), engine_args=rest)  # the arguments both share (the flag aside)
    return PrefixCachingPair(
        key=key,
        configuration=configuration_label(on.config.key_fields() | {"engine_args": rest}),
        model_short=on.model_short,
        level=on.level,
        point_id_on=on.point_id,
        point_id_off=off.point_id,
        repeats_on=on.repeats,
        repeats_off=off.repeats,
        p50_ttft_ms_on=on.p50_ttft_ms.estimate,
        p50_ttft_ms_off=off.p50_ttft_ms.estimate,
        p99_ttft_ms_on=on.p99_ttft_ms.estimate,
        p99_ttft_ms_off=off.p99_ttft_ms.estimate,
        p50_ttft_ms=found.changes["p50_ttft_ms"],
        p99_ttft_ms=found.changes["p99_ttft_ms"],
        change_method=found.method,
    )


def prefix_caching(
    points: Iterable[Point],
    runs: Iterable[Mapping[str, Any]] = (),
    samples: Samples = Samples.EMPTY,
) -> list[PrefixCachingPair]:
    """Pairs of points identical in everything but prefix caching among their engine arguments
    (`--enable-prefix-caching` on, `--no-enable-prefix-caching` off), with their p50 and p99 TTFT and the
    change from off to on, tested by the version deltas' rule (`tested_changes`, from the requests of the
    points' repeats, `run_ids`, else the repeats in `runs`) with the false discovery rate controlled across
    the table: an "improvement" is a TTFT that caching lowers beyond the minimum effect. A point with
    neither flag runs the engine's default and is not paired."""
    sides: dict[tuple[Any, ...], dict[bool, list[Point]]] = defaultdict(lambda: {True: [], False: []})
    for p in points:
        state, rest = prefix_caching_flag(p.config.engine_args)
        if state is not None:
            key = dataclasses.astuple(replace(p.key(), engine_args=rest))
            sides[key][state].append(p)
    pairs: list[tuple[Point, Point, str]] = []
    for key in sorted(sides, key=lambda k: tuple(str(v) for v in k)):
        rest = key[POINT_KEY.index("engine_args")]
        for on in sides[key][True]:
            for off in sides[key][False]:
                pairs.append((on, off, rest))
    judged = compare_pairs(
        [Sides(record(off), record(on)) for on, off, _ in pairs],
        [(m, 1) for m in PREFIX_CACHING_METRICS],
        runs,
        samples,
    )
    rows = [_pair(on, off, rest, found) for (on, off, rest), found in zip(pairs, judged, strict=True)]
    return sorted(
        rows,
        key=lambda r: (r.model_short, r.key.workload, r.configuration, r.key.host or "", r.key.level_value),
    )


def _rows(inputs: Inputs) -> list[PrefixCachingPair]:
    return prefix_caching(inputs.points, inputs.runs, inputs.samples)


def _flags_and_noise(rows: Sequence[Record]) -> Mapping[str, Any]:
    return {"caching_flags": {"on": PREFIX_CACHING_ON, "off": PREFIX_CACHING_OFF}} | noise_words()


TABLE = Table(
    name="prefix_caching",
    row=PrefixCachingPair,
    compute=_rows,
    columns=(
        "model_short",
        "workload",
        "configuration",
        "host",
        "level",
        *(f"{m}_{s}" for m in PREFIX_CACHING_METRICS for s in ("on", "off", "finding", "verdict")),
        "repeats_on",
        "repeats_off",
        "change_method",
    ),
    section=Section(
        unmeasured="prefix caching on and off in `extra_engine_args`",
        heading="Prefix caching: TTFT with and without",
        anchor="prefix-caching",
        table_id="prefix-caching-table",
        variables=_flags_and_noise,
        text="""\
<p>Pairs of points identical in everything (model, workload, instance type, vLLM version, engine settings,
host, load level) but prefix caching: <code>{{ caching_flags.on }}</code> (on) or
<code>{{ caching_flags.off }}</code> (off) among the extra engine arguments; the configuration shows the
arguments both share. A point with neither flag runs the engine's default (on in vLLM's V1 engine, off in
older ones) and is not paired. The change is from off to on, with its {{ confidence }} interval and
q-value, tested as the version deltas are (a t test on the logs of the repeats' percentiles of their own
requests, the null hypothesis a change of at most {{ min_effect }}, the false discovery rate held at
{{ fdr }} across the table): a lower TTFT with caching on is an "improvement", a higher one a
"regression"; "no change beyond &plusmn;X%" is the smallest change these samples resolve. Only requests
whose prompts share a prefix (a shared-prefix workload) can gain.</p>""",
    ),
)
