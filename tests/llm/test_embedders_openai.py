"""OpenAIEmbedder against a loopback server speaking OpenAI's /v1/embeddings."""

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
    ValidationError,
)
from app.llm.base import Embedder, SpaceId
from app.llm.embedders.openai import OpenAIEmbedder
from app.llm.embedders.remote import batches
from app.settings import OpenAISettings
from tests.llm.wire import openai_wire as wire
from tests.llm.wire.server import Reply, refusing_url
from tests.llm.wire.vectors import fake_vector, unit

KEY = "sk-test-key"


@pytest.fixture
def server() -> Iterator[wire.OpenAIWire]:
    with wire.OpenAIWire(api_key=KEY) as running:
        yield running


Make = Callable[..., OpenAIEmbedder]


@pytest.fixture
def embedder(server: wire.OpenAIWire) -> Iterator[Make]:
    """Builds embedders talking to ``server`` (short timeout, no SDK retries); closes them after the test."""
    built: list[OpenAIEmbedder] = []

    def build(
        model: str = "text-embedding-3-small", *, api_key: str = KEY, timeout: float = 0.5, **kwargs: object
    ) -> OpenAIEmbedder:
        settings = OpenAISettings(api_key=api_key, base_url=server.base_url, timeout=timeout)  # type: ignore[arg-type]
        built.append(OpenAIEmbedder(model, settings, **({"max_retries": 0} | kwargs)))  # type: ignore[arg-type]
        return built[-1]

    yield build
    for each in built:
        each.close()


def test_embeds_in_order_as_unit_float32_rows(server: wire.OpenAIWire, embedder: Make) -> None:
    texts = ["first text", "a second, longer text", "third"]
    vectors = embedder().embed(texts)

    assert isinstance(embedder(), Embedder)  # the Protocol's runtime check
    assert vectors.dtype == np.float32 and vectors.shape == (3, 1536)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, unit(fake_vector(text, 1536)), atol=1e-6)
    (request,) = server.history
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {"model": "text-embedding-3-small", "input": texts, "encoding_format": "base64"}


def test_known_model_names_its_space_without_a_request(server: wire.OpenAIWire, embedder: Make) -> None:
    assert embedder("text-embedding-3-large").space == SpaceId("openai", "text-embedding-3-large", 3072)
    assert server.history == []


def test_configured_dimensions_are_sent_and_name_the_space(server: wire.OpenAIWire, embedder: Make) -> None:
    shortened = embedder(dimensions=256)
    assert shortened.space == SpaceId("openai", "text-embedding-3-small", 256)
    assert shortened.embed(["hello"]).shape == (1, 256)
    assert server.history[0].body["dimensions"] == 256


def test_unknown_model_is_probed_once_for_its_dimensions(server: wire.OpenAIWire, embedder: Make) -> None:
    custom = embedder("custom-embedder")
    assert custom.space == SpaceId("openai", "custom-embedder", 48)
    assert custom.space.dimensions == 48  # cached
    assert len(server.history) == 1
    assert custom.embed(["x", "y"]).shape == (2, 48)
    assert len(server.history) == 2


def test_large_calls_are_split_into_requests_of_at_most_2048_inputs(server: wire.OpenAIWire, embedder: Make) -> None:
    texts = [f"text {i}" for i in range(2050)]
    # The loopback server hashes 2,048 texts for one answer; on a busy CI machine that outlasts the
    # half-second the other tests allow, and this test is about splitting, not deadlines.
    vectors = embedder("custom-embedder", dimensions=4, timeout=30.0).embed(texts)
    assert [len(r.body["input"]) for r in server.history] == [2048, 2]
    np.testing.assert_allclose(vectors[2049], unit(fake_vector("text 2049", 4)), atol=1e-6)


def test_batches_respect_the_token_limit_per_request() -> None:
    prepared = [("a", 100), ("b", 100), ("c", 150), ("d", 10), ("e", 400)]
    assert list(batches(prepared, max_inputs=10, max_tokens=250)) == [(0, 2), (2, 4), (4, 5)]
    assert list(batches(prepared, max_inputs=2, max_tokens=10_000)) == [(0, 2), (2, 4), (4, 5)]
    assert list(batches([], max_inputs=2, max_tokens=10)) == []


def test_long_inputs_are_cut_at_max_tokens_and_empty_ones_sent_as_a_space(
    server: wire.OpenAIWire, embedder: Make
) -> None:
    short = embedder(max_tokens=5)
    short.embed(["one two three four five six seven eight", ""])
    sent = server.history[0].body["input"]
    assert short.tokenizer.count(sent[0]) == 5 and "one two three four five six seven eight".startswith(sent[0])
    assert sent[1] == " "


def test_vectors_sent_as_float_lists_are_accepted(server: wire.OpenAIWire, embedder: Make) -> None:
    data = [{"object": "embedding", "index": 0, "embedding": [3.0, 4.0]}]
    server.enqueue(Reply(200, {"object": "list", "data": data, "model": "m", "usage": {}}))
    vectors = embedder("custom-embedder", dimensions=2).embed(["x"])
    np.testing.assert_allclose(vectors, [[0.6, 0.8]], atol=1e-6)


@pytest.mark.parametrize(
    "body",
    [
        {"object": "list", "data": [], "model": "m", "usage": {}},  # fewer rows than inputs
        {"object": "list", "model": "m"},  # no data
        {"data": [{"index": 0, "embedding": "!!not base64"}, {"index": 1, "embedding": "AACAPw=="}]},
        {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]},  # ragged
        b"<html>not json</html>",
    ],
)
def test_a_malformed_answer_is_a_provider_error(server: wire.OpenAIWire, embedder: Make, body: object) -> None:
    server.enqueue(Reply(200, body))
    with pytest.raises(ProviderError, match=r"returned|cannot read") as caught:
        embedder("custom-embedder", dimensions=2).embed(["x", "y"])
    assert type(caught.value) is ProviderError


def test_wrong_key_is_an_auth_error_that_does_not_repeat_the_key(embedder: Make) -> None:
    wrong = embedder(api_key="sk-wrong-secret")
    with pytest.raises(ProviderAuthError, match="RAGCHAT_OPENAI__API_KEY") as caught:
        wrong.embed(["x"])
    assert "sk-wrong-secret" not in str(caught.value)
    assert caught.value.provider == "openai" and not caught.value.retryable


def test_missing_key_fails_at_construction_and_ambient_env_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient")
    with pytest.raises(ProviderAuthError, match="RAGCHAT_OPENAI__API_KEY"):
        OpenAIEmbedder("text-embedding-3-small", OpenAISettings())


def test_a_compatible_server_needs_no_key() -> None:
    with wire.OpenAIWire(api_key="unused") as keyless:
        with closing(
            OpenAIEmbedder("custom-embedder", OpenAISettings(base_url=keyless.base_url), max_retries=0)
        ) as keyless_embedder:
            keyless_embedder.embed(["x"])
        assert keyless.history[-1].headers["authorization"] == "Bearer unused"


def test_unknown_model_is_model_not_found(server: wire.OpenAIWire, embedder: Make) -> None:
    with pytest.raises(ModelNotFoundError, match="no-such-model") as caught:
        embedder("no-such-model").embed(["x"])
    assert "does not exist" in str(caught.value) and server.base_url in str(caught.value)


def test_dimensions_are_checked_against_known_models() -> None:
    with pytest.raises(ValidationError) as fixed:
        OpenAIEmbedder("text-embedding-ada-002", OpenAISettings(api_key=KEY), dimensions=256)  # type: ignore[arg-type]
    assert fixed.value.field == "embedder.dimensions"
    with pytest.raises(ValidationError, match="at most 1536"):
        OpenAIEmbedder("text-embedding-3-small", OpenAISettings(api_key=KEY), dimensions=2000)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reply", "error", "retryable"),
    [
        (wire.RATE_LIMITED, ProviderRateLimitError, True),
        (wire.QUOTA_EXCEEDED, ProviderRateLimitError, False),
        (wire.SERVER_ERROR, ProviderUnavailableError, True),
        (
            wire.openai_error(403, "Project lacks access.", type_="invalid_request_error", code=None),
            ProviderAuthError,
            False,
        ),
        (Reply(502, b"<html>Bad gateway</html>"), ProviderUnavailableError, True),
        (Reply(504, b"<html>Gateway timeout</html>"), ProviderTimeoutError, True),
        (Reply(400, {"error": {"message": "bad input", "type": "invalid_request_error"}}), ProviderError, False),
    ],
)
def test_http_failures_are_translated(
    server: wire.OpenAIWire, reply: Reply, error: type[ProviderError], retryable: bool, embedder: Make
) -> None:
    server.enqueue(reply)
    with pytest.raises(error) as caught:
        embedder().embed(["x"])
    assert type(caught.value) is error and caught.value.retryable is retryable


def test_server_error_is_retried_by_the_sdk_when_allowed(server: wire.OpenAIWire, embedder: Make) -> None:
    server.enqueue(Reply(500, {"error": {"message": "boom"}}, headers={"retry-after-ms": "10"}))
    assert embedder(max_retries=1).embed(["x"]).shape == (1, 1536)
    assert len(server.history) == 2


def test_dropped_connection_is_unavailable(server: wire.OpenAIWire, embedder: Make) -> None:
    server.enqueue(Reply(200, {"object": "list", "data": [], "model": "m", "usage": {}}, mode="drop"))
    with pytest.raises(ProviderUnavailableError, match="broke"):
        embedder().embed(["x"])


def test_silent_server_is_a_timeout(server: wire.OpenAIWire, embedder: Make) -> None:
    server.enqueue(Reply(mode="hang"))
    with pytest.raises(ProviderTimeoutError, match=r"0\.5 s"):
        embedder().embed(["x"])


def test_credentials_in_the_url_stay_out_of_messages() -> None:
    with refusing_url() as url:
        proxied = url.replace("http://", "http://user:hunter2@") + "/v1"
        settings = OpenAISettings(api_key=KEY, base_url=proxied, timeout=0.5)  # type: ignore[arg-type]
        refused = OpenAIEmbedder("text-embedding-3-small", settings, max_retries=0)
        with closing(refused), pytest.raises(ProviderUnavailableError) as caught:
            refused.embed(["x"])
    assert "hunter2" not in str(caught.value) and url in str(caught.value)


def test_refused_connection_is_unavailable() -> None:
    with refusing_url() as url:
        settings = OpenAISettings(api_key=KEY, base_url=f"{url}/v1", timeout=0.5)  # type: ignore[arg-type]
        refused = OpenAIEmbedder("text-embedding-3-small", settings, max_retries=0)
        with closing(refused), pytest.raises(ProviderUnavailableError, match="RAGCHAT_OPENAI__BASE_URL"):
            refused.embed(["x"])
