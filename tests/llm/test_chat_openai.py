"""OpenAIChatModel against llama-cpp-python's real OpenAI-compatible server, and against a
scripted server for the failures (OpenAI's SSE and error-body shapes)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import SecretStr

from app.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from app.llm.base import GenerationOptions, Message
from app.llm.chat.local import SMOLLM2, shipped_models
from app.llm.chat.openai import OpenAIChatModel, context_window_for
from app.settings import OpenAISettings
from tests.llm.chat_wire.llama_server import llama_server
from tests.llm.chat_wire.scripted import STALL, Reply, ScriptedServer, json_reply, sse_reply
from tests.llm.chat_wire.streams import collect

API_KEY = "sk-test-4f1c9e0b7d2a"
QUESTION = [
    Message("system", "You are a helpful assistant. Answer briefly."),
    Message("user", "Name three primary colors, separated by commas."),
]


@asynccontextmanager
async def openai_model(base_url: str, *, key: str = API_KEY, wait: float = 30.0) -> AsyncIterator[OpenAIChatModel]:
    settings = OpenAISettings(api_key=SecretStr(key), base_url=base_url, timeout=wait)
    model = OpenAIChatModel("smollm2", settings, context_window=2048, max_retries=0)
    try:
        yield model
    finally:
        await model.aclose()


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    path = shipped_models()[SMOLLM2]
    with llama_server(path, api_key=API_KEY) as url:
        yield url


# --- the real server -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.requires_llama
async def test_streams_an_answer_from_llama_cpp_server(llama_url: str) -> None:
    async with openai_model(llama_url) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions(max_tokens=32, temperature=0.0)))
    assert len(got.deltas) >= 3
    assert got.text.strip()
    # llama.cpp's server ignores stream_options.include_usage, so usage is counted here.
    assert got.usage == [type(got.usage[0])(model.count_message_tokens(QUESTION), model.tokenizer.count(got.text))]
    assert got.usage[0].prompt_tokens > 20


@pytest.mark.slow
@pytest.mark.requires_llama
async def test_wrong_key_is_an_auth_error_that_does_not_show_the_key(llama_url: str) -> None:
    async with openai_model(llama_url, key="sk-wrong-6b8d1f") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions(max_tokens=8)), catch=True)
    assert isinstance(got.error, ProviderAuthError)
    assert got.error.provider == "openai"
    assert "RAGCHAT_OPENAI__API_KEY" in str(got.error)
    assert "6b8d1f" not in str(got.error)


@pytest.mark.slow
@pytest.mark.requires_llama
async def test_closing_the_stream_early_leaves_the_model_usable(llama_url: str) -> None:
    async with openai_model(llama_url) as model:
        stream = model.stream(QUESTION, GenerationOptions(max_tokens=64))
        first = await anext(stream)
        await stream.aclose()
        again = await collect(model.stream(QUESTION, GenerationOptions(max_tokens=8)))
    assert first.text  # type: ignore[union-attr]
    assert again.deltas and len(again.usage) == 1


# --- the wire contract, checked on a scripted server ----------------------------------------


def chunk(content: str | None = None, *, usage: dict[str, int] | None = None) -> dict[str, Any]:
    choices = [] if content is None else [{"index": 0, "delta": {"content": content}, "finish_reason": None}]
    event: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    return {**event, "choices": choices, "usage": usage}


def openai_error(status: int, message: str, kind: str, code: str | None) -> Reply:
    return json_reply(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})


async def test_sends_a_streaming_request_and_uses_the_reported_usage() -> None:
    usage = {"prompt_tokens": 31, "completion_tokens": 2, "total_tokens": 33}
    script = [sse_reply([chunk("Red,"), chunk(" green"), chunk(usage=usage)])]
    async with ScriptedServer(script) as server, openai_model(server.url + "/v1") as model:
        options = GenerationOptions(max_tokens=17, temperature=0.5, stop=("\n\n",))
        got = await collect(model.stream(QUESTION, options))
    assert got.text == "Red, green"
    assert [(u.prompt_tokens, u.completion_tokens) for u in got.usage] == [(31, 2)]
    [request] = server.received
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.json()
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in QUESTION]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["model"], body["max_tokens"], body["temperature"], body["stop"]) == ("smollm2", 17, 0.5, ["\n\n"])


@pytest.mark.parametrize(
    ("status", "kind", "code", "error"),
    [
        (401, "invalid_request_error", "invalid_api_key", ProviderAuthError),
        (403, "invalid_request_error", None, ProviderAuthError),
        (404, "invalid_request_error", "model_not_found", ModelNotFoundError),
        (429, "requests", "rate_limit_exceeded", ProviderRateLimitError),
        (500, "server_error", None, ProviderUnavailableError),
        (503, "server_error", None, ProviderUnavailableError),
        (400, "invalid_request_error", "context_length_exceeded", ProviderError),
    ],
)
async def test_error_statuses_are_translated(status: int, kind: str, code: str | None, error: type[Exception]) -> None:
    # OpenAI's own 401 message quotes the key; no message of ours may.
    reply = openai_error(status, f"Incorrect API key provided: {API_KEY}.", kind, code)
    async with ScriptedServer([reply]) as server, openai_model(server.url + "/v1") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert type(got.error) is error
    assert API_KEY not in str(got.error)
    assert len(server.received) == 1  # no retries in tests
    if status == 404:
        assert "'smollm2'" in str(got.error)


async def test_a_connection_dropped_mid_stream_is_unavailable() -> None:
    script = [sse_reply([chunk("Red"), chunk(",")], done=False, then="drop")]
    async with ScriptedServer(script) as server, openai_model(server.url + "/v1") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert got.deltas == ["Red", ","]
    assert isinstance(got.error, ProviderUnavailableError)
    assert "broke" in str(got.error)  # the wording is pinned in test_vendor_errors.py


@pytest.mark.parametrize("reply", [STALL, sse_reply([chunk("Red")], done=False, then="stall")], ids=["silent", "mid"])
async def test_a_stalled_server_times_out(reply: Reply) -> None:
    async with ScriptedServer([reply]) as server, openai_model(server.url + "/v1", wait=0.3) as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ProviderTimeoutError)
    assert got.error.retryable


async def test_an_error_event_inside_the_stream_is_unavailable() -> None:
    error = {"error": {"message": "the model crashed", "type": "server_error", "code": None}}
    async with ScriptedServer([sse_reply([chunk("Red"), error])]) as server, openai_model(server.url + "/v1") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ProviderUnavailableError)
    assert "the model crashed" in str(got.error)


async def test_nobody_listening_is_unavailable() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with openai_model(f"http://127.0.0.1:{port}/v1") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert isinstance(got.error, ProviderUnavailableError)
    assert str(got.error).startswith("cannot connect to the OpenAI-compatible server at http://127.0.0.1:")


def test_context_windows_come_from_the_table_or_settings() -> None:
    assert context_window_for("gpt-4o-2024-08-06", 2048) == 128_000
    assert context_window_for("gpt-4", 2048) == 8_192
    assert context_window_for("my-local-model", 4096) == 4096
