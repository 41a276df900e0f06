"""Reliability fixtures: a live server over a real migrated database with fake providers, and a
tally of generated cases that the terminal summary reports (docs/RELIABILITY.md quotes it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.container import Container
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.graphql.client import Api, live_api
from tests.reliability.helpers import CASES, fake_container


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel()


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def rig(migrated: Settings, model: FakeChatModel, embedder: FakeEmbedder) -> Iterator[Container]:
    built = fake_container(migrated, model, embedder)
    yield built
    built.close()


@pytest.fixture
def api(rig: Container) -> Iterator[Api]:
    with live_api(rig) as client:
        yield client


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if CASES:
        terminalreporter.write_sep("-", "reliability cases run")
        for suite, count in sorted(CASES.items()):
            terminalreporter.write_line(f"{suite}: {count}")
