"""SQLAlchemy engine: pysqlite3 with sqlite-vec loaded on every connection, or PostgreSQL.

``postgresql+psycopg://`` URLs get a plain psycopg 3 engine (no pragmas, no extension loading:
the pgvector extension is created by the first migration that needs it); everything below about
pragmas and ``BEGIN`` concerns SQLite only.

The system ``sqlite3`` module cannot load extensions, so the engine is built on ``pysqlite3``
(a newer SQLite, 3.5x). Every new DBAPI connection gets sqlite-vec and the pragmas below.
Transactions are begun by us (``BEGIN`` / ``BEGIN IMMEDIATE``) instead of by the driver, which is
what makes SAVEPOINT work and lets writers take the write lock up front.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import sqlite_vec
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from app.errors import SettingsError, ValidationError

BUSY_TIMEOUT_MS = 10_000
# Read speed: memory-map up to 1 GiB of the file and keep a 64 MiB page cache per connection.
PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA mmap_size = 1073741824",
    "PRAGMA cache_size = -65536",
    "PRAGMA temp_store = MEMORY",
)


def sqlite_path(database_url: str) -> Path | None:
    """The file behind a ``sqlite:///`` URL, or None for an in-memory database."""
    database = make_url(database_url).database
    if not database or database == ":memory:":
        return None
    return Path(database)


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN ourselves (see _on_begin)
    dbapi_connection.enable_load_extension(True)
    sqlite_vec.load(dbapi_connection)
    dbapi_connection.enable_load_extension(False)
    cursor = dbapi_connection.cursor()
    try:
        for pragma in PRAGMAS:
            cursor.execute(pragma)
    finally:
        cursor.close()


def _on_begin(connection: Any) -> None:
    mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
    connection.exec_driver_sql(f"BEGIN {mode}")


NUL_REFUSED = "must not contain a NUL character (U+0000): the database cannot store one"


def _values(parameters: Any) -> Any:
    if isinstance(parameters, dict):
        return parameters.values()
    if isinstance(parameters, list | tuple) and parameters and isinstance(parameters[0], dict | list | tuple):
        return (value for row in parameters for value in _values(row))  # executemany
    return parameters or ()


def _refuse_nul(_conn: Any, _cursor: Any, _statement: str, parameters: Any, _context: Any, _many: bool) -> None:
    """PostgreSQL's text cannot hold U+0000: psycopg refuses a statement with one in a parameter (a
    name to store or to look up) with an error that surfaced as unexpected; SQLite stored it. On
    both, a NUL in a parameter is the client's mistake (names and messages lose control characters
    before they get here: app/rag/sanitize.py), refused before the statement runs."""
    for value in _values(parameters):
        if isinstance(value, str) and "\x00" in value:
            raise ValidationError("input", NUL_REFUSED)


def is_postgres(database_url: str) -> bool:
    """Whether the URL names a PostgreSQL database (the only other backend)."""
    return make_url(database_url).get_backend_name() == "postgresql"


def make_engine(database_url: str, *, echo: bool = False) -> Engine:
    """Create the engine, creating the database's folder on demand (SQLite)."""
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        if url.get_driver_name() != "psycopg":
            raise SettingsError(
                f"RAGCHAT_DATABASE_URL: PostgreSQL is reached through psycopg 3: use postgresql+psycopg://, "
                f"not {url.drivername}://"
            )
        engine = create_engine(url, echo=echo, pool_pre_ping=True)
        event.listen(engine, "before_cursor_execute", _refuse_nul)
        return engine
    if url.get_backend_name() != "sqlite":
        raise SettingsError(
            f"RAGCHAT_DATABASE_URL: {url.drivername}:// is not supported (sqlite:/// or postgresql+psycopg://)"
        )
    path = sqlite_path(database_url)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SettingsError(f"RAGCHAT_DATABASE_URL: cannot create {path.parent}: {exc}") from exc
    engine = create_engine(
        database_url,
        module=sqlite3,
        echo=echo,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        pool_pre_ping=False,
    )
    event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _on_begin)
    event.listen(engine, "before_cursor_execute", _refuse_nul)
    return engine


def versions(engine: Engine) -> dict[str, str]:
    """SQLite and sqlite-vec (or PostgreSQL and pgvector) versions as seen by a pooled connection."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            server = conn.exec_driver_sql("SHOW server_version").scalar_one()
            vector = conn.exec_driver_sql("SELECT extversion FROM pg_extension WHERE extname = 'vector'").scalar()
            return {"postgresql": str(server), "pgvector": str(vector) if vector is not None else "not installed"}
        sqlite_version, vec_version = conn.exec_driver_sql("SELECT sqlite_version(), vec_version()").one()
    return {"sqlite": sqlite_version, "sqlite_vec": vec_version}
