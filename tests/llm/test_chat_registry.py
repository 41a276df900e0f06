"""The chat registry: which (provider, model) pairs are accepted, and one instance of each."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from app.errors import ValidationError
from app.llm.base import ChatModel
from app.llm.chat import LocalChatModel, OllamaChatModel, OpenAIChatModel, chat_registry
from app.llm.chat.local import SMOLLM2
from app.llm.registry import Provider, ProviderRegistry
from app.settings import ChatModelSettings, OpenAISettings, Settings


def registry(**settings: object) -> ProviderRegistry[ChatModel]:
    return chat_registry(Settings(**settings))  # type: ignore[arg-type]


def refused(reg: ProviderRegistry[ChatModel], provider: str, model: str) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        reg.validate(provider, model)
    return caught.value


@pytest.mark.requires_llama
def test_local_accepts_only_the_shipped_model() -> None:
    reg = registry()
    reg.validate("local", SMOLLM2)
    error = refused(reg, "local", "gpt-4o")
    assert error.field == "model" and SMOLLM2 in error.reason


def test_unknown_providers_are_refused_with_the_choices() -> None:
    error = refused(registry(), "anthropic", "claude")
    assert error.field == "provider"
    assert "local, ollama, openai" in error.reason


def test_openai_needs_a_key_or_a_base_url() -> None:
    error = refused(registry(), "openai", "gpt-4o")
    assert error.field == "provider" and "RAGCHAT_OPENAI__API_KEY" in error.reason
    refused(registry(openai=OpenAISettings(api_key=SecretStr(""))), "openai", "gpt-4o")
    registry(openai=OpenAISettings(api_key=SecretStr("sk-x"))).validate("openai", "any-new-model")
    registry(openai=OpenAISettings(base_url="http://127.0.0.1:8080/v1")).validate("openai", "whatever-it-serves")


@pytest.mark.parametrize("name", ["", "   ", " padded", "x" * 201, "line\nbreak"])
def test_malformed_model_names_are_refused(name: str) -> None:
    assert refused(registry(), "ollama", name).field == "model"


@pytest.mark.requires_llama
async def test_get_builds_once_and_does_not_load_the_local_model() -> None:
    reg = registry(openai=OpenAISettings(api_key=SecretStr("sk-x")))
    local = reg.get("local", SMOLLM2)
    assert isinstance(local, LocalChatModel) and isinstance(local, ChatModel)
    assert reg.get("local", SMOLLM2) is local and reg.default() is local
    assert local.load_seconds is None  # loading waits for the first use
    gpt = reg.get("openai", "gpt-4o-mini")
    assert isinstance(gpt, OpenAIChatModel) and gpt.context_window == 128_000
    assert reg.get("openai", "house-model").context_window == 2048  # unknown: settings.llm.context_window
    llama = reg.get("ollama", "llama3.2")
    assert isinstance(llama, OllamaChatModel) and llama.context_window == 2048
    await reg.aclose()


def test_get_validates_first() -> None:
    with pytest.raises(ValidationError):
        registry().get("local", "nope")


@pytest.mark.requires_llama
async def test_list_models_describes_every_provider() -> None:
    reg = registry(llm=ChatModelSettings(provider="ollama", model="qwen2.5:0.5b"))
    listed = {p.provider: p for p in await reg.list_models()}
    assert list(listed) == ["local", "ollama", "openai"]
    assert listed["local"].available and listed["local"].models == (SMOLLM2,) and not listed["local"].open_ended
    assert listed["ollama"].models == ("qwen2.5:0.5b",) and listed["ollama"].default_model == "qwen2.5:0.5b"
    assert not listed["openai"].available and listed["openai"].reason
    assert listed["local"].default_model is None


@pytest.mark.requires_llama
def test_more_providers_plug_into_the_same_seam() -> None:
    reg = registry()
    built: list[str] = []

    def build(model: str) -> ChatModel:
        built.append(model)
        return reg.get("local", SMOLLM2)

    reg.register(Provider(name="fake", build=build, models=("echo",)))
    assert reg.get("fake", "echo") is reg.get("fake", "echo")
    assert built == ["echo"]
    assert refused(reg, "fake", "other").field == "model"


@pytest.mark.requires_llama
def test_providers_declare_whether_their_models_write_grounded_answers() -> None:
    """AUTO answer mode reads this: the shipped 135M model is declared no reliable writer, remote ones are."""
    registry = chat_registry(Settings(openai=OpenAISettings(api_key=SecretStr("k"))))
    assert registry.capabilities("local", SMOLLM2).grounded_writing is False
    assert registry.capabilities("openai", "gpt-4o-mini").grounded_writing is True
    assert registry.capabilities("ollama", "llama3.2").grounded_writing is True
    with pytest.raises(ValidationError):
        registry.capabilities("nope", "m")


async def test_remote_providers_declare_how_many_answers_they_write_at_once() -> None:
    """The generation slots read this (app/services/chat/slots.py): the in-process model declares nothing
    and gets the server's small cap; a remote one waits on the network and declares more."""
    closed = OpenAISettings(api_key=SecretStr("k"), base_url="http://127.0.0.1:9/v1")  # probes stay on loopback
    reg = chat_registry(Settings(_env_file=None, openai=closed, ollama={"host": "http://127.0.0.1:9"}))  # type: ignore[call-arg,arg-type]
    assert reg.capabilities("openai", "gpt-4o-mini").concurrency == 32
    assert reg.capabilities("ollama", "llama3.2").concurrency == 4
    declared = {p.provider: p.concurrency for p in await reg.list_models()}
    assert declared == {"local": None, "ollama": 4, "openai": 32}
