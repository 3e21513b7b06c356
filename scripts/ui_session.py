"""scripts/ui.sh's steps once Airflow's processes are started: wait for the API server, say where it is and
how to log in, wait until the DAG processor has parsed every DAG file, unpause the DAGs, seed the catalog and
the prices on a first start, and say what to do next. Talks to the local API server only (REST, as the UI
does).

Exits 0 when ready; 1 when a step failed (the message says which and where its log is); 3 when one of the
processes it was given (`--pid`) stopped while it waited.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

SEED_DAGS = ("accelbench_instance_catalog", "accelbench_pricing_refresh")


class Stopped(Exception):
    """A process of the session stopped."""


class Session:
    def __init__(self, args: argparse.Namespace) -> None:
        self.url: str = args.url
        self.user: str = args.user
        self.password: str = json.loads(Path(args.passwords).read_text())[args.user]
        self.passwords = Path(args.passwords)
        self.pids: list[int] = args.pid
        self.started: float = args.started
        self.logs = Path(args.logs)
        self.token = ""

    def say(self, text: str) -> None:
        print(f"ui: [{time.time() - self.started:.0f}s] {text}", flush=True)

    def check_processes(self) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, 0)
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                state = "Z"
            if state == "Z":
                raise Stopped(str(pid))

    def wait(self, what: str, ready: Any, timeout: float) -> Any:
        """Poll `ready()` every second until it returns something true; the processes must stay up."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_processes()
            try:
                value = ready()
            except httpx.HTTPError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what} (logs: {self.logs})")
            time.sleep(1)

    def api(self, method: str, path: str, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"}
        response = httpx.request(method, f"{self.url}/api/v2{path}", headers=headers, timeout=30, **kw)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json()

    def healthy(self) -> bool:
        return httpx.get(f"{self.url}/api/v2/monitor/health", timeout=5).status_code == 200

    def login(self) -> str:
        response = httpx.post(
            f"{self.url}/auth/token", json={"username": self.user, "password": self.password}, timeout=30
        )
        response.raise_for_status()
        return str(response.json()["access_token"])

    def parsed(self, files: set[str]) -> bool:
        """Whether every DAG file has a DAG parsed since the start (or an import error, said once)."""
        errors = self.api("GET", "/importErrors", params={"limit": 100})["import_errors"]
        broken = {Path(e["filename"]).name for e in errors}
        for error in errors:
            name = Path(error["filename"]).name
            if name in files:
                first = error["stack_trace"].strip().splitlines()[-1]
                self.say(f"WARNING: {name} does not import: {first} (the DAG processor's log has the rest)")
                files.discard(name)
        dags = self.api("GET", "/dags", params={"limit": 100})["dags"]
        fresh = {
            Path(d["fileloc"]).name
            for d in dags
            if d["last_parsed_time"] and _epoch(d["last_parsed_time"]) >= self.started - 1
        }
        return files <= fresh | broken

    def run(self, dag_id: str) -> str:
        """Trigger `dag_id` and wait for its run to end; returns the run's state."""
        run_id = self.api("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": None})["dag_run_id"]

        def ended() -> str | None:
            state = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
            return state if state in ("success", "failed") else None

        return str(self.wait(f"the run of {dag_id}", ended, timeout=600))


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--passwords", required=True, help="the simple auth manager's passwords file")
    parser.add_argument("--pid", type=int, action="append", default=[], help="a process that must stay up")
    parser.add_argument("--started", type=float, required=True, help="the script's start, epoch seconds")
    parser.add_argument("--logs", required=True, help="the folder of the processes' logs")
    parser.add_argument("--dags", required=True, help="the DAG folder")
    parser.add_argument("--seed", action="store_true", help="run the catalog and prices DAGs first")
    args = parser.parse_args(argv)
    s = Session(args)
    try:
        s.wait("the API server", s.healthy, timeout=300)
        s.say(f"Airflow UI: {s.url}")
        s.say(f"log in as {s.user}, password {s.password} (kept in {s.passwords})")
        s.token = s.login()
        files = {p.name for p in Path(args.dags).glob("*.py") if not p.name.startswith("_")}
        s.say(f"waiting for the DAG processor to parse the {len(files)} DAG files")
        s.wait("the DAG files to be parsed", lambda: s.parsed(files), timeout=600)
        s.api("PATCH", "/dags", params={"dag_id_pattern": "%", "limit": 100}, json={"is_paused": False})
        s.say("every DAG unpaused")
        if args.seed:
            for dag_id in SEED_DAGS:
                s.say(f"first start: {dag_id} (watch it in the UI: Dags > {dag_id})")
                state = s.run(dag_id)
                if state != "success":
                    s.say(f"{dag_id} ended {state}: its task logs are in the UI (and under {s.logs.parent})")
                    return 1
        s.say("ready: open Dags > accelbench_campaign > Trigger; the form opens with a small local campaign;")
        s.say("  its report follows (accelbench_cross_tier_report): see Benchmarks in the navigation")
        return 0
    except Stopped as exc:
        print(f"ui: process {exc} stopped", file=sys.stderr)
        return 3
    except (TimeoutError, RuntimeError, httpx.HTTPError) as exc:
        print(f"ui: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
