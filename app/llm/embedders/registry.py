"""Build the embedder the settings (or a caller's override) name. The one place that knows the adapters."""

from __future__ import annotations

from app.errors import ValidationError
from app.llm.base import Embedder
from app.llm.embedders.local import MODEL as LOCAL_MODEL
from app.settings import Settings

DEFAULT_MODELS = {"local": LOCAL_MODEL, "openai": "text-embedding-3-small", "ollama": "nomic-embed-text"}
PROVIDERS = tuple(DEFAULT_MODELS)


def build_embedder(settings: Settings, provider: str | None = None, model: str | None = None) -> Embedder:
    """The embedder for ``provider`` / ``model`` (default: ``settings.embedder``), configured from settings.

    Building is cheap and offline: models load and remote dimensions are probed on first use.
    Raises :class:`ValidationError` (``embedder.provider`` / ``embedder.model`` /
    ``embedder.dimensions``) for a choice no adapter serves, and :class:`ProviderAuthError` when
    OpenAI is chosen without a key.
    """
    config = settings.embedder
    name = provider or config.provider
    if name not in DEFAULT_MODELS:
        raise ValidationError(
            "embedder.provider", f"unknown embedding provider {name!r}; choose one of {', '.join(PROVIDERS)}"
        )
    # The configured model belongs to the configured provider; the settings' default names the
    # local model, so a remote provider chosen without a model gets its own default instead.
    configured = config.model if name == config.provider and config.model != LOCAL_MODEL else None
    chosen = model or configured or DEFAULT_MODELS[name]
    if name == "local":
        from app.llm.embedders.local import LocalEmbedder

        if chosen != LOCAL_MODEL:
            raise ValidationError("embedder.model", f"the local embedder runs {LOCAL_MODEL} only, not {chosen!r}")
        return LocalEmbedder(batch_size=config.batch_size, threads=config.threads)
    if name == "openai":
        from app.llm.embedders.openai import OpenAIEmbedder

        return OpenAIEmbedder(chosen, settings.openai, dimensions=config.dimensions)
    from app.llm.embedders.ollama import OllamaEmbedder

    return OllamaEmbedder(chosen, settings.ollama, batch_size=config.batch_size, dimensions=config.dimensions)
