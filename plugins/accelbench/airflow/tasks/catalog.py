"""Task bodies of the instance catalog DAG: migrate, seed from the shipped file, verify against EC2."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from accelbench.airflow.connections import aws_session
from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.aws.clients import check_region, make_client
from accelbench.aws.ec2 import describe_instance_types
from accelbench.catalog import queries
from accelbench.catalog.db import migrate
from accelbench.catalog.seed import upsert_instance_types
from accelbench.catalog.verify import verify
from accelbench.config import Settings
from accelbench.tiers import cores_per_device, load_seed


@fail_on_library_error
def migrate_catalog() -> str:
    with catalog_engine() as engine:
        return migrate(engine)


@fail_on_library_error
def seed_catalog() -> dict[str, Any]:
    settings = Settings.from_env()
    specs = load_seed(settings.catalog.seed_file)
    with catalog_engine(settings) as engine:
        result = upsert_instance_types(engine, specs)
    return {
        "inserted": len(result.inserted),
        "updated": sorted(result.updated),
        "unchanged": result.unchanged,
    }


@fail_on_library_error
def verify_catalog(region: str) -> dict[str, Any]:
    settings = Settings.from_env()
    check_region(region, "verify_region")
    session = aws_session(settings)
    if session is None:
        raise AirflowSkipException("skipped EC2 verification: no AWS credentials or offline mode")
    with catalog_engine(settings) as engine:
        specs = queries.instance_specs(engine)
    ec2 = make_client(session, "ec2", region, settings.aws.aws_max_attempts)
    facts, not_offered = describe_instance_types(ec2, [s.instance_type for s in specs])
    report = verify(specs, facts, not_offered, cores_per_device)
    return {
        "region": region,
        "checked": report.checked,
        "mismatches": [str(m) for m in report.mismatches],
        "not_offered": report.not_offered,
    }
