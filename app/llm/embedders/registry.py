"""Which embedders this server can use: the built-in providers as data, in the one registry
(:mod:`app.llm.registry`) every kind of provider goes through. Each adapter module imports its SDK
only when an embedder of it is built."""

from __future__ import annotations

from collections.abc import Iterable

from app.llm.base import Embedder
from app.llm.embedders.local import MODEL as LOCAL_MODEL
from app.llm.registry import Kind, Provider, ProviderRegistry, plugin_providers
from app.settings import Settings

EMBEDDERS = Kind("embedder", "embedding", field_prefix="embedder.")


def embedder_registry(
    settings: Settings, *, providers: Iterable[Provider[Embedder]] | None = None
) -> ProviderRegistry[Embedder]:
    """The embedders ``settings`` allow (default: the built-in providers, and test providers when
    ``RAGCHAT_TEST_PROVIDERS`` names a module). The default is ``settings.embedder``'s choice; a
    provider chosen without a model gets its own default model."""
    config = settings.embedder
    if providers is None:
        providers = [*builtin_providers(settings), *plugin_providers(settings, EMBEDDERS)]
    model = config.model if "model" in config.model_fields_set else None
    return ProviderRegistry(EMBEDDERS, providers, default=(config.provider, model))


def build_embedder(settings: Settings, provider: str | None = None, model: str | None = None) -> Embedder:
    """The embedder for ``provider`` / ``model`` (default: ``settings.embedder``), configured from settings.

    Building is cheap and offline: models load and remote dimensions are probed on first use.
    Raises :class:`ValidationError` (``embedder.provider`` / ``embedder.model`` /
    ``embedder.dimensions``) for a choice no adapter serves, and :class:`ProviderAuthError` when
    OpenAI is chosen without a key.
    """
    registry = embedder_registry(settings)
    return registry.get(*registry.resolve(provider, model))


def builtin_providers(settings: Settings) -> list[Provider[Embedder]]:
    """``local``, ``openai`` and ``ollama`` as configured by ``settings``."""
    config = settings.embedder

    def local(model: str) -> Embedder:
        from app.llm.embedders.local import LocalEmbedder

        return LocalEmbedder(
            batch_size=config.batch_size,
            threads=config.threads,
            precision=config.precision,
            cache_dir=config.cache_dir,
        )

    def openai(model: str) -> Embedder:
        from app.llm.embedders.openai import OpenAIEmbedder

        return OpenAIEmbedder(model, settings.openai, dimensions=config.dimensions)

    def ollama(model: str) -> Embedder:
        from app.llm.embedders.ollama import OllamaEmbedder

        return OllamaEmbedder(model, settings.ollama, batch_size=config.batch_size, dimensions=config.dimensions)

    return [
        Provider[Embedder](name="local", build=local, default_model=LOCAL_MODEL, models=(LOCAL_MODEL,)),
        # Without a key OpenAI is refused when built (ProviderAuthError), as the adapter says why.
        Provider[Embedder](name="openai", build=openai, default_model="text-embedding-3-small", open_ended=True),
        Provider[Embedder](name="ollama", build=ollama, default_model="nomic-embed-text", open_ended=True),
    ]
