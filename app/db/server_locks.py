"""A lock each API server holds for as long as its process lives, and the test whether a server's is free.

Whether another server still works on a row is a question about its process, not about a clock:
a heartbeat can be late while its server is alive (a long pause) and a restarted server would
wait out the timeout before recovering what its previous run left. So each server holds a lock
that ends with its process, whatever the way it ends (SIGKILL included):

- PostgreSQL: a session-level advisory lock ``(hashtext('ragchat server'), id)`` on a connection
  of its own. The server ends, its connection closes, the lock is free. Another server tests it
  with ``pg_try_advisory_xact_lock``, which holds it until its recovery commits, so two recovering
  servers never both act on the same dead one.
- SQLite (servers on one machine, as its file is): an exclusive ``flock`` on a file per server
  beside the database (``<database>.servers/<id>.lock``), released by the kernel when the process
  ends. In-memory databases have no other process: nobody else holds one.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Connection, Engine, text

from app.db.engine import sqlite_path
from app.errors import StorageError

_SCOPE = "ragchat server"


class HeldLock:
    """This server's lock; :meth:`release` when it stops."""

    def __init__(self, handle: Connection | IO[bytes] | None, path: Path | None = None) -> None:
        self._handle = handle
        self._path = path

    def alive(self) -> bool:
        """Whether this process still holds it. On PostgreSQL the lock lives as long as its
        connection's session, which a restart, a network failure or ``pg_terminate_backend`` ends
        while the server runs on: a statement on it tells. A file lock ends only with the file."""
        handle = self._handle
        if not isinstance(handle, Connection):
            return handle is not None or self._path is None
        try:
            handle.exec_driver_sql("SELECT 1")
            handle.rollback()  # not left idle in a transaction
        except Exception:  # whatever the driver says of a dead connection
            return False
        return True

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is None:
            return
        try:
            handle.close()  # the connection (PostgreSQL) or the file (SQLite): the lock goes with it
        except Exception:  # a connection that already died: its lock went with it
            if not isinstance(handle, Connection):
                raise
        if self._path is not None:
            self._path.unlink(missing_ok=True)


def hold(engine: Engine, conn: Connection, server_id: int) -> HeldLock:
    """Take server ``server_id``'s lock, before the transaction registering it (on ``conn``) commits,
    so nobody sees the server without its lock."""
    if engine.dialect.name == "postgresql":
        own = engine.connect()
        own.detach()  # closing it must end the session (and the lock), not return it to the pool
        own.execute(text("SELECT pg_advisory_lock(hashtext(:scope), :id)"), {"scope": _SCOPE, "id": server_id})
        own.commit()  # the lock is the session's: it outlives this transaction
        return HeldLock(own)
    path = _lock_path(engine, server_id)
    if path is None:
        return HeldLock(None)
    try:
        path.parent.mkdir(exist_ok=True)
        handle = path.open("wb")
    except OSError as exc:  # a read-only folder: the server says so instead of failing to start
        raise StorageError(f"cannot create this server's lock file {path}: {exc.strerror or exc}") from exc
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new id's file: nobody else holds it
    return HeldLock(handle, path)


def is_gone(conn: Connection, server_id: int) -> bool:
    """Whether server ``server_id``'s process has ended (its lock is free). On PostgreSQL the lock is
    then held by ``conn``'s transaction until it ends."""
    if conn.dialect.name == "postgresql":
        taken = conn.execute(
            text("SELECT pg_try_advisory_xact_lock(hashtext(:scope), :id)"), {"scope": _SCOPE, "id": server_id}
        ).scalar_one()
        return bool(taken)
    path = _lock_path(conn.engine, server_id)
    if path is None:
        return True
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return True  # never taken, or released at a clean stop
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # releases it, if taken
    return True


def forget(conn: Connection, server_id: int) -> None:
    """Remove the lock file of a server found gone (SQLite)."""
    path = _lock_path(conn.engine, server_id) if conn.dialect.name == "sqlite" else None
    if path is not None:
        path.unlink(missing_ok=True)


def _lock_path(engine: Engine, server_id: int) -> Path | None:
    database: Any = engine.url.database
    path = sqlite_path(f"sqlite:///{database}") if database else None
    if path is None:
        return None
    return path.parent / f"{path.name}.servers" / f"{int(server_id)}.lock"
