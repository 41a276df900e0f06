"""Embeddings from a local (or remote) Ollama server, through the official ``ollama`` client.

Ollama does not say a model's dimensions up front, so the first read of
:attr:`OllamaEmbedder.space` embeds one probe text (and checks the model exists); the result is
cached (:mod:`app.llm.embedders.remote`). Ollama exposes no tokenizer, so token counts are an
estimate (:class:`EstimateTokenizer`).
"""

from __future__ import annotations

import ollama

from app.llm.base import Tokenizer, Vectors
from app.llm.embedders.remote import RemoteEmbedder
from app.llm.tokenizers import EstimateTokenizer
from app.llm.vendor_errors import Vendor, ollama_errors
from app.settings import OllamaSettings

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


def canonical_model(model: str) -> str:
    """Ollama's own name for ``model``: an untagged name means ``:latest``, so both share a space."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


class OllamaEmbedder(RemoteEmbedder):
    """Embeds through Ollama's ``POST /api/embed``, ``batch_size`` inputs per request.

    ``dimensions`` is passed on to models that can shorten their vectors (and then names the
    space without a probe). Ollama truncates inputs longer than the model's context itself.
    """

    def __init__(
        self,
        model: str,
        settings: OllamaSettings,
        *,
        batch_size: int = 32,
        dimensions: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        canonical = canonical_model(model)
        super().__init__(
            model, Vendor.ollama(settings), space_model=canonical, dimensions=dimensions, max_inputs=batch_size
        )
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.tokenizer: Tokenizer = EstimateTokenizer()
        base_name = canonical.rsplit(":", 1)[0].rsplit("/", 1)[-1]
        self.max_tokens = max_tokens or KNOWN_MAX_TOKENS.get(base_name, DEFAULT_MAX_TOKENS)
        self._client = ollama.Client(host=settings.host, timeout=settings.timeout)

    def _request(self, texts: list[str]) -> Vectors:
        with ollama_errors(self._vendor, self.model):
            response = self._client.embed(model=self.model, input=texts, dimensions=self.dimensions)
        return self._rows(response.embeddings, len(texts))
