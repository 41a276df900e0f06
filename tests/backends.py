"""The database backends tests run on: SQLite files, and PostgreSQL (one local server per run).

``pytest --backends=sqlite,postgresql`` (what ``make test`` passes) runs every test that takes its
database from the ``backend``-following fixtures once per backend; the default, ``sqlite``, runs it
once, on SQLite. ``misrouted`` is the guard that fails a test opening a SQLite database any other
way (tests/conftest.py applies it after every test). The PostgreSQL server comes from ``pgserver`` (PyPI: PostgreSQL 16 with pgvector, offline):
one server per run in a temporary folder, reached over a Unix socket, deleted at the end. Each
test gets a database of its own: an empty one (``CREATE DATABASE``) or, for ``migrated``, a copy of
a template migrated once per run (``CREATE DATABASE ... TEMPLATE``), dropped after the test.
"""

from __future__ import annotations

import itertools
import os
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, CursorResult, text
from sqlalchemy.engine import make_url

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
BACKENDS = (SQLITE, POSTGRESQL)
TEMPLATE = "ragchat_migrated"


# Every database-touching test runs on both backends: a test that requests the `backend`-following
# fixtures (`database_url`, `migrated`, ...) is parametrised over --backends; one that opens a SQLite
# database any other way fails (``misrouted``, checked after every test by tests/conftest.py) unless
# it is marked `sqlite_only(reason=...)` (SQLite's own machinery) or `sqlite_too(reason=...)`.
# Below, the tests whose PostgreSQL case does not pass yet, each with why: their PostgreSQL case is
# collected and skipped with the reason, so it shows in every run's summary (issue 18).
BOTH_BACKENDS = ("tests/",)
PENDING_ON_POSTGRES: dict[str, str] = {}


def pending_on_postgres(nodeid: str) -> str | None:
    """Why the test (``path::name``) does not run on PostgreSQL yet, or None."""
    path = nodeid.split("::", 1)[0]
    return PENDING_ON_POSTGRES.get(nodeid.split("[", 1)[0]) or PENDING_ON_POSTGRES.get(path)


def on_both(nodeid: str) -> bool:
    """Whether a test runs on both backends without a `postgres` marker (its folder). A test
    pending on PostgreSQL is parametrised too, and its PostgreSQL case skipped with the reason."""
    return nodeid.startswith(BOTH_BACKENDS)


# The URL `ragchat` uses when nothing names one (app/settings.py); a child process started without
# RAGCHAT_DATABASE_URL opens this SQLite file.
DEFAULT_URL = "sqlite:///./data/ragchat.db"
# `ragchat` commands that do not open the configured database: `bench` builds its own scratch SQLite
# knowledge base whatever the server's database is (app/bench/scratch.py).
NO_DATABASE_COMMANDS = frozenset({"export-schema", "bench", "--help", "--version"})


def is_sqlite(url: object) -> bool:
    return make_url(str(url)).get_backend_name() == SQLITE


def child_database_url(args: object, env: Mapping[str, str] | None) -> str | None:
    """The database a child process opens if it runs ragchat (``python -m app CMD`` or the
    ``ragchat`` script), else None."""
    argv = [str(arg) for arg in args] if isinstance(args, Sequence) and not isinstance(args, str) else [str(args)]
    command: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "-m" and argv[i + 1 : i + 2] == ["app"]:
            command = argv[i + 2 :]
            break
        if i == 0 and Path(arg).name == "ragchat":
            command = argv[1:]
            break
    else:
        return None
    if command and command[0] in NO_DATABASE_COMMANDS:
        return None
    variables = os.environ if env is None else env
    return variables.get("RAGCHAT_DATABASE_URL") or DEFAULT_URL


def misrouted(opened: Sequence[str], *, backend: str | None, sqlite_only: bool, sqlite_too: bool) -> str | None:
    """Why a test that opened these databases did not run where it claims to, or None.

    ``backend`` is the test's ``backend`` parameter (None when it is not parametrised). A test that
    opens a SQLite database must either follow ``backend`` (the ``database_url``/``migrated``
    fixtures), and then open none on PostgreSQL, or say why it is SQLite's alone (``sqlite_only``).
    ``sqlite_too`` excuses a test that opens a SQLite database on purpose beside a PostgreSQL one
    (comparing the two, moving a knowledge base from one to the other)."""
    sqlite = sorted({url for url in opened if is_sqlite(url)})
    if not sqlite or sqlite_only or sqlite_too:
        return None
    if backend is None:
        return (
            f"opened SQLite ({', '.join(sqlite)}) without following the `backend` parameter, so it runs on "
            "SQLite only: take the database from the `database_url`/`migrated` fixtures, or mark it "
            "`sqlite_only(reason=...)` if it tests SQLite's own machinery"
        )
    if backend == POSTGRESQL:
        return (
            f"runs as the PostgreSQL case but opened SQLite ({', '.join(sqlite)}): build its store from the "
            "`database_url`/`migrated` fixtures, not from tmp_path"
        )
    return None


def execute(conn: Connection, statement: str, params: Sequence[Any] | list[Sequence[Any]] = ()) -> CursorResult[Any]:
    """Run SQL written with positional ``?`` placeholders on either backend: each ``?`` becomes a
    named parameter of ``text()`` (psycopg does not take ``?``). A list of tuples runs once per tuple."""
    names: list[str] = []

    def named(_match: re.Match[str]) -> str:
        names.append(f"p{len(names)}")
        return f":{names[-1]}"

    sql = text(re.sub(r"\?", named, statement))
    if isinstance(params, list):
        return conn.execute(sql, [dict(zip(names, row, strict=True)) for row in params])
    return conn.execute(sql, dict(zip(names, params, strict=True)))


# What a violated CHECK constraint says on each backend.
CHECK_FAILED = r"CHECK constraint failed|violates check constraint"


def sync_sequences(conn: Connection, *tables: str) -> None:
    """After rows were inserted with explicit ids: on PostgreSQL, move each table's id sequence
    past them (SQLite's AUTOINCREMENT follows by itself), so the next row without an id gets a new one."""
    if conn.dialect.name != POSTGRESQL:
        return
    for table in tables:
        conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"))


def delete_vectors(conn: Connection, table: str) -> None:
    """Delete every stored vector of an embedding space (``vec_space_<id>``) as the app would see a
    space whose chunks were never embedded: on SQLite the vec0 rows go and each chunk is journalled,
    so the in-process index catches up (app/rag/index/vector_index.py); on PostgreSQL the table's rows go."""
    if conn.dialect.name == POSTGRESQL:
        conn.execute(text(f"DELETE FROM {table}"))
        return
    space = int(table.removeprefix("vec_space_"))
    conn.execute(text(f"DELETE FROM {table}"))
    conn.execute(text("INSERT INTO vector_journal(space_id, chunk_id) SELECT :space, id FROM chunks"), {"space": space})


@dataclass
class SqliteTemplates:
    """SQLite files migrated to head once per run (per default threshold), copied for each test:
    a file copy costs about a millisecond where running every Alembic revision costs far more."""

    folder: Path
    _made: dict[float, Path] = field(default_factory=dict)

    def migrated_copy(self, url: str, *, threshold: float) -> None:
        """Write a database migrated to head with this default threshold at the SQLite ``url``."""
        import shutil

        template = self._made.get(threshold)
        if template is None:
            from app.db import migrate

            template = self.folder / f"head-{len(self._made)}.db"
            migrate.upgrade(f"sqlite:///{template}", default_threshold=threshold)
            # The migration's engine is disposed: WAL mode leaves no -wal file behind a closed
            # database, so the main file is the whole database.
            assert not Path(f"{template}-wal").exists(), "the template's WAL was not checkpointed"
            self._made[threshold] = template
        target = make_url(url).database
        assert target, url
        shutil.copyfile(template, target)


def parse(option: str) -> list[str]:
    chosen = [name.strip() for name in option.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in BACKENDS]
    if unknown or not chosen:
        raise ValueError(f"--backends: {option!r}; choose from {', '.join(BACKENDS)} (comma-separated)")
    return chosen


@dataclass
class PostgresServer:
    """One pgserver PostgreSQL for the test run; hands out fresh databases."""

    pgdata: Path
    _server: Any = None
    _base_url: str = ""
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _template_threshold: float | None = None

    def start(self) -> None:
        # platformdirs warns (and pytest would fail) when XDG_RUNTIME_DIR is unset; pgserver only
        # keeps an inter-process lock file there.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            # As root, pgserver runs PostgreSQL as a system user it creates, `pgserver` (PostgreSQL
            # refuses to run as root). It listens on a Unix socket only, no TCP port.
            self._server = pgserver.get_server(self.pgdata, cleanup_mode="delete")
        self._base_url = self._server.get_uri()
        # A throwaway server: durability costs time (CREATE DATABASE flushes) and buys nothing.
        with self._admin() as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None

    def url(self, database: str) -> str:
        url = make_url(self._base_url).set(drivername="postgresql+psycopg", database=database, password=None)
        return url.render_as_string(hide_password=False)

    @contextmanager
    def _admin(self) -> Iterator[Any]:
        import psycopg

        with psycopg.connect(make_url(self._base_url).render_as_string(hide_password=False), autocommit=True) as conn:
            yield conn

    def create(self) -> str:
        """A new, empty database and its URL."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def migrated_copy(self, url: str, *, threshold: float) -> None:
        """Replace the (empty) database at ``url`` by a copy of the template migrated to head with
        this default threshold (made on first use)."""
        name = make_url(url).database
        with self._admin() as conn:
            self._ensure_template(conn, threshold)
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}" STRATEGY FILE_COPY')

    def drop(self, url: str) -> None:
        name = make_url(url).database
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _ensure_template(self, conn: Any, threshold: float) -> None:
        if self._template_threshold == threshold:
            return
        from app.db import migrate

        conn.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
        migrate.upgrade(self.url(TEMPLATE), default_threshold=threshold)
        self._template_threshold = threshold
