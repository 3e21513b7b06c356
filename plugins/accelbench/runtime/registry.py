"""What every image registry protocol shares: the release it yields, its error, and how it retries.

The protocols live apart (`dockerhub.py`: Docker Hub's tag API; `oci.py`: the OCI distribution API that
ECR Public speaks), and so do the rules that say which tags are releases (`tag_rules.py`). HTTP goes
through httpx; 429, 5xx and connection errors are retried with exponential backoff through tenacity.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import ParamSpec, TypeVar

import httpx
from packaging.version import Version
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from accelbench.errors import AccelbenchError

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
TIMEOUT_S = 30.0


class RegistryError(AccelbenchError):
    """The registry could not be listed (after retries), or answered something unexpected."""


@dataclass(frozen=True)
class Release:
    version: str
    tag: str
    image: str  # repository:tag, as a pod pulls it
    digest: str | None
    released_at: datetime | None

    @property
    def sort_key(self) -> Version:
        return Version(self.version)


@dataclass
class TagListing:
    releases: list[Release]  # semantic order, oldest first
    ignored: dict[str, str] = field(default_factory=dict)  # tag -> why it is not (the recorded) release


def retryable(exc: BaseException) -> bool:
    """Worth another try: rate limiting (429), a server error (5xx) or a connection that failed."""
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


def retrying(fn: Callable[P, R], attempts: int, max_wait_s: float) -> Callable[P, R]:
    """`fn` retried on what `retryable` accepts, with exponential backoff; the last error is re-raised."""
    return retry(
        retry=retry_if_exception(retryable),
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=0.5, max=max_wait_s),
        reraise=True,
        before_sleep=lambda state: log.warning(
            "registry request failed (%s), attempt %d: retrying",
            state.outcome.exception() if state.outcome else None,  # set before a sleep
            state.attempt_number,
        ),
    )(fn)


def http_client() -> httpx.Client:
    return httpx.Client(timeout=TIMEOUT_S, follow_redirects=True)
