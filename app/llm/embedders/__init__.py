"""Embedders behind :class:`app.llm.base.Embedder`: local (offline default), OpenAI, Ollama.

Callers go through :func:`embedder_registry` (or :func:`build_embedder` for the settings' choice);
each adapter module imports its SDK only when built.
"""

from app.llm.embedders.registry import build_embedder, embedder_registry

__all__ = ["build_embedder", "embedder_registry"]
