"""Backups of the database while the server runs, their check, and restoring one.

SQLite: SQLite's online backup API (``sqlite3.Connection.backup``, pysqlite3 here) in one step: one
read transaction, which in WAL mode (app/db/engine.py) is a consistent snapshot that never blocks the
servers' writers. (Copying in several steps would let a write between steps restart the copy, and a
busy server could keep restarting it.) The copy is written beside the target and renamed into place
once complete, so a backup file is never half written. The vector tables (sqlite-vec's shadow
tables) are ordinary pages and come along.

PostgreSQL: ``pg_dump --format=custom`` (a consistent snapshot while servers write), restored with
``pg_restore --clean --if-exists``; both must be on the PATH (docs/OPERATIONS.md).

A check (``ragchat backup --check PATH``) opens the copy: ``PRAGMA integrity_check`` and its migration
revision for SQLite, ``pg_restore --list`` for a dump. Restoring refuses a SQLite target a running
server holds (its lock file under ``<database>.servers/``) and an existing target without ``replace``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pysqlite3.dbapi2 as sqlite3
from sqlalchemy import make_url

from app.db import migrate
from app.db.engine import sqlite_path
from app.errors import SettingsError, StorageError

BUSY_SECONDS = 30  # waiting for a writer's lock when the backup's read begins


@dataclass(frozen=True)
class Checked:
    ok: bool
    detail: str  # "ok", or what the check found
    revision: str | None = None  # SQLite: the copy's migration revision


def _sqlite_file(database_url: str) -> Path | None:
    if not database_url.startswith("sqlite:///"):
        return None
    path = sqlite_path(database_url)
    if path is None:
        raise SettingsError("an in-memory database has nothing to back up")
    return path


def _libpq_url(database_url: str) -> str:
    """The URL pg_dump and pg_restore take (no SQLAlchemy driver name)."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


def backup(database_url: str, target: Path) -> Path:
    """Copy the database at ``database_url`` to ``target`` (a file), online."""
    source = _sqlite_file(database_url)
    if target.exists():
        raise SettingsError(f"{target} exists: choose a new file (a backup never overwrites one)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        if source is None:
            _run(["pg_dump", "--format=custom", "--no-owner", f"--file={partial}", _libpq_url(database_url)])
        else:
            if not source.is_file():
                raise StorageError(f"there is no database at {source}")
            src = sqlite3.connect(str(source), timeout=BUSY_SECONDS)
            dst = sqlite3.connect(str(partial))
            try:
                src.backup(dst)  # every page in one step: one snapshot (module docstring)
                dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            finally:
                dst.close()
                src.close()
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def check(path: Path) -> Checked:
    """Whether ``path`` is a readable backup: a SQLite file passing ``integrity_check``, or a dump
    pg_restore can list."""
    if not path.is_file():
        return Checked(False, f"there is no file at {path}")
    with path.open("rb") as file:
        header = file.read(16)
    if header.startswith(b"SQLite format 3"):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            found = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            revision = None
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone():
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
                revision = row[0] if row else None
        finally:
            conn.close()
        ok = found == ["ok"]
        return Checked(ok, "ok" if ok else "; ".join(found[:10]), revision)
    if header.startswith(b"PGDMP"):
        listed = subprocess.run(["pg_restore", "--list", str(path)], capture_output=True, text=True, check=False)
        return Checked(listed.returncode == 0, "ok" if listed.returncode == 0 else listed.stderr.strip()[:500])
    return Checked(False, f"{path} is neither a SQLite database nor a pg_dump archive")


def restore(backup_path: Path, database_url: str, *, replace: bool = False) -> None:
    """Put the backup at ``backup_path`` in place as the database at ``database_url``."""
    checked = check(backup_path)
    if not checked.ok:
        raise StorageError(f"{backup_path} is not a sound backup: {checked.detail}")
    target = _sqlite_file(database_url)
    if target is None:
        args = ["pg_restore", "--no-owner", f"--dbname={_libpq_url(database_url)}"]
        _run([*args, *(["--clean", "--if-exists"] if replace else []), str(backup_path)])
        return
    if checked.revision is None:
        raise StorageError(f"{backup_path} is a SQLite database but not a ragchat one (no migration revision)")
    if _held(target):
        raise StorageError(f"a server is running on {target}: stop it before restoring")
    if target.exists() and not replace:
        raise SettingsError(f"{target} exists: pass --replace to overwrite it with the backup")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".restoring")
    shutil.copyfile(backup_path, partial)
    for suffix in ("-wal", "-shm"):  # the old database's journal must not be applied to the restored one
        target.with_name(target.name + suffix).unlink(missing_ok=True)
    partial.replace(target)


def behind(checked: Checked) -> bool:
    """Whether a checked SQLite backup is older than the code (``ragchat migrate`` after restoring)."""
    return checked.revision is not None and checked.revision != migrate.head_revision()


def _held(database: Path) -> bool:
    """Whether a server process holds a lock on ``database`` (app/db/server_locks.py)."""
    folder = database.parent / f"{database.name}.servers"
    for lock in folder.glob("*.lock") if folder.is_dir() else []:
        with lock.open("a") as file:
            try:
                fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(file.fileno(), fcntl.LOCK_UN)
    return False


def _run(command: list[str]) -> None:
    if shutil.which(command[0]) is None:
        raise SettingsError(f"{command[0]} is not on the PATH: install the PostgreSQL client tools")
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=os.environ.copy())
    if done.returncode != 0:
        raise StorageError(f"{command[0]} failed: {done.stderr.strip()[:1000]}")
