"""Health: is the store reachable and migrated, and which versions are running."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError

from app import __version__
from app.db import migrate
from app.db.database import Database
from app.db.engine import versions
from app.errors import StorageError


@dataclass(frozen=True)
class Health:
    ok: bool
    version: str
    sqlite_version: str | None  # None on PostgreSQL
    sqlite_vec_version: str | None
    database: str  # "sqlite" or "postgresql"
    database_version: str
    vector_extension_version: str  # sqlite-vec's or pgvector's
    migration_revision: str | None
    head_revision: str


def check(store: Database) -> Health:
    """Raises :class:`StorageError` when the database cannot be opened."""
    try:
        found = versions(store.engine)
        current = migrate.current_revision(store.engine)
    except DBAPIError as exc:
        raise StorageError(f"the database cannot be opened: {exc.orig}") from exc
    head = migrate.head_revision()
    return Health(
        ok=current == head,
        version=__version__,
        sqlite_version=found.get("sqlite"),
        sqlite_vec_version=found.get("sqlite_vec"),
        database=store.engine.dialect.name,
        database_version=found.get("sqlite") or found["postgresql"],
        vector_extension_version=found.get("sqlite_vec") or found["pgvector"],
        migration_revision=current,
        head_revision=head,
    )
