"""Docker Hub's tag-listing API: `GET /v2/namespaces/<ns>/repositories/<repo>/tags`, pages linked by `next`
(hub.docker.com and its mirrors serve it). It lists the vLLM CPU and GPU images' tags with their digests
and push dates; `tag_rules.VersionTags` says which are releases."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any, cast
from urllib.parse import urljoin

import httpx

from accelbench.runtime.registry import RegistryError, Release, TagListing, http_client, retrying
from accelbench.runtime.tag_rules import VersionTags, select_releases

log = logging.getLogger(__name__)

PAGE_SIZE = 100
MAX_PAGES = 200  # 20,000 tags: a loop guard against a registry whose `next` never ends


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _digest(tag: dict[str, Any], architecture: str) -> str | None:
    """The tag's manifest digest; else its `architecture` image's (older answers give only per-image ones)."""
    digest = tag.get("digest")
    if isinstance(digest, str) and digest:
        return digest
    for image in tag.get("images") or []:
        if isinstance(image, dict) and image.get("architecture") == architecture and image.get("digest"):
            return str(image["digest"])
    return None


class DockerHubClient:
    def __init__(
        self,
        repository: str,
        base_url: str,
        rule: VersionTags,
        client: httpx.Client | None = None,
        attempts: int = 5,
        max_wait_s: float = 30.0,
    ) -> None:
        if repository.count("/") != 1:
            raise RegistryError(f"repository {repository!r}: expected <namespace>/<name> on {base_url}")
        self.repository = repository
        self.base_url = base_url.rstrip("/")
        self.rule = rule
        self.client = client or http_client()
        self._get = retrying(self._get_once, attempts, max_wait_s)

    @property
    def where(self) -> str:
        return f"{self.repository} on {self.base_url}"

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
        """The releases among the tags (per `rule`); the other tags are listed with why they are not."""
        tags = {
            tag["name"]: tag
            for results in self.pages()
            for tag in results
            if isinstance(tag, dict) and isinstance(tag.get("name"), str)
        }
        chosen, ignored = select_releases(tags, self.rule, include_prereleases)
        # tag_status "inactive" only means not pushed or pulled for a month: still a release.
        releases = []
        for r in chosen:
            tag = tags[r.tag]
            pushed = _parse_time(tag.get("tag_last_pushed") or tag.get("last_updated"))
            digest = _digest(tag, self.rule.architecture)
            releases.append(Release(r.version, r.tag, f"{self.repository}:{r.tag}", digest, pushed))
        return TagListing(releases, ignored)
