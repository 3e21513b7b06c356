"""checkov passes on the Terraform, Kubernetes manifests, Dockerfiles and (secrets) all of infra/, offline,
with no silent skip.

checkov pins an old boto3, so it lives in its own environment, .venv-checkov (scripts/checkov-env.sh).
A check may only be skipped inline (``#checkov:skip=CKV_...:reason``) with its reason written down; the test
fails on a skip without one, on any skip option on the command line, and on a checkov config file.

``run_checkov`` (tests/support/checkov.py) is shared with the tests that scan rendered benchmark pods.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.support.checkov import failures, reports, run_checkov
from tests.support.paths import REPO

# Where each framework looks (checkov --framework names).
SCANS = {
    "terraform": [REPO / "infra" / "terraform"],
    "kubernetes": [REPO / "infra" / "k8s"],
    "dockerfile": [REPO / "docker"],
    # Every file of infra/, READMEs and templates included (by default only .tf/.yaml/.json/... are read).
    "secrets": [REPO / "infra"],
}
SCAN_ARGS = {"secrets": ("--enable-secret-scan-all-files",)}
# The secrets framework reports findings only: a clean scan prints a bare summary (no check_type, nothing
# counted as passed), so what guards it against scanning nothing is test_secrets_scan_reads_every_infra_file.
FINDINGS_ONLY = {"secrets"}
SKIP = re.compile(r"checkov:skip=(?P<check>[A-Z0-9_]+)(?::(?P<reason>.*))?")
NO_REASON = {"", "No comment provided"}


@pytest.mark.parametrize("framework", sorted(SCANS))
def test_checkov_passes(framework: str) -> None:
    proc = run_checkov(SCANS[framework], [framework], *SCAN_ARGS.get(framework, ()))
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]
    found = reports(proc.stdout)
    if framework in FINDINGS_ONLY and not any("check_type" in r for r in found):
        (summary,) = found
        assert summary["failed"] == summary["parsing_errors"] == summary["skipped"] == 0, summary
        return
    (report,) = [r for r in found if r.get("check_type") == framework]
    summary = report["summary"]
    assert summary["failed"] == 0, failures(report)
    assert summary["parsing_errors"] == 0, summary
    # Guard against a scan that quietly found nothing to check.
    if framework not in FINDINGS_ONLY:
        assert summary["resource_count"] > 0 and summary["passed"] > 0, summary
    for check in report["results"].get("skipped_checks", []):
        reason = (check["check_result"].get("suppress_comment") or "").strip()
        assert reason not in NO_REASON, (
            f"{check['check_id']} skipped without a reason in {check['file_path']}"
        )


def test_device_plugins_pass_checkov_on_their_own() -> None:
    """infra/k8s/device-plugins/ alone: scanned with the rest of infra/k8s, the benchmark namespace's
    NetworkPolicy would satisfy CKV2_K8S_6 for the plugins in kube-system (checkov ignores namespaces)."""
    proc = run_checkov([REPO / "infra" / "k8s" / "device-plugins"], ["kubernetes"])
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]
    (report,) = [r for r in reports(proc.stdout) if r.get("check_type") == "kubernetes"]
    assert report["summary"]["failed"] == report["summary"]["parsing_errors"] == 0, failures(report)
    passed = report["results"]["passed_checks"]
    assert {"DaemonSet", "ClusterRole"} <= {c["resource"].split(".", 1)[0] for c in passed}
    # Each plugin's own NetworkPolicy covers its pods.
    covered = {c["resource"] for c in passed if c["check_id"] == "CKV2_K8S_6"}
    assert len(covered) == 2 and all("device-plugin" in r for r in covered), covered
    for check in report["results"].get("skipped_checks", []):
        reason = (check["check_result"].get("suppress_comment") or "").strip()
        assert len(reason) >= 20, f"{check['check_id']} skipped without a reason in {check['file_path']}"


def test_secrets_scan_reads_every_infra_file(tmp_path: Path) -> None:
    """The same secrets scan over a copy of infra/ with a basic-auth URL planted in each file finds every one.

    In a YAML file the URL is a value: checkov missed a trailing comment-only line in most of them.
    """
    copy = tmp_path / "infra"
    shutil.copytree(REPO / "infra", copy, ignore=shutil.ignore_patterns(".*"))
    # Built here so that no credential-shaped string sits in this file; db.example.* hosts are ignored.
    url = "postgresql://" + "canary:" + os.urandom(8).hex() + "Zq@db.internal:5432/canary"
    planted = sorted(p for p in copy.rglob("*") if p.is_file())
    assert len(planted) >= 10, planted
    for path in planted:
        line = f"accelbench_canary: {url}" if path.suffix in {".yaml", ".yml"} else f"# {url}"
        path.write_text(path.read_text().rstrip("\n") + "\n" + line + "\n")
    proc = run_checkov([copy], ["secrets"], *SCAN_ARGS["secrets"])
    assert proc.returncode == 1, proc.stdout[-5000:] + proc.stderr[-5000:]
    (report,) = [r for r in reports(proc.stdout) if r.get("check_type") == "secrets"]
    flagged = {
        c["file_path"].lstrip("/")
        for c in report["results"]["failed_checks"]
        if c["check_id"] == "CKV_SECRET_4"
    }
    assert flagged == {str(p.relative_to(copy)) for p in planted}


def scanned_files() -> list[Path]:
    files = []
    for paths in SCANS.values():
        for path in paths:
            files += [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return files


def test_every_skip_is_inline_and_gives_its_reason() -> None:
    skips = []
    for path in scanned_files():
        for line in path.read_text().splitlines():
            if m := SKIP.search(line):
                reason = (m["reason"] or "").strip()
                assert len(reason) >= 20, f"{path.relative_to(REPO)}: {m['check']} needs a written reason"
                skips.append(m["check"])
    # infra/README.md lists every skipped check with its reason for the people who apply the stack.
    readme = (REPO / "infra" / "README.md").read_text()
    for check in skips:
        assert f"`{check}`" in readme, f"{check} is skipped but not explained in infra/README.md"
    # No project-wide switches that skip checks without a reason next to the code.
    for config in (".checkov.yaml", ".checkov.yml"):
        assert not (REPO / config).exists(), f"{config}: put skips inline with their reasons"
        for paths in SCANS.values():
            for path in paths:
                assert not (path / config).exists(), path / config


def test_reports_reads_concatenated_and_listed_reports() -> None:
    one = {"check_type": "terraform", "results": {}, "summary": {}}
    two = {"check_type": "kubernetes", "results": {}, "summary": {}}
    assert reports(json.dumps(one)) == [one]
    assert reports(json.dumps([one, two]) + "\n" + json.dumps(one)) == [one, two, one]


def test_checkov_env_script_pins_the_version_the_constraints_freeze() -> None:
    script = (REPO / "scripts" / "checkov-env.sh").read_text()
    (pinned,) = re.findall(r"^CHECKOV_VERSION=(\S+)$", script, re.M)
    constraints = (REPO / "constraints-checkov.txt").read_text().splitlines()
    assert f"checkov=={pinned}" in constraints
    assert "-c constraints-checkov.txt" in script
