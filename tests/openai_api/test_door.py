"""The OpenAI-compatible door against a live server, spoken to by the official ``openai`` SDK and by
a plain SSE client: the same chat turns as GraphQL (the answer, its citations, the stored chat),
OpenAI's error shapes, and the access rules."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import openai
import pytest
from pydantic import SecretStr

from app.container import Container
from app.services import documents, projects
from app.services.people import keys, users
from app.settings import ApiSettings, ChatModelSettings, Settings
from tests import sockets
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api

KEY = "server-key-for-the-door"
PENGUINS = "# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter.\n"
OWLS = "# Owls\n\nOwls hunt at night with silent flight and sharp hearing.\n"
QUESTION = "How do penguins survive winter?"
MESSAGES_OF = """query($id: ID!) { chatSession(id: $id) { ... on ChatSession { messages { ... on ChatMessageConnection {
  edges { node { role content citations { marker documentName } } } } } } } }"""


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel()


@pytest.fixture
def door(migrated: Settings, model: FakeChatModel) -> Iterator[tuple[Api, Container, str]]:
    settings = migrated.model_copy(
        update={
            "llm": ChatModelSettings(provider="fake", model="scripted"),
            "api": ApiSettings(api_keys=[SecretStr(KEY)]),
        }
    )
    container = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels(model))
    kb = projects.create(container.store, "Field Notes").id
    documents.ingest_uploads(
        container.store, container.embedder, settings.ingest, 10_000, kb,
        [("penguins.md", PENGUINS.encode()), ("owls.md", OWLS.encode())],
    )  # fmt: skip
    try:
        with live_api(container, {"Authorization": f"Bearer {KEY}"}) as api:
            yield api, container, str(kb)
    finally:
        container.close()


@pytest.fixture(autouse=True)
def _no_connection_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test and its fixtures (autouse: set up first, torn down last), every connection
    it opened is closed, none left for the garbage collector."""
    yield
    assert sockets.left_open(request.node.nodeid) == []


@pytest.fixture
def client(door: tuple[Api, Container, str]) -> Iterator[Callable[..., openai.OpenAI]]:
    """Makes OpenAI SDK clients of the door (the server's key unless given another), closed after
    the test. Left open, a client an error's traceback holds in a reference cycle kept its
    connection for the garbage collector, whose ResourceWarning then failed some later test."""
    made: list[openai.OpenAI] = []

    def make(key: str = KEY) -> openai.OpenAI:
        made.append(openai.OpenAI(base_url=f"{door[0].base}/v1", api_key=key, max_retries=0, timeout=30))
        return made[-1]

    yield make
    for each in made:
        each.close()


def chats(container: Container) -> int:
    with container.store.read() as db:
        return int(db.connection().exec_driver_sql("SELECT count(*) FROM chat_sessions").scalar_one())


def test_models_name_the_knowledge_bases_by_slug_and_by_id(
    door: tuple[Api, Container, str], client: Callable[..., openai.OpenAI]
) -> None:
    _, _, kb = door
    listed = client().models.list()
    ids = {m.id for m in listed.data}
    assert ids == {"ragchat/field-notes", f"ragchat/{kb}"}
    assert all(m.model_extra and m.model_extra["ragchat"]["name"] == "Field Notes" for m in listed.data)


def test_a_stored_answer_carries_the_citations_graphql_shows(
    door: tuple[Api, Container, str], client: Callable[..., openai.OpenAI], model: FakeChatModel
) -> None:
    api, _, _ = door
    model.enqueue("Penguins huddle [1].")
    answer = client().chat.completions.create(
        model="ragchat/field-notes",
        messages=[{"role": "user", "content": QUESTION}],
        extra_body={"ragchat": {"store": True}},
    )
    assert answer.choices[0].message.content == "Penguins huddle [1]."
    extension = answer.model_extra["ragchat"]  # type: ignore[index]
    assert [(c["marker"], c["document_name"]) for c in extension["citations"]] == [(1, "penguins.md")]
    assert extension["citations"][0]["location"]["line_start"] >= 1 and extension["stored"] is True
    stored = api.run(MESSAGES_OF, id=extension["session_id"])["chatSession"]["messages"]["edges"]
    last = stored[-1]["node"]
    assert last["role"] == "ASSISTANT" and last["content"] == "Penguins huddle [1]."
    assert [(c["marker"], c["documentName"]) for c in last["citations"]] == [(1, "penguins.md")]
    trace = api.run(
        "query($id: ID!) { message(id: $id) { ... on ChatMessage { trace { settings { topK } } } } }",
        id=extension["message_id"],
    )["message"]
    assert trace["trace"]["settings"]["topK"] >= 1


def test_a_streamed_answer_arrives_in_chunks_and_ends_with_its_citations(
    door: tuple[Api, Container, str], client: Callable[..., openai.OpenAI], model: FakeChatModel
) -> None:
    _, container, _ = door
    before = chats(container)
    model.enqueue("Emperor penguins huddle together [1].")
    stream = client().chat.completions.create(
        model="ragchat/field-notes", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    parts, last = [], None
    for chunk in stream:
        parts.append(chunk.choices[0].delta.content or "")
        last = chunk
    assert "".join(parts) == "Emperor penguins huddle together [1]."
    assert last is not None and last.choices[0].finish_reason == "stop"
    extension = last.model_extra["ragchat"]  # type: ignore[index]
    assert [c["document_name"] for c in extension["citations"]] == ["penguins.md"]
    assert extension["stored"] is False and "session_id" not in extension
    assert chats(container) == before  # not asked to keep it: the chat is gone once answered


def test_earlier_messages_are_the_conversation_the_question_continues(
    door: tuple[Api, Container, str], client: Callable[..., openai.OpenAI], model: FakeChatModel
) -> None:
    model.enqueue("They huddle [1].")
    client().chat.completions.create(
        model="ragchat/field-notes",
        messages=[
            {"role": "system", "content": "Answer in one sentence."},
            {"role": "user", "content": "Tell me about emperor penguins."},
            {"role": "assistant", "content": "Emperor penguins live in Antarctica."},
            {"role": "user", "content": "How do they survive the winter?"},
        ],
    )
    sent = json.dumps([[m.content for m in call] for call in model.history])
    assert "Emperor penguins live in Antarctica." in sent and "Answer in one sentence." in sent


def test_a_plain_sse_client_reads_data_lines_and_done(door: tuple[Api, Container, str], model: FakeChatModel) -> None:
    api, _, _ = door
    model.enqueue("Owls hunt at night [1].")
    body = {
        "model": "ragchat/field-notes",
        "messages": [{"role": "user", "content": "When do owls hunt?"}],
        "stream": True,
    }
    lines = []
    with httpx.stream(
        "POST", f"{api.base}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=30
    ) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "Owls hunt at night [1]."


def test_errors_come_in_openais_shape_with_its_status_codes(
    door: tuple[Api, Container, str], client: Callable[..., openai.OpenAI]
) -> None:
    api, container, _ = door
    with pytest.raises(openai.AuthenticationError):
        client("not-the-key").chat.completions.create(
            model="ragchat/field-notes", messages=[{"role": "user", "content": QUESTION}]
        )
    unkeyed = httpx.post(f"{api.base}/v1/chat/completions", json={}, timeout=10)
    assert unkeyed.status_code == 401 and unkeyed.json()["error"]["type"] == "authentication_error"
    with pytest.raises(openai.NotFoundError) as missing:
        client().chat.completions.create(model="ragchat/nope", messages=[{"role": "user", "content": QUESTION}])
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError, match="n = 1"):
        client().chat.completions.create(
            model="ragchat/field-notes", messages=[{"role": "user", "content": QUESTION}], n=2
        )
    with pytest.raises(openai.BadRequestError, match="last message"):
        client().chat.completions.create(
            model="ragchat/field-notes", messages=[{"role": "assistant", "content": "Hello."}]
        )
    too_long = "x" * (container.settings.chat.max_message_chars + 1)
    with pytest.raises(openai.BadRequestError, match="earlier message"):
        client().chat.completions.create(
            model="ragchat/field-notes",
            messages=[{"role": "assistant", "content": too_long}, {"role": "user", "content": QUESTION}],
        )
    assert chats(container) == 0  # nothing was half-made


def test_a_person_sees_only_their_knowledge_bases_through_the_door(
    door: tuple[Api, Container, str], client: Callable[..., openai.OpenAI], model: FakeChatModel
) -> None:
    _, container, kb = door
    with container.store.write() as db:
        stranger = users.create(db, users.NewPerson("eve@example.org", "Eve"))
        _, secret = keys.create(db, stranger, keys.NewKey("door"))
    eve = client(secret)
    assert eve.models.list().data == []
    with pytest.raises(openai.NotFoundError):
        eve.chat.completions.create(model=f"ragchat/{kb}", messages=[{"role": "user", "content": QUESTION}])
    assert model.history == []  # no model was asked


def _chunks(client: Callable[..., openai.OpenAI]) -> list[str]:
    stream = client().chat.completions.create(
        model="ragchat/field-notes", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    return [chunk.choices[0].delta.content for chunk in stream if chunk.choices[0].delta.content]


def test_a_stream_joins_the_tokens_of_a_window_into_one_chunk(
    door: tuple[Api, Container, str], client: Callable[..., openai.OpenAI], model: FakeChatModel
) -> None:
    _, container, _ = door
    words = " ".join(f"w{i}" for i in range(12)) + "."
    model.token_delay = 0.05
    container.settings.chat.stream_coalesce_ms = 0
    model.enqueue(words)
    each = _chunks(client)
    container.settings.chat.stream_coalesce_ms = 1000
    model.enqueue(words)
    joined = _chunks(client)
    assert "".join(each) == "".join(joined) == words and len(each) > 6
    assert joined[0] == "w0 " and 2 <= len(joined) < len(each)  # the first token at once, the rest in few
