"""The server tunes the process's garbage collector only when it owns the process: `ragchat serve`
(or a caller that asks), never a host that hands in its own container (tests, another application)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from app.container import Container
from app.main import FULL_COLLECTIONS_RARER, create_app
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.live import serve


@pytest.fixture
def fake(migrated: Settings) -> Iterator[Container]:
    built = Container.build(migrated, embedder=FakeEmbedder(), chat_models=FakeModels(FakeChatModel()))
    yield built
    built.close()


@pytest.mark.parametrize("tune_gc", [None, True])
def test_the_collector_is_tuned_only_for_a_server_that_owns_the_process(fake: Container, tune_gc: bool | None) -> None:
    before = gc.get_threshold(), gc.get_freeze_count()
    with serve(create_app(fake.settings, fake, tune_gc=tune_gc)):
        during = gc.get_threshold(), gc.get_freeze_count()
    after = gc.get_threshold(), gc.get_freeze_count()
    if tune_gc:
        assert during[0][2] == before[0][2] * FULL_COLLECTIONS_RARER and during[1] > before[1]
    else:
        assert during == before
    assert after == before  # put back when the server stops
