"""Real servers for the tests: PostgreSQL from Debian's packages and a moto S3/EC2 server, on 127.0.0.1."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
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
