"""vLLM CPU release discovery against a registry on 127.0.0.1 that serves Docker Hub-shaped pages."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from accelbench.catalog.db import make_engine
from accelbench.catalog.models import RuntimeVersion
from accelbench.runtime.registry import RegistryClient, RegistryError
from sqlalchemy import select

from tests.support.airflow_dags import run_dag, task_states
from tests.support.paths import REPO

PAGES = REPO / "tests" / "data" / "registry"
TAGS_PATH = "/v2/namespaces/vllm/repositories/vllm-openai-cpu/tags"
RELEASES = ["0.9.2", "0.10.1", "0.16.0", "0.17.1", "0.18.0", "0.19.0", "0.19.1", "0.20.0"]


class Registry:
    """Serves the recorded pages; page 2 first answers 503 and page 3 first 429 (retries must cope)."""

    def __init__(self, always_fail: bool = False) -> None:
        self.hits: Counter[str] = Counter()
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                page = parse_qs(url.query).get("page", ["1"])[0]
                registry.hits[page] += 1
                if url.path != TAGS_PATH:
                    self.send_error(404)
                elif always_fail:
                    self.send_error(500)
                elif (page, registry.hits[page]) in {("2", 1), ("3", 1)}:
                    self.send_error(503 if page == "2" else 429)
                else:
                    body = (PAGES / f"tags-page{page}.json").read_text().replace("{BASE}", registry.url)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def registry() -> Iterator[Registry]:
    reg = Registry()
    yield reg
    reg.server.shutdown()


def test_only_arm64_semver_tags_in_semantic_order_across_pages_with_retries(registry: Registry) -> None:
    listing = RegistryClient("vllm/vllm-openai-cpu", registry.url, max_wait_s=0.2).releases()
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
    with_pre = RegistryClient("vllm/vllm-openai-cpu", registry.url, max_wait_s=0.2).releases(True)
    assert [r.version for r in with_pre.releases if r.version not in RELEASES] == ["0.17.0dev0", "0.20.1rc1"]


def test_a_registry_that_keeps_failing_is_a_clear_error() -> None:
    failing = Registry(always_fail=True)
    try:
        with pytest.raises(RegistryError, match=r"listing tags of vllm/vllm-openai-cpu at .*500"):
            RegistryClient("vllm/vllm-openai-cpu", failing.url, attempts=3, max_wait_s=0.05).releases()
        assert failing.hits["1"] == 3
    finally:
        failing.server.shutdown()


@pytest.mark.airflow
def test_discovery_dag_records_new_versions_and_announces_each_as_a_partition(
    airflow_db, accelbench_env: Path, registry: Registry, monkeypatch
) -> None:
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    monkeypatch.setenv("ACCELBENCH_REGISTRY_URL", registry.url)
    run = run_dag(airflow_db, "accelbench_vllm_cpu_releases")
    assert task_states(run) == {"discover": "success", "announce": "success"}, task_states(run)
    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    with engine.connect() as conn:
        rows = {r.version: r for r in conn.execute(select(RuntimeVersion))}
    engine.dispose()
    assert set(rows) == set(RELEASES)
    assert (
        rows["0.19.1"].image == "vllm/vllm-openai-cpu:v0.19.1-arm64" and rows["0.19.1"].status == "announced"
    )
    assert rows["0.19.1"].digest.startswith("sha256:") and rows["0.19.1"].released_at is not None
    with create_session() as session:
        events = session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == run.run_id)).all()
        announced = {e.partition_key: dict(e.extra) for e in events}
    assert set(announced) == set(RELEASES)  # one event per version, the version as partition key
    assert announced["0.20.0"] == {
        "image": "vllm/vllm-openai-cpu:v0.20.0-arm64",
        "digest": rows["0.20.0"].digest,
    }

    again = run_dag(airflow_db, "accelbench_vllm_cpu_releases")
    assert task_states(again) == {"discover": "skipped", "announce": "skipped"}
    with create_session() as session:
        assert session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == again.run_id)).all() == []


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
