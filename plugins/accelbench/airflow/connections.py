"""Turn Airflow connections into what the library takes: a database URL and a boto3 session."""

from __future__ import annotations

import logging

import boto3
from sqlalchemy.engine import URL

from accelbench.config import Settings, env_name
from accelbench.errors import ConfigError

log = logging.getLogger(__name__)
CATALOG_CONN_ENV = env_name("catalog_conn_id")
AWS_CONN_ENV = env_name("aws_conn_id")
_DRIVERS = {
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "sqlite": "sqlite",
}


def catalog_url(settings: Settings) -> str:
    """The catalog URL: from the Airflow connection named in ACCELBENCH_CATALOG_CONN_ID, else settings."""
    conn_id = Settings.from_env("catalog_conn_id").catalog.catalog_conn_id
    if not conn_id:
        return settings.catalog.catalog_url
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
    if settings.aws.offline:
        log.info("AWS disabled by %s", env_name("offline"))

        return None
    conn_id = Settings.from_env("aws_conn_id").aws.aws_conn_id

    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    session = AwsBaseHook(aws_conn_id=conn_id, client_type="sts").get_session()
    if session.get_credentials() is None:
        log.info("no AWS credentials (connection %r or the default chain): working offline", conn_id)
        return None
    return session


KUBERNETES_CONN_ID = "kubernetes_default"  # KubernetesPodOperator's default: the connection BenchmarkPod uses
KUBERNETES_CHECK_TIMEOUT_S = 10


def kubernetes_problem(namespace: str, conn_id: str = KUBERNETES_CONN_ID) -> str | None:
    """Why the benchmark pods could not be started through this connection, or None.

    Loads the connection's configuration as the operator will, then lists pods in the benchmark namespace
    (what the worker's Role allows), so a missing kubeconfig, an unreachable API server or missing RBAC is
    a planning problem instead of a client traceback after the campaign started.
    """
    from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook
    from airflow.sdk.exceptions import AirflowException  # what airflow.exceptions re-exports
    from kubernetes.client import CoreV1Api
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config import ConfigException

    hook = KubernetesHook(conn_id=conn_id)
    try:
        extras = hook.conn_extras
    except AirflowException as exc:
        return f"connection {conn_id!r} cannot be read ({exc})"
    try:
        api = hook.api_client
    except (ConfigException, AirflowException, OSError) as exc:
        how = (
            "in_cluster is set but the worker runs outside a cluster (no service-account token)"
            if extras.get("in_cluster")
            else 'on EKS give it the extra {"in_cluster": true}; elsewhere a "kube_config_path"'
        )
        return f"connection {conn_id!r} gives no usable Kubernetes configuration ({exc}): {how}"
    where = "in-cluster" if extras.get("in_cluster") else "kubeconfig"
    try:
        CoreV1Api(api).list_namespaced_pod(namespace, limit=1, _request_timeout=KUBERNETES_CHECK_TIMEOUT_S)
    except ApiException as exc:
        return (
            f"connection {conn_id!r} ({where}): the API server at {api.configuration.host} refused to list "
            f"pods in {namespace} (HTTP {exc.status} {exc.reason}): check the worker's RBAC "
            "(infra/k8s/airflow-worker-rbac.yaml)"
        )
    except Exception as exc:  # urllib3's connection and timeout errors
        return (
            f"connection {conn_id!r} ({where}): the API server at {api.configuration.host} did not answer "
            f"within {KUBERNETES_CHECK_TIMEOUT_S} s ({type(exc).__name__}: {exc})"
        )
    return None
