"""Shared fixtures: a real SQLite file per test, migrated by Alembic; live servers on loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from app.container import Container
from app.db import migrate
from app.settings import Settings


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
