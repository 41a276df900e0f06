"""Embedders behind :class:`app.llm.base.Embedder`: local (offline default), OpenAI, Ollama.

Callers go through :func:`build_embedder`; each adapter module imports its SDK only when built.
"""

from app.llm.embedders.registry import PROVIDERS, build_embedder

__all__ = ["PROVIDERS", "build_embedder"]
