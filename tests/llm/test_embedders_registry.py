"""build_embedder: the adapter and its configuration come from the settings, or a caller's override."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError as PydanticValidationError

from app.errors import ProviderAuthError, ProviderTimeoutError, ValidationError
from app.llm.base import Embedder, SpaceId
from app.llm.embedders import build_embedder
from app.llm.embedders.local import LocalEmbedder
from app.llm.embedders.ollama import OllamaEmbedder
from app.llm.embedders.openai import OpenAIEmbedder
from app.settings import Settings
from tests.llm.wire.ollama_wire import OllamaWire
from tests.llm.wire.openai_wire import OpenAIWire
from tests.llm.wire.server import Reply


@pytest.fixture
def built() -> Iterator[list[Embedder]]:
    """Embedders a test builds, closed after it."""
    embedders: list[Embedder] = []
    yield embedders
    for embedder in embedders:
        embedder.close()  # type: ignore[attr-defined]


def test_default_is_the_local_embedder_with_its_batch_and_threads(built: list[Embedder]) -> None:
    settings = Settings(embedder={"batch_size": 8, "threads": 1})
    embedder = build_embedder(settings)
    built.append(embedder)
    assert isinstance(embedder, LocalEmbedder)
    assert (embedder.batch_size, embedder.threads) == (8, 1)
    assert embedder.space == SpaceId("local", "all-MiniLM-L6-v2-int8", 384)
    assert embedder.precision == "int8"  # the default since SciFact's full run held it (issue 16 item 4)


def test_local_precision_and_cache_dir_come_from_the_environment(
    built: list[Embedder], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAGCHAT_EMBEDDER__PRECISION", "fp32")
    fp32 = build_embedder(Settings())
    built.append(fp32)
    assert isinstance(fp32, LocalEmbedder) and fp32.precision == "fp32"
    monkeypatch.setenv("RAGCHAT_EMBEDDER__PRECISION", "int8")
    monkeypatch.setenv("RAGCHAT_EMBEDDER__CACHE_DIR", str(tmp_path / "models"))
    embedder = build_embedder(Settings())
    built.append(embedder)
    assert isinstance(embedder, LocalEmbedder) and embedder.precision == "int8"
    embedder.embed(["derive the int8 graph"])
    assert [p.suffix for p in (tmp_path / "models").iterdir()] == [".onnx"]


def test_an_unknown_precision_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCHAT_EMBEDDER__PRECISION", "fp16")
    with pytest.raises(PydanticValidationError, match="precision"):
        Settings()


def test_openai_gets_key_url_timeout_and_dimensions_from_settings(built: list[Embedder]) -> None:
    with OpenAIWire(api_key="sk-settings") as server:
        settings = Settings(
            embedder={"provider": "openai", "model": "text-embedding-3-large", "dimensions": 1024},
            openai={"api_key": "sk-settings", "base_url": server.base_url, "timeout": 0.5},
        )
        embedder = build_embedder(settings)
        built.append(embedder)
        assert isinstance(embedder, OpenAIEmbedder)
        assert embedder.space == SpaceId("openai", "text-embedding-3-large", 1024)
        assert embedder.embed(["x"]).shape == (1, 1024)
        (request,) = server.history
        assert request.headers["authorization"] == "Bearer sk-settings"
        assert request.body["model"] == "text-embedding-3-large" and request.body["dimensions"] == 1024
        # The SDK's two retries (with backoff) apply to timeouts too: three silent attempts.
        server.enqueue(*[Reply(mode="hang")] * 3)
        with pytest.raises(ProviderTimeoutError, match=r"within 0\.5 s"):
            embedder.embed(["x"])
        assert len(server.history) == 4


def test_a_remote_provider_chosen_without_a_model_gets_its_default(built: list[Embedder]) -> None:
    settings = Settings(openai={"api_key": "sk-settings"})
    embedder = build_embedder(settings, provider="openai")
    built.append(embedder)
    assert embedder.space == SpaceId("openai", "text-embedding-3-small", 1536)


def test_overrides_win_over_settings(built: list[Embedder]) -> None:
    with OllamaWire() as server:
        settings = Settings(
            embedder={"provider": "openai", "model": "text-embedding-3-large"},
            ollama={"host": server.url, "timeout": 5},
        )
        embedder = build_embedder(settings, provider="ollama", model="all-minilm")
        built.append(embedder)
        assert isinstance(embedder, OllamaEmbedder)
        assert embedder.space == SpaceId("ollama", "all-minilm:latest", 384)


def test_openai_without_a_key_is_refused_at_build() -> None:
    with pytest.raises(ProviderAuthError, match="RAGCHAT_OPENAI__API_KEY"):
        build_embedder(Settings(), provider="openai")


def test_unknown_provider_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as caught:
        build_embedder(Settings(), provider="cohere")
    assert caught.value.field == "embedder.provider"
    assert "local, openai, ollama" in caught.value.message


def test_local_runs_only_its_own_model() -> None:
    with pytest.raises(ValidationError) as caught:
        build_embedder(Settings(), model="bge-small")
    assert caught.value.field == "embedder.model"
