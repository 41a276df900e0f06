"""Reliability fixtures: a live server over a real migrated database with fake providers. The tally
of generated cases (helpers.CASES) is reported by tests/conftest.py's terminal summary."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.container import Container
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.graphql.client import Api, live_api
from tests.reliability.helpers import fake_container


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
