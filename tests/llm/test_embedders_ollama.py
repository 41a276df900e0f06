"""OllamaEmbedder against a loopback server speaking Ollama's /api/embed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing

import numpy as np
import pytest

from app.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from app.llm.base import Embedder, SpaceId
from app.llm.embedders.ollama import OllamaEmbedder, canonical_model
from app.settings import OllamaSettings
from tests.llm.wire import ollama_wire as wire
from tests.llm.wire.server import Reply, refusing_url
from tests.llm.wire.vectors import fake_vector, unit


@pytest.fixture
def server() -> Iterator[wire.OllamaWire]:
    with wire.OllamaWire() as running:
        yield running


Make = Callable[..., OllamaEmbedder]


@pytest.fixture
def embedder(server: wire.OllamaWire) -> Iterator[Make]:
    """Builds embedders talking to ``server`` with a short timeout; closes them after the test."""
    built: list[OllamaEmbedder] = []

    def build(model: str = "all-minilm", **kwargs: object) -> OllamaEmbedder:
        built.append(OllamaEmbedder(model, OllamaSettings(host=server.url, timeout=0.5), **kwargs))  # type: ignore[arg-type]
        return built[-1]

    yield build
    for each in built:
        each.close()


def test_space_is_probed_once_then_texts_embed_in_order(server: wire.OllamaWire, embedder: Make) -> None:
    minilm = embedder()
    assert minilm.space == SpaceId("ollama", "all-minilm:latest", 384)
    assert isinstance(minilm, Embedder)  # on Python 3.11 this reads .space: after the probe, free
    texts = ["alpha", "beta gamma", "delta"]
    vectors = minilm.embed(texts)

    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, unit(fake_vector(text, 384)), atol=1e-6)
    probe, request = server.history
    assert probe.body == {"model": "all-minilm", "input": ["dimension probe"]}
    assert request.path == "/api/embed" and request.body == {"model": "all-minilm", "input": texts}


def test_requests_carry_at_most_batch_size_inputs(server: wire.OllamaWire, embedder: Make) -> None:
    embedder(batch_size=2).embed([f"t{i}" for i in range(5)])
    assert [len(r.body["input"]) for r in server.history[1:]] == [2, 2, 1]


def test_configured_dimensions_are_sent_and_name_the_space_without_a_probe(
    server: wire.OllamaWire, embedder: Make
) -> None:
    short = embedder("nomic-embed-text", dimensions=64)
    assert short.space == SpaceId("ollama", "nomic-embed-text:latest", 64)
    assert short.embed(["x"]).shape == (1, 64)
    (request,) = server.history
    assert request.body["dimensions"] == 64


def test_names_with_and_without_latest_share_a_space() -> None:
    assert canonical_model("nomic-embed-text") == canonical_model("nomic-embed-text:latest")
    assert canonical_model("all-minilm:l6-v2") == "all-minilm:l6-v2"
    assert canonical_model("localhost:5000/team/embedder") == "localhost:5000/team/embedder:latest"


def test_max_tokens_follows_the_model(embedder: Make) -> None:
    assert embedder("all-minilm:l6-v2").max_tokens == 256
    assert embedder("nomic-embed-text").max_tokens == 8192
    assert embedder("something-else").max_tokens == 512
    assert not embedder().tokenizer.exact


def test_missing_model_says_how_to_pull_it(embedder: Make) -> None:
    with pytest.raises(ModelNotFoundError, match="ollama pull mxbai-embed-large") as caught:
        embedder("mxbai-embed-large").embed(["x"])
    assert caught.value.provider == "ollama"


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (wire.SERVER_ERROR, ProviderUnavailableError),
        (Reply(401, {"error": "unauthorized"}), ProviderAuthError),
        (Reply(429, {"error": "too many requests"}), ProviderRateLimitError),
        (Reply(400, {"error": "input length exceeds the context length"}), ProviderError),
        (Reply(200, {"model": "all-minilm"}), ProviderError),
        (Reply(200, b"not json"), ProviderError),
        (Reply(200, {"model": "all-minilm", "embeddings": []}), ProviderError),
        (Reply(200, {"model": "all-minilm", "embeddings": [[1.0, 0.0], [1.0]]}), ProviderError),
    ],
)
def test_failures_are_translated(
    server: wire.OllamaWire, reply: Reply, error: type[ProviderError], embedder: Make
) -> None:
    server.enqueue(reply)
    with pytest.raises(error) as caught:
        embedder(dimensions=2).embed(["x", "y"])
    assert type(caught.value) is error


def test_server_error_message_quotes_ollama(server: wire.OllamaWire, embedder: Make) -> None:
    server.enqueue(wire.SERVER_ERROR)
    with pytest.raises(ProviderUnavailableError, match="llama runner process has terminated") as caught:
        embedder().embed(["x"])
    assert caught.value.retryable


def test_dropped_connection_is_unavailable(server: wire.OllamaWire, embedder: Make) -> None:
    server.enqueue(Reply(200, {"model": "all-minilm", "embeddings": [[1.0]]}, mode="drop"))
    with pytest.raises(ProviderUnavailableError, match="broke"):
        embedder().embed(["x"])


def test_silent_server_is_a_timeout(server: wire.OllamaWire, embedder: Make) -> None:
    server.enqueue(Reply(mode="hang"))
    with pytest.raises(ProviderTimeoutError, match="RAGCHAT_OLLAMA__TIMEOUT"):
        embedder().embed(["x"])


def test_refused_connection_names_the_host_setting() -> None:
    with (
        refusing_url() as url,
        closing(OllamaEmbedder("nomic-embed-text", OllamaSettings(host=url, timeout=0.5))) as refused,
        pytest.raises(ProviderUnavailableError, match="RAGCHAT_OLLAMA__HOST"),
    ):
        refused.embed(["x"])
