"""vLLM CPU releases from the image registry: the `v<semver>-arm64` tags of the image repository.

Speaks Docker Hub's tag-listing API (`GET /v2/namespaces/<ns>/repositories/<repo>/tags`, pages
linked by `next`), which hub.docker.com and its mirrors serve. HTTP through httpx; retries with
backoff on 429, 5xx and connection errors through tenacity.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast
from urllib.parse import urljoin

import httpx
from packaging.version import InvalidVersion, Version
from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from accelbench.errors import AccelbenchError

log = logging.getLogger(__name__)

ARM64_TAG = re.compile(r"^v(?P<version>\d+\.\d+\.\d+[0-9A-Za-z.+-]*?)-arm64$")
PAGE_SIZE = 100
MAX_PAGES = 200  # 20,000 tags: a loop guard against a registry whose `next` never ends


class RegistryError(AccelbenchError):
    """The registry could not be listed (after retries), or answered something unexpected."""


@dataclass(frozen=True)
class Release:
    version: str
    tag: str
    image: str  # repository:tag
    digest: str | None
    released_at: datetime | None

    @property
    def sort_key(self) -> Version:
        return Version(self.version)


@dataclass
class TagListing:
    releases: list[Release]  # semantic order, oldest first
    ignored: dict[str, str] = field(default_factory=dict)  # tag -> why it is not a release


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _digest(tag: dict[str, Any]) -> str | None:
    """The tag's manifest digest; else its arm64 image's (older answers carry only per-image ones)."""
    digest = tag.get("digest")
    if isinstance(digest, str) and digest:
        return digest
    for image in tag.get("images") or []:
        if isinstance(image, dict) and image.get("architecture") == "arm64" and image.get("digest"):
            return str(image["digest"])
    return None


class RegistryClient:
    def __init__(
        self,
        repository: str,
        base_url: str,
        client: httpx.Client | None = None,
        attempts: int = 5,
        max_wait_s: float = 30.0,
    ) -> None:
        if repository.count("/") != 1:
            raise RegistryError(f"repository {repository!r}: expected <namespace>/<name> on {base_url}")
        self.repository = repository
        self.base_url = base_url.rstrip("/")
        self.client = client or httpx.Client(timeout=30.0, follow_redirects=True)
        self._get = retry(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(attempts),
            wait=wait_exponential(multiplier=0.5, max=max_wait_s),
            reraise=True,
            before_sleep=lambda state: log.warning(
                "registry request failed (%s), attempt %d: retrying",
                state.outcome.exception() if state.outcome else None,  # set before a sleep
                state.attempt_number,
            ),
        )(self._get_once)

    def _get_once(self, url: str) -> dict[str, Any]:
        response = self.client.get(url, headers={"Accept": "application/json"})
        response.raise_for_status()
        return cast(dict[str, Any], response.json())

    def pages(self) -> Iterator[list[dict[str, Any]]]:
        namespace, name = self.repository.split("/")
        url: str | None = (
            f"{self.base_url}/v2/namespaces/{namespace}/repositories/{name}/tags?page_size={PAGE_SIZE}"
        )
        for _ in range(MAX_PAGES):
            if url is None:
                return
            try:
                page = self._get(url)
            except (httpx.HTTPError, ValueError) as exc:
                raise RegistryError(f"listing tags of {self.repository} at {url}: {exc}") from exc
            results = page.get("results") if isinstance(page, dict) else None
            if not isinstance(results, list):
                raise RegistryError(f"{url}: no 'results' list in the answer (is this a Docker Hub API?)")
            yield results
            nxt = page.get("next")
            url = urljoin(url, nxt) if isinstance(nxt, str) and nxt else None
        raise RegistryError(f"listing tags of {self.repository}: more than {MAX_PAGES} pages")

    def releases(self, include_prereleases: bool = False) -> TagListing:
        """Every `v<semver>-arm64` tag, as a release; other tags are listed with why they are not."""
        found: dict[str, Release] = {}
        ignored: dict[str, str] = {}
        for results in self.pages():
            for tag in results:
                name = tag.get("name") if isinstance(tag, dict) else None
                if not isinstance(name, str):
                    continue
                match = ARM64_TAG.match(name)
                if not match:
                    ignored[name] = "not a v<version>-arm64 tag"
                    continue
                try:
                    version = Version(match["version"])
                except InvalidVersion:
                    ignored[name] = "not a semantic version"
                    continue
                if version.is_prerelease and not include_prereleases:
                    ignored[name] = "pre-release (not configured)"
                    continue
                # tag_status "inactive" only means not pushed or pulled for a month: still a release.
                found[match["version"]] = Release(
                    version=match["version"],
                    tag=name,
                    image=f"{self.repository}:{name}",
                    digest=_digest(tag),
                    released_at=_parse_time(tag.get("tag_last_pushed") or tag.get("last_updated")),
                )
        return TagListing(sorted(found.values(), key=lambda r: r.sort_key), ignored)
