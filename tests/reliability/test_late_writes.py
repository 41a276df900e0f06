"""Work that outlives its rows (issue 11, items 2 and 5), attacked through the live endpoints.

A chat turn still streaming when its session is deleted, and an upload still running when its
project is deleted, must not write into the rows that come after them; a client that subscribes and
leaves at once must not leave an answer 'streaming' or a generation slot taken.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator, Sequence
from typing import cast

import pytest
from sqlalchemy import select
from sqlalchemy import text as text_sql

from app.container import Container
from app.db.models import ChatMessage
from app.llm.base import ChatModels, Embedder, Vectors
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION, JOB, SEND, UPLOAD
from tests.waiting import wait_until

DELETE_SESSION = "mutation($id: ID!) { deleteChatSession(id: $id) { __typename } }"
DELETE_PROJECT = "mutation($id: ID!) { deleteProject(id: $id) { __typename } }"
KEYED_CHAT = """subscription($s: ID!, $c: String!, $k: String) {
  chat(sessionId: $s, content: $c, clientMessageId: $k) { __typename } }"""
DOCUMENTS = "query($id: ID!) { project(id: $id) { ... on Project { documentCount } } }"


class GatedEmbedder(FakeEmbedder):
    """Embeds like the fake, but a batch of more than one text waits at the gate (queries pass)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting, self.gate = threading.Event(), threading.Event()

        self._inside = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self._inside += 1
        try:
            if len(texts) > 1:
                self.waiting.set()
                assert self.gate.wait(20), "the test never opened the gate"
            return super().embed(texts)
        finally:
            self._inside -= 1

    def idle(self) -> bool:
        return self._inside == 0


@pytest.fixture
def two_models(migrated: Settings) -> Iterator[tuple[Api, Container, FakeChatModel]]:
    slow = FakeChatModel("slow", token_delay=0.02)
    built = Container.build(
        migrated,
        embedder=cast(Embedder, FakeEmbedder()),
        chat_models=cast(ChatModels, FakeModels(slow, FakeChatModel("fast"))),
    )
    with live_api(built) as api:
        yield api, built, slow
    built.close()


def _new_chat(api: Api, project: str, model: str, text: str) -> str:
    pid = api.run(CREATE_PROJECT, name=project)["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name=f"{project}.md", text=text)
    created = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": model, "threshold": 0.0})
    return str(created["createChatSession"]["id"])


def _answer(container: Container, session_id: str) -> tuple[ChatMessage, list[str]]:
    """The session's last message, and its citations' document names and snippets."""
    with container.store.read() as db:
        answer = db.scalars(
            select(ChatMessage).where(ChatMessage.session_id == int(session_id)).order_by(ChatMessage.id.desc())
        ).first()
        assert answer is not None
        return answer, [f"{c.document_name}: {c.snippet}" for c in answer.citations]


def test_an_answer_finishing_after_its_session_was_deleted_writes_nowhere_else(
    two_models: tuple[Api, Container, FakeChatModel],
) -> None:
    api, container, slow = two_models
    x = _new_chat(api, "secret", "slow", "# Vault\n\nThe vault code is 7-4-1-9.")
    y = _new_chat(api, "public", "fast", "# Owls\n\nBarn owls hunt at night.")
    slow.enqueue("The vault code is 7-4-1-9 [1]. " + " ".join(f"Then word{i} follows." for i in range(10)))
    with api.websocket() as ws:
        stream = ws.subscribe(CHAT, s=x, c="What is the vault code?")
        x_answer = next(stream)["data"]["chat"]["messageId"]
        next(stream)  # streaming
        api.run(DELETE_SESSION, id=x)
        sent = api.run(SEND, s=y, c="How do owls hunt?")["sendMessage"]
        assert sent["status"] == "COMPLETE"
        *_, last = (e["data"]["chat"] for e in stream)

    assert last["__typename"] == "ChatError" and last["code"] == "NOT_FOUND", last
    assert last["failedMessageId"] is None  # nothing was kept
    stored, cited = _answer(container, y)
    assert (str(stored.id), stored.content) == (sent["id"], sent["content"])
    assert "7-4-1-9" not in json.dumps([stored.content, stored.trace, cited])
    assert all(c.startswith("public.md: ") for c in cited)
    assert str(stored.id) != x_answer  # never the id of the deleted answer


def test_an_upload_into_a_deleted_project_never_reaches_a_newer_project(migrated: Settings) -> None:
    embedder = GatedEmbedder()
    container = Container.build(migrated, embedder=cast(Embedder, embedder))
    with live_api(container) as api:
        old = api.run(CREATE_PROJECT, name="old")["createProject"]["id"]
        # Several chunks per file, so the worker's embedding waits at the gate.
        text = "".join(f"Some text {i}. " * 120 for i in range(3))
        files = {f"variables.files.{i}": (f"doc{i}.md", f"# Doc {i}\n\n{text}".encode()) for i in range(12)}
        job = api.upload(UPLOAD, files, {"p": old, "wait": False})["data"]["uploadDocuments"]
        assert job["__typename"] == "IngestionJob", job
        assert embedder.waiting.wait(20)
        api.run(DELETE_PROJECT, id=old)
        new = api.run(CREATE_PROJECT, name="new")["createProject"]["id"]
        embedder.gate.set()
        # The job went with its project; the file being embedded stops at its next step.
        assert api.run(JOB, id=job["id"])["ingestionJob"]["__typename"] == "NotFoundError"
        wait_until(lambda: embedder.idle(), 20, "the worker to stop the deleted project's file")
        assert api.run(DOCUMENTS, id=new)["project"]["documentCount"] == 0
    with container.store.read() as db:
        assert db.execute(text_sql("SELECT count(*) FROM documents")).scalar() == 0
    container.close()
    assert new != old


def test_clients_leaving_at_once_leave_no_answer_streaming(api: Api, rig: Container, model: FakeChatModel) -> None:
    rig.settings.chat.reattach_grace = 0.3  # how long a turn with a key waits for its client to come back
    model.token_delay, model.default_answer = 0.01, " ".join(f"word{i}" for i in range(40))
    sid = _new_chat(api, "kb", "scripted", "# Penguins\n\nEmperor penguins huddle in the winter.")
    rng = random.Random(11)
    for i in range(30):
        key = f"key-{i}" if i % 2 else None  # with a key, a turn waits for its client; without, it never does
        query = {"query": KEYED_CHAT if key else CHAT, "variables": {"s": sid, "c": f"penguins {i}?", "k": key}}
        with api.websocket() as ws:
            ws.ws.send(json.dumps({"id": str(i), "type": "subscribe", "payload": query}))
            time.sleep(rng.uniform(0, 0.02))

    def settled() -> bool:
        with rig.store.read() as db:
            streaming = db.connection().exec_driver_sql("SELECT count(*) FROM chat_messages WHERE status = 'streaming'")
            return streaming.scalar_one() == 0 and rig.chat.generations_in_flight == 0

    wait_until(settled, timeout=5, what="every answer finished and every slot free")
    with rig.store.read() as db:
        rows = db.connection().exec_driver_sql("SELECT role, status FROM chat_messages").all()
    answers = [status for role, status in rows if role == "assistant"]
    assert len(answers) == sum(role == "user" for role, _ in rows)  # each stored question has its answer
