"""Prefix caching on vs off: pairs of points identical but for the prefix-caching flag among the engine
arguments, with the TTFT the shared prefix saves, tested by the version deltas' rule
(`accelbench.report.noise`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from accelbench.core.changes import Change
from accelbench.report.keys import POINT_KEY
from accelbench.report.labels import configuration_label
from accelbench.report.model import Point
from accelbench.report.noise import judged, noise_words, point_change, runs_by_id
from accelbench.report.records import records
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


def _pair(
    on: dict[str, Any],
    off: dict[str, Any],
    rest: str,
    runs: Mapping[str, Mapping[str, Any]],
    samples: Samples,
) -> tuple[dict[str, Any], dict[str, Change]]:
    """One row: the point with caching on beside the same point with it off; `rest` the shared arguments;
    and the change of each TTFT from off to on (a lower TTFT with caching is better)."""
    row: dict[str, Any] = {k: on[k] for k in POINT_KEY} | {
        "engine_args": rest,  # the arguments both share (the flag aside)
        "configuration": configuration_label(on | {"engine_args": rest}),
        "model_short": on["model_short"],
        "workload": on["workload"],
        "level": on["level"],
        "point_id_on": on["point_id"],
        "point_id_off": off["point_id"],
        "repeats_on": on["repeats"],
        "repeats_off": off["repeats"],
    }
    for metric in PREFIX_CACHING_METRICS:
        row[f"{metric}_on"], row[f"{metric}_off"] = on.get(metric), off.get(metric)
    return row, {m: point_change(m, off, on, 1, runs, samples) for m in PREFIX_CACHING_METRICS}


def prefix_caching(
    points: Iterable[Point | Mapping[str, Any]],
    runs: Iterable[Mapping[str, Any]] = (),
    samples: Samples = Samples.EMPTY,
) -> list[dict[str, Any]]:
    """Pairs of points identical in every field of the point's key but the prefix-caching flag among the
    engine arguments (`--enable-prefix-caching` on, `--no-enable-prefix-caching` off), with their p50 and
    p99 TTFT and the change from off to on, tested by the version deltas' rule (`judged`, from the
    requests of the points' repeats, `run_ids`, else the repeats in `runs`) with the false discovery rate
    controlled across the table: an "improvement" is a TTFT that caching lowers beyond the minimum
    effect. A point with neither flag runs the engine's default and is not paired."""
    sides: dict[tuple[Any, ...], dict[bool, list[dict[str, Any]]]] = defaultdict(
        lambda: {True: [], False: []}
    )
    for p in records(points):  # the points' columns, as the files hold them (not typed yet)
        state, rest = prefix_caching_flag(p.get("engine_args"))
        if state is not None:
            sides[tuple(rest if k == "engine_args" else p[k] for k in POINT_KEY)][state].append(p)
    by_id = runs_by_id(runs)
    compared = []
    for key in sorted(sides, key=lambda k: tuple(str(v) for v in k)):
        rest = key[POINT_KEY.index("engine_args")]
        compared += [
            _pair(on, off, rest, by_id, samples) for on in sides[key][True] for off in sides[key][False]
        ]
    return sorted(
        judged(compared),
        key=lambda r: (r["model_short"], r["workload"], r["configuration"], r["host"], r["level_value"]),
    )


def _rows(inputs: Inputs) -> list[dict[str, Any]]:
    return prefix_caching(inputs.points, inputs.runs, inputs.samples)


def _flags_and_noise(rows: Sequence[dict[str, Any]]) -> Mapping[str, Any]:
    return {"caching_flags": {"on": PREFIX_CACHING_ON, "off": PREFIX_CACHING_OFF}} | noise_words()


TABLE = Table(
    name="prefix_caching",
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
        heading="Prefix caching: TTFT with and without",
        anchor="prefix-caching",
        table_id="prefix-caching-table",
        omit_when_empty=True,
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
