"""Alembic environment: our engine (pysqlite3 + sqlite-vec), batch mode for SQLite ALTERs."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.db.engine import make_engine
from app.db.migrate import migration_connection
from app.db.models import Base
from app.db.schema_objects import is_unmodelled
from app.settings import load_settings

config = context.config


def include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    # FTS5 and vec0 tables (and their shadow tables), and PostgreSQL's per-space vector tables and
    # full-text column, are created by raw SQL on purpose.
    return not (name is not None and is_unmodelled(type_, name))


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=True,
        include_object=include_object,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_with(connection)
        return
    url = config.attributes.get("database_url") or load_settings().database_url
    engine = make_engine(url)
    try:
        with migration_connection(engine) as conn:
            run_with(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("ragchat migrations run online only (SQLite file)")
run_migrations_online()
