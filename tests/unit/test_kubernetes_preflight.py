"""Kubernetes mode is checked in planning: lake, load-generator image, model store and the connection,
each a problem naming its setting, all reported at once, before any pod or node is paid for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accelbench.airflow.connections import kubernetes_problem
from accelbench.k8s.placement import BENCHMARK_NAMESPACE
from accelbench.k8s.preflight import kubernetes_problems

from tests.support.kube import KUBECONFIG
from tests.support.kube_api import FakeKubeAPI
from tests.support.paths import REPO

STORE = REPO / "tests" / "data" / "model_configs"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/accelbench-loadgen:0.1.0"


def _fields(problems) -> dict[str, str]:
    return {p.field: p.message for p in problems}


def test_every_missing_piece_is_named_by_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    local_model = str(STORE / "local--tiny-llama")
    found = _fields(kubernetes_problems(local_model, "/home/me/.accelbench/lake"))
    assert set(found) == {"ACCELBENCH_LAKE_URI", "ACCELBENCH_LOADGEN_IMAGE", "model"}
    assert "s3:// lake" in found["ACCELBENCH_LAKE_URI"]
    assert "docker/loadgen" in found["ACCELBENCH_LOADGEN_IMAGE"]
    assert "path on the worker" in found["model"] and "ACCELBENCH_MODEL_STORE" in found["model"]


def test_a_complete_setup_has_no_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", IMAGE)
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(STORE))
    assert kubernetes_problems("Qwen/Qwen2.5-0.5B-Instruct", "s3://lake/accelbench") == []
    assert kubernetes_problems("org/not-in-the-store", "s3://lake") == []  # the planner names this one


@pytest.mark.parametrize("image", ["REPLACE_WITH_ECR_REPOSITORY/accelbench-loadgen:0.1.0", "loadgen latest"])
def test_a_placeholder_or_malformed_image_is_refused(monkeypatch: pytest.MonkeyPatch, image: str) -> None:
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", image)
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(STORE))
    found = _fields(kubernetes_problems("Qwen/Qwen2.5-0.5B-Instruct", "s3://lake"))
    assert found == {"ACCELBENCH_LOADGEN_IMAGE": "not a container image reference"}


def _connection(monkeypatch: pytest.MonkeyPatch, extra: dict) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": extra})
    )


def test_a_connection_without_a_configuration_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _connection(monkeypatch, {"kube_config_path": str(tmp_path / "absent")})
    why = kubernetes_problem(BENCHMARK_NAMESPACE)
    assert why and "'kubernetes_default'" in why and "no usable Kubernetes configuration" in why
    assert '"in_cluster": true' in why
    _connection(monkeypatch, {"in_cluster": True})  # not in a cluster: no service-account token here
    why = kubernetes_problem(BENCHMARK_NAMESPACE)
    assert why and "in_cluster is set but the worker runs outside a cluster" in why
    assert "Traceback" not in why


def test_an_unreachable_api_server_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.replace("6443", "9"))  # port 9 (discard): connection refused
    _connection(monkeypatch, {"kube_config_path": str(kubeconfig)})
    why = kubernetes_problem(BENCHMARK_NAMESPACE)
    assert why and "https://127.0.0.1:9 did not answer" in why and "(kubeconfig)" in why


def test_a_reachable_api_server_passes_and_was_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with FakeKubeAPI() as fake:
        _connection(monkeypatch, {"kube_config_path": str(fake.kubeconfig(tmp_path / "kubeconfig"))})
        assert kubernetes_problem(BENCHMARK_NAMESPACE) is None
        assert fake.count("GET") == 1  # the pod list of the benchmark namespace
