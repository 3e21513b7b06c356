"""boto3 clients with adaptive retries, and the region checks every AWS call starts with."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from accelbench.errors import UnknownRegion

# The Pricing API is served only from these endpoints, whatever region is being priced.
PRICING_ENDPOINT_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")


@cache
def known_regions() -> frozenset[str]:
    """Regions from botocore's bundled endpoint data (no network), across partitions."""
    session = boto3.session.Session()
    regions: set[str] = set()
    for partition in session.get_available_partitions():
        regions.update(session.get_available_regions("ec2", partition_name=partition))
    return frozenset(regions)


def check_region(region: str, field: str = "region") -> str:
    if region not in known_regions():
        raise UnknownRegion(region, field)
    return region


def retry_config(max_attempts: int) -> Config:
    """Adaptive mode: client-side rate limiting plus backoff on throttling errors."""
    return Config(retries={"mode": "adaptive", "total_max_attempts": max_attempts})


def make_client(
    session: boto3.session.Session, service: str, region: str, max_attempts: int, **kwargs: Any
) -> Any:
    return session.client(service, region_name=region, config=retry_config(max_attempts), **kwargs)


def has_credentials(session: boto3.session.Session) -> bool:
    return session.get_credentials() is not None
