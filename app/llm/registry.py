"""One seam for every kind of provider: chat models, embedders (and rerankers next).

A :class:`Provider` says how to build an adapter of one kind from a model name, which names it
knows, whether it accepts others, why it cannot be used with these settings, how to ask whether
it answers right now, and what its models can be trusted with. A :class:`ProviderRegistry` holds
the providers of one :class:`Kind`: it validates ``(provider, model)``, builds each adapter once
and shares it, and lists what it offers. The built-in providers are plain data built from the
settings (``app/llm/chat/registry.py``, ``app/llm/embedders/registry.py``); the registry never
special-cases a vendor, and more providers plug in with :meth:`ProviderRegistry.register` (a test's
fake, or the module ``RAGCHAT_TEST_PROVIDERS`` names: :func:`plugin_providers`).

Validation never calls the network. It runs on every request that picks a model, where a round
trip to OpenAI or Ollama would add latency and make configuring a chat session fail whenever the
provider is briefly down; and Ollama's model list changes with every ``ollama pull``. So a remote
provider is refused only when it cannot work at all (OpenAI with neither key nor base URL), any
well-formed model name is accepted, and an unknown one surfaces at use as
:class:`app.errors.ModelNotFoundError`. Whether a provider answers right now is a separate,
cached question (:meth:`ProviderRegistry.list_models`, :mod:`app.llm.reachability`) that the
``providers`` query asks so the UI can show it, and validation never waits for.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from app.errors import SettingsError, ValidationError
from app.llm.base import ModelCapabilities, ProviderModels
from app.llm.reachability import REACHABLE, Probe, ProbeCache, Reachability
from app.settings import Settings

MAX_MODEL_NAME = 200

T = TypeVar("T")


@dataclass(frozen=True)
class Kind:
    """What one registry holds, as its messages and the test-provider hook name it."""

    name: str  # "chat", "embedder": a test-provider module adds its own with ``<name>_providers(settings)``
    noun: str  # as messages say it: "unknown {noun} provider"
    field_prefix: str = ""  # of ValidationError fields: "embedder." gives "embedder.provider"


@dataclass(frozen=True)
class Provider(Generic[T]):
    """One provider as its registry sees it. ``build`` makes the adapter for a model name; it is
    called once per model, after validation, and should be cheap (loading waits for first use)."""

    name: str
    build: Callable[[str], T]
    default_model: str | None = None  # used when this provider is chosen without a model
    models: tuple[str, ...] = ()  # names known without asking the provider
    open_ended: bool = False  # also accepts names not in ``models``
    unavailable: str | None = None  # why it cannot be used with these settings; None when usable
    probe: Probe | None = None  # asks whether it answers right now; None: whenever available
    # What its models can be trusted with (AUTO answer mode reads a chat model's).
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)


class ProviderRegistry(Generic[T]):
    """The providers of one kind; builds each ``(provider, model)`` on first use and keeps it, so a
    local model loads once. ``default`` is the settings' choice: a provider, and a model or None
    (then the provider's ``default_model``)."""

    def __init__(
        self,
        kind: Kind,
        providers: Iterable[Provider[T]],
        *,
        default: tuple[str, str | None],
        probes: ProbeCache | None = None,
    ) -> None:
        self.kind = kind
        self._default = default
        self._probes = probes or ProbeCache()
        self._providers = {p.name: p for p in providers}
        self._built: dict[tuple[str, str], T] = {}

    def register(self, provider: Provider[T]) -> None:
        """Add (or replace) a provider."""
        self._providers[provider.name] = provider
        self._probes.forget(provider.name)
        self._built = {key: built for key, built in self._built.items() if key[0] != provider.name}

    def resolve(self, provider: str | None = None, model: str | None = None) -> tuple[str, str]:
        """The ``(provider, model)`` meant: the settings' choice where either is left out; a
        provider chosen without a model gets the configured one when it is the configured
        provider, else its own default."""
        name = provider or self._default[0]
        configured = self._default[1] if name == self._default[0] else None
        chosen = model or configured or self._entry(name).default_model
        if chosen is None:
            raise ValidationError(self._field("model"), "a model name is required")
        return name, chosen

    def validate(self, provider: str, model: str) -> None:
        """Raise :class:`ValidationError` unless ``model`` of ``provider`` can be used."""
        entry = self._entry(provider)
        if entry.unavailable is not None:
            raise ValidationError(self._field("provider"), f"{provider} cannot be used: {entry.unavailable}")
        if not model.strip():
            raise ValidationError(self._field("model"), "a model name is required")
        if model != model.strip() or len(model) > MAX_MODEL_NAME or not model.isprintable():
            raise ValidationError(self._field("model"), f"{model[:MAX_MODEL_NAME]!r} is not a model name")
        if model not in entry.models and not entry.open_ended:
            choices = ", ".join(entry.models)
            raise ValidationError(self._field("model"), f"{provider} has no model {model!r}; choose one of: {choices}")

    def capabilities(self, provider: str, model: str) -> ModelCapabilities:
        """What ``model`` of ``provider`` declares it can do, without building (or loading) it."""
        self.validate(provider, model)
        return self._providers[provider].capabilities

    def get(self, provider: str, model: str) -> T:
        """The shared instance of ``model``, built on first use. Raises :class:`ValidationError`."""
        key = (provider, model)
        if key not in self._built:
            self.validate(provider, model)
            self._built[key] = self._providers[provider].build(model)
        return self._built[key]

    def default(self) -> T:
        """The settings' choice (``RAGCHAT_LLM__PROVIDER`` / ``__MODEL``, ``RAGCHAT_EMBEDDER__...``)."""
        return self.get(*self.resolve())

    async def list_models(self) -> list[ProviderModels]:
        """Every provider, whether it can be used and answers now, and the model names known
        without asking it. Providers are probed concurrently, each answer cached (:class:`ProbeCache`)."""
        providers = sorted(self._providers.values(), key=lambda p: p.name)
        found = await asyncio.gather(*(self._reachability(p) for p in providers))
        return [
            ProviderModels(
                provider=p.name,
                available=p.unavailable is None,
                reason=p.unavailable or reach.reason,
                models=p.models,
                open_ended=p.open_ended,
                default_model=self._default_model(p),
                reachable=reach.reachable,
                concurrency=p.capabilities.concurrency,
                tool_calling=p.capabilities.tool_calling,
            )
            for p, reach in zip(providers, found, strict=True)
        ]

    async def aclose(self) -> None:
        """Close what the adapters built so far hold (HTTP clients)."""
        built, self._built = list(self._built.values()), {}
        for each in built:
            aclose = getattr(each, "aclose", None)
            if aclose is not None:
                await aclose()
                continue
            close = getattr(each, "close", None)
            if close is not None:
                close()

    def _entry(self, provider: str) -> Provider[T]:
        entry = self._providers.get(provider)
        if entry is None:
            choices = ", ".join(self._providers)
            raise ValidationError(
                self._field("provider"), f"unknown {self.kind.noun} provider {provider!r}; choose one of: {choices}"
            )
        return entry

    def _default_model(self, provider: Provider[T]) -> str | None:
        if provider.name != self._default[0]:
            return None
        return self._default[1] or provider.default_model

    async def _reachability(self, provider: Provider[T]) -> Reachability:
        if provider.unavailable is not None:
            return Reachability(False, provider.unavailable)
        if provider.probe is None:
            return REACHABLE
        return await self._probes.check(provider.name, provider.probe)

    def _field(self, name: str) -> str:
        return self.kind.field_prefix + name


def plugin_providers(settings: Settings, kind: Kind) -> list[Provider[Any]]:
    """The providers of ``kind`` added by the module ``RAGCHAT_TEST_PROVIDERS`` names (development
    only: tests and UI demos against a real server), through its ``<kind>_providers(settings)``
    function if it has one. None when the setting is unset, as in production."""
    if settings.test_providers is None:
        return []
    try:
        module = importlib.import_module(settings.test_providers)
    except ImportError as exc:
        raise SettingsError(
            f"RAGCHAT_TEST_PROVIDERS: cannot import {settings.test_providers!r} ({exc}); "
            "run from the repository, or put it on PYTHONPATH"
        ) from exc
    hook = getattr(module, f"{kind.name}_providers", None)
    return list(hook(settings)) if hook is not None else []
