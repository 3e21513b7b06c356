"""Quality beside cost in the report: a quantized checkpoint is compared with its reference model's
configurations, the headline skips a cheaper configuration that fails the quality gate (a case worked out by
hand), and the quality table marks the cost-quality Pareto front."""

from __future__ import annotations

import pytest
from accelbench.report.build import ReportFilter, build_report

from tests.support.report_data import PRICES, run_row

BF16, W8A8, W4 = "org/model", "org/model-w8a8", "org/model-w4a16"


def _runs(model: str, spec: str, out: float) -> list[dict]:
    """Three repeats of one level on m8g.xlarge, the newest on 2026-11-12 (0.20 USD/h on-demand from then)."""
    return [
        run_row("m8g.xlarge", "cpu", 1, r, out, out + 50, 100, 20, model=model, run_id=f"c1/{spec}/c1-r{r}")
        | {"spec_id": spec}
        for r in range(3)
    ]


def _quality(
    spec: str, model: str, ratio: tuple[float, float, float], kl: tuple[float, float, float]
) -> dict:
    return {
        "date": "2026-11-12",
        "campaign_id": "c1",
        "spec_id": spec,
        "model": model,
        "reference_model": BF16,
        "is_reference": model == BF16,
        "accelerator_type": "cpu",
        "vllm_version": "0.32.0",
        "instance_type": "m8g.xlarge",
        "accuracy_ratio": ratio[0],
        "accuracy_ratio_low": ratio[1],
        "accuracy_ratio_high": ratio[2],
        "kl_mean": kl[0],
        "kl_mean_low": kl[1],
        "kl_mean_high": kl[2],
        "server_quantization": None if model == BF16 else "CompressedTensorsW8A8Int8",
    }


def _report(w8a8_ratio: tuple[float, float, float]) -> dict[str, list[dict]]:
    runs = _runs(BF16, "s-bf16", 100) + _runs(W8A8, "s-w8a8", 150) + _runs(W4, "s-w4", 200)
    quality = [
        _quality("s-bf16", BF16, (1.0, 1.0, 1.0), (0.0007, 0.0006, 0.0008)),
        _quality("s-w8a8", W8A8, w8a8_ratio, (0.05, 0.045, 0.062)),
        _quality("s-w4", W4, (0.9, 0.85, 0.95), (0.4, 0.35, 0.45)),  # fails both limits
    ]
    flt = ReportFilter(ttft_p99_ms=60_000, tpot_p99_ms=60_000)
    return build_report(runs, PRICES, [], flt, quality=quality)


def test_the_headline_skips_a_cheaper_configuration_that_fails_the_quality_gate() -> None:
    # By hand: m8g.xlarge at 0.20 USD/h (PRICES' newest on-demand before the runs) = 200 USD per 1e6 s;
    # at 100, 150 and 200 output tokens/s, 1M output tokens take 1e4, 6,667 and 5,000 s: 0.5556, 0.3704
    # and 0.2778 USD. W4A16 is cheapest and fails the gate; W8A8 is next and passes: it is the answer.
    tables = _report((0.995, 0.992, 0.999))
    (answer,) = tables["headline"]
    assert answer["model"] == BF16 and answer["configurations_measured"] == 3  # one comparison, quantized too
    assert "model-w8a8" in answer["configuration"] or answer[
        "on_demand_usd_per_1m_output_tokens"
    ] == pytest.approx(0.20 / 3600 / 150 * 1e6)
    assert answer["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.20 / 3600 / 150 * 1e6, rel=1e-6)
    assert "fail" in answer["quality_skipped"] and "mean KL 0.4000" in answer["quality_skipped"]
    # The quality table: each with its cost and gate; the front holds W4A16 (cheapest) and bf16 (most
    # accurate, ratio 1.0 above W8A8's 0.995); W8A8 is on it too (cheaper than bf16, more accurate than W4).
    rows = {r["model"]: r for r in tables["quality"]}
    assert {m: r["quality_gate"] for m, r in rows.items()} == {BF16: "pass", W8A8: "pass", W4: "fail"}
    assert rows[W4]["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.20 / 3600 / 200 * 1e6, rel=1e-6)
    assert all(r["on_pareto_front"] for r in rows.values())


def test_an_undecided_gate_keeps_a_configuration_out_of_the_answer_and_says_so() -> None:
    tables = _report((0.98, 0.95, 1.01))  # the interval holds 99%: undecided, not passed
    (answer,) = tables["headline"]
    assert answer["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.20 / 3600 / 100 * 1e6, rel=1e-6)
    assert "quality undecided" in answer["quality_skipped"] and "quality fail" in answer["quality_skipped"]
    rows = {r["model"]: r for r in tables["quality"]}
    assert rows[W8A8]["quality_gate"] == "undecided"
    # W8A8 (0.98 at 0.37 USD) is beaten by nothing: on the front with W4A16 and bf16.
    assert rows[W8A8]["on_pareto_front"]


def test_the_cost_quality_chart_draws_every_configuration_and_joins_the_front() -> None:
    from accelbench.report.charts.bundle import spec_json
    from accelbench.report.charts.quality import cost_vs_quality

    rows = _report((0.995, 0.992, 0.999))["quality"]
    spec = cost_vs_quality(rows, ReportFilter())
    assert spec is not None
    data = spec["datasets"]["quality"]
    costs = sorted(r["on_demand_usd_per_1m_output_tokens"] for r in rows)
    assert [d["x"] for d in data] == pytest.approx(costs)  # every configuration, cheapest first
    assert all(d["front"] for d in data)  # the front's line joins the points on it (all three here)
    (line,) = [layer for layer in spec["spec"]["layer"] if layer["mark"]["type"] == "line"]
    assert line["transform"] == [{"filter": "datum.front"}]
    assert len({d["series"] for d in data}) == 3 and {d["gate"] for d in data} == {"pass", "fail"}
    assert "org/model-w4a16" in spec_json(spec) or "model-w4a16" in spec_json(spec)  # named in the legend


def test_an_imported_accuracy_joins_the_configuration_of_its_model_and_instance_type() -> None:
    """`accelbench import-quality` rows name a model (and an instance type): they join its points when no
    campaign measured that configuration's quality; a measured row wins over an imported one."""
    runs = _runs(BF16, "s-bf16", 100) + _runs(W8A8, "s-w8a8", 150)
    imported = _quality("imported-abc", W8A8, (0.93, 0.88, 0.98), (None, None, None)) | {"source": "imported"}
    imported |= {"campaign_id": "imported", "kl_mean": None, "kl_mean_low": None, "kl_mean_high": None}
    flt = ReportFilter(ttft_p99_ms=60_000, tpot_p99_ms=60_000)
    tables = build_report(runs, PRICES, [], flt, quality=[imported])
    rows = {r["model"]: r for r in tables["quality"]}
    assert set(rows) == {W8A8} and rows[W8A8]["quality_gate"] == "fail"  # 0.98 < 0.99: fails, KL or not
    (answer,) = tables["headline"]
    assert answer["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.20 / 3600 / 100 * 1e6, rel=1e-6)
    elsewhere = imported | {
        "instance_type": "c8g.xlarge"
    }  # another type's accuracy: not this configuration's
    assert build_report(runs, PRICES, [], flt, quality=[elsewhere])["quality"] == []
    measured = _quality("s-w8a8", W8A8, (0.995, 0.992, 0.999), (0.05, 0.045, 0.062))
    tables = build_report(runs, PRICES, [], flt, quality=[imported, measured])
    assert {r["model"]: r["quality_gate"] for r in tables["quality"]} == {W8A8: "pass"}


def test_a_points_comparison_id_is_made_again_from_its_fields() -> None:
    """The builder remakes a quantized point's comparison id from its configuration (its workload label
    is not the profile name): for an unquantized point that gives back the id it was built with."""
    from accelbench.report.points import comparison_id, level_points

    from tests.support.report_data import RUNS

    points = level_points(RUNS, PRICES, "us-east-1")
    assert points and all(comparison_id(p.config) == p.comparison_id for p in points)
