"""Pricing API and spot-history parsing, with botocore's Stubber on documents shaped like AWS's."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import replace
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from accelbench.aws import offline
from accelbench.aws.clients import check_region, make_client
from accelbench.aws.offline import Snapshot, index_snapshots, load_snapshot, load_snapshots, snapshot_files
from accelbench.aws.pricing import ParseStats, PriceLookupError, fetch_on_demand, on_demand_filters
from accelbench.catalog.models import InstancePrice
from accelbench.catalog.price_refresh import refresh_offline, refresh_online
from accelbench.catalog.queries import latest_prices
from accelbench.catalog.seed import upsert_instance_types
from accelbench.errors import UnknownRegion
from accelbench.tiers import load_seed
from botocore.stub import ANY, Stubber
from sqlalchemy import func, select

from tests.support.paths import REPO
from tests.support.pricelist import SESSION, PricingEndpoint, price_document, spot_page
from tests.support.servers import missing

NOW = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)
DAY = datetime(2026, 11, 30, tzinfo=UTC)


def pricing_client():
    return make_client(SESSION, "pricing", "us-east-1", 3)


def expect_products(stub: Stubber, instance_type: str, pages: list[list[str]], region: str = "us-east-1"):
    for n, docs in enumerate(pages):
        params = {
            "ServiceCode": "AmazonEC2",
            "Filters": on_demand_filters(instance_type, region),
            "FormatVersion": "aws_v1",
        }
        if n:
            params["NextToken"] = f"page{n}"
        response = {"FormatVersion": "aws_v1", "PriceList": docs}
        if n + 1 < len(pages):
            response["NextToken"] = f"page{n + 1}"
        stub.add_response("get_products", response, params)


def test_filters_follow_the_documented_set_and_metal_uses_its_own() -> None:
    shared = {f["Field"]: f["Value"] for f in on_demand_filters("r8g.large", "eu-west-1")}
    assert shared == {
        "serviceCode": "AmazonEC2",
        "regionCode": "eu-west-1",
        "instanceType": "r8g.large",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "productFamily": "Compute Instance",
    }
    metal = {f["Field"]: f["Value"] for f in on_demand_filters("r8g.metal-48xl", "us-east-1")}
    assert metal["tenancy"] == "Dedicated" and metal["productFamily"] == "Compute Instance (bare metal)"
    assert all(f["Type"] == "TERM_MATCH" for f in on_demand_filters("c7g.metal", "us-east-1"))


def test_price_from_paginated_documents_skipping_zero_prices() -> None:
    client = pricing_client()
    stats = ParseStats()
    with Stubber(client) as stub:
        expect_products(
            stub,
            "r8g.16xlarge",
            [
                [price_document("r8g.16xlarge", "0.0000000000", sku="ZERO1234ZERO1234")],
                [price_document("r8g.16xlarge", "3.7702400000")],
            ],
        )
        price = fetch_on_demand(client, "r8g.16xlarge", "us-east-1", stats)
        stub.assert_no_pending_responses()
    assert price.usd_per_hour == pytest.approx(3.77024)
    assert price.effective_at == datetime(2026, 7, 1, tzinfo=UTC)
    assert price.pricing_model == "on_demand"
    assert stats.documents == 2 and stats.zero_prices == 1 and stats.malformed == []


def test_bare_metal_price_uses_the_bare_metal_query() -> None:
    client = pricing_client()
    with Stubber(client) as stub:
        expect_products(
            stub, "c8g.metal-48xl", [[price_document("c8g.metal-48xl", "7.6569600000", metal=True)]]
        )
        price = fetch_on_demand(client, "c8g.metal-48xl", "us-east-1", ParseStats())
    assert price.usd_per_hour == pytest.approx(7.65696)


def lookup_error(instance_type: str, docs: list[str], stats: ParseStats | None = None) -> PriceLookupError:
    """The PriceLookupError that one stubbed GetProducts page of `docs` ends in."""
    client = pricing_client()
    with Stubber(client) as stub:
        expect_products(stub, instance_type, [docs])
        with pytest.raises(PriceLookupError) as err:
            fetch_on_demand(client, instance_type, "us-east-1", stats or ParseStats())
        stub.assert_no_pending_responses()
    return err.value


def test_conflicting_prices_are_an_error_for_that_type() -> None:
    err = lookup_error(
        "m8g.large",
        [
            price_document("m8g.large", "0.0897600000", sku="A" * 16),
            price_document("m8g.large", "0.1200000000", sku="B" * 16),
        ],
    )
    assert not err.skip
    assert "m8g.large" in str(err) and "2 conflicting" in str(err)


def test_malformed_documents_are_skipped_and_counted() -> None:
    client = pricing_client()
    stats = ParseStats()
    with Stubber(client) as stub:
        expect_products(
            stub, "c8g.large", [["{not json", '{"terms": {}}', price_document("c8g.large", "0.0797600000")]]
        )
        price = fetch_on_demand(client, "c8g.large", "us-east-1", stats)
    assert price.usd_per_hour == pytest.approx(0.07976)
    assert stats.documents == 3
    assert stats.malformed[0].startswith("not JSON (") and stats.malformed[1] == "no OnDemand in terms"


def test_only_zero_prices_is_a_skip_not_a_failure() -> None:
    err = lookup_error("c8g.large", [price_document("c8g.large", "0.0000000000")])
    assert err.skip and "1 zero prices" in str(err)


def test_a_non_hourly_dimension_is_skipped_and_counted_not_taken_as_the_price() -> None:
    client = pricing_client()
    stats = ParseStats()
    with Stubber(client) as stub:
        expect_products(
            stub, "c8g.large", [[price_document("c8g.large", "0.0797600000", fee="350.0000000000")]]
        )
        price = fetch_on_demand(client, "c8g.large", "us-east-1", stats)
    assert price.usd_per_hour == pytest.approx(0.07976)
    assert stats.non_hourly == ["Quantity"] and stats.malformed == []


def test_only_non_hourly_dimensions_are_refused_with_the_reason() -> None:
    stats = ParseStats()
    err = lookup_error("c8g.large", [price_document("c8g.large", "0.0797600000", unit="Quantity")], stats)
    assert not err.skip
    assert "c8g.large in us-east-1" in str(err)
    assert "no hourly (Hrs) price dimension" in str(err) and "skipped units: Quantity" in str(err)
    assert stats.non_hourly == ["Quantity"]


@pytest.mark.parametrize(
    ("usd", "reason"),
    [
        ("-0.5000000000", "negative"),
        ("abc", "not a number"),
        ("", "not a number"),
        ("NaN", "not a finite number"),
        ("Infinity", "not a finite number"),
        ("-Infinity", "not a finite number"),
    ],
)
def test_a_bad_price_is_refused_even_beside_a_good_one(usd: str, reason: str) -> None:
    err = lookup_error(
        "m8g.large",
        [
            price_document("m8g.large", "0.0897600000", sku="A" * 16),
            price_document("m8g.large", usd, sku="B" * 16),
        ],
    )
    assert not err.skip
    assert str(err).startswith("m8g.large in us-east-1: refused the on-demand price")
    assert f"USD {usd!r} per Hrs is {reason}" in str(err) and "B" * 16 in str(err)


def test_a_document_without_a_usd_price_says_so() -> None:
    stats = ParseStats()
    err = lookup_error("c8g.large", [price_document("c8g.large", "0.5600000000", currency="CNY")], stats)
    assert not err.skip
    assert "c8g.large in us-east-1" in str(err) and "1 malformed" in str(err)
    assert "no USD price" in str(err) and "pricePerUnit holds CNY" in str(err)
    assert "KeyError" not in str(err) and len(stats.malformed) == 1


class _ThrottleThenAnswer(PricingEndpoint):
    """A Pricing endpoint on loopback that throttles the first two calls, then answers."""

    calls = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).calls += 1
        if type(self).calls <= 2:
            status, body = 400, {"__type": "ThrottlingException", "message": "Rate exceeded"}
        else:
            status, body = (
                200,
                {"FormatVersion": "aws_v1", "PriceList": [price_document("r8g.large", "0.1178200000")]},
            )
        self.answer(status, body)


def test_throttling_is_retried_with_backoff() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ThrottleThenAnswer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = make_client(
            SESSION, "pricing", "us-east-1", 5, endpoint_url=f"http://127.0.0.1:{server.server_address[1]}"
        )
        assert client.meta.config.retries["mode"] == "adaptive"
        price = fetch_on_demand(client, "r8g.large", "us-east-1", ParseStats())
    finally:
        server.shutdown()
    assert price.usd_per_hour == pytest.approx(0.11782)
    assert _ThrottleThenAnswer.calls == 3


def test_unknown_region_is_named() -> None:
    assert check_region("eu-west-1") == "eu-west-1"
    with pytest.raises(UnknownRegion) as err:
        check_region("us-nowhere-9", "regions")
    assert "regions='us-nowhere-9'" in str(err.value)


def _refresh_us_east_1(engine, specs, pricing, ec2):
    """refresh_online for us-east-1 at NOW through the given (stubbed) clients."""
    return refresh_online(
        engine, SESSION, specs, ["us-east-1"], now=NOW, pricing_client=pricing, ec2_clients={"us-east-1": ec2}
    )


def test_refresh_online_stores_history_once_and_one_failure_does_not_stop_the_others(engine) -> None:
    specs = [s for s in load_seed() if s.instance_type in {"r8g.large", "m8g.large", "c8g.metal-48xl"}]
    upsert_instance_types(engine, specs)
    names = [s.instance_type for s in specs]  # alphabetical: c8g.metal-48xl, m8g.large, r8g.large

    def run() -> object:
        pricing = pricing_client()
        ec2 = make_client(SESSION, "ec2", "us-east-1", 3)
        with Stubber(pricing) as ps, Stubber(ec2) as es:
            for name in names:
                if name == "m8g.large":
                    ps.add_client_error("get_products", "ThrottlingException", "Rate exceeded", 400)
                else:
                    expect_products(
                        ps,
                        name,
                        [
                            [
                                price_document(
                                    name,
                                    "1.0000000000" if "metal" in name else "0.1178200000",
                                    metal="metal" in name,
                                )
                            ]
                        ],
                    )
                es.add_response(
                    "describe_spot_price_history",
                    spot_page(name, {"us-east-1a": "0.04", "us-east-1b": "0.05", "us-east-1c": "0.09"}),
                    {"InstanceTypes": [name], "ProductDescriptions": ANY, "StartTime": DAY},
                )
            report = _refresh_us_east_1(engine, specs, pricing, ec2)
            ps.assert_no_pending_responses()
            es.assert_no_pending_responses()
        return report

    report = run()
    assert (
        len(report.priced) == 5
        and len(report.failed) == 1
        and "m8g.large us-east-1 on_demand" in report.failed[0]
    )
    assert report.stored == 5
    latest = {(p.instance_type, p.pricing_model): p for p in latest_prices(engine)}
    spot = latest[("r8g.large", "spot")]
    assert spot.usd_per_hour == pytest.approx(0.05)  # median of the newest price per AZ
    assert spot.zone_prices == {"us-east-1a": 0.04, "us-east-1b": 0.05, "us-east-1c": 0.09}
    assert latest[("r8g.large", "on_demand")].usd_per_hour == pytest.approx(0.11782)
    again = run()
    assert again.stored == 0
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(InstancePrice)) == 5


def test_refresh_reports_a_refused_price_as_a_failure_of_that_type_only(engine) -> None:
    specs = [s for s in load_seed() if s.instance_type in {"m8g.large", "r8g.large"}]
    upsert_instance_types(engine, specs)
    pricing = pricing_client()
    ec2 = make_client(SESSION, "ec2", "us-east-1", 3)
    with Stubber(pricing) as ps, Stubber(ec2) as es:
        for spec in specs:
            name = spec.instance_type
            usd = "-0.5000000000" if name == "m8g.large" else "0.1178200000"
            fee = None if name == "m8g.large" else "350.0000000000"  # an upfront fee beside the hourly price
            expect_products(ps, name, [[price_document(name, usd, fee=fee)]])
            es.add_response(
                "describe_spot_price_history",
                spot_page(name, {"us-east-1a": "0.04"}),
                {"InstanceTypes": [name], "ProductDescriptions": ANY, "StartTime": DAY},
            )
        report = _refresh_us_east_1(engine, specs, pricing, ec2)
    assert len(report.failed) == 1 and report.failed[0].startswith("m8g.large us-east-1 on_demand: ")
    assert "USD '-0.5000000000' per Hrs is negative" in report.failed[0]
    assert "r8g.large us-east-1 on_demand" in report.priced and report.stored == 3
    assert report.non_hourly_dimensions == 1 and "1 non-hourly price dimensions skipped" in report.summary()


def test_refresh_offline_labels_rows_with_the_snapshot(engine) -> None:
    specs = load_seed()
    upsert_instance_types(engine, specs)
    report = refresh_offline(engine, specs, ["us-east-1", "eu-west-1"], now=NOW)
    assert len(report.priced) == len(specs)  # every catalog row, CPU, GPU and Neuron, in us-east-1
    assert len(report.skipped) == len(specs)  # every eu-west-1 lookup
    assert any("covers us-east-1 only" in s for s in report.skipped)
    rows = {p.instance_type: p for p in latest_prices(engine)}
    assert rows["r8g.16xlarge"].usd_per_hour == pytest.approx(3.77024)
    assert rows["c8g.4xlarge"].usd_per_hour == pytest.approx(0.63808)
    assert rows["c8g.4xlarge"].effective_at.date().isoformat() == "2026-07-20"
    assert "prices-us-east-1-2026-07-20.json" in rows["c8g.4xlarge"].source
    assert refresh_offline(engine, specs, ["us-east-1"], now=NOW).stored == 0


ACCELERATED_SNAPSHOT = "prices-us-east-1-accelerated-2026-08-26.json"


def test_every_gpu_and_neuron_catalog_row_gets_an_offline_price_labelled_with_its_source(engine) -> None:
    specs = load_seed()
    upsert_instance_types(engine, specs)
    report = refresh_offline(engine, specs, ["us-east-1"], now=NOW)
    accelerated = {s.instance_type for s in specs if s.accelerator_type in ("gpu", "neuron")}
    assert accelerated and not report.skipped and not report.failed
    rows = {p.instance_type: p for p in latest_prices(engine)}
    for name in accelerated:
        row = rows[name]
        assert row.region == "us-east-1" and row.pricing_model == "on_demand" and row.usd_per_hour > 0
        assert row.effective_at.date().isoformat() == "2026-08-26"
        assert f"offline snapshot {ACCELERATED_SNAPSHOT} dated 2026-08-26" in row.source
        assert "tsaol/aws-gpu" in row.source and "299375be7a2b940b53b3d80ec79fd66ee688f4fa" in row.source
    assert rows["g6e.xlarge"].usd_per_hour == pytest.approx(1.861)
    assert rows["p5.48xlarge"].usd_per_hour == pytest.approx(55.04)  # after AWS's June 2025 P5 price cut
    assert rows["inf2.48xlarge"].usd_per_hour == pytest.approx(12.98127)
    assert rows["g5.48xlarge"].usd_per_hour == pytest.approx(16.288)
    assert rows["g6.48xlarge"].usd_per_hour == pytest.approx(13.3504)
    assert rows["trn1.2xlarge"].usd_per_hour == pytest.approx(1.34375)
    assert "18aebd1d72819fea767dd5b5f835114120b2ad39" in rows["g5.xlarge"].source  # g5's own copy
    # The CPU rows keep the Graviton snapshot's label and date: each row names its own snapshot.
    assert "prices-us-east-1-2026-07-20.json dated 2026-07-20" in rows["c8g.4xlarge"].source
    assert rows["c8g.4xlarge"].effective_at.date().isoformat() == "2026-07-20"


def test_a_catalog_type_no_snapshot_prices_is_skipped_by_name_not_guessed(engine) -> None:
    specs = load_seed()
    upsert_instance_types(engine, specs)
    unpriced = replace(next(s for s in specs if s.family == "p5"), instance_type="p5e.48xlarge", family="p5e")
    report = refresh_offline(engine, [unpriced], ["us-east-1"], now=NOW)
    assert report.priced == [] and report.failed == []
    assert report.skipped == ["p5e.48xlarge us-east-1 on_demand: not in the offline snapshots"]
    assert latest_prices(engine) == []


def test_the_snapshots_are_usd_per_hour_dated_by_their_names_and_price_each_type_once() -> None:
    assert snapshot_files() == ["prices-us-east-1-2026-07-20.json", ACCELERATED_SNAPSHOT]
    snaps = {s.file: s for s in load_snapshots()}
    for snap in snaps.values():
        raw = json.loads((REPO / "plugins/accelbench/aws/data" / snap.file).read_text())
        assert (raw["currency"], raw["unit"], raw["region"]) == ("USD", "Hrs", "us-east-1")
        assert snap.prices and all(v > 0 for v in snap.prices.values())
    assert snaps[ACCELERATED_SNAPSHOT].effective_at == datetime(2026, 8, 26, tzinfo=UTC)
    assert load_snapshot().effective_at == datetime(2026, 7, 20, tzinfo=UTC)
    catalog = {s.instance_type: s.accelerator_type for s in load_seed()}
    assert {catalog[n] for n in snaps[ACCELERATED_SNAPSHOT].prices} == {"gpu", "neuron"}
    assert set(index_snapshots(tuple(snaps.values()))) == {("us-east-1", n) for n in catalog}


def test_the_graviton_snapshot_is_the_shared_reference_copy() -> None:
    reference = REPO.parent / "shared" / "reference" / "prices-us-east-1-2026-07-20.json"
    if not reference.is_file():
        missing(f"the reference snapshot {reference} (shared/ beside the repository)")
    shipped = REPO / "plugins/accelbench/aws/data/prices-us-east-1-2026-07-20.json"
    assert shipped.read_bytes() == reference.read_bytes()


def test_a_type_priced_by_two_snapshots_is_refused() -> None:
    day = datetime(2026, 8, 26, tzinfo=UTC)
    a = Snapshot("prices-us-east-1-a-2026-08-26.json", "us-east-1", day, "x", {"g6e.xlarge": 1.861})
    b = Snapshot("prices-us-east-1-b-2026-08-26.json", "us-east-1", day, "y", {"g6e.xlarge": 1.9})
    elsewhere = Snapshot("prices-eu-west-1-2026-08-26.json", "eu-west-1", day, "z", {"g6e.xlarge": 2.3})
    with pytest.raises(ValueError, match=re.escape("g6e.xlarge in us-east-1 is priced by both")):
        index_snapshots((a, b))
    assert len(index_snapshots((a, elsewhere))) == 2  # one type in two regions is two prices


@pytest.mark.parametrize(
    ("name", "body", "error"),
    [
        ("prices-us-east-1-2026-08-26.json", {"unit": "Quantity"}, "expected USD per Hrs"),
        ("prices-us-east-1-2026-08-26.json", {"region": "eu-west-1"}, "its name says 'us-east-1'"),
        ("prices-us-east-1-2026-08-26.json", {"source": " "}, "no source"),
        (
            "prices-us-east-1-2026-08-26.json",
            {"prices": {"p5.4xlarge": 0}},
            "non-positive prices for p5.4xlarge",
        ),
        ("prices-us-east-1.json", {}, "not a snapshot name"),
    ],
)
def test_a_bad_snapshot_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: dict, error: str
) -> None:
    doc = {
        "currency": "USD",
        "unit": "Hrs",
        "region": "us-east-1",
        "source": "s",
        "prices": {"p5.4xlarge": 6.88},
    }
    (tmp_path / name).write_text(json.dumps(doc | body))
    monkeypatch.setattr(offline, "_data_dir", lambda: tmp_path)
    with pytest.raises(ValueError, match=re.escape(error)):
        load_snapshot(name)


# Rows of the AWS offer file AmazonEC2/current/us-east-1/index.json, version 20260910195514
# (SKU, on-demand USD string), as copied into a public Price List emulator fixture: an
# independent read of the Price List that the accelerated snapshot must agree with (one size
# of each family the fixture carries; it has no g6e row).
OFFER_ROWS = {
    "g5.2xlarge": ("FX9TUYTJKEENVBSR", "1.2120000000"),
    "g6.xlarge": ("TPKUC6XYSUQ3VFK2", "0.8048000000"),
    "inf2.xlarge": ("M85N22VB4U7UGU9M", "0.7582000000"),
    "p5.48xlarge": ("3D4V8UAYEMB38GU2", "55.0400000000"),
    "trn1.32xlarge": ("WVVQPJVCQU4SR8XF", "21.5000000000"),
}


@pytest.mark.parametrize("name", sorted(OFFER_ROWS))
def test_the_accelerated_snapshot_agrees_with_the_price_list_parsed_like_get_products(name: str) -> None:
    sku, usd = OFFER_ROWS[name]
    docs = [price_document(name, usd, sku=sku, effective="2026-09-01T00:00:00Z")]
    docs.append(price_document(name, "0.0000000000", sku="ZEROCAPACITYBLK1"))  # zero rates are skipped
    client = pricing_client()
    with Stubber(client) as stub:
        expect_products(stub, name, [docs])
        stats = ParseStats()
        price = fetch_on_demand(client, name, "us-east-1", stats)
    assert stats.zero_prices == 1
    assert price.usd_per_hour == load_snapshot(ACCELERATED_SNAPSHOT).prices[name]
