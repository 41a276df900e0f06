"""Embeddings from a local (or remote) Ollama server, through the official ``ollama`` client.

Ollama does not say a model's dimensions up front, so the first read of
:attr:`OllamaEmbedder.space` embeds one probe text (and checks the model exists); the result is
cached. Ollama exposes no tokenizer, so token counts are an estimate (:class:`EstimateTokenizer`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import ollama

from app.errors import ProviderError
from app.llm.base import SpaceId, Tokenizer, Vectors
from app.llm.embedders._vectors import normalise
from app.llm.tokenizers import EstimateTokenizer
from app.llm.vendor_errors import Vendor, display_url, ollama_errors

# Context lengths of common Ollama embedding models (their Modelfiles); others get DEFAULT_MAX_TOKENS.
KNOWN_MAX_TOKENS = {
    "all-minilm": 256,
    "bge-m3": 8192,
    "mxbai-embed-large": 512,
    "nomic-embed-text": 8192,
    "snowflake-arctic-embed": 512,
    "snowflake-arctic-embed2": 8192,
}
DEFAULT_MAX_TOKENS = 512
_PROBE_TEXT = "dimension probe"


def canonical_model(model: str) -> str:
    """Ollama's own name for ``model``: an untagged name means ``:latest``, so both share a space."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


class OllamaEmbedder:
    """Embeds through Ollama's ``POST /api/embed``, ``batch_size`` inputs per request.

    ``dimensions`` is passed on to models that can shorten their vectors (and then names the
    space without a probe). Ollama truncates inputs longer than the model's context itself.
    """

    def __init__(
        self,
        model: str = "nomic-embed-text",
        *,
        host: str = "http://127.0.0.1:11434",
        timeout: float = 120.0,
        batch_size: int = 32,
        dimensions: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = model
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.tokenizer: Tokenizer = EstimateTokenizer()
        base_name = canonical_model(model).rsplit(":", 1)[0].rsplit("/", 1)[-1]
        self.max_tokens = max_tokens or KNOWN_MAX_TOKENS.get(base_name, DEFAULT_MAX_TOKENS)
        shown = display_url(host)
        self._vendor = Vendor("ollama", f"Ollama at {shown}", shown, timeout, "RAGCHAT_OLLAMA")
        self._client = ollama.Client(host=host, timeout=timeout)
        self._lock = threading.Lock()
        self._space = SpaceId("ollama", canonical_model(model), dimensions) if dimensions else None

    @property
    def space(self) -> SpaceId:
        """The embedding space; the first read may cost one probe request (then it is cached).
        Note that ``isinstance(embedder, Embedder)`` reads it too on Python 3.11."""
        if self._space is None:
            with self._lock:
                if self._space is None:
                    probe = self._request([_PROBE_TEXT])
                    self._space = SpaceId("ollama", canonical_model(self.model), probe.shape[1])
        return self._space

    @space.setter
    def space(self, value: SpaceId) -> None:
        raise AttributeError("the space is given by the model; it cannot be set")

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``, ``batch_size`` per request; rows in input order, each of unit length."""
        dims = self.space.dimensions
        out = np.empty((len(texts), dims), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            vectors = self._request(batch)
            if vectors.shape[1] != dims:
                raise ProviderError(
                    f"{self._vendor.label} returned {vectors.shape[1]}-dimensional vectors for '{self.model}', "
                    f"but its space is {self.space.label}",
                    provider="ollama",
                )
            out[start : start + len(batch)] = vectors
        return out

    def close(self) -> None:
        """Close the HTTP connections. The embedder must not be used afterwards."""
        self._client.close()

    def _request(self, texts: list[str]) -> Vectors:
        with ollama_errors(self._vendor, self.model):
            response = self._client.embed(model=self.model, input=texts, dimensions=self.dimensions)
        if len(response.embeddings) != len(texts):
            raise ProviderError(
                f"{self._vendor.label} returned {len(response.embeddings)} embeddings for {len(texts)} inputs",
                provider="ollama",
            )
        try:
            return normalise(np.asarray(response.embeddings, dtype=np.float32).reshape(len(texts), -1))
        except ValueError as exc:  # ragged rows
            raise ProviderError(
                f"{self._vendor.label} returned vectors of different lengths", provider="ollama"
            ) from exc
