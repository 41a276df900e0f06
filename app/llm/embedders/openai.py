"""Embeddings from OpenAI, or any server speaking its ``POST /v1/embeddings`` (vLLM, LM Studio, ...).

The space must be known before a vector is stored, so the dimensions come from the settings
(``dimensions``, for text-embedding-3-*), else from a table of OpenAI's models, else from one probe
embedding the first time :attr:`OpenAIEmbedder.space` is read (:mod:`app.llm.embedders.remote`).
"""

from __future__ import annotations

import base64

import numpy as np
import openai

from app.errors import ProviderAuthError, ProviderError, ValidationError
from app.llm.base import Tokenizer, Vectors
from app.llm.embedders.remote import RemoteEmbedder
from app.llm.tokenizers import TiktokenTokenizer
from app.llm.vendor_errors import OPENAI_BASE_URL, Vendor, openai_errors
from app.settings import OpenAISettings

# Native dimensions; only the text-embedding-3 models accept a smaller ``dimensions``.
KNOWN_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
SHORTENABLE = {"text-embedding-3-small", "text-embedding-3-large"}
MAX_INPUT_TOKENS = 8191  # every OpenAI embedding model; it refuses longer inputs instead of truncating
MAX_BATCH_INPUTS = 2048  # per request, OpenAI's limit
MAX_BATCH_TOKENS = 300_000  # summed over a request's inputs, OpenAI's limit


class OpenAIEmbedder(RemoteEmbedder):
    """Embeds through the official ``openai`` client (sync); one request per batch of at most 2048
    inputs and 300k tokens.

    ``settings.api_key`` may be left unset only with a ``base_url`` (a local compatible server needs
    none). Ambient ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` are deliberately not read: ragchat's
    settings say which server is used. ``max_retries`` is the SDK's (429, 5xx and connection
    errors, with backoff). ``max_tokens`` is the longest input; longer ones are cut there before
    sending, because OpenAI rejects them rather than truncating.
    """

    def __init__(
        self,
        model: str,
        settings: OpenAISettings,
        *,
        dimensions: int | None = None,
        max_retries: int = 2,
        max_tokens: int = MAX_INPUT_TOKENS,
    ) -> None:
        _check_dimensions(model, dimensions)
        api_key = settings.api_key.get_secret_value() if settings.api_key else None
        if not api_key and settings.base_url is None:
            raise ProviderAuthError(
                "OpenAI needs an API key: set RAGCHAT_OPENAI__API_KEY (or RAGCHAT_OPENAI__BASE_URL for a "
                "compatible server that needs none)",
                provider="openai",
            )
        super().__init__(
            model,
            Vendor.openai(settings),
            space_model=model,
            dimensions=dimensions or KNOWN_DIMENSIONS.get(model),
            max_inputs=MAX_BATCH_INPUTS,
            max_batch_tokens=MAX_BATCH_TOKENS,
        )
        self.dimensions = dimensions
        self.tokenizer: Tokenizer = TiktokenTokenizer()
        self.max_tokens = max_tokens
        # A compatible server without auth still gets a bearer header: the SDK insists on a key.
        self._client = openai.OpenAI(
            api_key=api_key or "unused",
            base_url=(settings.base_url or OPENAI_BASE_URL).rstrip("/"),
            timeout=settings.timeout,
            max_retries=max_retries,
        )

    def _prepare(self, text: str) -> tuple[str, int]:
        """The text as sent (cut at ``max_tokens``; OpenAI refuses an empty string) and its token count."""
        if not text:
            return " ", 1
        count = self.tokenizer.count(text)
        if count <= self.max_tokens:
            return text, count
        spans = self.tokenizer.spans(text)
        keep = min(self.max_tokens, len(spans))
        # A span can hold several tokens (a character BPE splits), so the cut may need to move back.
        while keep > 1 and self.tokenizer.count(text[: spans[keep - 1][1]]) > self.max_tokens:
            keep -= max(1, keep // 50)
        return text[: spans[keep - 1][1]], self.max_tokens

    def _request(self, texts: list[str]) -> Vectors:
        with openai_errors(self._vendor, self.model):
            # Asking for base64 explicitly gets the raw float32 bytes back, undecoded by the SDK.
            response = self._client.embeddings.create(
                model=self.model,
                input=texts,
                dimensions=self.dimensions or openai.omit,
                encoding_format="base64",
            )
        try:
            rows = [_decode(row.embedding) for row in sorted(response.data, key=lambda item: item.index)]
        except (TypeError, AttributeError, ValueError) as exc:  # missing fields, bad base64
            raise ProviderError(
                f"{self._vendor.label} sent embeddings ragchat cannot read ({type(exc).__name__}: {exc})",
                provider="openai",
            ) from exc
        return self._rows(rows, len(texts))


def _decode(embedding: object) -> Vectors:
    # Some compatible servers ignore encoding_format and send a list of floats anyway.
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float32)
    return np.asarray(embedding, dtype=np.float32)


def _check_dimensions(model: str, dimensions: int | None) -> None:
    if dimensions is None or model not in KNOWN_DIMENSIONS:
        return
    if model not in SHORTENABLE:
        raise ValidationError("embedder.dimensions", f"{model} has a fixed size; leave dimensions unset")
    if dimensions > KNOWN_DIMENSIONS[model]:
        raise ValidationError("embedder.dimensions", f"{model} has at most {KNOWN_DIMENSIONS[model]} dimensions")
