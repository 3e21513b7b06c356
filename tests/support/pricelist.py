"""AWS price answers for the pricing tests: PriceList documents shaped like real GetProducts answers (JSON
strings, OnDemand + Reserved terms), a Pricing API on 127.0.0.1, spot price history pages, a fake session."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler

import boto3

# Credentials that sign requests for Stubber and the local endpoints; nothing reaches AWS.
SESSION = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="y", region_name="us-east-1")


class PricingEndpoint(BaseHTTPRequestHandler):
    """A Pricing API on 127.0.0.1 (subclasses decide the answers): the AWS JSON protocol's reply shape."""

    def answer(self, status: int, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


def _fee(term: str, usd: str | None) -> dict:
    """A one-off fee dimension, shaped like the "Upfront Fee" of a Reserved All Upfront term."""
    if usd is None:
        return {}
    code = f"{term}.2TG2D8R56U"
    return {
        code: {
            "unit": "Quantity",
            "description": "Upfront Fee",
            "appliesTo": [],
            "rateCode": code,
            "pricePerUnit": {"USD": usd},
        }
    }


def price_document(
    instance_type: str,
    usd: str,
    *,
    region: str = "us-east-1",
    sku: str = "ABCDEFGH12345678",
    effective: str = "2026-07-01T00:00:00Z",
    metal: bool = False,
    unit: str = "Hrs",
    currency: str = "USD",
    fee: str | None = None,
) -> str:
    """One entry; `unit`/`currency` bend its OnDemand rate, `fee` adds a one-off Quantity dimension."""
    od_code, rate = "JRTCKXETXF", "6YS6EN2CT7"
    product_family = "Compute Instance (bare metal)" if metal else "Compute Instance"
    doc = {
        "product": {
            "productFamily": product_family,
            "attributes": {
                "enhancedNetworkingSupported": "Yes",
                "intelTurboAvailable": "No",
                "memory": "16 GiB",
                "dedicatedEbsThroughput": "Up to 10000 Mbps",
                "vcpu": "2",
                "capacitystatus": "Used",
                "locationType": "AWS Region",
                "storage": "EBS only",
                "instanceFamily": "Memory optimized",
                "operatingSystem": "Linux",
                "physicalProcessor": "AWS Graviton4 Processor",
                "regionCode": region,
                "servicecode": "AmazonEC2",
                "usagetype": f"BoxUsage:{instance_type}",
                "tenancy": "Dedicated" if metal else "Shared",
                "normalizationSizeFactor": "4",
                "networkPerformance": "Up to 12500 Megabit",
                "servicename": "Amazon Elastic Compute Cloud",
                "instanceType": instance_type,
                "currentGeneration": "Yes",
                "preInstalledSw": "NA",
                "location": "US East (N. Virginia)",
                "processorArchitecture": "64-bit",
                "marketoption": "OnDemand",
                "operation": "RunInstances",
                "availabilityzone": "NA",
            },
            "sku": sku,
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"{sku}.{od_code}": {
                    "priceDimensions": {
                        f"{sku}.{od_code}.{rate}": {
                            "unit": unit,
                            "endRange": "Inf",
                            "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                            "appliesTo": [],
                            "rateCode": f"{sku}.{od_code}.{rate}",
                            "beginRange": "0",
                            "pricePerUnit": {currency: usd},
                        },
                        **_fee(f"{sku}.{od_code}", fee),
                    },
                    "sku": sku,
                    "effectiveDate": effective,
                    "offerTermCode": od_code,
                    "termAttributes": {},
                }
            },
            "Reserved": {
                f"{sku}.4NA7Y494T4": {
                    "priceDimensions": {
                        f"{sku}.4NA7Y494T4.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": "Linux/UNIX (Amazon VPC)",
                            "appliesTo": [],
                            "rateCode": f"{sku}.4NA7Y494T4.6YS6EN2CT7",
                            "beginRange": "0",
                            "pricePerUnit": {"USD": "0.0745000000"},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": "2026-07-01T00:00:00Z",
                    "offerTermCode": "4NA7Y494T4",
                    "termAttributes": {
                        "LeaseContractLength": "1yr",
                        "OfferingClass": "standard",
                        "PurchaseOption": "No Upfront",
                    },
                }
            },
        },
        "version": "20260715190829",
        "publicationDate": "2026-07-15T19:08:29Z",
    }
    return json.dumps(doc)


def spot_page(instance_type: str, zones: dict[str, str]) -> dict:
    """A DescribeSpotPriceHistory answer: today's price per zone in `zones`, plus an older, higher one."""
    return {
        "SpotPriceHistory": [
            {
                "AvailabilityZone": z,
                "InstanceType": instance_type,
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": p,
                "Timestamp": datetime(2026, 11, 30, 8, tzinfo=UTC),
            }
            for z, p in zones.items()
        ]
        + [
            {
                "AvailabilityZone": "us-east-1a",
                "InstanceType": instance_type,
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": "9.9",
                "Timestamp": datetime(2026, 11, 29, 8, tzinfo=UTC),
            }
        ],
        "NextToken": "",
    }
