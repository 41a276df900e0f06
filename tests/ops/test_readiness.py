"""/readyz (app/ops/readiness.py): ready once migrated, the database answering, the embedder loaded
and the indexes warm; otherwise 503 with every reason. /healthz stays what it was."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from app.container import Container
from app.db.database import Database
from app.ops.readiness import Readiness
from app.rag.index import vector_index
from app.settings import Settings
from tests.fakes import FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.waiting import wait_until

CREATE = 'mutation { createProject(input: {name: "kb"}) { ... on Project { id } } }'
ADD = """mutation($p: ID!) { addDocument(projectId: $p, name: "penguins.md", text: "Emperor penguins huddle.") {
  ... on UploadReport { added } } }"""


def _readyz(base: str) -> httpx.Response:
    return httpx.get(f"{base}/readyz", timeout=30)


def test_a_migrated_server_with_its_embedder_and_indexes_loaded_is_ready(api: Api, fake_container: Container) -> None:
    pid = api.run(CREATE)["createProject"]["id"]
    assert api.run(ADD, p=pid)["addDocument"]["added"] == 1
    response = wait_until(lambda: (r := _readyz(api.base)).status_code == 200 and r, 20, "ready")
    assert response.json()["ready"] is True and response.json()["reasons"] == []
    assert api.http.get("/healthz").json()["ok"] is True


@pytest.mark.sqlite_only(reason="the in-memory vector index; PostgreSQL searches pgvector's")
def test_the_warm_up_loads_every_active_spaces_index(fake_container: Container) -> None:
    with live_api(fake_container) as api:
        pid = api.run(CREATE)["createProject"]["id"]
        assert api.run(ADD, p=pid)["addDocument"]["added"] == 1
    # A fresh engine has no index loaded: the warm-up of the next server start loads it.
    fresh = Container.build(fake_container.settings, embedder=FakeEmbedder(), chat_models=FakeModels())
    try:
        with live_api(fresh) as api:
            wait_until(lambda: _readyz(api.base).status_code == 200, 20, "ready")
            with fresh.store.read() as db:
                loaded = [index.loads for index in vector_index._indexes(db).values()]
            assert loaded == [1]
    finally:
        fresh.close()


def test_an_unmigrated_database_is_alive_but_not_ready(settings: Settings) -> None:
    built = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels())
    try:
        with live_api(built) as api:
            health = api.http.get("/healthz")
            assert health.status_code == 200 and health.json()["ok"] is False  # as before
            body = wait_until(lambda: (r := _readyz(api.base)).status_code == 503 and "reasons" in r.json() and r, 20)
            reasons = body.json()["reasons"]
            assert any(reason.startswith("migrations: ") and "ragchat migrate" in reason for reason in reasons), reasons
    finally:
        built.close()


def test_not_ready_while_the_embedder_loads_nor_when_it_cannot(migrated: Settings) -> None:
    store = Database.from_url(migrated.database_url)
    release = threading.Event()

    def slow() -> object:
        assert release.wait(30)
        return object()

    def broken() -> object:
        raise RuntimeError("model file missing")

    async def scenario() -> list[tuple[bool, dict[str, Any]]]:
        seen = []
        readiness = Readiness(store, slow)
        readiness.start()
        seen.append(readiness.check())
        release.set()
        await readiness.stop()
        seen.append(readiness.check())
        failing = Readiness(store, broken)
        failing.start()
        await failing.stop()
        seen.append(failing.check())
        return seen

    try:
        loading, loaded, failed = asyncio.run(scenario())
    finally:
        store.dispose()
    assert loading == (False, {"ready": False, "reasons": ["warming up: the embedder and the indexes are loading"]})
    assert loaded == (True, {"ready": True, "reasons": []})
    assert failed == (False, {"ready": False, "reasons": ["embedder: model file missing"]})
