"""What a campaign cost (accelbench.lake.costs): two kubernetes servers, one on an on-demand node Karpenter
launched for its pod, one on a spot node that was already there, priced from a real catalog (SQLite) at the
price in force on their start; the summary task's figure and the report's equal the hand computation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.queries import store_prices
from accelbench.catalog.seed import upsert_instance_types
from accelbench.config import Settings
from accelbench.core.price import Price
from accelbench.core.startup_phases import Startup
from accelbench.lake.rows import startups_table
from accelbench.lake.schemas import RUNS, STARTUPS
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report
from accelbench.tiers import load_seed

CAMPAIGN, DATE = "accelbench_campaign.manual__2026-12-01", "2026-12-01"
CREATED = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
PRICES = [
    Price("r8g.xlarge", "us-east-1", "on_demand", 0.2352, datetime(2026, 11, 1, tzinfo=UTC), "pricing-api"),
    # took effect after the run: never applied to it
    Price("r8g.xlarge", "us-east-1", "on_demand", 0.3000, datetime(2026, 12, 2, tzinfo=UTC), "pricing-api"),
    Price("c8g.2xlarge", "us-east-1", "spot", 0.0890, datetime(2026, 11, 30, tzinfo=UTC), "spot-history"),
    Price("c8g.2xlarge", "us-east-1", "on_demand", 0.3190, datetime(2026, 11, 1, tzinfo=UTC), "pricing-api"),
]


def _startup(node_launch: float | None, scheduled: float, ended: float) -> Startup:
    return Startup(
        execution_mode="kubernetes",
        started_at=CREATED.isoformat(),
        ready_s=scheduled + 80,
        phases={"scheduling_s": scheduled, "image_pull_s": 30.0, "server_start_s": 50.0},
        figures={"node_launch_s": node_launch, "kubelet_pull_s": 28.5},
        method="kubernetes: test",
        ended_at=(CREATED + timedelta(seconds=ended)).isoformat(),
    )


def _row(spec: str, instance: str, capacity: str, startup: Startup) -> dict:
    values = {
        "schema_version": 11,
        "campaign_id": CAMPAIGN,
        "spec_id": spec,
        "dag_run_id": "manual__2026-12-01",
        "instance_type": instance,
        "model": "org/model",
        "vllm_version": "0.32.0",
        "execution_mode": "kubernetes",
        "capacity_type": capacity,
        "started_at": CREATED,
        "ready_s": startup.ready_s,
        "billed_s": startup.billed_s(),
    }
    return dict.fromkeys(STARTUPS.names) | values


def test_a_campaigns_cost_is_its_servers_billed_seconds_at_their_prices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from accelbench.airflow.tasks.campaign import summarize

    # Karpenter launched the on-demand node 40 s after the pod was created; the pod went 1840 s after it:
    # 1800 s billed. The spot node was there: billed from the pod's scheduling (5 s) to its deletion (3605 s).
    on_demand, spot = _startup(40.0, 70.0, 1840.0), _startup(None, 5.0, 3605.0)
    assert (on_demand.billed_s(), spot.billed_s()) == (1800.0, 3600.0)
    hand = 0.2352 * 1800 / 3600 + 0.0890 * 3600 / 3600  # 0.1176 + 0.089

    settings = Settings.from_env()
    engine = make_engine(settings.catalog.catalog_url)
    migrate(engine)
    upsert_instance_types(engine, load_seed())
    store_prices(engine, PRICES, datetime(2026, 12, 2, tzinfo=UTC))
    engine.dispose()
    lake = Lake.from_env()
    rows = [_row("s-od", "r8g.xlarge", "on-demand", on_demand), _row("s-spot", "c8g.2xlarge", "spot", spot)]
    for row in rows:
        lake.write_table("startups", startups_table([row]), "cpu", DATE, f"x--{row['spec_id']}")
        run = {"run_id": f"{row['spec_id']}/c1-r0", "campaign_id": CAMPAIGN, "spec_id": row["spec_id"]}
        run |= {"status": "ok", "instance_type": row["instance_type"], "model": "org/model"}
        lake.write_table(
            "runs", pa.Table.from_pylist([run], schema=RUNS), "cpu", DATE, f"x--{row['spec_id']}"
        )

    summary = summarize(CAMPAIGN, DATE)
    assert summary["cost_usd"] == pytest.approx(hand) and summary["unpriced_servers"] == 0
    costs = sorted(lake.read("costs").to_pylist(), key=lambda c: c["spec_id"])
    assert [(c["pricing_model"], c["usd_per_hour"], c["billed_s"]) for c in costs] == [
        ("on_demand", 0.2352, 1800.0),
        ("spot", 0.0890, 3600.0),
    ]
    assert [c["usd"] for c in costs] == [pytest.approx(0.1176), pytest.approx(0.089)]

    tables = build_report([], PRICES, [], ReportFilter(), costs=lake.read("costs").to_pylist())
    (campaign,) = tables["campaign_costs"]
    assert campaign["campaign_usd"] == pytest.approx(hand) and campaign["servers"] == 2
    assert campaign["billed_hours"] == pytest.approx(1.5) and campaign["unpriced_servers"] == 0
    assert [r["usd"] for r in tables["server_costs"]] == [pytest.approx(0.089), pytest.approx(0.1176)]


def test_a_local_server_on_a_stand_in_host_is_counted_unpriced_with_why() -> None:
    from accelbench.lake.costs import cost_row

    row = _row("s-local", "m8g.xlarge", "", _startup(None, 0.0, 60.0))
    row |= {"execution_mode": "local", "capacity_type": None, "host_instance_type": None}
    found = cost_row(row, PRICES, "us-east-1")
    assert found["usd"] is None and "not on a m8g.xlarge" in found["unpriced"]
    row |= {"execution_mode": "kubernetes", "capacity_type": "reserved"}
    assert "'reserved' has no price list" in cost_row(row, PRICES, "us-east-1")["unpriced"]


def test_max_campaign_usd_refuses_a_plan_whose_estimate_is_above_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    """Kubernetes mode, nothing measured before (the lake cannot be read: the stated figures): per server,
    the stated start-up allowance + its requests at the stated rate (their defaults), at today's on-demand
    price."""
    import json

    from accelbench.airflow.tasks.campaign import plan_benchmarks
    from airflow.sdk.exceptions import AirflowFailException

    from tests.support.kube_api import FakeKubeAPI
    from tests.support.planning import STORE

    engine = make_engine(Settings.from_env().catalog.catalog_url)
    migrate(engine)
    upsert_instance_types(engine, load_seed())
    price = Price(
        "r8g.4xlarge", "us-east-1", "on_demand", 0.9418, datetime(2026, 11, 1, tzinfo=UTC), "pricing-api"
    )
    store_prices(engine, [price], datetime(2026, 11, 2, tzinfo=UTC))
    engine.dispose()
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", "s3://lake/accelbench")
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", "registry.example.org/accelbench-loadgen:0.1.0")
    # 4 warm-ups, then 2 levels x (4 level warm-ups + 2 repeats x 50 prompts), and the recheck's 50: 262.
    request = {
        "instance_types": ["r8g.4xlarge"],
        "model": "local/tiny-llama",
        "execution_mode": "kubernetes",
        "concurrency": [1, 2],
        "repeats": 2,
        "prompts_per_level": 50,
    }
    hand = (600.0 + 262 / 1.0) * 0.9418 / 3600  # the default allowance (600 s) and rate (1 req/s)
    with FakeKubeAPI() as fake:
        config = {"kube_config_path": str(fake.kubeconfig(tmp_path / "kubeconfig"))}
        monkeypatch.setenv(
            "AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": config})
        )
        with pytest.raises(AirflowFailException) as err:
            plan_benchmarks(request | {"max_campaign_usd": round(hand - 0.01, 2)}, "c-1")
        said = str(err.value)
        assert f"max_campaign_usd={round(hand - 0.01, 2)!r}: the plan's estimate is {hand:.2f} USD" in said
        caplog.clear()
        with caplog.at_level("INFO"):
            specs = plan_benchmarks(request | {"max_campaign_usd": round(hand + 0.01, 2)}, "c-1")
    assert len(specs) == 1 and f"estimated: {hand:.4f} USD" in caplog.text
    assert "262 requests at 1.00 req/s (stated)" in caplog.text and "stated allowance" in caplog.text


def test_the_estimate_uses_what_the_lake_measured_before() -> None:
    """The configuration's median request rate of earlier ok runs, and the type's median start-up in the
    same mode, instead of the stated figures."""
    from accelbench.campaign.estimate import estimate, requests_of

    from tests.support.planning import plan

    (spec,) = plan(instance_types=["r8g.xlarge"], concurrency=[1, 2], prompts_per_level=40).specs
    lake = Lake.from_env()
    runs = [
        {"run_id": f"old/{i}", "matrix_key": spec.matrix_key, "status": status, "request_throughput": rate}
        for i, (status, rate) in enumerate([("ok", 2.0), ("ok", 4.0), ("ok", 5.0), ("failed", 50.0)])
    ]
    lake.write_table("runs", pa.Table.from_pylist(runs, schema=RUNS), "cpu", DATE, "old")
    before = [_row(f"s{i}", "r8g.xlarge", "on-demand", _startup(30.0, 60.0, 900.0)) for i in range(3)]
    for row, ready in zip(before, (100.0, 140.0, 300.0), strict=True):
        row["ready_s"] = ready
    lake.write_table("startups", startups_table(before), "cpu", DATE, "old")
    (found,) = estimate([spec], lake, PRICES, "us-east-1", "kubernetes")
    assert (found.requests_per_s, found.rate_from) == (4.0, "measured before")  # the failed run left out
    assert (found.startup_s, found.startup_from) == (140.0, "measured before")
    price = 0.3000 if datetime.now(UTC) >= datetime(2026, 12, 2, tzinfo=UTC) else 0.2352  # today's
    assert found.usd == pytest.approx((140.0 + requests_of(spec.load) / 4.0) * price / 3600)
    (local,) = estimate([spec], lake, PRICES, "us-east-1", "local")
    assert (
        local.usd == 0.0
        and local.why_unpriced == "local: not billed"
        and local.startup_from == "stated allowance"
    )
    # Start-ups on a node already up with the image on it (no node launched, nothing pulled) are the warm
    # ones: a second server of the type, after the first on one pool slot, is estimated from them (issue 49).
    warm = [_row(f"w{i}", "r8g.xlarge", "on-demand", _startup(None, 1.0, 200.0)) for i in range(2)]
    for row, ready in zip(warm, (50.0, 70.0), strict=True):
        row |= {"ready_s": ready, "node_launch_s": None, "kubelet_pull_s": 0.0}
    lake.write_table("startups", startups_table(warm), "cpu", DATE, "warm")
    other = spec.model_copy(update={"server": spec.server.model_copy(update={"model": "org/model-w8a8"})})
    first, second = estimate([spec, other], lake, PRICES, "us-east-1", "kubernetes")
    assert (first.startup_s, first.startup_from) == (140.0, "measured before")  # the warm rows left out
    assert (second.startup_s, second.startup_from) == (60.0, "measured before, on its type's node already up")
