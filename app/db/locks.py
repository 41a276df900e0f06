"""Writers that check, then insert, take turns on what they check.

A write that reads "is there a document of this name? no: insert one" is atomic on SQLite, whose
write transactions take the database's one write lock up front (``BEGIN IMMEDIATE``,
app/db/database.py). On PostgreSQL two API servers run such writes at once: both find nothing and
both insert (or the second hits a unique constraint as an internal error). :func:`take_turns`
makes them take turns there, with a transaction-level advisory lock on what they are about to
check: the second waits until the first commits, then finds its row.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session


def take_turns(db: Session, scope: str, key: object = "") -> None:
    """Hold, until ``db``'s transaction ends, the lock on ``(scope, key)`` (PostgreSQL; SQLite's
    write transactions already take turns). Call it in a ``Database.write()`` before the check."""
    if db.get_bind().dialect.name != "postgresql":
        return
    lock = text("SELECT pg_advisory_xact_lock(hashtext(:scope), hashtext(:key))")
    db.execute(lock, {"scope": scope, "key": str(key)})
