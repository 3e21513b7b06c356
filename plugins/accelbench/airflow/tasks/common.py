"""What several task modules share: the catalog engine of one task, library errors as task failures,
and the execution modes' checks that planning asks for."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from airflow.sdk.exceptions import AirflowFailException
from sqlalchemy import Engine

from accelbench.airflow.connections import catalog_url
from accelbench.campaign.prepare import ModeChecks
from accelbench.catalog.db import make_engine
from accelbench.config import Settings
from accelbench.core.problems import Problem
from accelbench.errors import AccelbenchError

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def catalog_engine(settings: Settings | None = None) -> Iterator[Engine]:
    """The catalog's engine for one task body, disposed when it is done (also on failure)."""
    engine = make_engine(catalog_url(settings or Settings.from_env()))
    try:
        yield engine
    finally:
        engine.dispose()


def fail_on_library_error(fn: Callable[P, R]) -> Callable[P, R]:
    """A library error is a user error: fail without retries, with its message as the reason."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except AccelbenchError as exc:
            raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


def _local_vllm(runtime: str) -> tuple[str, str]:
    from accelbench.local.server import local_runtime

    return local_runtime(runtime)


def _kubernetes_problems(model: str) -> list[Problem]:
    """Kubernetes mode's needs (lake, image, model store, a reachable API server), as planning problems."""
    from accelbench.airflow.connections import KUBERNETES_CONN_ID, kubernetes_problem
    from accelbench.k8s.placement import BENCHMARK_NAMESPACE
    from accelbench.k8s.preflight import kubernetes_problems
    from accelbench.lake.store import Lake

    problems = kubernetes_problems(model, Lake.from_env().uri)
    why = kubernetes_problem(BENCHMARK_NAMESPACE)
    if why:
        problems.append(Problem("kubernetes_conn_id", KUBERNETES_CONN_ID, why))
    return problems


MODE_CHECKS = ModeChecks(local_vllm=_local_vllm, kubernetes_problems=_kubernetes_problems)
