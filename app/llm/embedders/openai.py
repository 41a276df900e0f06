"""Embeddings from OpenAI, or any server speaking its ``POST /v1/embeddings`` (vLLM, LM Studio, ...).

The space must be known before a vector is stored, so the dimensions come from the settings
(``dimensions``, for text-embedding-3-*), else from a table of OpenAI's models, else from one probe
embedding the first time :attr:`OpenAIEmbedder.space` is read.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator, Sequence

import numpy as np
import openai

from app.errors import ProviderAuthError, ProviderError, ValidationError
from app.llm.base import SpaceId, Tokenizer, Vectors
from app.llm.embedders._vectors import normalise
from app.llm.tokenizers import TiktokenTokenizer
from app.llm.vendor_errors import Vendor, display_url, openai_errors

OPENAI_URL = "https://api.openai.com/v1"
# Native dimensions; only the text-embedding-3 models accept a smaller ``dimensions``.
KNOWN_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
SHORTENABLE = {"text-embedding-3-small", "text-embedding-3-large"}
MAX_INPUT_TOKENS = 8191  # every OpenAI embedding model; it refuses longer inputs instead of truncating
MAX_BATCH_INPUTS = 2048  # per request, OpenAI's limit
MAX_BATCH_TOKENS = 300_000  # summed over a request's inputs, OpenAI's limit
_PROBE_TEXT = "dimension probe"


class OpenAIEmbedder:
    """Embeds through the official ``openai`` client (sync); one request per batch.

    ``api_key`` may be omitted only with a ``base_url`` (a local compatible server needs none).
    Ambient ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` are deliberately not read: ragchat's settings
    say which server is used. ``max_retries`` is the SDK's (429, 5xx and connection errors, with
    backoff). ``max_tokens`` is the longest input; longer ones are cut there before sending,
    because OpenAI rejects them rather than truncating.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_tokens: int = MAX_INPUT_TOKENS,
    ) -> None:
        _check_dimensions(model, dimensions)
        official = base_url is None
        url = (base_url or OPENAI_URL).rstrip("/")
        label = "OpenAI" if official else f"the OpenAI-compatible server at {display_url(url)}"
        if not api_key and official:
            raise ProviderAuthError(
                "OpenAI needs an API key: set RAGCHAT_OPENAI__API_KEY (or RAGCHAT_OPENAI__BASE_URL for a "
                "compatible server that needs none)",
                provider="openai",
            )
        self.model = model
        self.dimensions = dimensions
        self.tokenizer: Tokenizer = TiktokenTokenizer()
        self.max_tokens = max_tokens
        self._vendor = Vendor("openai", label, display_url(url), timeout, "RAGCHAT_OPENAI", secret=api_key or None)
        # A compatible server without auth still gets a bearer header: the SDK insists on a key.
        self._client = openai.OpenAI(
            api_key=api_key or "unused", base_url=url, timeout=timeout, max_retries=max_retries
        )
        self._lock = threading.Lock()
        known = dimensions or KNOWN_DIMENSIONS.get(model)
        self._space = SpaceId("openai", model, known) if known else None

    @property
    def space(self) -> SpaceId:
        """The embedding space; the first read may cost one probe request (then it is cached).
        Note that ``isinstance(embedder, Embedder)`` reads it too on Python 3.11."""
        if self._space is None:
            with self._lock:
                if self._space is None:
                    probe = self._request([_PROBE_TEXT])
                    self._space = SpaceId("openai", self.model, probe.shape[1])
        return self._space

    @space.setter
    def space(self, value: SpaceId) -> None:
        raise AttributeError("the space is given by the model; it cannot be set")

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` (in requests of at most 2048 inputs and 300k tokens); rows in input order."""
        dims = self.space.dimensions
        out = np.empty((len(texts), dims), dtype=np.float32)
        prepared = [self._fit(text) for text in texts]
        for start, stop in _batches(prepared, MAX_BATCH_INPUTS, MAX_BATCH_TOKENS):
            vectors = self._request([text for text, _ in prepared[start:stop]])
            if vectors.shape[1] != dims:
                raise ProviderError(
                    f"{self._vendor.label} returned {vectors.shape[1]}-dimensional vectors for '{self.model}', "
                    f"but its space is {self.space.label}",
                    provider="openai",
                )
            out[start:stop] = vectors
        return out

    def _fit(self, text: str) -> tuple[str, int]:
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

    def close(self) -> None:
        """Close the HTTP connections. The embedder must not be used afterwards."""
        self._client.close()

    def _request(self, texts: list[str]) -> Vectors:
        with openai_errors(self._vendor, self.model):
            # Asking for base64 explicitly gets the raw float32 bytes back, undecoded by the SDK.
            response = self._client.embeddings.create(
                model=self.model,
                input=texts,
                dimensions=self.dimensions or openai.omit,
                encoding_format="base64",
            )
        return self._read(response.data, len(texts))

    def _read(self, data: object, count: int) -> Vectors:
        try:
            rows = sorted(data, key=lambda item: item.index)  # type: ignore[call-overload]
            vectors = normalise(np.stack([_decode(row.embedding) for row in rows])) if rows else None
        except (TypeError, AttributeError, ValueError) as exc:  # missing fields, bad base64, ragged rows
            raise ProviderError(
                f"{self._vendor.label} sent embeddings ragchat cannot read ({type(exc).__name__}: {exc})",
                provider="openai",
            ) from exc
        if vectors is None or len(vectors) != count:
            raise ProviderError(
                f"{self._vendor.label} returned {len(rows)} embeddings for {count} inputs", provider="openai"
            )
        return vectors


def _decode(embedding: object) -> Vectors:
    # Some compatible servers ignore encoding_format and send a list of floats anyway.
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float32)
    return np.asarray(embedding, dtype=np.float32)


def _batches(prepared: Sequence[tuple[str, int]], max_inputs: int, max_tokens: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` runs of consecutive inputs within both per-request limits."""
    start, total = 0, 0
    for index, (_, tokens) in enumerate(prepared):
        if index > start and (index - start >= max_inputs or total + tokens > max_tokens):
            yield start, index
            start, total = index, 0
        total += tokens
    if start < len(prepared):
        yield start, len(prepared)


def _check_dimensions(model: str, dimensions: int | None) -> None:
    if dimensions is None or model not in KNOWN_DIMENSIONS:
        return
    if model not in SHORTENABLE:
        raise ValidationError("embedder.dimensions", f"{model} has a fixed size; leave dimensions unset")
    if dimensions > KNOWN_DIMENSIONS[model]:
        raise ValidationError("embedder.dimensions", f"{model} has at most {KNOWN_DIMENSIONS[model]} dimensions")
