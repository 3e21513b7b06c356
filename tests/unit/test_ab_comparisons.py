"""A/B comparisons (issue 48, point 5): the request's `variants` checked with errors naming the field, their
servers planned in interleaved rounds, and the comparison judged by the one function the version deltas and
the regression gate use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from accelbench.campaign.estimate import request_servers
from accelbench.campaign.plan import parse_request
from accelbench.campaign.request import CampaignRequest
from accelbench.campaign.variants import rounds_words, split_repeats
from accelbench.core.problems import PlanningError
from accelbench.report.noise import Sides, compare_pairs
from accelbench.report.points import level_points
from accelbench.report.records import records
from accelbench.report.samples import Samples
from accelbench.report.tables.ab_comparisons import AB_JUDGED, AB_METRICS, ab_comparisons
from accelbench.report.tables.version_deltas import JUDGED, version_deltas

from tests.support.planning import plan, problems
from tests.support.report_data import PRICES, run_row

SLOWER = "--max-num-active-seqs=2"
AB = [{"name": "a"}, {"name": "b", "extra_engine_args": [SLOWER]}]


def _fields(**more: Any) -> dict[str, Any]:
    return {"instance_types": ["m8g.xlarge"], "concurrency": [1, 4], "repeats": 5, "rounds": 2} | more


# ---- the request ------------------------------------------------------------------------------------------


def _invalid(**fields: Any) -> dict[str, str]:
    """What the request's own checks refuse (the plan task's parse_request): field -> why."""
    with pytest.raises(PlanningError) as err:
        parse_request({"model": "local/tiny-llama"} | _fields(**fields))
    return {p.field: p.message for p in err.value.problems}


def test_variants_are_checked_naming_the_field() -> None:
    assert "two variants or more" in _invalid(variants=[{"name": "a"}])["variants"]
    assert "b more than once" in _invalid(variants=[{"name": "b"}, {"name": "b"}])["variants"]
    shared = _invalid(variants=[{"name": "a"}, {"name": "b", "concurrency": [2], "repeats": 3}])
    assert "concurrency, repeats: the variants share the campaign's workload" in shared["variants[1]"]
    assert "pattern" in _invalid(variants=[{"name": "a b"}, {"name": "c"}])["variants[0].name"]


def test_what_a_comparison_cannot_be_combined_with_is_refused_all_at_once() -> None:
    found = problems(
        **_fields(
            instance_types=["m8g.xlarge", "c8g.2xlarge"],
            repeats=1,
            load_mode="search",
            prompts_per_level=1000,
            quantized_models=["local/tiny-llama-w8a8"],
            variants=[{"name": "a"}, {"name": "b", "extra_engine_args": ["--trust-remote-code"]}],
        )
    )
    assert "runs its variants on one instance type" in found["instance_types"]
    assert "a search chooses each variant's own loads" in found["load_mode"]
    assert "separate campaigns" in found["quantized_models"]
    assert "at most repeats=1" in found["rounds"]
    # A variant's own problem names the variant's field, not the campaign's.
    assert "--trust-remote-code is not allowed" in found["variants[1].extra_engine_args[0]"]
    assert "extra_engine_args[0]" not in found


def test_an_aa_comparison_is_allowed() -> None:
    specs = plan(**_fields(variants=[{"name": "a"}, {"name": "a-again"}])).specs
    assert [s.variant.name for s in specs if s.variant] == ["a", "a-again", "a", "a-again"]
    first = [s for s in specs if s.variant and s.variant.round == 0]
    assert first[0].matrix_key == first[1].matrix_key  # the same server and load
    assert first[0].spec_id != first[1].spec_id  # two servers, two sets of run ids


# ---- the plan: interleaved rounds --------------------------------------------------------------------------


def test_the_variants_servers_are_planned_in_interleaved_rounds_with_the_repeats_split() -> None:
    specs = plan(**_fields(variants=AB)).specs
    marks = [s.variant for s in specs]
    assert all(m is not None for m in marks)
    order = [
        (m.name, m.round, m.first_repeat, s.load.repeats) for m, s in zip(marks, specs, strict=True) if m
    ]
    # 5 repeats in 2 rounds: 3 then 2, numbered on (round 2 measures repeats 3 and 4).
    assert order == [("a", 0, 0, 3), ("b", 0, 0, 3), ("a", 1, 3, 2), ("b", 1, 3, 2)]
    assert {m.comparison for m in marks if m} == {"a vs b"}
    assert [s.server.extra_engine_args for s in specs] == [(), (SLOWER,), (), (SLOWER,)]
    assert len({s.spec_id for s in specs}) == 4
    words = rounds_words(specs)
    assert words is not None and "servers in this order: a1, b1, a2, b2" in words and "3, 2" in words
    assert split_repeats(4, 4) == [1, 1, 1, 1] and split_repeats(7, 3) == [3, 2, 2]


def test_a_campaign_without_variants_plans_and_dumps_as_before() -> None:
    (spec,) = plan(instance_types=["m8g.xlarge"]).specs
    assert spec.variant is None and spec.first_repeat == 0
    assert "variant" not in spec.model_dump()  # its spec_id stays what it was
    assert rounds_words([spec]) is None


def test_the_estimate_counts_a_server_per_variant_and_round() -> None:
    req = CampaignRequest(model="local/tiny-llama", **_fields(variants=[*AB, {"name": "c"}]))
    servers = request_servers(req)
    assert len(servers) == 3 * 2 and {load.repeats for _, loads in servers for load in loads} == {3}


# ---- the comparison ----------------------------------------------------------------------------------------


def _variant_runs(
    comparison: str, variant: str, throughputs: Sequence[float], ttft_ms: float, rng: np.random.Generator
) -> tuple[list[dict[str, Any]], dict[str, dict[str, np.ndarray]]]:
    """A variant's repeats at one level, each with 200 requests' samples around `ttft_ms`."""
    rows, samples = [], {}
    for i, out in enumerate(throughputs):
        run_id = f"{variant}-{i}"
        rows.append(
            run_row(
                "m8g.xlarge",
                "cpu",
                8,
                i,
                out,
                out + 50,
                ttft_ms,
                20,
                run_id=run_id,
                ab_comparison=comparison,
                variant=variant,
                variant_round=i % 2,
            )
        )
        host = rng.normal(0, 0.02)  # each repeat's host: a small shift of every latency
        samples[run_id] = {
            m: np.exp(rng.normal(np.log(ms) + host, 0.3, 200))
            for m, ms in (("ttft", ttft_ms), ("tpot", 20.0), ("e2el", ttft_ms + 20 * 31))
        }
    return rows, samples


def _comparison(
    variants: dict[str, tuple[Sequence[float], float]], seed: int = 0
) -> tuple[list[dict[str, Any]], Samples]:
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    by_run: dict[str, dict[str, np.ndarray]] = {}
    for name, (outs, ttft) in variants.items():
        found, samples = _variant_runs(" vs ".join(variants), name, outs, ttft, rng)
        rows += found
        by_run |= samples
    return rows, Samples(by_run)


def test_a_known_slowdown_is_flagged_with_an_interval_excluding_zero() -> None:
    runs, samples = _comparison({"a": ((100, 102, 99, 101), 50.0), "b": ((60, 61, 59, 60), 80.0)})
    (row,) = records(ab_comparisons(runs, samples))
    assert (row["baseline"], row["variant"], row["level"]) == ("a", "b", "concurrency 8")
    assert row["ab_verdict"] == "differs" and row["repeats_baseline"] == row["repeats_variant"] == 4
    assert row["output_throughput_verdict"] == "regression" and row["output_throughput_change_high"] < 0
    change = (60 * 61 * 59 * 60) ** 0.25 / (100 * 102 * 99 * 101) ** 0.25 - 1  # the ratio of geometric means
    assert row["output_throughput_change"] == pytest.approx(change)
    assert row["p50_ttft_ms_verdict"] == "regression" and row["p50_ttft_ms_change_low"] > 0.4  # +60%
    assert row["p99_tpot_ms_verdict"] in ("no change", "undecided")  # the same per-token time
    assert row["differs"] == "nothing (A/A: the host's self-check)"  # the rows differ in no variant column


def test_an_aa_comparison_flags_nothing_and_says_what_it_resolves() -> None:
    runs, samples = _comparison({"a": ((100, 102, 99, 101), 50.0), "a-again": ((101, 100, 99, 102), 50.0)})
    (row,) = records(ab_comparisons(runs, samples))
    verdicts = {m: row[f"{m}_verdict"] for m in AB_METRICS}
    assert set(verdicts.values()) <= {"no change", "undecided"}, verdicts
    assert row["ab_verdict"] in ("no difference", "undecided")
    assert all(row[f"{m}_q"] > 0.05 for m in AB_METRICS)
    for m in AB_METRICS:
        if verdicts[m] == "undecided":
            assert "no change beyond" in row[f"{m}_finding"]


def test_every_later_variant_is_compared_with_the_first_and_other_rows_are_left_out() -> None:
    runs, samples = _comparison(
        {"a": ((100, 101), 50.0), "b": ((80, 81), 50.0), "c": ((100, 100), 50.0)}, seed=1
    )
    recheck = dict(runs[0], run_id="a-recheck", recheck=True, output_throughput=10.0)
    plain = dict(runs[0], run_id="plain", ab_comparison=None, variant=None)
    found = ab_comparisons([*runs, recheck, plain], samples)
    assert [(r.baseline, r.variant) for r in found] == [("a", "b"), ("a", "c")]
    assert all(r.repeats_baseline == 2 for r in found)  # neither the recheck nor the plain run
    drifted = [dict(r, host_drift="the host drifted") if r["variant"] == "b" else r for r in runs]
    b = ab_comparisons(drifted, samples)[0]
    assert b.ab_verdict == "undecided" and "the host drifted" in str(b.output_throughput.finding)


def test_the_version_deltas_and_the_ab_table_judge_by_the_same_function() -> None:
    """One source of truth: the same repeats, labelled as two versions and as two variants, give the same
    change and interval for every metric both judge, and compare_pairs gives them directly."""
    runs, samples = _comparison({"a": ((100, 102, 99), 50.0), "b": ((90, 91, 89), 55.0)}, seed=2)
    as_versions = [dict(r, vllm_version="0.31.0" if r["variant"] == "a" else "0.32.0") for r in runs]
    (delta,) = version_deltas(level_points(as_versions, PRICES, "us-east-1"), as_versions, samples)
    (ab,) = ab_comparisons(runs, samples)
    ids = [[r["run_id"] for r in runs if r["variant"] == v] for v in ("a", "b")]
    (direct,) = compare_pairs([Sides({"run_ids": ids[0]}, {"run_ids": ids[1]})], JUDGED, runs, samples)
    for metric, _ in JUDGED:
        shown = (delta.change(metric).change, ab.change(metric).change, direct.changes[metric].change)
        assert shown[0].estimate is not None
        for c in shown[1:]:  # the A/B table tests over servers: here a repeat each, the same t test
            assert (c.estimate, c.low, c.high) == pytest.approx(
                (shown[0].estimate, shown[0].low, shown[0].high)
            )


def _servers(
    variant: str,
    shifts: Sequence[float],
    ttft_ms: float,
    rng: np.random.Generator,
    comparison: str = "a vs b",
) -> tuple[list[dict[str, Any]], dict[str, dict[str, np.ndarray]]]:
    """A variant's servers (one per round, run ids "<campaign>/<spec>/c8-r<k>"), two repeats each, every
    latency of a server scaled by its host's shift (its throughput divided by it)."""
    rows, samples = [], {}
    for k, shift in enumerate(shifts):
        for j in range(2):
            run_id = f"ab/{variant}-server{k}/c8-r{2 * k + j}"
            out = 100.0 / shift * math.exp(rng.normal(0, 0.005))
            rows.append(
                run_row(
                    "m8g.xlarge",
                    "cpu",
                    8,
                    2 * k + j,
                    out,
                    out + 50,
                    ttft_ms * shift,
                    20,
                    run_id=run_id,
                    ab_comparison=comparison,
                    variant=variant,
                    variant_round=k,
                )
            )
            samples[run_id] = {
                m: np.exp(rng.normal(np.log(ms * shift), 0.3, 200))
                for m, ms in (("ttft", ttft_ms), ("tpot", 20.0), ("e2el", ttft_ms + 20 * 31))
            }
    return rows, samples


def test_an_ab_pair_of_servers_in_rounds_is_tested_over_its_servers() -> None:
    """Each side two servers (two rounds) whose hosts differ by +-15% (CI's lanes beside them), the repeats
    of one server alike: over repeats the A/A pair would be flagged, over servers it is not; a real 3x
    slowdown still is, with an interval excluding 0."""
    rng = np.random.default_rng(5)
    a, a_samples = _servers("a", (1.0, 0.87), 50.0, rng)
    same, same_samples = _servers("b", (1.15, 1.12), 50.0, rng)
    samples = Samples(a_samples | same_samples)
    (row,) = records(ab_comparisons([*a, *same], samples))
    assert "t test over servers, 2 + 2" in row["change_method"]
    assert row["ab_verdict"] in ("no difference", "undecided"), [row[f"{m}_finding"] for m in AB_METRICS]
    ids = [[r["run_id"] for r in side] for side in (a, same)]
    (by_repeat,) = compare_pairs(
        [Sides({"run_ids": ids[0]}, {"run_ids": ids[1]})], AB_JUDGED, [*a, *same], samples
    )
    assert any(c.verdict == "regression" for c in by_repeat.changes.values())  # the repeats' test is fooled
    slow, slow_samples = _servers("b", (3.0, 2.9), 50.0, rng)
    (row,) = records(ab_comparisons([*a, *slow], Samples(a_samples | slow_samples)))
    assert row["p50_ttft_ms_verdict"] == "regression" and row["p50_ttft_ms_change_low"] > 0


def test_the_servers_spread_is_pooled_over_every_variant_of_the_comparison() -> None:
    """Three variants of two servers each: b's test against a takes the servers' spread of all three (6
    servers, 3 df: t = 3.18), not its own pair's alone (2 df: t = 4.30), so its interval narrows."""
    rng = np.random.default_rng(7)
    three = "a vs a-again vs b"
    a, a_samples = _servers("a", (1.0, 0.9), 50.0, rng, three)
    again, again_samples = _servers("a-again", (1.0, 0.98), 50.0, rng, three)
    b, b_samples = _servers("b", (2.0, 2.1), 50.0, rng, three)
    samples = Samples(a_samples | again_samples | b_samples)
    rows = {r["variant"]: r for r in records(ab_comparisons([*a, *again, *b], samples))}
    assert "pooled over 6 servers of 3 variants: 3 df" in rows["b"]["change_method"]
    pair = [dict(r, ab_comparison="a vs b") for r in (*a, *b)]
    (alone,) = records(ab_comparisons(pair, samples))
    assert (
        "t test over servers, 2 + 2 (each the geometric mean of its repeats): 2 df" in alone["change_method"]
    )

    def width(row: dict[str, Any]) -> float:
        return math.log1p(row["p50_ttft_ms_change_high"]) - math.log1p(row["p50_ttft_ms_change_low"])

    assert rows["b"]["p50_ttft_ms_change"] == pytest.approx(alone["p50_ttft_ms_change"])
    assert width(rows["b"]) < 0.8 * width(alone)
    assert rows["b"]["p50_ttft_ms_verdict"] == "regression"
    assert rows["a-again"]["ab_verdict"] in ("no difference", "undecided")
