"""The report's plots: axes from zero, SLO lines, one curve per configuration, local hosts apart."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

import pytest
from accelbench.report import plots
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.text import Annotation

LOCAL = "local: x86_64 AMD EPYC 7B13, 2 vCPU"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


@dataclass(frozen=True)
class Limits:
    ttft_p99_ms: float | None = 2000
    tpot_p99_ms: float | None = 50
    e2el_p99_ms: float | None = None


def _point(
    instance: str = "m8g.xlarge",
    version: str = "0.32.0",
    lengths: tuple[int, int] = (128, 32),
    host: str = "instance",
    level: float = 1,
    tokens_per_s: float = 100.0,
    usd_per_hour: float | None = 0.18,
    spot_usd_per_hour: float | None = None,
    model: str = MODEL,
) -> dict[str, Any]:
    """A point as the report model gives it; latencies grow with load, cost from the hourly price."""
    on_instance = host == "instance"

    def per_million(usd: float | None) -> float | None:
        return usd / 3600 / tokens_per_s * 1e6 if usd is not None and on_instance else None

    return {
        "configuration_id": f"{instance}|{version}|{lengths}|{host}|{model}",
        "configuration": f"{instance} · vLLM {version} · TP1",
        "model": model,
        "model_short": model.rsplit("/", 1)[-1],
        "workload": f"random {lengths[0]}→{lengths[1]}",
        "dataset": "random",
        "input_len": lengths[0],
        "output_len": lengths[1],
        "host": host,
        "measured_on_instance": on_instance,
        "level_kind": "concurrency",
        "level_value": level,
        "output_throughput": tokens_per_s,
        "request_throughput": tokens_per_s / lengths[1],
        "p99_ttft_ms": 300.0 * level,
        "p99_tpot_ms": 20.0 + level,
        "p99_e2el_ms": 300.0 * level + lengths[1] * (20.0 + level),
        "on_demand_usd_per_1m_output_tokens": per_million(usd_per_hour),
        "spot_usd_per_1m_output_tokens": per_million(spot_usd_per_hour),
        "vllm_version": version,
        "accelerator_type": "cpu",
        "instance_type": instance,
    }


def _curve(**kw: Any) -> list[dict[str, Any]]:
    """Three load levels of one configuration: throughput and latency both rise."""
    return [_point(level=c, tokens_per_s=t, **kw) for c, t in ((1, 40.0), (4, 120.0), (16, 180.0))]


def _curves_on(ax: Axes) -> list[Line2D]:
    return [line for line in ax.get_lines() if str(line.get_gid() or "").startswith("throughput-latency-")]


def _slo_lines(ax: Axes) -> list[Line2D]:
    return [line for line in ax.get_lines() if line.get_gid() is None]


def _latency_axes(rows: list[dict[str, Any]], slos: Limits = Limits()) -> list[list[Axes]]:
    plot = plots.throughput_vs_latency_figure(rows, slos)
    assert plot is not None
    axes = plot.figure.axes
    return [axes[i : i + 3] for i in range(0, len(axes), 3)]


def test_latency_panels_start_at_zero_and_hold_every_point() -> None:
    rows = _curve() + _curve(instance="m8g.2xlarge")
    for ax in [ax for row in _latency_axes(rows) for ax in row]:
        assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0 and ax.get_ylim()[0] == 0
        ys = [y for line in _curves_on(ax) for y in line.get_ydata()]
        assert max(ys) < ax.get_ylim()[1] and ax.get_xlim()[1] > 180


def test_slo_is_a_dashed_line_at_its_value_with_its_label_and_absent_without_one() -> None:
    ttft, tpot, e2el = _latency_axes(_curve(), Limits(ttft_p99_ms=2000, tpot_p99_ms=50, e2el_p99_ms=None))[0]
    for ax, limit in ((ttft, 2000), (tpot, 50)):
        (line,) = _slo_lines(ax)
        assert list(line.get_ydata()) == [limit, limit] and line.get_linestyle() == "--"
        assert f"SLO {limit} ms" in [t.get_text() for t in ax.texts]
        assert ax.get_ylim()[1] >= limit  # the SLO is in view even above every point
    assert _slo_lines(e2el) == [] and not any(t.get_text().startswith("SLO") for t in e2el.texts)


def test_one_curve_per_configuration_named_by_configuration_and_short_model() -> None:
    rows = _curve() + _curve(version="0.31.0") + _curve(instance="m8g.2xlarge")
    ((ttft, *_),) = _latency_axes(rows)
    curves = _curves_on(ttft)
    assert len(curves) == 3 and all(len(c.get_xdata()) == 3 for c in curves)
    assert sorted(c.get_label() for c in curves) == [
        "m8g.2xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct",
        "m8g.xlarge · vLLM 0.31.0 · TP1 · Qwen2.5-0.5B-Instruct",
        "m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct",
    ]


def test_two_workloads_of_one_instance_are_two_curves_in_their_own_rows() -> None:
    rows = _curve(lengths=(4096, 512)) + _curve(lengths=(128, 32))
    short, long = _latency_axes(rows)
    assert short[0].get_title() == "random 128→32 · p99 TTFT"  # by lengths, not by label text
    assert long[0].get_title() == "random 4096→512 · p99 TTFT"
    for row in (short, long):
        (curve,) = _curves_on(row[0])
        assert list(curve.get_xdata()) == [40.0, 120.0, 180.0]


def test_more_configurations_than_fit_one_legend_go_to_another_row() -> None:
    rows = [p for n in range(plots.MAX_CURVES_PER_AXES + 1) for p in _curve(instance=f"m8g.{n}xlarge")]
    first, second = _latency_axes(rows)
    assert len(_curves_on(first[0])) == plots.MAX_CURVES_PER_AXES and len(_curves_on(second[0])) == 1
    assert first[0].get_title().startswith("random 128→32 (1/2)")


def test_local_curves_are_dashed_grey_and_say_so() -> None:
    ((ttft, *_),) = _latency_axes(_curve() + _curve(host=LOCAL))
    by_label = {c.get_label(): c for c in _curves_on(ttft)}
    local = by_label["m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct (local host)"]
    instance = by_label["m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct"]
    assert local.get_linestyle() == "--" and local.get_color() in plots.LOCAL_COLOURS
    assert instance.get_linestyle() == "-" and instance.get_color() not in plots.LOCAL_COLOURS


def test_level_labels_are_offset_from_their_markers() -> None:
    ((ttft, *_),) = _latency_axes(_curve() + _curve(instance="m8g.2xlarge"))
    labels = [t for t in ttft.texts if isinstance(t, Annotation) and t.get_text() in ("c1", "c4", "c16")]
    assert len(labels) == 6
    for label in labels:
        assert label.anncoords == "offset points" and label.xyann != (0, 0)


def test_cpu_next_to_gpu_is_drawn_on_a_log_axis_that_says_so() -> None:
    gpu = [p | {"output_throughput": p["output_throughput"] * 50} for p in _curve(instance="g6e.xlarge")]
    ((ttft, *_),) = _latency_axes(_curve() + gpu)
    assert ttft.get_xscale() == "log" and "log scale" in ttft.get_xlabel()
    assert ttft.get_ylim()[0] == 0


def test_a_panel_with_nothing_measured_says_so_even_on_a_log_axis() -> None:
    gpu = [p | {"output_throughput": p["output_throughput"] * 50} for p in _curve(instance="g6e.xlarge")]
    rows = [p | {"p99_e2el_ms": None} for p in _curve() + gpu]
    ((*_, e2el),) = _latency_axes(rows, Limits(e2el_p99_ms=None))
    assert e2el.get_xscale() == "log" and "not measured" in [t.get_text() for t in e2el.texts]
    assert plots.throughput_vs_latency(rows, Limits(e2el_p99_ms=None)) is not None  # renders


def test_cost_leaves_out_local_points_and_puts_the_cheapest_first() -> None:
    rows = [
        _point(instance="m8g.2xlarge", level=4, tokens_per_s=120, usd_per_hour=0.36),
        _point(host=LOCAL, level=4, tokens_per_s=500),
        _point(level=4, tokens_per_s=120, usd_per_hour=0.18, spot_usd_per_hour=0.07),
    ]
    rows[1]["on_demand_usd_per_1m_output_tokens"] = 0.01  # even priced by mistake, a local point stays out
    plot = plots.cost_at_slo_figure(rows, Limits())
    assert plot is not None
    (ax,) = plot.figure.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct · random 128→32 @ c4",
        "m8g.2xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct · random 128→32 @ c4",
    ]
    assert ax.get_xlim()[0] == 0
    # 0.18 USD/h at 120 tokens/s: 0.42 per 1M; spot 0.16; the 2xlarge has no spot price: a blank label
    assert sorted(t.get_text() for t in ax.texts) == ["", "0.16", "0.42", "0.83"]
    assert "p99 TTFT ≤ 2000 ms, p99 TPOT ≤ 50 ms" in ax.get_xlabel()


def test_cost_bars_rank_within_one_workload_never_across_and_an_import_says_so() -> None:
    gpu = _point(instance="g6e.xlarge", level=16, tokens_per_s=3600, usd_per_hour=1.861)
    gpu["execution_mode"] = "imported"
    rows = [
        _point(level=4, tokens_per_s=120, usd_per_hour=0.18),  # 0.42 USD per 1M on 128→32
        _point(
            lengths=(1024, 128), level=4, tokens_per_s=400, usd_per_hour=0.18
        ),  # 0.125: cheaper, other workload
        gpu,  # 0.14 on 128→32
    ]
    plot = plots.cost_at_slo_figure(rows, Limits())
    assert plot is not None
    (ax,) = plot.figure.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "g6e.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct · random 128→32 @ c16 (imported)",
        "m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct · random 128→32 @ c4",
        "m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct · random 1024→128 @ c4",
    ]
    (parting,) = [line for line in ax.get_lines() if list(line.get_ydata()) == [1.5, 1.5]]
    assert parting.get_linestyle() == "-"  # between the two workloads' bars


def test_nothing_priced_on_its_instance_is_no_cost_plot() -> None:
    assert plots.cost_at_slo([_point(host=LOCAL)], Limits()) is None
    assert plots.cost_at_slo([_point(usd_per_hour=None)], Limits()) is None


def test_version_trend_is_one_line_per_configuration_across_versions_from_zero() -> None:
    rows = [
        _point(version="0.32.0", level=4, tokens_per_s=130),
        _point(version="0.9.1", level=4, tokens_per_s=110),  # semantic order: 0.9.1 before 0.32.0
        _point(version="0.32.0", level=4, tokens_per_s=150, host=LOCAL),
    ]
    plot = plots.version_trend_figure(rows, Limits())
    assert plot is not None
    (ax,) = plot.figure.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.9.1", "0.32.0"]
    instance, local = ax.get_lines()
    assert instance.get_label() == "m8g.xlarge · TP1 · Qwen2.5-0.5B-Instruct"
    assert (list(instance.get_xdata()), list(instance.get_ydata())) == ([0, 1], [110, 130])
    assert local.get_label().endswith("(local host)") and list(local.get_xdata()) == [1]
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 150


@pytest.mark.parametrize("name", sorted(plots.PLOTS))
def test_svg_is_xml_with_hover_ids_and_the_same_bytes_each_time(name: str) -> None:
    _title, fn, _source = plots.PLOTS[name]
    rows = _curve(model="org/<script>x</script>") + _curve(version="0.31.0")
    # Each a configuration of a quantization matrix (the cost-quality plot draws only those).
    graded = {
        "quality_reference": MODEL,
        "quality_gate": "pass",
        "accuracy_ratio": 1.0,
        "on_pareto_front": True,
    }
    rows = [r | graded | {"instance_type": "m8g.xlarge"} for r in rows]
    svg = fn(rows, Limits())
    assert svg is not None and svg == fn(rows, Limits())
    assert "<script" not in svg and "dc:date" not in svg
    root = ET.fromstring(svg)
    hovers = [el.text for el in root.iter("{http://www.w3.org/2000/svg}title")]
    configuration = "m8g.xlarge · TP1" if name == "version_trend" else "m8g.xlarge · vLLM 0.32.0 · TP1"
    assert f"org/<script>x</script>\n{configuration}\nrandom 128→32\nhost: instance" in hovers


def test_throughput_svg_carries_the_slo_label() -> None:
    svg = plots.throughput_vs_latency(_curve(), Limits())
    assert svg is not None
    texts = "".join(ET.fromstring(svg).itertext())
    assert "SLO 2000 ms" in texts and "SLO 50 ms" in texts


def test_no_points_no_plots() -> None:
    assert all(fn([], Limits()) is None for _title, fn, _source in plots.PLOTS.values())


def _with_bounds(p: dict[str, Any], column: str, low: float | None, high: float | None) -> dict[str, Any]:
    return p | {f"{column}_low": low, f"{column}_high": high}


def test_error_bars_are_the_intervals_and_a_missing_bound_draws_none() -> None:
    """The latency panel's bars span each point's 95% interval; no interval, no bar; the curve as before."""
    first, second, third = _curve()
    rows = [
        _with_bounds(_with_bounds(first, "p99_ttft_ms", 250, 380), "output_throughput", 36, 44),
        _with_bounds(second, "p99_ttft_ms", 1000, None),  # one-sided: a bar down to 1000 only
        third,
    ]
    ((ttft, *_),) = _latency_axes(rows)
    (curve,) = _curves_on(ttft)
    assert list(curve.get_ydata()) == [300, 1200, 4800]  # the estimates, as before
    segments = [seg.tolist() for c in ttft.collections for seg in c.get_segments() if len(seg) == 2]
    assert [[40.0, 250.0], [40.0, 380.0]] in segments  # the first point's TTFT interval, vertical
    assert [[36.0, 300.0], [44.0, 300.0]] in segments  # and its throughput interval, horizontal
    assert [[120.0, 1000.0], [120.0, 1200.0]] in segments  # one-sided: from the low bound to the estimate
    assert not any(seg[0][0] == 180.0 and seg[0] != seg[1] for seg in segments)  # the third has none
    assert not [c for c in _latency_axes(_curve())[0][0].collections if len(c.get_segments())]
