"""The ingestion worker lets go of the database before the container disposes of it (issue 18):
a server stopping while a file is being embedded waits for that step, queues the file again, and
nothing touches the store once ``Container.close()`` has returned."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Engine, event, select

from app.container import Container
from app.db.database import Database
from app.db.enums import ItemState
from app.db.models import IngestionItem
from app.llm.base import ChatModels, Embedder, Vectors
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import live_api
from tests.graphql.ops import CREATE_PROJECT, UPLOAD

HELD = "penguins huddle through the polar night"


class HeldEmbedder(FakeEmbedder):
    """Holds the embedding of the uploaded file's text until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any(HELD in text for text in texts):
            self.entered.set()
            self.release.wait(30)
        return super().embed(texts)


def test_closing_waits_for_the_worker_and_nothing_uses_the_store_after(migrated: Settings) -> None:
    embedder = HeldEmbedder()
    models = cast(ChatModels, FakeModels(FakeChatModel()))
    container = Container.build(migrated, embedder=cast(Embedder, embedder), chat_models=models)
    late: list[str] = []
    closed = threading.Event()

    def statement(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        if closed.is_set():
            late.append(sql)

    engine: Engine = container.store.engine
    event.listen(engine, "before_cursor_execute", statement)
    try:
        with live_api(container) as api:
            pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
            queued = api.upload(UPLOAD, {"variables.files.0": ("night.md", HELD.encode())}, {"p": pid, "wait": False})
            assert queued["data"]["uploadDocuments"]["__typename"] == "IngestionJob", queued
            assert embedder.entered.wait(30), "the worker never embedded the file"
            # The embedding ends half a second into the server's shutdown.
            threading.Timer(0.5, embedder.release.set).start()
        container.close()
        closed.set()
        embedder.release.wait(30)
        # Today's worker, cancelled rather than waited for, finishes the step now: give it the time.
        time.sleep(1.0)
        assert late == [], f"the worker used the store after Container.close(): {late}"
    finally:
        event.remove(engine, "before_cursor_execute", statement)
        embedder.release.set()
        container.close()

    store = Database.from_url(migrated.database_url)
    try:
        with store.read() as db:
            item = db.scalars(select(IngestionItem)).one()
        assert (item.state, item.chunks_done) == (ItemState.QUEUED, 0)  # it starts again at the next start
    finally:
        store.dispose()
