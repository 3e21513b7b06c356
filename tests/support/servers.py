"""Real servers for the tests: PostgreSQL from Debian's packages and a moto S3/EC2 server, on 127.0.0.1."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing(what: str) -> None:
    """A missing component fails in CI (CI installs it) and skips elsewhere, with the reason."""
    if IN_CI:
        pytest.fail(f"CI needs {what}, and it is missing", pytrace=False)
    pytest.skip(f"{what} is not available here")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PostgresServer:
    """A throwaway cluster: initdb in a temp dir, postgres on 127.0.0.1 only, trust auth."""

    def __init__(self) -> None:
        bindir = _pg_bindir()
        if bindir is None:
            missing("PostgreSQL server binaries (Debian package postgresql)")
        self.bindir = bindir
        self.as_user: list[str] = []
        self.dir = Path(tempfile.mkdtemp(prefix="accelbench-pg-"))
        if os.geteuid() == 0:  # postgres refuses to run as root
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                missing("a 'postgres' system user to run PostgreSQL as (running as root)")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self.data = self.dir / "data"

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, text=True)

    def start(self) -> PostgresServer:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "accelbench",
            "--no-sync",
            "-E",
            "UTF8",
        )
        opts = f"-h 127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off"
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(self.dir / "server.log"),
            "-w",
            "start",
        )
        return self

    def create_database(self, name: str) -> str:
        self._run(
            str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "accelbench", name
        )
        return self.url(name)

    def url(self, db: str) -> str:
        return f"postgresql+psycopg://accelbench@127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class MotoServer:
    """moto's threaded server: a real HTTP endpoint that boto3 talks to like AWS."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoServer:
        self.server.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("moto server did not start")

    def stop(self) -> None:
        self.server.stop()


class FaultyProxy:
    """An HTTP reverse proxy on 127.0.0.1 in front of a real server (moto) that can play an outage.

    `fault(method, path)` decides per request: None forwards it; "drop" closes the connection unanswered
    (what an unreachable endpoint or a dead load balancer looks like to the client); an int answers with
    that status (e.g. 503) and an S3-shaped error body. `seen` lists (method, path, outcome).
    """

    def __init__(self, target_port: int) -> None:
        import http.client
        from collections.abc import Callable
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.fault: Callable[[str, str], str | int | None] = lambda method, path: None
        self.seen: list[tuple[str, str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outcome = proxy.fault(self.command, self.path)
                proxy.seen.append((self.command, self.path, str(outcome or "ok")))
                if outcome == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(outcome, int):
                    err = b"<Error><Code>ServiceUnavailable</Code><Message>outage</Message></Error>"
                    self.send_response(outcome)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(err)))
                    self.end_headers()
                    self.wfile.write(err)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", target_port, timeout=30)
                conn.request(self.command, self.path, body=body, headers=dict(self.headers))
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for key, value in resp.getheaders():
                    if key.lower() not in {"content-length", "transfer-encoding", "connection"}:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
