"""A live server over a real migrated database with fake providers (real Protocols)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.container import Container
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel()


@pytest.fixture
def fake_container(migrated: Settings, model: FakeChatModel) -> Iterator[Container]:
    built = Container.build(migrated, embedder=FakeEmbedder(), chat_models=FakeModels(model))
    yield built
    built.close()


@pytest.fixture
def api(fake_container: Container) -> Iterator[Api]:
    with live_api(fake_container) as client:
        yield client
