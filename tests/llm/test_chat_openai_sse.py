"""The OpenAI adapter's own reader of server-sent events (app/llm/chat/sse.py) against a scripted
server on loopback: the framings the SSE specification allows, however the body is cut into pieces
on the way, read as the SDK's reader read them."""

from __future__ import annotations

import json

import pytest

from app.errors import ProviderUnavailableError
from app.llm.base import GenerationOptions
from app.llm.chat.sse import _fields
from tests.llm.chat_wire.scripted import Reply, ScriptedServer
from tests.llm.chat_wire.streams import collect
from tests.llm.test_chat_openai import QUESTION, chunk, openai_model

USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
EVENTS = [chunk("Red"), chunk(", green"), chunk("\nand blue"), chunk(usage=USAGE)]


def _body(newline: bytes, *, extras: bool) -> bytes:
    out = b""
    for event in EVENTS:
        if extras:  # a comment, an id and a retry field, which readers ignore
            out += b": keep-alive" + newline + b"id: 1" + newline + b"retry: 10" + newline
        out += b"data: " + json.dumps(event).encode() + newline + newline
    return out + b"data: [DONE]" + newline + newline + b"data: after the end, never read" + newline + newline


def _cut(body: bytes, size: int) -> tuple[bytes, ...]:
    return tuple(body[i : i + size] for i in range(0, len(body), size))


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("size", [1, 7, 10_000], ids=["byte-by-byte", "small-pieces", "one-piece"])
@pytest.mark.parametrize("extras", [False, True], ids=["plain", "comments-and-fields"])
async def test_every_framing_gives_the_same_answer(newline: bytes, size: int, extras: bool) -> None:
    reply = Reply(content_type="text/event-stream", pieces=_cut(_body(newline, extras=extras), size))
    async with ScriptedServer([reply]) as server, openai_model(server.url + "/v1") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()))
    assert got.deltas == ["Red", ", green", "\nand blue"]
    assert [(u.prompt_tokens, u.completion_tokens) for u in got.usage] == [(7, 3)]


async def test_data_split_over_lines_is_joined_and_a_body_without_done_still_ends() -> None:
    text = json.dumps(chunk("Red"), indent=1).encode()  # JSON over several data lines
    body = b"".join(b"data: " + line + b"\n" for line in text.split(b"\n")) + b"\n"
    body += b"event: message\ndata: " + json.dumps(chunk(" green")).encode()  # the last event unterminated
    reply = Reply(content_type="text/event-stream", pieces=_cut(body, 5))
    async with ScriptedServer([reply]) as server, openai_model(server.url + "/v1") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()))
    assert got.deltas == ["Red", " green"]


async def test_an_error_event_without_a_message_is_unavailable() -> None:
    body = b"data: " + json.dumps(chunk("Red")).encode() + b'\n\nevent: error\ndata: {"error": {}}\n\n'
    body += b"data: " + json.dumps({"error": {"code": 500}}).encode() + b"\n\n"
    reply = Reply(content_type="text/event-stream", pieces=(body,))
    async with ScriptedServer([reply]) as server, openai_model(server.url + "/v1") as model:
        got = await collect(model.stream(QUESTION, GenerationOptions()), catch=True)
    assert got.deltas == ["Red"]  # an empty error object is no error (as the SDK reads it); the next one is
    assert isinstance(got.error, ProviderUnavailableError)
    assert "An error occurred during streaming" in str(got.error)


def test_fields_of_an_event() -> None:
    assert _fields(b"data: {}") == (b"{}", None)
    assert _fields(b"data:{}") == (b"{}", None)
    assert _fields(b": only a comment") == (None, None)
    assert _fields(b"event: ping") == (None, b"ping")
    assert _fields(b"data: a\ndata\ndata:  b") == (b"a\n\n b", None)
