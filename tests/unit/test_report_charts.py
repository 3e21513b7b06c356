"""The report's charts, read from their Vega-Lite specs' data: axes from zero, SLO lines, one series per
configuration, local hosts apart, intervals as bars, one colour per configuration across charts, the
explorable charts' filters, the same bytes each time; the trends' points campaign by campaign."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from accelbench.report import charts
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.charts import bundle, palette
from accelbench.report.charts.cost import cost_at_slo, frontier
from accelbench.report.charts.latency import LOG_SCALE_SPREAD, throughput_vs_latency
from accelbench.report.charts.spec import SERIES, Spec
from accelbench.report.charts.versions import version_trend

from tests.support.report_data import PRICES, run_row

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
        "point_id": f"{instance}|{version}|{lengths}|{host}|{level}",
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


def _data(spec: Spec | None) -> list[dict[str, Any]]:
    assert spec is not None
    (rows,) = spec["datasets"].values()
    return rows


def _layer(spec: Spec, mark: str) -> Spec:
    return next(layer for layer in spec["spec"]["layer"] if layer.get("mark", {}).get("type") == mark)


def test_latency_panels_start_at_zero_and_hold_every_point() -> None:
    spec = throughput_vs_latency(_curve() + _curve(instance="m8g.2xlarge"), Limits())
    assert spec is not None
    points = _layer(spec, "point")["encoding"]
    assert points["x"]["scale"] == {"zero": True} and points["y"]["scale"] == {"zero": True}
    data = _data(spec)
    assert len(data) == 2 * 3 * 3  # two configurations, three levels, three latencies
    assert {d["latency"] for d in data} == {"p99 TTFT", "p99 TPOT", "p99 E2EL"}
    assert spec["facet"]["column"]["sort"] == ["p99 TTFT", "p99 TPOT", "p99 E2EL"]


def test_slo_is_a_dashed_line_at_its_value_with_its_label_and_absent_without_one() -> None:
    spec = throughput_vs_latency(_curve(), Limits(ttft_p99_ms=2000, tpot_p99_ms=50, e2el_p99_ms=None))
    assert spec is not None
    slos = {d["latency"]: d["slo"] for d in _data(spec)}
    assert slos == {"p99 TTFT": 2000, "p99 TPOT": 50, "p99 E2EL": None}  # no limit: no line, no label
    (slo_layer,) = [layer for layer in spec["spec"]["layer"] if "layer" in layer]
    rule, text = slo_layer["layer"]
    assert rule["mark"]["strokeDash"] and rule["encoding"]["y"]["field"] == "slo"
    assert {"filter": "isValid(datum.slo)"} in slo_layer["transform"]
    assert "'SLO ' + format(datum.slo, ',') + ' ms'" in json.dumps(slo_layer["transform"])
    assert text["encoding"]["text"]["field"] == "slo_text"


def test_one_series_per_configuration_named_by_configuration_and_short_model() -> None:
    rows = _curve() + _curve(version="0.31.0") + _curve(instance="m8g.2xlarge")
    data = [d for d in _data(throughput_vs_latency(rows, Limits())) if d["latency"] == "p99 TTFT"]
    assert sorted({d["series"] for d in data}) == [
        "m8g.2xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct",
        "m8g.xlarge · vLLM 0.31.0 · TP1 · Qwen2.5-0.5B-Instruct",
        "m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct",
    ]
    assert all(sum(d["series"] == s for d in data) == 3 for s in {d["series"] for d in data})


def test_two_workloads_are_two_rows_by_lengths_not_label_text() -> None:
    spec = throughput_vs_latency(_curve(lengths=(4096, 512)) + _curve(lengths=(128, 32)), Limits())
    assert spec is not None
    assert spec["facet"]["row"]["sort"] == ["random 128→32", "random 4096→512"]
    xs = [d["x"] for d in _data(spec) if d["workload"] == "random 4096→512" and d["latency"] == "p99 TTFT"]
    assert xs == [40.0, 120.0, 180.0]


def test_local_series_are_dashed_grey_and_say_so() -> None:
    spec = throughput_vs_latency(_curve() + _curve(host=LOCAL), Limits())
    charts_specs = {"t": spec}
    palette.paint(charts_specs.values())
    assert spec is not None
    by_series = {d["series"]: d for d in _data(spec)}
    local = "m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct (local host)"
    assert by_series[local]["where"] == "local host"
    line = _layer(spec, "line")["encoding"]
    assert line["strokeDash"]["scale"]["range"][2] == [4, 3]  # local host: dashed
    scale = line["color"]["scale"]
    colour = dict(zip(scale["domain"], scale["range"], strict=True))
    assert colour[local] in palette.LOCAL_GREYS
    assert colour["m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct"] in palette.OKABE_ITO


def test_cpu_next_to_gpu_is_drawn_on_a_log_axis_that_says_so() -> None:
    gpu = [
        p | {"output_throughput": p["output_throughput"] * (LOG_SCALE_SPREAD + 30)}
        for p in _curve(instance="g6e.xlarge")
    ]
    spec = throughput_vs_latency(_curve() + gpu, Limits())
    assert spec is not None
    x = _layer(spec, "point")["encoding"]["x"]
    assert x["scale"] == {"type": "log"} and "log scale" in x["title"]


def _with_bounds(p: dict[str, Any], column: str, low: float | None, high: float | None) -> dict[str, Any]:
    return p | {f"{column}_low": low, f"{column}_high": high}


def test_error_bars_are_the_intervals_and_a_missing_bound_draws_none() -> None:
    first, second, third = _curve()
    rows = [
        _with_bounds(_with_bounds(first, "p99_ttft_ms", 250, 380), "output_throughput", 36, 44),
        _with_bounds(second, "p99_ttft_ms", 1000, None),  # one-sided: a bar down to 1000 only
        third,
    ]
    ttft = [d for d in _data(throughput_vs_latency(rows, Limits())) if d["latency"] == "p99 TTFT"]
    assert [d["y"] for d in ttft] == [300, 1200, 4800]  # the estimates
    assert (ttft[0]["y_low"], ttft[0]["y_high"]) == (250, 380) and (ttft[0]["x_low"], ttft[0]["x_high"]) == (
        36,
        44,
    )
    assert (ttft[1]["y_low"], ttft[1]["y_high"]) == (1000, 1200)  # from the low bound to the estimate
    assert ttft[2]["y_low"] is None and ttft[2]["x_low"] is None  # no interval: no bar
    assert ttft[0]["latency_text"] == "p99 TTFT 300 ms (95% interval 250\u2013380)"
    assert ttft[1]["latency_text"] == "p99 TTFT 1,200 ms (95% interval ≥ 1,000)"
    assert ttft[0]["throughput_text"] == "40 tokens/s (95% interval 36\u201344)"


def test_cost_leaves_out_local_points_and_puts_the_cheapest_first() -> None:
    rows = [
        _point(instance="m8g.2xlarge", level=4, tokens_per_s=120, usd_per_hour=0.36),
        _point(host=LOCAL, level=4, tokens_per_s=500),
        _point(level=4, tokens_per_s=120, usd_per_hour=0.18, spot_usd_per_hour=0.07),
    ]
    rows[1]["on_demand_usd_per_1m_output_tokens"] = 0.01  # even priced by mistake, a local point stays out
    spec = cost_at_slo(rows, Limits())
    data = _data(spec)
    bars = [d["bar"] for d in sorted(data, key=lambda d: d["rank"])]
    assert list(dict.fromkeys(bars)) == [
        "m8g.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct @ c4",
        "m8g.2xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct @ c4",
    ]
    # 0.18 USD/h at 120 tokens/s: 0.42 per 1M; spot 0.16; the 2xlarge has no spot price: no bar
    assert sorted(d["label"] for d in data) == ["0.162 spot", "0.4167 on-demand", "0.8333 on-demand"]
    assert spec is not None and spec["spec"]["layer"][0]["encoding"]["x"]["scale"]["domain"][0] == 0
    assert "p99 TTFT ≤ 2000 ms, p99 TPOT ≤ 50 ms" in spec["title"]["text"]


def test_cost_bars_rank_within_one_workload_never_across_and_an_import_says_so() -> None:
    gpu = _point(instance="g6e.xlarge", level=16, tokens_per_s=3600, usd_per_hour=1.861)
    gpu["execution_mode"] = "imported"
    rows = [
        _point(level=4, tokens_per_s=120, usd_per_hour=0.18),  # 0.42 USD per 1M on 128→32
        _point(lengths=(1024, 128), level=4, tokens_per_s=400, usd_per_hour=0.18),  # 0.125: other workload
        gpu,  # 0.14 on 128→32
    ]
    spec = cost_at_slo(rows, Limits())
    assert spec is not None
    assert spec["facet"]["row"]["sort"] == [
        "Qwen2.5-0.5B-Instruct · random 128→32",
        "Qwen2.5-0.5B-Instruct · random 1024→128",
    ]  # one panel per workload: bars of different workloads are never ranked against each other
    first = min(_data(spec), key=lambda d: d["rank"])
    assert first["bar"] == "g6e.xlarge · vLLM 0.32.0 · TP1 · Qwen2.5-0.5B-Instruct @ c16 (imported)"


def test_nothing_priced_on_its_instance_is_no_cost_chart() -> None:
    assert cost_at_slo([_point(host=LOCAL)], Limits()) is None
    assert cost_at_slo([_point(usd_per_hour=None)], Limits()) is None
    assert frontier([_point(host=LOCAL)], Limits()) is None


def test_version_trend_is_one_line_per_configuration_across_versions_from_zero() -> None:
    rows = [
        _point(version="0.32.0", level=4, tokens_per_s=130),
        _point(version="0.9.1", level=4, tokens_per_s=110),  # semantic order: 0.9.1 before 0.32.0
        _point(version="0.32.0", level=4, tokens_per_s=150, host=LOCAL),
    ]
    spec = version_trend(rows, Limits())
    assert spec is not None
    assert _layer(spec, "line")["encoding"]["x"]["sort"] == ["0.9.1", "0.32.0"]
    by_series: dict[str, list[tuple[str, float]]] = {}
    for d in _data(spec):
        by_series.setdefault(d["series"], []).append((d["version"], d["y"]))
    assert by_series["m8g.xlarge · TP1 · Qwen2.5-0.5B-Instruct"] == [("0.32.0", 130), ("0.9.1", 110)]
    assert by_series["m8g.xlarge · TP1 · Qwen2.5-0.5B-Instruct (local host)"] == [("0.32.0", 150)]
    assert _layer(spec, "line")["encoding"]["y"]["scale"] == {"zero": True}


def test_the_frontier_is_explorable_by_tier_family_model_quantization_and_version() -> None:
    rows = [
        _point(level=4, tokens_per_s=120) | {"on_frontier": True},
        _point(instance="c8g.xlarge", version="0.31.0", level=4, tokens_per_s=100) | {"quantization": "w8a8"},
        _point(instance="g6e.xlarge", level=16, tokens_per_s=3600, usd_per_hour=1.861)
        | {"accelerator_type": "gpu", "on_frontier": True},
    ]
    spec = frontier(rows, Limits())
    assert spec is not None
    pickers = {p["name"]: p["bind"]["options"] for p in spec["params"]}
    assert pickers == {
        "pick_latency": ["p99 TTFT", "p99 TPOT", "p99 E2EL"],
        "pick_tier": [None, "cpu", "gpu"],
        "pick_family": [None, "c8g", "g6e", "m8g"],
        "pick_quantization": [None, "none", "w8a8"],
        "pick_vllm": [None, "0.31.0", "0.32.0"],
    }  # one model: no model dropdown
    assert {"filter": "pick_tier === null || datum.tier === pick_tier"} in spec["transform"]
    fronts = {d["series"]: d["front"] for d in _data(spec)}
    assert sorted(fronts.values()).count("on the frontier") == 2


def _hostile_rows() -> list[dict[str, Any]]:
    rows = _curve(model="org/<script>x</script>") + _curve(version="0.31.0")
    graded = {
        "quality_reference": MODEL,
        "quality_gate": "pass",
        "accuracy_ratio": 1.0,
        "on_pareto_front": True,
    }
    return [r | graded for r in rows]


@pytest.mark.parametrize("name", sorted(charts.CHARTS))
def test_a_chart_is_the_same_bytes_each_time_and_cannot_end_its_script(name: str) -> None:
    build = charts.CHARTS[name].build
    rows = _hostile_rows()
    if name == "trends":
        rows = [r | {"series_id": "s", "campaign_id": "c", "campaign_date": "2026-11-10"} for r in rows]
    spec = build(rows, Limits())
    assert spec is not None
    text = bundle.spec_json(spec)
    assert text == bundle.spec_json(build(rows, Limits()))  # type: ignore[arg-type]
    assert "<" not in text and json.loads(text) == spec  # "<" as a JSON escape: the same data


def test_no_rows_no_charts() -> None:
    assert all(chart.build([], Limits()) is None for chart in charts.CHARTS.values())


def test_a_configuration_has_one_colour_in_every_chart_of_the_page() -> None:
    rows = _curve() + _curve(instance="m8g.2xlarge") + _curve(instance="c8g.xlarge", host=LOCAL)
    best = [r for r in rows if r["level_value"] == 4]
    specs = [throughput_vs_latency(rows, Limits()), cost_at_slo(best, Limits()), frontier(best, Limits())]
    palette.paint(specs)
    seen: dict[str, set[str]] = {}
    for spec in specs:
        text = json.dumps(spec)
        for scale in _colour_scales(json.loads(text)):
            for name, colour in zip(scale["domain"], scale["range"], strict=True):
                seen.setdefault(name, set()).add(colour)
    assert seen and all(len(colours) == 1 for colours in seen.values()), seen
    assert len({c for cs in seen.values() for c in cs}) == len(seen)  # and no two share one


def _colour_scales(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if node.get("field") == SERIES and "scale" in node:
            found.append(node["scale"])
        for value in node.values():
            found += _colour_scales(value)
    elif isinstance(node, list):
        for item in node:
            found += _colour_scales(item)
    return found


def test_the_bundle_is_the_installed_vl_converts() -> None:
    """The page's Vega is the one the static SVGs are drawn with (scripts/vega_bundle.py writes it)."""
    from importlib import resources

    packed = resources.files("accelbench.report.charts").joinpath(bundle.BUNDLE).read_bytes()
    first = gzip.decompress(packed)[:200].decode().splitlines()[0]
    assert first == f"/* {bundle.versions()} (vl-convert-python) */"


def test_a_static_svg_is_drawn_without_a_browser() -> None:
    spec = throughput_vs_latency(_curve(), Limits())
    assert spec is not None
    svg = bundle.static_svg(spec)
    assert svg.startswith("<svg") and "SLO 2,000 ms" in svg and "p99 TTFT" in svg


def test_trends_are_each_campaigns_best_level_with_version_and_price_changes_named() -> None:
    runs = []
    for campaign, day, version in (("c1", 10, "0.32.0"), ("c2", 17, "0.32.0"), ("c3", 24, "0.33.0")):
        for repeat in range(2):
            runs.append(
                run_row("m8g.xlarge", "cpu", 1, repeat, 100 + repeat, 150, 100, 20)
                | {
                    "campaign_id": campaign,
                    "vllm_version": version,
                    "started_at": datetime(2026, 11, day, 8, repeat, tzinfo=UTC),
                    "run_id": f"{campaign}-{repeat}",
                    "date": f"2026-11-{day}",
                }
            )
    runs.append(
        run_row("g6e.xlarge", "gpu", 16, 0, 3600, 4000, 300, 15) | {"run_id": "g", "date": "2026-11-10"}
    )
    tables = build_report(runs, PRICES, [], ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50))
    trend = tables["trends"]
    assert [(r["campaign_id"], r["campaign_date"], r["vllm_version"]) for r in trend] == [
        ("c1", "2026-11-10", "0.32.0"),
        ("c2", "2026-11-17", "0.32.0"),
        ("c3", "2026-11-24", "0.33.0"),
    ]  # the g6e.xlarge ran in one campaign: no trend
    assert len({r["series_id"] for r in trend}) == 1
    # PRICES: m8g.xlarge on-demand 0.18 USD/h until 2026-11-12, 0.20 after
    assert [r["price_change"] for r in trend] == [None, "0.18 → 0.2 USD/h on-demand", None]
    assert [r["vllm_change"] for r in trend] == [None, None, "0.32.0 → 0.33.0"]
    assert all(r["on_demand_usd_per_1m_output_tokens_low"] is not None for r in trend)  # two repeats each
    spec = charts.CHARTS["trends"].build(trend, ReportFilter())
    data = _data(spec)
    assert len(data) == 9 and {d["change"] for d in data} == {"none", "price", "vLLM version"}
