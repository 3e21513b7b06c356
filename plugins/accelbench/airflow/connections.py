"""Turn Airflow connections into what the library takes: a database URL and a boto3 session."""

from __future__ import annotations

import logging
import os

import boto3
from sqlalchemy.engine import URL

from accelbench.config import ENV_PREFIX, Settings
from accelbench.errors import ConfigError

log = logging.getLogger(__name__)
CATALOG_CONN_ENV = ENV_PREFIX + "CATALOG_CONN_ID"
AWS_CONN_ENV = ENV_PREFIX + "AWS_CONN_ID"
_DRIVERS = {
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "sqlite": "sqlite",
}


def catalog_url(settings: Settings) -> str:
    """The catalog URL: from the Airflow connection named in ACCELBENCH_CATALOG_CONN_ID, else settings."""
    conn_id = os.environ.get(CATALOG_CONN_ENV, "").strip()
    if not conn_id:
        return settings.catalog_url
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    driver = _DRIVERS.get(conn.conn_type or "")
    if driver is None:
        raise ConfigError(
            f"connection {conn_id}.conn_type",
            conn.conn_type,
            f"expected one of {', '.join(sorted(_DRIVERS))}",
        )
    if driver == "sqlite":
        return str(URL.create("sqlite", database=conn.host or conn.schema))
    url = URL.create(
        driver,
        username=conn.login or None,
        password=conn.password or None,
        host=conn.host or None,
        port=conn.port or None,
        database=conn.schema or None,
        # libpq options such as sslmode or connect_timeout, from the connection's extra
        query={k: str(v) for k, v in conn.extra_dejson.items() if isinstance(v, str | int)},
    )
    return url.render_as_string(hide_password=False)


def aws_session(settings: Settings) -> boto3.session.Session | None:
    """A boto3 session with credentials, or None (offline) with the reason logged."""
    if settings.offline:
        log.info("AWS disabled by %sOFFLINE", ENV_PREFIX)
        return None
    conn_id = os.environ.get(AWS_CONN_ENV, "aws_default")
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    session = AwsBaseHook(aws_conn_id=conn_id, client_type="sts").get_session()
    if session.get_credentials() is None:
        log.info("no AWS credentials (connection %r or the default chain): working offline", conn_id)
        return None
    return session
