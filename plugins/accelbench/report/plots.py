"""The report's plots as inline SVG text (matplotlib), so the HTML needs no file or network to open.

Figures are built with `matplotlib.figure.Figure` (no pyplot global state, safe in a worker) and
saved with a fixed hash salt and no date, so the same tables give the same bytes. Each plot has a
`*_figure` builder (tests read its axes) and an SVG function `fn(rows, slos)` the page calls.

Latency and cost axes start at zero so bar lengths and heights compare honestly; results measured on
a local host (not the instance type they name) are drawn dashed and grey, named "(local host)", and
never priced. Error bars are the figures' 95% intervals (`<column>_low`, `<column>_high`:
accelbench.report.points); a side without a bound has no bar, and the axes follow the estimates, so a
very wide interval runs off the panel.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from itertools import pairwise
from typing import Any, Protocol, TypedDict

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from accelbench.lake.schemas import IMPORTED_MODE
from accelbench.quality.quality_gate import GATE_ACCURACY_RATIO
from accelbench.report.keys import CONFIG_KEY
from accelbench.report.pricing import order_by_cost
from accelbench.report.records import Record, figure
from accelbench.report.table import Table
from accelbench.report.tables import best_under_slo as best_table
from accelbench.report.tables import points as points_table
from accelbench.report.tables import quality as quality_table
from accelbench.report.tables.version_deltas import version_key

LOG_SCALE_SPREAD = 20  # a throughput axis spanning more than this factor is drawn logarithmic
MAX_CURVES_PER_AXES = 6  # beyond this a legend and its curves stop being readable: another row
HEADROOM = 1.1  # axis end past the largest value (or SLO), so markers and labels are not clipped
LATENCIES = (  # (point column, name, SLO attribute): one panel each
    ("p99_ttft_ms", "p99 TTFT", "ttft_p99_ms"),
    ("p99_tpot_ms", "p99 TPOT", "tpot_p99_ms"),
    ("p99_e2el_ms", "p99 E2EL", "e2el_p99_ms"),
)
LOCAL_COLOURS = ("0.35", "0.6", "0.45", "0.7", "0.25", "0.55")  # greys: local hosts stay in the back
LOCAL_MARKERS = ("s", "^", "D", "v", "P", "X")  # tell grey curves apart without colour
SLO_COLOUR = "tab:red"


class SloLimits(Protocol):
    """What the plots need of the SLOs (the report filter or the model's Slos); None: no limit."""

    @property
    def ttft_p99_ms(self) -> float | None: ...
    @property
    def tpot_p99_ms(self) -> float | None: ...
    @property
    def e2el_p99_ms(self) -> float | None: ...


@dataclass
class Plot:
    """A figure and the hover text of its artists by SVG id: full model ids stay out of the legends."""

    figure: Figure
    titles: dict[str, str] = field(default_factory=dict)


def _svg(fig: Figure, salt: str) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: the SVG goes inside HTML


def _render(plot: Plot | None, salt: str) -> str | None:
    """The SVG with a <title> (the browser's hover text) inside each titled artist's group."""
    if plot is None:
        return None
    svg = _svg(plot.figure, salt)
    for gid, title in plot.titles.items():
        opening = f'<g id="{gid}">'
        svg = svg.replace(opening, f"{opening}<title>{escape(title)}</title>", 1)
    return svg


def _plain(ax: Axes, *, x: bool = True, y: bool = True) -> None:
    """Tick labels as plain numbers with thousands separators: no "1e4" or offset in a report."""
    fmt = FuncFormatter(lambda v, _pos: f"{v:,g}")
    if x:
        ax.xaxis.set_major_formatter(fmt)
    if y:
        ax.yaxis.set_major_formatter(fmt)


def _level(p: Record) -> str:
    """The level as the plot labels it: c8 (at most 8 requests in flight) or 2 req/s (arrival rate)."""
    kind, value = p.get("level_kind"), p.get("level_value")
    if value is None:
        return "?"
    if kind == "concurrency":
        return f"c{value:g}"
    if kind == "scale":
        return f"{value:g}x"
    return f"{value:g} req/s" if kind == "rate" else f"{kind} {value:g}"


def _where(p: Record) -> str:
    """ " (imported)", " (local host)" or nothing (measured on the instance): what a legend adds."""
    if p.get("execution_mode") == IMPORTED_MODE:
        return " (imported)"
    return "" if p.get("measured_on_instance") else " (local host)"


def _legend_name(p: Record, configuration: str | None = None) -> str:
    return f"{configuration or p['configuration']} · {p['model_short']}{_where(p)}"


def _hover(p: Record, configuration: str | None = None) -> str:
    """The full model id and where the point ran: what the short legend leaves out."""
    where = p.get("measured_where") or f"host: {p['host']}"
    return f"{p['model']}\n{configuration or p['configuration']}\n{p['workload']}\n{where}"


class _Style(TypedDict):
    """A curve's matplotlib line style."""

    color: str
    linestyle: str
    marker: str


def _style(p: Record, index: int, local_index: int) -> _Style:
    """Instance curves solid in colour; local ones dashed grey with their own marker."""
    if p.get("measured_on_instance"):
        return {"color": f"C{index % 10}", "linestyle": "-", "marker": "o"}
    return {
        "color": LOCAL_COLOURS[local_index % len(LOCAL_COLOURS)],
        "linestyle": "--",
        "marker": LOCAL_MARKERS[local_index % len(LOCAL_MARKERS)],
    }


def _errors(points: Sequence[Record], column: str) -> list[list[float]] | None:
    """Error bar lengths below and above each point's `column` (its 95% interval), 0 for an unknown side;
    None when no point has a bound (matplotlib then draws no bars)."""
    below, above, any_bound = [], [], False
    for p in points:
        found = figure(p, column)
        value, low, high = found.estimate, found.low, found.high
        below.append(max(value - low, 0.0) if value is not None and low is not None else 0.0)
        above.append(max(high - value, 0.0) if value is not None and high is not None else 0.0)
        any_bound = any_bound or low is not None or high is not None
    return [below, above] if any_bound else None


def _error_bars(
    ax: Axes,
    xs: Sequence[float],
    ys: Sequence[float],
    colour: str,
    xerr: list[list[float]] | None,
    yerr: list[list[float]] | None,
) -> None:
    """The intervals as thin bars in the curve's colour, apart from its line (no marker, no legend entry,
    no cap lines: a curve stays one line of the axes)."""
    if xs and (xerr is not None or yerr is not None):
        ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt="none", ecolor=colour, elinewidth=0.8, alpha=0.7)


def _slo_line(ax: Axes, limit: float | None) -> None:
    if limit is None:
        return
    ax.axhline(limit, color=SLO_COLOUR, linestyle="--", linewidth=1, zorder=1)
    ax.annotate(
        f"SLO {limit:g} ms",
        (1, limit),
        xycoords=ax.get_yaxis_transform(),
        xytext=(-3, 3),
        textcoords="offset points",
        ha="right",
        va="bottom",
        fontsize=7,
        color=SLO_COLOUR,
    )


def _slo_words(slos: SloLimits) -> str:
    """The SLOs in words (p99 TTFT ≤ 2000 ms, ...), or that none was set: the plot says what it held."""
    limits = [(name, getattr(slos, attr)) for _column, name, attr in LATENCIES]
    held = [f"{name} ≤ {limit:g} ms" for name, limit in limits if limit is not None]
    return ", ".join(held) if held else "no latency SLO set"


def _workload_order(p: Record) -> tuple[Any, ...]:
    """Workloads by dataset then lengths (128→32 before 4096→512), not by label text."""
    return (str(p.get("dataset")), p.get("input_len") or 0, p.get("output_len") or 0, p["workload"])


def _rows_of_curves(curves: dict[Any, list[Record]]) -> list[tuple[str, list[Any]]]:
    """(workload, curve keys) per subplot row: one workload per row, at most MAX_CURVES_PER_AXES each,
    instance curves before local ones."""
    by_workload: dict[str, list[Any]] = defaultdict(list)
    order: dict[str, tuple[Any, ...]] = {}
    for key, rows in curves.items():
        by_workload[rows[0]["workload"]].append(key)
        order[rows[0]["workload"]] = _workload_order(rows[0])
    out = []
    for workload in sorted(by_workload, key=lambda w: order[w]):
        keys = sorted(
            by_workload[workload],
            key=lambda k: (not curves[k][0].get("measured_on_instance"), _legend_name(curves[k][0]), str(k)),
        )
        chunks = [keys[i : i + MAX_CURVES_PER_AXES] for i in range(0, len(keys), MAX_CURVES_PER_AXES)]
        for n, chunk in enumerate(chunks, 1):
            out.append((workload if len(chunks) == 1 else f"{workload} ({n}/{len(chunks)})", chunk))
    return out


def _latency_curves(ax: Axes, plot: Plot, curves: list[list[Record]], gid_prefix: str, column: str) -> None:
    """One panel's curves: each configuration's levels, output tokens/s against `column`, labelled."""
    local_index = 0
    for i, levels in enumerate(curves):
        points = sorted(levels, key=lambda p: p["output_throughput"])
        first = points[0]
        style = _style(first, i, local_index)
        local_index += not first.get("measured_on_instance")
        gid = f"{gid_prefix}-{i}-{column}"
        measured = [p for p in points if p.get(column) is not None]
        xs, ys = [p["output_throughput"] for p in measured], [p[column] for p in measured]
        ax.plot(xs, ys, label=_legend_name(first), gid=gid, markersize=4, **style)
        _error_bars(
            ax, xs, ys, style["color"], _errors(measured, "output_throughput"), _errors(measured, column)
        )
        plot.titles[gid] = _hover(first)
        below = i % 2  # alternate curves label above / below: neighbours' labels collide less
        for p in measured:
            ax.annotate(
                _level(p),
                (p["output_throughput"], p[column]),
                xytext=(4, -4 if below else 4),
                textcoords="offset points",
                va="top" if below else "bottom",
                fontsize=6.5,
                color=style["color"],
            )


def _latency_axes(
    ax: Axes, shown: list[Record], latency: tuple[str, str, str], workload: str, limit: float | None
) -> None:
    """One panel's SLO line, axes (from zero; throughput logarithmic when the row's spans over
    LOG_SCALE_SPREAD-fold) and titles; `shown`: every point of the panel's row."""
    column, name, _ = latency
    _slo_line(ax, limit)
    values = [p[column] for p in shown if p.get(column) is not None]
    top = max([*values, limit or 0])
    ax.set_ylim(0, top * HEADROOM if top > 0 else 1)
    xs = [p["output_throughput"] for p in shown]
    positive = [x for x in xs if x > 0]
    if positive and max(positive) > LOG_SCALE_SPREAD * min(positive):  # CPU next to GPU
        ax.set_xscale("log")
        ax.set_xlim(min(positive) / 1.5, max(positive) * 1.5)  # also where a panel has no data
        ax.set_xlabel(f"output tokens/s (log scale: throughputs span over {LOG_SCALE_SPREAD}-fold)")
    else:
        ax.set_xlim(0, (max(xs) * HEADROOM) or 1)
        ax.set_xlabel("output tokens/s (mean over repeats; bars: 95% intervals)")
    _plain(ax)
    ax.set_ylabel(f"{name} (ms)")
    ax.set_title(f"{workload} · {name}", fontsize=9)
    ax.grid(alpha=0.3)
    if not values:
        ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center", color="0.5")


def throughput_vs_latency_figure(rows: Sequence[Record], slos: SloLimits) -> Plot | None:
    """Per configuration, its load levels: output tokens/s against p99 TTFT, TPOT and E2EL, a row of
    panels per workload, the SLOs as dashed lines."""
    curves: dict[str, list[Record]] = defaultdict(list)
    for p in rows:
        if p.get("output_throughput") is not None:
            curves[p["configuration_id"]].append(p)
    if not curves:
        return None
    layout = _rows_of_curves(curves)
    fig = Figure(figsize=(16, 3.9 * len(layout)), layout="constrained")
    grid = fig.subplots(len(layout), len(LATENCIES), squeeze=False)
    plot = Plot(fig)
    for r, (workload, keys) in enumerate(layout):
        shown = [p for k in keys for p in curves[k]]
        for ax, latency in zip(grid[r], LATENCIES, strict=True):
            _latency_curves(ax, plot, [curves[k] for k in keys], f"throughput-latency-{r}", latency[0])
            _latency_axes(ax, shown, latency, workload, getattr(slos, latency[2]))
        grid[r][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.suptitle(
        "Throughput vs p99 latency per configuration (labels: load level; c = concurrency cap; "
        "bars: 95% intervals)"
    )
    return plot


def throughput_vs_latency(rows: Sequence[Record], slos: SloLimits) -> str | None:
    """The throughput/latency curves as SVG; None when no point has a throughput."""
    return _render(throughput_vs_latency_figure(rows, slos), "throughput-latency")


def _usd(value: float | None) -> str:
    """Two decimals (0.25), or two significant digits under a cent (0.0042): never a bare 0.00."""
    if value is None:
        return ""
    return f"{value:,.2f}" if value >= 0.01 else f"{value:.2g}"


def _cost_bars(ax: Axes, plot: Plot, priced: list[Record]) -> float:
    """On-demand and spot bars per point, labelled with their value; the largest value drawn."""
    ys = range(len(priced))
    height = 0.38
    largest = 0.0
    for offset, kind, colour in ((-height / 2, "on_demand", "tab:blue"), (height / 2, "spot", "tab:orange")):
        values = [p.get(f"{kind}_usd_per_1m_output_tokens") for p in priced]
        if all(v is None for v in values):
            continue  # e.g. no spot history offline: no empty legend entry
        bars = ax.barh(
            [y + offset for y in ys],
            [v or 0 for v in values],  # a missing price: no bar and a blank label, never "0"
            height=height,
            color=colour,
            label=kind.replace("_", "-"),
            xerr=_errors(priced, f"{kind}_usd_per_1m_output_tokens"),
            error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "0.2"},
        )
        ax.bar_label(bars, labels=[_usd(v) for v in values], padding=3, fontsize=7)
        for n, (bar, p, value) in enumerate(zip(bars, priced, values, strict=True)):
            if value is not None:
                bar.set_gid(f"cost-at-slo-{kind}-{n}")
                plot.titles[f"cost-at-slo-{kind}-{n}"] = _hover(p)
        largest = max(largest, *(v or 0 for v in values))
    return largest


def cost_at_slo_figure(rows: Sequence[Record], slos: SloLimits) -> Plot | None:
    """USD per 1M output tokens at each configuration's best level under the SLOs, on-demand and spot,
    by model and workload and cheapest first within each; only points measured on their instance type
    (or imported, on the one stated) have a price."""
    priced = [
        p
        for p in rows
        if p.get("measured_on_instance")
        and any(p.get(f"{kind}_usd_per_1m_output_tokens") is not None for kind in ("on_demand", "spot"))
    ]
    if not priced:
        return None
    # By model and workload, cheapest first within each: bars of different workloads are never ranked
    # against each other (a line parts the groups).
    priced.sort(
        key=lambda p: (
            p["model_short"],
            _workload_order(p),
            order_by_cost(
                p.get("on_demand_usd_per_1m_output_tokens"),
                p.get("spot_usd_per_1m_output_tokens"),
                p["configuration"],
                p["workload"],
            ),
        )
    )
    fig = Figure(figsize=(11, max(2.2, 1.0 + 0.5 * len(priced))), layout="constrained")
    ax = fig.subplots()
    plot = Plot(fig)
    largest = _cost_bars(ax, plot, priced)
    ax.set_yticks(
        list(range(len(priced))),
        [
            f"{p['configuration']} · {p['model_short']} · {p['workload']} @ {_level(p)}{_where(p)}"
            for p in priced
        ],
        fontsize=8,
    )
    for y, (above, below) in enumerate(pairwise(priced), 1):
        if (above["model"], above["workload"]) != (below["model"], below["workload"]):
            ax.axhline(y - 0.5, color="0.6", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlim(0, largest * 1.2 or 1)  # room for the value labels
    _plain(ax, y=False)
    ax.set_xlabel(
        "USD per 1M output tokens at the best level under the SLOs (bars: 95% intervals)\n"
        f"({_slo_words(slos)})"
    )
    ax.legend(fontsize=8, loc="upper right")  # cheapest first: the top bars are the short ones
    ax.grid(axis="x", alpha=0.3)
    return plot


def cost_at_slo(rows: Sequence[Record], slos: SloLimits) -> str | None:
    """The cost bars as SVG; None when nothing measured on its instance type has a price."""
    return _render(cost_at_slo_figure(rows, slos), "cost-at-slo")


VERSIONLESS_KEY = tuple(k for k in CONFIG_KEY if k != "vllm_version")  # one line across versions


def _without_version(p: Record) -> str:
    """The configuration label less its "vLLM x.y.z" part: the x axis says the version."""
    return " · ".join(
        part for part in p["configuration"].split(" · ") if part != f"vLLM {p.get('vllm_version') or '?'}"
    )


def _trend_lines(
    ax: Axes, plot: Plot, lines: list[list[Record]], at: dict[str, int], gid_prefix: str
) -> None:
    """One panel's lines: each configuration's throughput per version (at: the version's x), labelled."""
    local_index = 0
    for i, levels in enumerate(lines):
        points = sorted(levels, key=lambda p: version_key(p["vllm_version"]))
        first = points[0]
        style = _style(first, i, local_index)
        local_index += not first.get("measured_on_instance")
        gid = f"{gid_prefix}-{i}"
        xs, ys = [at[p["vllm_version"]] for p in points], [p["output_throughput"] for p in points]
        ax.plot(xs, ys, label=_legend_name(first, _without_version(first)), gid=gid, **style)
        _error_bars(ax, xs, ys, style["color"], None, _errors(points, "output_throughput"))
        plot.titles[gid] = _hover(first, _without_version(first))
        for p in points:
            ax.annotate(
                _level(p),
                (at[p["vllm_version"]], p["output_throughput"]),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=6.5,
                color=style["color"],
            )


def version_trend_figure(rows: Sequence[Record], slos: SloLimits) -> Plot | None:
    """Output tokens/s at the best level under the SLOs per vLLM version (semantic order), one line per
    configuration less its version, a row per workload."""
    lines: dict[tuple[Any, ...], list[Record]] = defaultdict(list)
    for p in rows:
        if p.get("output_throughput") is not None:
            lines[tuple(str(p.get(k)) for k in VERSIONLESS_KEY)].append(p)
    if not lines:
        return None
    layout = _rows_of_curves(lines)
    versions = sorted({p["vllm_version"] for ps in lines.values() for p in ps}, key=version_key)
    at = {v: i for i, v in enumerate(versions)}
    fig = Figure(figsize=(11, 3.6 * len(layout)), layout="constrained")
    axes = fig.subplots(len(layout), 1, squeeze=False)[:, 0]
    plot = Plot(fig)
    for r, (ax, (workload, keys)) in enumerate(zip(axes, layout, strict=True)):
        _trend_lines(ax, plot, [lines[k] for k in keys], at, f"version-trend-{r}")
        top = max(  # the intervals in view too: a throughput's is a few percent, not a latency's tail
            figure(p, "output_throughput").high or p["output_throughput"] for k in keys for p in lines[k]
        )
        ax.set_ylim(0, top * HEADROOM or 1)
        ax.set_xlim(-0.5, len(versions) - 0.5)
        ax.set_xticks(range(len(versions)), [str(v) for v in versions])
        _plain(ax, x=False)
        ax.set_xlabel("vLLM version")
        ax.set_ylabel("output tokens/s")
        ax.set_title(f"{workload} · best level under the SLOs ({_slo_words(slos)})", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
        ax.grid(alpha=0.3)
    return plot


def version_trend(rows: Sequence[Record], slos: SloLimits) -> str | None:
    """The version trend as SVG; None when no best point has a throughput."""
    return _render(version_trend_figure(rows, slos), "version-trend")


def cost_vs_quality_figure(rows: Sequence[Record], slos: SloLimits) -> Plot | None:
    """Per model and workload (one panel each), every configuration of a quantization matrix: its USD per
    1M output tokens (on-demand, at its best level under the SLOs) against its accuracy as a share of the
    reference's, both with their 95% intervals; the Pareto front joined by a line; configurations that fail
    or are undecided on the quality gate hollow; the gate's accuracy limit a dashed line."""
    cost = quality_table.COST
    known = [r for r in rows if r.get(cost) is not None and r.get("accuracy_ratio") is not None]
    if not known:
        return None
    groups: dict[tuple[Any, Any], list[Record]] = defaultdict(list)
    for r in known:
        groups[(r["quality_reference"], r["workload"])].append(r)
    fig = Figure(figsize=(8, 3.2 * len(groups)), layout="constrained")
    plot = Plot(fig)
    for n, (ax, ((reference, workload), group)) in enumerate(
        zip(fig.subplots(len(groups), 1, squeeze=False)[:, 0], sorted(groups.items()), strict=True)
    ):
        for i, r in enumerate(sorted(group, key=lambda r: r[cost])):
            passed = r.get("quality_gate") == "pass"
            x, y = r[cost], r["accuracy_ratio"]
            bars = ax.errorbar(
                [x],
                [y],
                xerr=_errors([r], cost),
                yerr=_errors([r], "accuracy_ratio"),
                fmt="o",
                color=f"C{i % 10}",
                markerfacecolor=f"C{i % 10}" if passed else "white",
                capsize=2,
                label=f"{r.get('server_quantization') or r.get('quantization') or r['model_short']} on "
                f"{r['instance_type']} (gate {r.get('quality_gate')})",
            )
            gid = f"cost-vs-quality-{n}-{i}"
            bars.lines[0].set_gid(gid)
            plot.titles[gid] = _hover(r)
        front = sorted((r for r in group if r.get("on_pareto_front")), key=lambda r: r[cost])
        if len(front) > 1:
            ax.plot(
                [r[cost] for r in front], [r["accuracy_ratio"] for r in front], color="0.4", linewidth=0.8
            )
        ax.axhline(GATE_ACCURACY_RATIO, color=SLO_COLOUR, linestyle="--", linewidth=0.8)
        ax.set_xlim(left=0)
        _plain(ax)
        ax.set_xlabel("USD per 1M output tokens on-demand, best level under the SLOs")
        ax.set_ylabel("accuracy, share of the reference's")
        ax.set_title(f"{reference.split('/')[-1]} · {workload} (line: Pareto front)", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
        ax.grid(alpha=0.3)
    return plot


def cost_vs_quality(rows: Sequence[Record], slos: SloLimits) -> str | None:
    """The cost-quality plot as SVG; None when no configuration has both a price and an accuracy ratio."""
    return _render(cost_vs_quality_figure(rows, slos), "cost-vs-quality")


PlotFn = Callable[[Sequence[Record], SloLimits], str | None]
PLOTS: dict[str, tuple[str, PlotFn, Table]] = {  # id: (title, the SVG of the rows, the table it draws)
    "throughput_vs_latency": ("Throughput vs latency", throughput_vs_latency, points_table.TABLE),
    "cost_at_slo": ("Cost per 1M output tokens at the SLO", cost_at_slo, best_table.TABLE),
    "version_trend": ("Version trend", version_trend, best_table.TABLE),
    "cost_vs_quality": ("Cost vs quality against the reference", cost_vs_quality, quality_table.TABLE),
}
