"""HttpReranker against loopback servers speaking the cohere-style /v1/rerank and TEI's /rerank."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from app.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from app.llm.base import Reranker
from app.llm.rerankers.http import HttpReranker
from app.settings import RerankSettings
from tests.llm.wire.rerank_wire import RerankWire, overlap
from tests.llm.wire.server import Reply, refusing_url

QUERY = "penguins in the antarctic winter"
PASSAGES = ["Owls hunt at night.", "Emperor penguins huddle in the Antarctic winter.", "Penguins swim."]


@pytest.fixture
def server() -> Iterator[RerankWire]:
    with RerankWire() as running:
        yield running


async def _scores(settings: RerankSettings, passages: list[str] = PASSAGES) -> list[float]:
    reranker = HttpReranker(settings)
    try:
        return await reranker.rerank(QUERY, passages)
    finally:
        await reranker.aclose()


async def test_cohere_wire_scores_come_back_in_input_order(server: RerankWire) -> None:
    settings = RerankSettings(url=f"{server.url}/v1/rerank", model="bge-reranker-v2-m3", api_key=SecretStr("k1"))
    server.key = "k1"
    scores = await _scores(settings)
    assert scores == [overlap(QUERY, p) for p in PASSAGES]  # the server sent them best first
    (sent,) = server.history
    assert sent.body == {"model": "bge-reranker-v2-m3", "query": QUERY, "documents": PASSAGES, "top_n": 3}
    assert sent.headers["authorization"] == "Bearer k1"
    assert isinstance(HttpReranker(settings), Reranker)


async def test_tei_wire(server: RerankWire) -> None:
    scores = await _scores(RerankSettings(url=f"{server.url}/rerank", protocol="tei"))
    assert scores == [overlap(QUERY, p) for p in PASSAGES]
    assert server.history[0].body == {"query": QUERY, "texts": PASSAGES, "truncate": True, "raw_scores": False}


async def test_no_passages_costs_no_request(server: RerankWire) -> None:
    assert await _scores(RerankSettings(url=f"{server.url}/rerank", protocol="tei"), []) == []
    assert server.history == []


@pytest.mark.parametrize(
    ("reply", "error", "words"),
    [
        (Reply(401, {"message": "invalid api token"}), ProviderAuthError, "RAGCHAT_RERANK__API_KEY"),
        (Reply(404, {"error": "The model `x` does not exist."}), ModelNotFoundError, "does not exist"),
        (Reply(503, {"error": "overloaded"}), ProviderUnavailableError, "overloaded"),
        (Reply(200, {"results": [{"index": 0, "relevance_score": 0.5}]}), ProviderError, "2 of 3 passages"),
        (Reply(200, {"results": [{"index": 7, "relevance_score": 0.5}]}), ProviderError, "does not fit 3"),
        (Reply(200, {"results": [{"index": 0, "relevance_score": "NaN"}] * 3}), ProviderError, "does not fit"),
        (Reply(200, [{"index": 0, "score": 1.0}]), ProviderError, "cannot read"),
        (Reply(200, b"<html>"), ProviderError, "cannot read"),
        (Reply(200, {"results": []}, mode="drop"), ProviderUnavailableError, "cannot reach"),
    ],
)
async def test_failures_are_translated(
    server: RerankWire, reply: Reply, error: type[ProviderError], words: str
) -> None:
    server.enqueue(reply)
    with pytest.raises(error, match=words) as raised:
        await _scores(RerankSettings(url=f"{server.url}/v1/rerank", model="bge-reranker-v2-m3"))
    assert type(raised.value) is error


async def test_a_key_the_server_echoes_is_redacted(server: RerankWire) -> None:
    server.enqueue(Reply(400, {"error": "bad request for key sk-secret-123"}))
    settings = RerankSettings(url=f"{server.url}/v1/rerank", model="m", api_key=SecretStr("sk-secret-123"))
    with pytest.raises(ProviderError) as raised:
        await _scores(settings)
    assert "sk-secret-123" not in raised.value.message and "[redacted]" in raised.value.message


async def test_timeout_and_refused_connection(server: RerankWire) -> None:
    server.enqueue(Reply(mode="hang"))
    with pytest.raises(ProviderTimeoutError, match="RAGCHAT_RERANK__TIMEOUT"):
        await _scores(RerankSettings(url=f"{server.url}/v1/rerank", model="m", timeout=0.3))
    with refusing_url() as url, pytest.raises(ProviderUnavailableError, match="is it running"):
        await _scores(RerankSettings(url=f"{url}/v1/rerank", model="m"))


def test_settings_refuse_a_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        RerankSettings(url="file:///etc/passwd")
