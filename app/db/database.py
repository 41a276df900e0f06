"""Short, explicit transactions over the engine.

``read()`` gives an ORM session in a deferred transaction (WAL: readers never block writers).
``write()`` serialises writers inside this process and begins ``IMMEDIATE`` so the write lock is
taken up front: a writer never fails half-way on a lock upgrade, and another process (the CLI
ingesting while the server runs) waits up to the busy timeout instead of failing.
Both are synchronous; async code calls them through ``anyio.to_thread``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import make_engine
from app.errors import StorageError

_STORAGE_HINTS = ("disk is full", "readonly database", "read-only", "disk i/o error", "unable to open")
# PostgreSQL names the storage's failures by SQLSTATE, and not all of them are OperationalErrors (a
# read-only transaction is an InternalError): 25006 read-only transaction (a hot standby, a database
# set read-only), class 53 insufficient resources (disk full, out of memory, too many connections),
# class 08 connection exceptions, 57P03 cannot connect now, 58030 I/O error.
_STORAGE_SQLSTATES = ("25006", "53", "08", "57P03", "58030")


class Database:
    """The store's entry point: owns the engine and hands out read and write sessions."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # PostgreSQL: a reader sees one snapshot for its whole transaction, as SQLite's WAL readers
        # do (READ COMMITTED would give each statement its own).
        reader = (
            engine.execution_options(isolation_level="REPEATABLE READ")
            if engine.dialect.name == "postgresql"
            else engine
        )
        self._reader = sessionmaker(bind=reader, expire_on_commit=False)
        self._writer = sessionmaker(bind=engine.execution_options(sqlite_begin="IMMEDIATE"), expire_on_commit=False)
        self._write_lock = threading.Lock()
        # The API server writing through this store (app/services/leases.py): the answers, tool
        # calls and files it takes on carry this id, so another server can tell whose they are.
        self.owner: int | None = None

    @classmethod
    def from_url(cls, database_url: str) -> Database:
        return cls(make_engine(database_url))

    @contextmanager
    def read(self) -> Iterator[Session]:
        # Closing (not rolling back) ends the transaction without expiring loaded objects, so
        # callers can keep using what they read after the block.
        try:
            with self._reader() as db:
                yield db
        except DBAPIError as exc:
            error = _storage_error(exc, "the database cannot be read")
            if error is exc:
                raise
            raise error from exc

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write transaction: committed when the block ends, rolled back on any error."""
        with self._write_lock, self._writer() as db:
            try:
                yield db
                db.commit()
            except DBAPIError as exc:
                db.rollback()
                error = _storage_error(exc, "the database refused the write")
                if error is exc:
                    raise
                raise error from exc
            except BaseException:
                db.rollback()
                raise

    def dispose(self) -> None:
        self.engine.dispose()


def read_snapshot_memo(db: Session, name: str, what: str) -> dict[Any, Any]:
    """A dict that lives as long as ``db``'s current read transaction, stored in ``db.info`` under
    ``name``: what was read from one snapshot stays valid until the transaction ends (the in-memory
    search indexes remember their views there). Refused in a ``write()`` session, naming ``what``:
    what a writing transaction sees may still roll back."""
    if db.get_bind().get_execution_options().get("sqlite_begin") == "IMMEDIATE":
        raise RuntimeError(f"{what} runs in a read transaction (Database.read()), not in Database.write()")
    db.connection()  # begins the transaction, so the memo is keyed by the one in use
    transaction = db.get_transaction()
    memo = db.info.get(name)
    if memo is None or memo[0] is not transaction:
        memo = db.info[name] = (transaction, {})
    views: dict[Any, Any] = memo[1]
    return views


def _storage_error(exc: DBAPIError, what: str) -> Exception:
    """A StorageError when the storage itself is the problem (full, read-only, unreachable), else ``exc``."""
    sqlstate = str(getattr(exc.orig, "sqlstate", None) or "")
    if sqlstate and sqlstate.startswith(_STORAGE_SQLSTATES):
        return StorageError(f"{what}: {exc.orig}")
    if sqlstate or not isinstance(exc, OperationalError):
        return exc
    text = str(exc.orig).lower() if exc.orig is not None else str(exc).lower()
    if any(hint in text for hint in _STORAGE_HINTS):
        return StorageError(f"{what}: {exc.orig}")
    return exc
