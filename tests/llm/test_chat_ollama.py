"""OllamaChatModel against a loopback server speaking Ollama's /api/chat wire format, and against
a scripted server for the failures."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from app.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from app.llm.base import GenerationOptions, Message, Usage
from app.llm.chat.ollama import OllamaChatModel
from app.settings import OllamaSettings
from tests.live import serve
from tests.llm.chat_wire import ollama_server
from tests.llm.chat_wire.scripted import STALL, Reply, ScriptedServer, json_reply, ndjson_reply
from tests.llm.chat_wire.streams import collect

QUESTION = [Message("system", "Be brief."), Message("user", "tell me about the moon")]


@asynccontextmanager
async def ollama_model(host: str, *, model: str = "tiny:latest", wait: float = 10.0) -> AsyncIterator[OllamaChatModel]:
    chat = OllamaChatModel(model, OllamaSettings(host=host, timeout=wait), context_window=4096)
    try:
        yield chat
    finally:
        await chat.aclose()


@pytest.fixture(scope="module")
def fake_ollama() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    app, received = ollama_server.create_app()
    with serve(app) as url:
        yield url, received


@pytest.fixture
def received(fake_ollama: tuple[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    fake_ollama[1].clear()
    return fake_ollama[1]


async def test_streams_the_answer_and_reports_ollamas_counts(fake_ollama: Any, received: list[Any]) -> None:
    async with ollama_model(fake_ollama[0]) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions(max_tokens=50, temperature=0.3, stop=("###",))))
    assert got.deltas == ["You", " said:", " tell", " me", " about", " the", " moon"]
    assert got.usage == [Usage(prompt_tokens=2 + 5 + 10, completion_tokens=7)]
    [body] = received
    assert body["model"] == "tiny:latest"
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in QUESTION]
    assert body["stream"] is True
    assert body["options"] == {"num_predict": 50, "temperature": 0.3, "num_ctx": 4096, "stop": ["###"]}


async def test_max_tokens_becomes_num_predict(fake_ollama: Any, received: list[Any]) -> None:
    async with ollama_model(fake_ollama[0]) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions(max_tokens=3)))
    assert got.text == "You said: tell"
    assert got.usage[0].completion_tokens == 3
    assert "stop" not in received[0]["options"]


async def test_an_unknown_model_says_how_to_get_it(fake_ollama: Any, received: list[Any]) -> None:
    async with ollama_model(fake_ollama[0], model="llama3.2:1b") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ModelNotFoundError)
    assert "ollama pull llama3.2:1b" in str(got.error)


async def test_token_counts_are_estimates_with_template_overhead() -> None:
    async with ollama_model("http://127.0.0.1:9") as model:
        assert model.tokenizer.exact is False
        assert model.count_message_tokens(QUESTION) == (4 + 1 + 3) + (4 + 1 + 5) + 3


# --- failures, on a scripted server ----------------------------------------------------------


def line(content: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    return {"model": "tiny:latest", "created_at": "2024-07-01T12:00:00Z", "message": message, "done": False}


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, ProviderAuthError),
        (403, ProviderAuthError),
        (429, ProviderRateLimitError),
        (500, ProviderUnavailableError),
        (502, ProviderUnavailableError),
        (400, ProviderError),
    ],
)
async def test_error_statuses_are_translated(status: int, error: type[Exception]) -> None:
    reply = json_reply(status, {"error": "scripted failure"})
    async with ScriptedServer([reply]) as server, ollama_model(server.url) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert type(got.error) is error
    assert getattr(got.error, "provider", None) == "ollama"


async def test_a_connection_dropped_mid_stream_is_unavailable() -> None:
    reply = ndjson_reply([line("The"), line(" moon")], then="drop")
    async with ScriptedServer([reply]) as server, ollama_model(server.url) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert got.deltas == ["The", " moon"]
    assert isinstance(got.error, ProviderUnavailableError)


async def test_a_stream_that_ends_without_its_final_line_is_unavailable() -> None:
    async with ScriptedServer([ndjson_reply([line("The")])]) as server, ollama_model(server.url) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ProviderUnavailableError)
    assert "final message" in str(got.error)


async def test_an_error_line_inside_the_stream_is_unavailable() -> None:
    script = [ndjson_reply([line("The"), {"error": "llama runner process has terminated"}])]
    async with ScriptedServer(script) as server, ollama_model(server.url) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ProviderUnavailableError)
    assert "llama runner process has terminated" in str(got.error)


@pytest.mark.parametrize("reply", [STALL, ndjson_reply([line("The")], then="stall")], ids=["silent", "mid"])
async def test_a_stalled_server_times_out(reply: Reply) -> None:
    async with ScriptedServer([reply]) as server, ollama_model(server.url, wait=0.3) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ProviderTimeoutError)
    assert "0.3 s" in str(got.error)


async def test_nobody_listening_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with ollama_model(f"http://127.0.0.1:{port}") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ProviderUnavailableError)
    assert str(got.error).startswith(f"cannot connect to Ollama at http://127.0.0.1:{port}")


async def test_closing_the_stream_early_closes_the_response() -> None:
    script = [ndjson_reply([line("The"), line(" moon")], then="stall")]
    async with ScriptedServer(script) as server, ollama_model(server.url) as model:
        stream = model.stream(QUESTION, GenerationOptions())
        assert await anext(stream) is not None
        await stream.aclose()  # must not wait for the stalled server
