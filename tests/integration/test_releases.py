"""Release discovery against registries on 127.0.0.1: Docker Hub-shaped pages (vLLM CPU and GPU) and an
OCI distribution API with ECR Public's anonymous token (the Neuron DLC)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pytest
from accelbench.catalog.db import make_engine, session_scope
from accelbench.catalog.models import RuntimeVersion
from accelbench.runtime.discovery import record_new_releases
from accelbench.runtime.dockerhub import DockerHubClient
from accelbench.runtime.oci import OciClient, parse_challenge
from accelbench.runtime.registry import RegistryError
from accelbench.runtime.tag_rules import (
    NEURON_DLC_TAGS,
    VLLM_CPU_TAGS,
    VLLM_GPU_TAGS,
    NotARelease,
    select_releases,
)
from sqlalchemy import select

from tests.support.airflow_dags import run_dag, task_states
from tests.support.paths import REPO

PAGES = REPO / "tests" / "data" / "registry"
CPU_TAGS_PATH = "/v2/namespaces/vllm/repositories/vllm-openai-cpu/tags"
GPU_TAGS_PATH = "/v2/namespaces/vllm/repositories/vllm-openai/tags"
RELEASES = ["0.9.2", "0.10.1", "0.16.0", "0.17.1", "0.18.0", "0.19.0", "0.19.1", "0.20.0"]
GPU_RELEASES = ["0.9.2", "0.10.1.1", "0.18.0", "0.19.0", "0.19.1", "0.20.0"]

NEURON_NAME = "neuron/pytorch-inference-vllm-neuronx"
NEURON_REPOSITORY = f"public.ecr.aws/{NEURON_NAME}"
NEURON_TAGS_PATH = f"/v2/{NEURON_NAME}/tags/list"
# The newest SDK build of each vLLM version (0.16.0 has four; 0.9.1 two).
NEURON_RELEASES = {
    "0.9.1": "0.9.1-neuronx-py311-sdk2.26.0-ubuntu22.04",
    "0.11.0": "0.11.0-neuronx-py312-sdk2.27.0-ubuntu24.04",
    "0.13.0": "0.13.0-neuronx-py312-sdk2.28.0-ubuntu24.04",
    "0.16.0": "0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04",
    "0.21.0": "0.21.0.1.0.0-neuronx-py313-sdk2.31.0-ubuntu24.04",
    "0.24.0": "0.24.0.1.1.0-neuronx-py313-sdk2.32.0-ubuntu24.04",
    "0.29.0": "0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04",
}
# ECR's `last` is an opaque token, not a tag: the client must follow the Link header as given.
OPAQUE = {"ukD72mdD/mC8b5xV3susmJzzaTgp3hKwR9nRUW1yZZ4=": 2, "Qm9mNm1hcmtlcjM=": 3}
MANIFEST_INDEX = "application/vnd.oci.image.index.v1+json"


def neuron_digest(tag: str) -> str:
    return "sha256:" + hashlib.sha256(tag.encode()).hexdigest()


def _serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class Registry:
    """Docker Hub's tag API for vllm-openai-cpu and vllm-openai; CPU page 2 first answers 503, CPU page 3
    and GPU page 2 first 429 (retries must cope)."""

    def __init__(self, always_fail: bool = False) -> None:
        self.hits: Counter[str] = Counter()
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                page = parse_qs(url.query).get("page", ["1"])[0]
                prefix = {CPU_TAGS_PATH: "", GPU_TAGS_PATH: "gpu-"}.get(url.path)
                key = f"{prefix}{page}"
                registry.hits[key] += 1
                if prefix is None:
                    self.send_error(404)
                elif always_fail:
                    self.send_error(500)
                elif (key, registry.hits[key]) in {("2", 1), ("3", 1), ("gpu-2", 1)}:
                    self.send_error(503 if key == "2" else 429)
                else:
                    body = (
                        (PAGES / f"{prefix}tags-page{page}.json").read_text().replace("{BASE}", registry.url)
                    )
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server, self.url = _serve(Handler)


class EcrPublic:
    """ECR Public's side of the OCI distribution API: an anonymous token from /token/ (scope checked), tag
    pages as text/plain linked by `Link` (or, `link=False`, by the spec's n/last on sorted tags), manifest
    HEADs with Docker-Content-Digest. The token endpoint first answers 503 and page 2 first 429."""

    def __init__(
        self,
        link: bool = True,
        expire_tokens_after_page1: bool = False,
        broken_manifest: str | None = None,
        always_fail: bool = False,
    ) -> None:
        self.hits: Counter[str] = Counter()
        self.tokens: set[str] = set()
        self.pages = [
            json.loads((PAGES / f"neuron-tags-page{i}.json").read_text())["tags"] for i in (1, 2, 3)
        ]
        every_tag = sorted(t for page in self.pages for t in page)
        ecr = self

        class Handler(BaseHTTPRequestHandler):
            def _unauthorized(self) -> bool:
                auth = self.headers.get("Authorization", "")
                if auth.removeprefix("Bearer ") in ecr.tokens:
                    return False
                self.send_response(401)
                self.send_header(
                    "WWW-Authenticate",
                    f'Bearer realm="{ecr.url}/token/",service="public.ecr.aws",scope="aws"',
                )
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(b'{"errors":[{"code":"DENIED","message":"Not Authorized"}]}')
                return True

            def _json(self, body: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")  # what ECR Public says
                self.send_header("Docker-Distribution-Api-Version", "registry/2.0")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body.encode())

            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if always_fail:
                    ecr.hits["failed"] += 1
                    self.send_error(502)
                elif url.path == "/token/":
                    ecr.hits["token"] += 1
                    if ecr.hits["token"] == 1:
                        self.send_error(503)
                    elif query.get("scope") != f"repository:{NEURON_NAME}:pull" or query.get("service") != (
                        "public.ecr.aws"
                    ):
                        self.send_error(400, f"unexpected token request {query}")
                    else:
                        token = f"anonymous-{ecr.hits['token']}"
                        ecr.tokens.add(token)
                        self._json((PAGES / "ecr-public-token.json").read_text().replace("{TOKEN}", token))
                elif url.path != NEURON_TAGS_PATH:
                    self.send_error(404)
                elif self._unauthorized():
                    ecr.hits["unauthorized"] += 1
                elif not link:
                    n, last = int(query["n"]), query.get("last")
                    rest = [t for t in every_tag if last is None or t > last]
                    ecr.hits[f"after {last}"] += 1
                    self._json(json.dumps({"name": NEURON_NAME, "tags": rest[:n]}))
                else:
                    page = OPAQUE.get(query.get("last", ""), 1)
                    ecr.hits[f"page{page}"] += 1
                    if page == 2 and ecr.hits["page2"] == 1:
                        self.send_error(429)
                        return
                    headers = {}
                    if page == 1:
                        headers["Link"] = f'<{ecr.url}{NEURON_TAGS_PATH}?last={_token(2)}&n=100>; rel="next"'
                    elif page == 2:
                        headers["Link"] = f'<{NEURON_TAGS_PATH}?last={_token(3)}>; rel="next"'
                    self._json(json.dumps({"name": NEURON_NAME, "tags": ecr.pages[page - 1]}), headers)
                    if page == 1 and expire_tokens_after_page1:
                        ecr.tokens.clear()

            def do_HEAD(self) -> None:
                tag = self.path.rpartition("/manifests/")[2]
                ecr.hits[f"head {tag}"] += 1
                if self._unauthorized():
                    return
                if tag == broken_manifest:
                    self.send_error(500)
                elif tag not in every_tag or MANIFEST_INDEX not in self.headers.get("Accept", ""):
                    self.send_error(404)
                else:
                    self.send_response(200)
                    self.send_header("Content-Type", MANIFEST_INDEX)
                    self.send_header("Docker-Content-Digest", neuron_digest(tag))
                    self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server, self.url = _serve(Handler)


def _token(page: int) -> str:
    return quote(next(k for k, v in OPAQUE.items() if v == page), safe="")


@pytest.fixture
def registry() -> Iterator[Registry]:
    reg = Registry()
    yield reg
    reg.server.shutdown()


@pytest.fixture
def ecr() -> Iterator[EcrPublic]:
    server = EcrPublic()
    yield server
    server.server.shutdown()


def test_only_arm64_semver_tags_in_semantic_order_across_pages_with_retries(registry: Registry) -> None:
    listing = DockerHubClient("vllm/vllm-openai-cpu", registry.url, VLLM_CPU_TAGS, max_wait_s=0.2).releases()
    assert [r.version for r in listing.releases] == RELEASES  # 0.10.1 after 0.9.2: semantic, not lexical
    assert registry.hits == Counter({"1": 1, "2": 2, "3": 2})  # 503 and 429 were retried
    by_version = {r.version: r for r in listing.releases}
    assert by_version["0.20.0"].image == "vllm/vllm-openai-cpu:v0.20.0-arm64"
    assert by_version["0.20.0"].digest.startswith("sha256:") and by_version["0.20.0"].released_at
    assert by_version["0.9.2"].digest == "sha256:%064x" % (1000 + 13)  # no tag digest: the arm64 image's
    assert listing.ignored["latest-arm64"] == "not a v<version>-arm64 tag"
    assert listing.ignored["v0.20.0"] == listing.ignored["v0.20.0-x86_64"] == "not a v<version>-arm64 tag"
    assert listing.ignored["v0.20.1rc1-arm64"] == "pre-release (not configured)"
    assert "v0.16.0-arm64" not in listing.ignored  # inactive = not pulled for a month: still a release
    assert "sha-3f2a9c1-arm64" in listing.ignored and "nightly-2026-11-28-arm64" in listing.ignored
    with_pre = DockerHubClient("vllm/vllm-openai-cpu", registry.url, VLLM_CPU_TAGS, max_wait_s=0.2).releases(
        True
    )
    assert [r.version for r in with_pre.releases if r.version not in RELEASES] == ["0.17.0dev0", "0.20.1rc1"]


def test_gpu_releases_are_the_plain_v_semver_tags_with_the_amd64_digest_as_fallback(
    registry: Registry,
) -> None:
    client = DockerHubClient("vllm/vllm-openai", registry.url, VLLM_GPU_TAGS, max_wait_s=0.2)
    listing = client.releases()
    assert [r.version for r in listing.releases] == GPU_RELEASES
    assert registry.hits == Counter({"gpu-1": 1, "gpu-2": 2})  # the 429 was retried
    by_version = {r.version: r for r in listing.releases}
    assert by_version["0.19.1"].image == "vllm/vllm-openai:v0.19.1"
    assert by_version["0.19.1"].released_at == datetime(2026, 9, 18, 9, tzinfo=UTC)
    gpu_page2 = json.loads((PAGES / "gpu-tags-page2.json").read_text())["results"]
    v0180 = next(t for t in gpu_page2 if t["name"] == "v0.18.0")
    assert "digest" not in v0180  # only per-image digests: the amd64 one stands for the tag
    amd64 = next(i["digest"] for i in v0180["images"] if i["architecture"] == "amd64")
    assert by_version["0.18.0"].digest == amd64 != v0180["images"][1]["digest"]
    assert listing.ignored["v0.20.0-cu130"] == listing.ignored["v0.19.0-cu130"] == "not a semantic version"
    assert listing.ignored["latest"] == listing.ignored["nightly"] == "not a v<version> tag"
    assert listing.ignored["v0.20.1rc1"] == "pre-release (not configured)"
    assert [r.version for r in client.releases(include_prereleases=True).releases][-1:] == ["0.20.1rc1"]


@pytest.mark.parametrize(
    ("tag", "version", "sdk", "plugin", "python"),
    [
        ("0.9.1-neuronx-py311-sdk2.26.0-ubuntu22.04", "0.9.1", "2.26.0", "0", "311"),
        ("0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04", "0.16.0", "2.31.1", "0", "312"),
        ("0.21.0.1.0.0-neuronx-py313-sdk2.31.0-ubuntu24.04", "0.21.0", "2.31.0", "1.0.0", "313"),
        ("0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04", "0.29.0", "2.33.0", "1.2.0", "314"),
    ],
)
def test_neuron_dlc_tags_name_the_vllm_version_and_rank_by_sdk(
    tag: str, version: str, sdk: str, plugin: str, python: str
) -> None:
    parsed = NEURON_DLC_TAGS.parse(tag)
    assert (parsed.tag, parsed.version) == (tag, version)
    assert [str(v) for v in parsed.rank] == [sdk, plugin, python]


@pytest.mark.parametrize(
    "tag",
    [
        "latest",
        "sha256-9f3c2a71d0e84b55a6c1e07f2b3d4c5e6f708192a3b4c5d6e7f8091a2b3c4d5e.sig",
        "0.16.0-neuronx-py312-sdk2.31.1",  # no OS
        "2.9.0-neuronx-py312-sdk2.31.1-ubuntu24.04-training",
        "v0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04",
    ],
)
def test_other_tags_are_not_neuron_dlc_releases(tag: str) -> None:
    with pytest.raises(NotARelease, match="not a <vllm>"):
        NEURON_DLC_TAGS.parse(tag)


def test_one_release_per_version_the_newest_sdk_build() -> None:
    tags = [
        t for i in (1, 2, 3) for t in json.loads((PAGES / f"neuron-tags-page{i}.json").read_text())["tags"]
    ]
    chosen, ignored = select_releases(tags, NEURON_DLC_TAGS)
    assert {r.version: r.tag for r in chosen} == NEURON_RELEASES
    assert [r.version for r in chosen] == list(NEURON_RELEASES)  # semantic order: 0.9.1 before 0.11.0
    older = "an older build of 0.16.0 than 0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
    assert ignored["0.16.0-neuronx-py312-sdk2.29.1-ubuntu24.04"] == older
    assert ignored["0.16.0-neuronx-py312-sdk2.30.0-ubuntu24.04"] == older  # seen before the newest
    assert ignored["0.16.0-neuronx-py312-sdk2.31.0-ubuntu24.04"] == older  # seen after it
    assert ignored["0.9.1-neuronx-py310-sdk2.25.0-ubuntu22.04"].startswith("an older build of 0.9.1")
    assert set(ignored) == set(tags) - set(NEURON_RELEASES.values())


def test_neuron_releases_over_the_oci_api_with_token_link_pages_and_retries(ecr: EcrPublic) -> None:
    client = OciClient(NEURON_REPOSITORY, NEURON_DLC_TAGS, base_url=ecr.url, max_wait_s=0.05)
    listing = client.releases()
    assert {r.version: r.tag for r in listing.releases} == NEURON_RELEASES
    for release in listing.releases:
        assert release.image == f"{NEURON_REPOSITORY}:{release.tag}"  # the SDK stays in the recorded tag
        assert release.digest == neuron_digest(release.tag)
        assert release.released_at is None
    assert ecr.hits["token"] == 2  # 503, then the token (asked for repository:<name>:pull)
    assert ecr.hits["unauthorized"] == 1  # the first listing was challenged, then carried the token
    assert (ecr.hits["page1"], ecr.hits["page2"], ecr.hits["page3"]) == (1, 2, 1)  # the 429 retried
    heads = {k.removeprefix("head ") for k in ecr.hits if k.startswith("head ")}
    assert heads == set(NEURON_RELEASES.values())  # one HEAD per recorded release, none for the others
    assert listing.ignored["latest"].startswith("not a <vllm>")


def test_an_expired_token_is_fetched_again_once() -> None:
    ecr = EcrPublic(expire_tokens_after_page1=True)
    try:
        releases = OciClient(NEURON_REPOSITORY, NEURON_DLC_TAGS, base_url=ecr.url, max_wait_s=0.05).releases()
        assert len(releases.releases) == len(NEURON_RELEASES)
        assert ecr.hits["token"] == 3  # 503, the first token, the one after it expired
        assert ecr.hits["unauthorized"] == 2
    finally:
        ecr.server.shutdown()


def test_without_a_link_header_full_pages_are_followed_by_n_and_last() -> None:
    ecr = EcrPublic(link=False)
    try:
        client = OciClient(NEURON_REPOSITORY, NEURON_DLC_TAGS, base_url=ecr.url, max_wait_s=0.05, page_size=4)
        tags = [t for page in client.pages() for t in page]
        assert len(tags) == len(set(tags)) == 13
        assert (
            ecr.hits["after None"] == 1 and sum(v for k, v in ecr.hits.items() if k.startswith("after")) == 4
        )
    finally:
        ecr.server.shutdown()


def test_a_manifest_that_keeps_failing_leaves_only_that_digest_unknown() -> None:
    broken = NEURON_RELEASES["0.16.0"]
    ecr = EcrPublic(broken_manifest=broken)
    try:
        listing = OciClient(
            NEURON_REPOSITORY, NEURON_DLC_TAGS, base_url=ecr.url, attempts=2, max_wait_s=0.05
        ).releases()
        by_version = {r.version: r for r in listing.releases}
        assert by_version["0.16.0"].digest is None and ecr.hits[f"head {broken}"] == 2  # retried, then None
        assert by_version["0.21.0"].digest == neuron_digest(NEURON_RELEASES["0.21.0"])
    finally:
        ecr.server.shutdown()


def test_a_registry_that_keeps_failing_is_a_clear_error() -> None:
    failing = Registry(always_fail=True)
    try:
        with pytest.raises(RegistryError, match=r"listing tags of vllm/vllm-openai-cpu at .*500"):
            DockerHubClient(
                "vllm/vllm-openai-cpu", failing.url, VLLM_CPU_TAGS, attempts=3, max_wait_s=0.05
            ).releases()
        assert failing.hits["1"] == 3
    finally:
        failing.server.shutdown()
    ecr = EcrPublic(always_fail=True)
    try:
        with pytest.raises(
            RegistryError, match=rf"listing tags of {NEURON_NAME} at .*/tags/list\?n=100: .*502"
        ):
            OciClient(
                NEURON_REPOSITORY, NEURON_DLC_TAGS, base_url=ecr.url, attempts=3, max_wait_s=0.05
            ).releases()
        assert ecr.hits["failed"] == 3
    finally:
        ecr.server.shutdown()


def test_challenges_parse_as_registries_send_them() -> None:
    assert parse_challenge(
        'Bearer realm="https://public.ecr.aws/token/",service="public.ecr.aws",scope="aws"'
    ) == (
        "Bearer",
        {"realm": "https://public.ecr.aws/token/", "service": "public.ecr.aws", "scope": "aws"},
    )
    assert parse_challenge('Basic realm="https://123.dkr.ecr.us-west-2.amazonaws.com/"')[0] == "Basic"
    with pytest.raises(RegistryError, match="only anonymous bearer tokens"):
        OciClient(NEURON_REPOSITORY, NEURON_DLC_TAGS)._fetch_token('Basic realm="x"')
    with pytest.raises(RegistryError, match="expected <registry host>/<name>"):
        OciClient("vllm/vllm-openai", NEURON_DLC_TAGS)


def test_each_runtime_records_its_own_rows_and_known_versions_are_kept(engine) -> None:
    ecr = EcrPublic()
    try:
        neuron = OciClient(NEURON_REPOSITORY, NEURON_DLC_TAGS, base_url=ecr.url, max_wait_s=0.05).releases()
    finally:
        ecr.server.shutdown()
    first = datetime(2026, 12, 1, tzinfo=UTC)
    releases = neuron.releases
    without_digest = [
        r if r.version != "0.16.0" else type(r)(r.version, r.tag, r.image, None, None) for r in releases
    ]
    assert [r.version for r in record_new_releases(engine, without_digest, "vllm-neuron", now=first)] == list(
        NEURON_RELEASES
    )
    # A day later: the same 0.16.0 build now with its digest, and a newer SDK build of 0.21.0.
    newer = "0.21.0.1.0.1-neuronx-py313-sdk2.31.1-ubuntu24.04"
    later = [
        r
        if r.version != "0.21.0"
        else type(r)(r.version, newer, f"{NEURON_REPOSITORY}:{newer}", "sha256:new", None)
        for r in releases
    ]
    assert record_new_releases(engine, later, "vllm-neuron") == []
    with session_scope(engine) as session:
        rows = {r.version: r for r in session.scalars(select(RuntimeVersion))}
        assert {r.runtime for r in rows.values()} == {"vllm-neuron"}
        assert rows["0.16.0"].digest == neuron_digest(NEURON_RELEASES["0.16.0"])  # an unknown filled in
        assert rows["0.21.0"].image == f"{NEURON_REPOSITORY}:{NEURON_RELEASES['0.21.0']}"  # never rewritten
        assert rows["0.21.0"].digest == neuron_digest(NEURON_RELEASES["0.21.0"])
        found = rows["0.16.0"].discovered_at
        assert (found if found.tzinfo else found.replace(tzinfo=UTC)) == first
        assert rows["0.16.0"].released_at is None  # the tag list has no dates


@pytest.mark.airflow
def test_discovery_dag_records_all_three_runtimes_and_announces_only_cpu_versions(
    airflow_db, accelbench_env: Path, registry: Registry, ecr: EcrPublic, monkeypatch
) -> None:
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    monkeypatch.setenv("ACCELBENCH_REGISTRY_URL", registry.url)
    monkeypatch.setenv("ACCELBENCH_NEURON_REGISTRY_URL", ecr.url)
    run = run_dag(airflow_db, "accelbench_vllm_cpu_releases")
    assert task_states(run) == {
        "discover": "success",
        "announce": "success",
        "record_gpu_releases": "success",
        "record_neuron_releases": "success",
    }, task_states(run)
    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    with engine.connect() as conn:
        rows = list(conn.execute(select(RuntimeVersion)))
    engine.dispose()
    by_runtime: dict[str, dict[str, object]] = {}
    for row in rows:
        by_runtime.setdefault(row.runtime, {})[row.version] = row
    assert set(by_runtime["vllm-cpu"]) == set(RELEASES)
    assert set(by_runtime["vllm-gpu"]) == set(GPU_RELEASES)
    assert set(by_runtime["vllm-neuron"]) == set(NEURON_RELEASES)
    cpu, gpu, neuron = (
        by_runtime["vllm-cpu"]["0.19.1"],
        by_runtime["vllm-gpu"]["0.19.1"],
        by_runtime["vllm-neuron"],
    )
    assert cpu.image == "vllm/vllm-openai-cpu:v0.19.1-arm64" and cpu.status == "announced"
    assert cpu.digest.startswith("sha256:") and cpu.released_at is not None
    assert gpu.image == "vllm/vllm-openai:v0.19.1" and gpu.status == "discovered" and gpu.digest != cpu.digest
    assert neuron["0.16.0"].image == f"{NEURON_REPOSITORY}:{NEURON_RELEASES['0.16.0']}"
    assert neuron["0.16.0"].digest == neuron_digest(NEURON_RELEASES["0.16.0"])
    assert {r.status for r in neuron.values()} == {"discovered"}  # recorded, never announced
    with create_session() as session:
        events = session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == run.run_id)).all()
        announced = {e.partition_key: dict(e.extra) for e in events}
    assert set(announced) == set(RELEASES)  # one event per vLLM CPU version only, the version as key
    assert announced["0.20.0"] == {
        "image": "vllm/vllm-openai-cpu:v0.20.0-arm64",
        "digest": by_runtime["vllm-cpu"]["0.20.0"].digest,
    }

    again = run_dag(airflow_db, "accelbench_vllm_cpu_releases")
    assert task_states(again) == {
        "discover": "skipped",
        "announce": "skipped",
        "record_gpu_releases": "success",  # nothing new, said in the log
        "record_neuron_releases": "success",
    }
    with create_session() as session:
        assert session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == again.run_id)).all() == []


@pytest.mark.airflow
def test_a_registry_outage_fails_its_own_task_and_the_run_but_not_the_others(
    airflow_db, accelbench_env: Path, registry: Registry, monkeypatch
) -> None:
    down = EcrPublic(always_fail=True)
    try:
        monkeypatch.setenv("ACCELBENCH_REGISTRY_URL", registry.url)
        monkeypatch.setenv("ACCELBENCH_NEURON_REGISTRY_URL", down.url)
        run = run_dag(airflow_db, "accelbench_vllm_cpu_releases")
    finally:
        down.server.shutdown()
    assert task_states(run) == {
        "discover": "success",
        "announce": "success",
        "record_gpu_releases": "success",
        "record_neuron_releases": "failed",
    }
    assert str(run.state) == "failed"  # reported, not swallowed
    assert down.hits["failed"] == 5  # the registry client's attempts; a library error is not retried again


def test_a_version_whose_announcement_failed_is_announced_again(
    accelbench_env: Path, registry: Registry, monkeypatch
) -> None:
    from accelbench.airflow.tasks.releases import discover_vllm_cpu_releases, mark
    from airflow.sdk.exceptions import AirflowSkipException

    monkeypatch.setenv("ACCELBENCH_REGISTRY_URL", registry.url)
    first = [r["version"] for r in discover_vllm_cpu_releases()]
    assert first == RELEASES
    for version in first:
        if version != "0.19.0":  # every announcement succeeded but this one
            mark(version, "announced")
    assert [r["version"] for r in discover_vllm_cpu_releases()] == ["0.19.0"]
    mark("0.19.0", "announced")
    with pytest.raises(AirflowSkipException, match="no new vLLM CPU version"):
        discover_vllm_cpu_releases()
