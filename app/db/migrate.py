"""Bring a database to a revision with Alembic, programmatically (`ragchat migrate`).

SQLite cannot ALTER most things, so batch mode recreates tables: copy, DROP, rename. With
foreign keys on, that DROP would cascade and delete every child row (all messages of a recreated
chat_sessions table). So migrations run with foreign keys off, in one transaction, and the
result is checked with ``PRAGMA foreign_key_check`` before it is committed.
PostgreSQL alters tables in place and its DDL is transactional: there a migration is simply one
transaction, with foreign keys enforced throughout.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from app.db.engine import make_engine
from app.errors import StorageError
from app.resources import MIGRATIONS as MIGRATIONS_DIR


def alembic_config(database_url: str, *, default_threshold: float | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["database_url"] = database_url
    if default_threshold is not None:
        cfg.attributes["default_threshold"] = default_threshold
    return cfg


@contextmanager
def migration_connection(engine: Engine) -> Iterator[Connection]:
    """A connection with foreign keys off, inside one transaction, checked before commit (SQLite);
    one transaction (PostgreSQL)."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn, conn.begin():
            yield conn
        return
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        raw.execute("PRAGMA foreign_keys = OFF")  # must happen outside a transaction
        try:
            with conn.begin():
                yield conn
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
                if broken:
                    raise StorageError(f"migration left {len(broken)} broken foreign keys: {broken[:5]}")
        finally:
            raw.execute("PRAGMA foreign_keys = ON")


def _run(database_url: str, action: str, revision: str, default_threshold: float | None) -> None:
    cfg = alembic_config(database_url, default_threshold=default_threshold)
    engine = make_engine(database_url)
    try:
        with migration_connection(engine) as conn:
            cfg.attributes["connection"] = conn
            getattr(command, action)(cfg, revision)
    finally:
        engine.dispose()


def upgrade(database_url: str, revision: str = "head", *, default_threshold: float | None = None) -> None:
    _run(database_url, "upgrade", revision, default_threshold)


def downgrade(database_url: str, revision: str) -> None:
    _run(database_url, "downgrade", revision, None)


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
