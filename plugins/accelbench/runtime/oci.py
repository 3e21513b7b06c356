"""The OCI distribution API's tag listing, as ECR Public serves it for the Neuron vLLM DLC.

- `GET /v2/<name>/tags/list?n=<n>` answers `{"name": ..., "tags": [...]}`; further pages are linked by
  `Link: <url>; rel="next"` (followed as given: ECR's `last` is an opaque token, and its tags come in no
  particular order). Without a Link header, a full page is followed with `?n=<n>&last=<last tag>`
  (the distribution spec's own pagination), until a page comes back short.
- Anonymous pulls still need a bearer token: the registry answers 401 with
  `WWW-Authenticate: Bearer realm="https://public.ecr.aws/token/",service="public.ecr.aws",...` and the
  realm, asked for `scope=repository:<name>:pull`, returns `{"token": ...}` (Docker's token protocol).
- `HEAD /v2/<name>/manifests/<tag>` gives the tag's digest in `Docker-Content-Digest`.

Spec: https://github.com/opencontainers/distribution-spec/blob/main/spec.md (listing tags, pagination).
ECR Public's anonymous token and tag listing: https://github.com/aws/containers-roadmap/issues/1262.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urljoin

import httpx

from accelbench.runtime.registry import RegistryError, Release, TagListing, http_client, retrying
from accelbench.runtime.tag_rules import TagRule, select_releases

log = logging.getLogger(__name__)

PAGE_SIZE = 100  # the spec's registries SHOULD serve at least n=100; private ECR refuses more than 1000
MAX_PAGES = 200
# The index (multi-arch) types first, so the digest is the one a pull by tag resolves to.
MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
_CHALLENGE_PARAM = re.compile(r'(\w+)=(?:"([^"]*)"|([^\s,]+))')


def split_reference(repository: str) -> tuple[str, str]:
    """(registry host, repository name) of `public.ecr.aws/neuron/pytorch-inference-vllm-neuronx`."""
    host, _, name = repository.partition("/")
    if not name or not ("." in host or ":" in host or host == "localhost"):
        raise RegistryError(f"repository {repository!r}: expected <registry host>/<name>, public.ecr.aws/...")
    return host, name


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """(scheme, parameters) of a `WWW-Authenticate` header."""
    scheme, _, rest = header.strip().partition(" ")
    return scheme, {m[1].lower(): m[2] if m[2] is not None else m[3] for m in _CHALLENGE_PARAM.finditer(rest)}


class OciClient:
    def __init__(
        self,
        repository: str,
        rule: TagRule,
        base_url: str | None = None,
        client: httpx.Client | None = None,
        attempts: int = 5,
        max_wait_s: float = 30.0,
        page_size: int = PAGE_SIZE,
    ) -> None:
        host, self.name = split_reference(repository)
        self.repository = repository
        self.rule = rule
        self.base_url = (base_url or f"https://{host}").rstrip("/")
        self.page_size = page_size
        self.client = client or http_client()
        self._token: str | None = None
        self._send = retrying(self._send_once, attempts, max_wait_s)

    @property
    def where(self) -> str:
        return f"{self.name} on {self.base_url}"

    def _send_once(self, method: str, url: str, headers: dict[str, str]) -> httpx.Response:
        response = self.client.request(method, url, headers=headers)
        response.raise_for_status()
        return response

    def _request(self, method: str, url: str, accept: str = "application/json") -> httpx.Response:
        """One request with the pull token: fetched when the registry challenges, and once more when it
        challenges again (a token that expired during a long listing)."""
        for attempt in (1, 2):
            headers = {"Accept": accept}
            if self._token:
                headers["Authorization"] = f"Bearer {self._token}"
            try:
                return self._send(method, url, headers)
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != 401 or attempt == 2:
                    raise
                self._token = self._fetch_token(exc.response.headers.get("WWW-Authenticate", ""))
        raise AssertionError("unreachable")

    def _fetch_token(self, challenge: str) -> str:
        scheme, params = parse_challenge(challenge)
        if scheme.lower() != "bearer" or "realm" not in params:
            raise RegistryError(
                f"{self.where} asks for {scheme or 'unknown'} credentials: only anonymous bearer tokens "
                "(public repositories) are supported"
            )
        query = {"scope": f"repository:{self.name}:pull"}
        if "service" in params:
            query["service"] = params["service"]
        url = str(httpx.URL(params["realm"]).copy_merge_params(query))
        try:
            body: Any = self._send("GET", url, {"Accept": "application/json"}).json()
        except (httpx.HTTPError, ValueError) as exc:
            raise RegistryError(f"anonymous token for {self.name} from {url}: {exc}") from exc
        token = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"{url}: no 'token' in the answer")
        return token

    def pages(self) -> Iterator[list[str]]:
        url = f"{self.base_url}/v2/{self.name}/tags/list?n={self.page_size}"
        for _ in range(MAX_PAGES):
            try:
                response = self._request("GET", url)
                body: Any = response.json()  # ECR Public says text/plain; the body is JSON all the same
            except (httpx.HTTPError, ValueError) as exc:
                raise RegistryError(f"listing tags of {self.name} at {url}: {exc}") from exc
            tags = body.get("tags", []) if isinstance(body, dict) else None
            tags = [] if tags is None else tags  # an empty repository may answer "tags": null
            if not isinstance(tags, list):
                raise RegistryError(f"{url}: no 'tags' list in the answer (is this an OCI registry?)")
            yield [t for t in tags if isinstance(t, str)]
            nxt = response.links.get("next", {}).get("url")
            if nxt:
                url = urljoin(url, nxt)
            elif len(tags) >= self.page_size and isinstance(tags[-1], str):
                last = f"{self.base_url}/v2/{self.name}/tags/list?n={self.page_size}&last={quote(tags[-1])}"
                if last == url:
                    return  # the registry ignores `last`: the same page again would never end
                url = last
            else:
                return
        raise RegistryError(f"listing tags of {self.name}: more than {MAX_PAGES} pages")

    def manifest_digest(self, tag: str) -> str | None:
        """The digest a pull of `tag` resolves to (one HEAD request); None, with a warning, if unknown."""
        url = f"{self.base_url}/v2/{self.name}/manifests/{tag}"
        try:
            response = self._request("HEAD", url, accept=MANIFEST_TYPES)
        except httpx.HTTPError as exc:
            log.warning("%s:%s: no digest (%s); the release is recorded without one", self.name, tag, exc)
            return None
        digest = response.headers.get("Docker-Content-Digest")
        return digest if digest and digest.startswith("sha256:") else None

    def releases(self, include_prereleases: bool = False) -> TagListing:
        """The release of each version among the tags (per `rule`), with its digest; the other tags are
        listed with why they are not."""
        tags = dict.fromkeys(tag for page in self.pages() for tag in page)
        chosen, ignored = select_releases(tags, self.rule, include_prereleases)
        releases = [
            Release(
                version=r.version,
                tag=r.tag,
                image=f"{self.repository}:{r.tag}",
                digest=self.manifest_digest(r.tag),
                released_at=None,  # the tag list carries no dates: the catalog uses the discovery date
            )
            for r in chosen
        ]
        return TagListing(releases, ignored)
