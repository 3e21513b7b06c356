"""Engine, sessions and schema migration for the catalog (SQLite embedded, PostgreSQL in production)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from accelbench.errors import CatalogUnavailable, ConfigError

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).with_name("migrations")


# What a library service takes to reach the catalog: a call that opens its engine for one service call and
# disposes it after (the Airflow tasks pass accelbench.airflow.tasks.common.catalog_engine).
CatalogOpener = Callable[[], AbstractContextManager[Engine]]


def normalise_url(url: str) -> str:
    """Map the URL spellings users paste (postgres://, postgresql://) to the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def redact(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable URL>"


def _sqlite_pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str) -> Engine:
    """Create an engine and prove it connects, so a bad URL fails here with its name in the error."""
    url = normalise_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError("catalog_url", redact(url), f"not a database URL ({exc})") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = create_engine(parsed, pool_pre_ping=True)
    except NoSuchModuleError as exc:
        raise ConfigError("catalog_url", redact(url), f"unsupported database ({exc})") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except DBAPIError as exc:
        engine.dispose()
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise CatalogUnavailable(f"catalog database {redact(url)} is unreachable: {reason}") from None
    return engine


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = engine
    return cfg


def migrate(engine: Engine) -> str:
    """Bring the schema to the newest revision (idempotent) and return that revision."""
    command.upgrade(alembic_config(engine), "head")
    with engine.connect() as conn:
        rev = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    log.info("catalog schema at revision %s on %s", rev, redact(engine.url.render_as_string()))
    return str(rev)


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error so nothing half-written stays."""
    factory = sessionmaker(engine, expire_on_commit=False)
    try:
        with factory() as session, session.begin():
            yield session
    except OperationalError as exc:  # the server went away or refused mid-transaction: say so, plainly
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise CatalogUnavailable(
            f"catalog database {redact(engine.url.render_as_string())} failed during a write ({reason}); "
            "the transaction was rolled back, nothing of it was stored"
        ) from exc
