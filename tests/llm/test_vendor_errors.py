"""One wording per vendor failure: a vendor's embedder and its chat model meet the same failure on
the wire and raise the same error with the same message, which never shows the API key.

The user-visible wording of each failure is pinned here, once (class and key phrase); the
adapter tests check the class and what is specific to their adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, closing

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
from app.llm.chat.ollama import OllamaChatModel
from app.llm.chat.openai import OpenAIChatModel
from app.llm.embedders.ollama import OllamaEmbedder
from app.llm.embedders.openai import OpenAIEmbedder
from app.llm.vendor_errors import REDACTED
from app.settings import OllamaSettings, OpenAISettings
from tests.llm.chat_wire.streams import collect
from tests.llm.wire import ollama_wire, openai_wire
from tests.llm.wire.server import Reply, refusing_url

KEY = "sk-test-4f1c9e0b7d2a"
MODEL = "custom-embedder"  # probed on first use, so the first request meets the failure
WAIT = 0.5
QUESTION = [Message("user", "hello")]

HANG = Reply(mode="hang")
PHRASES: dict[str, tuple[type[ProviderError], tuple[str, ...]]] = {
    # case: (error, phrases of its message; {settings} is the vendor's settings prefix)
    "401": (ProviderAuthError, ("rejected the API key (401)", "API_KEY")),
    "403": (ProviderAuthError, (f"refused access to model '{MODEL}' (403)",)),
    "404": (ModelNotFoundError, (f"does not know model '{MODEL}'",)),
    "429": (ProviderRateLimitError, ("is rate-limiting requests (429): try again later",)),
    "500": (ProviderUnavailableError, ("failed with HTTP 500: try again later", "The server said:")),
    "504": (ProviderTimeoutError, ("timed out (HTTP 504): try again later",)),
    "400": (ProviderError, ("rejected the request with HTTP 400", "The server said:")),
    "silent": (ProviderTimeoutError, (f"did not answer within {WAIT:g} s", "{settings}__TIMEOUT")),
    "refused": (ProviderUnavailableError, ("cannot connect to", "is it running?")),
}

OPENAI_REPLIES = {
    # The real API masks most of a key it quotes; these quote it whole, to prove it is dropped.
    "401": openai_wire.invalid_key(KEY),
    "403": openai_wire.openai_error(403, f"Key {KEY} lacks access.", type_="invalid_request_error", code=None),
    "404": openai_wire.model_not_found(MODEL),
    "429": openai_wire.RATE_LIMITED,
    "500": openai_wire.openai_error(500, f"crashed while using {KEY}", type_="server_error", code=None),
    "504": Reply(504, b"<html>Gateway timeout</html>"),
    "400": openai_wire.openai_error(400, "bad input", type_="invalid_request_error", code=None),
    "silent": HANG,
}
OLLAMA_REPLIES = {
    "401": Reply(401, {"error": "unauthorized"}),
    "403": Reply(403, {"error": "forbidden"}),
    "404": ollama_wire.not_found(MODEL),
    "429": Reply(429, {"error": "too many requests"}),
    "500": ollama_wire.SERVER_ERROR,
    "504": Reply(504, b"<html>Gateway timeout</html>"),
    "400": Reply(400, {"error": "input length exceeds the context length"}),
    "silent": HANG,
}


@asynccontextmanager
async def openai_pair(url: str, key: str = KEY) -> AsyncIterator[tuple[Callable[[], object], OpenAIChatModel]]:
    settings = OpenAISettings(api_key=SecretStr(key), base_url=url, timeout=WAIT)
    embedder = OpenAIEmbedder(MODEL, settings, max_retries=0)
    chat = OpenAIChatModel(MODEL, settings, context_window=2048, max_retries=0)
    with closing(embedder):
        try:
            yield lambda: embedder.embed(["x"]), chat
        finally:
            await chat.aclose()


@asynccontextmanager
async def ollama_pair(url: str) -> AsyncIterator[tuple[Callable[[], object], OllamaChatModel]]:
    settings = OllamaSettings(host=url, timeout=WAIT)
    embedder = OllamaEmbedder(MODEL, settings)
    chat = OllamaChatModel(MODEL, settings, context_window=2048)
    with closing(embedder):
        try:
            yield lambda: embedder.embed(["x"]), chat
        finally:
            await chat.aclose()


async def both_fail(embed: Callable[[], object], chat: OpenAIChatModel | OllamaChatModel) -> ProviderError:
    """The embedder's error, after checking the chat model's is the same error."""
    with pytest.raises(ProviderError) as embedding:
        await asyncio.to_thread(embed)
    chatting = (await collect(chat.stream(QUESTION, GenerationOptions(max_tokens=8)), catch=True)).error
    assert type(chatting) is type(embedding.value)
    assert str(chatting) == str(embedding.value)
    assert (chatting.provider, chatting.retryable) == (embedding.value.provider, embedding.value.retryable)
    return embedding.value


def check(case: str, error: ProviderError, settings: str) -> None:
    kind, phrases = PHRASES[case]
    assert type(error) is kind
    for phrase in phrases:
        assert phrase.format(settings=settings) in str(error)
    assert KEY not in str(error)


@pytest.fixture
def openai_server() -> Iterator[openai_wire.OpenAIWire]:
    with openai_wire.OpenAIWire(api_key=KEY) as running:
        yield running


@pytest.fixture
def ollama_server() -> Iterator[ollama_wire.OllamaWire]:
    with ollama_wire.OllamaWire() as running:
        yield running


@pytest.mark.parametrize("case", list(OPENAI_REPLIES))
async def test_openai_failures_read_the_same_from_both_adapters(
    case: str, openai_server: openai_wire.OpenAIWire
) -> None:
    openai_server.enqueue(OPENAI_REPLIES[case], OPENAI_REPLIES[case])
    async with openai_pair(openai_server.base_url) as (embed, chat):
        error = await both_fail(embed, chat)
    check(case, error, "RAGCHAT_OPENAI")


@pytest.mark.parametrize("case", list(OLLAMA_REPLIES))
async def test_ollama_failures_read_the_same_from_both_adapters(
    case: str, ollama_server: ollama_wire.OllamaWire
) -> None:
    ollama_server.enqueue(OLLAMA_REPLIES[case], OLLAMA_REPLIES[case])
    async with ollama_pair(ollama_server.url) as (embed, chat):
        error = await both_fail(embed, chat)
    check(case, error, "RAGCHAT_OLLAMA")


async def test_refused_connections_read_the_same_from_both_adapters() -> None:
    with refusing_url() as url:
        async with openai_pair(f"{url}/v1") as (embed, chat):
            check("refused", await both_fail(embed, chat), "RAGCHAT_OPENAI")
        async with ollama_pair(url) as (embed, chat):
            check("refused", await both_fail(embed, chat), "RAGCHAT_OLLAMA")


async def test_the_key_is_redacted_from_the_vendors_words_and_auth_failures_quote_none(
    openai_server: openai_wire.OpenAIWire,
) -> None:
    openai_server.enqueue(*[OPENAI_REPLIES["500"]] * 2, *[OPENAI_REPLIES["403"]] * 2)
    async with openai_pair(openai_server.base_url) as (embed, chat):
        crashed = await both_fail(embed, chat)
        refused = await both_fail(embed, chat)
    assert f"crashed while using {REDACTED}" in str(crashed)
    assert "lacks access" not in str(refused)  # 401 and 403: none of the vendor's words at all
