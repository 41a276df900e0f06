"""What the embedders behind an HTTP API (OpenAI, Ollama) share.

The space must be known before a vector is stored: when the settings or the model's name do not
give the dimensions, the first read of :attr:`RemoteEmbedder.space` embeds one probe text (and so
checks the model exists) and keeps the answer. Texts go out in requests within the vendor's limits
(:func:`batches`), and every answer is checked (count, equal lengths, the space's dimensions)
before its vectors are used.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from app.errors import ProviderError
from app.llm.base import SpaceId, Tokenizer, Vectors
from app.llm.embedders._vectors import normalise
from app.llm.vendor_errors import Vendor

PROBE_TEXT = "dimension probe"


class RemoteEmbedder(ABC):
    """An :class:`app.llm.base.Embedder` whose vectors come from a server, one request per batch.

    A subclass sends one request in :meth:`_request`; it may prepare each text (cut it, count its
    tokens) in :meth:`_prepare`, and sets ``_client`` (closed by :meth:`close`). A batch holds at
    most ``max_inputs`` texts and, when ``max_batch_tokens`` is set, that many tokens in all.
    """

    tokenizer: Tokenizer
    max_tokens: int
    _client: Any  # the vendor SDK's synchronous client

    def __init__(
        self,
        model: str,
        vendor: Vendor,
        *,
        space_model: str,
        dimensions: int | None,
        max_inputs: int,
        max_batch_tokens: int | None = None,
    ) -> None:
        self.model = model
        self._vendor = vendor
        self._space_model = space_model  # the model as the space names it
        self._max_inputs = max_inputs
        self._max_batch_tokens = max_batch_tokens
        self._lock = threading.Lock()
        self._space = SpaceId(vendor.provider, space_model, dimensions) if dimensions else None

    @property
    def space(self) -> SpaceId:
        """The embedding space; the first read may cost one probe request (then it is cached).
        Note that ``isinstance(embedder, Embedder)`` reads it too on Python 3.11."""
        if self._space is None:
            with self._lock:
                if self._space is None:
                    probe = self._request([PROBE_TEXT])
                    self._space = SpaceId(self._vendor.provider, self._space_model, probe.shape[1])
        return self._space

    @space.setter
    def space(self, value: SpaceId) -> None:
        raise AttributeError("the space is given by the model; it cannot be set")

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in requests within the vendor's limits; rows in input order, each of unit length."""
        dims = self.space.dimensions
        out = np.empty((len(texts), dims), dtype=np.float32)
        prepared = [self._prepare(text) for text in texts]
        for start, stop in batches(prepared, self._max_inputs, self._max_batch_tokens):
            vectors = self._request([text for text, _ in prepared[start:stop]])
            if vectors.shape[1] != dims:
                raise ProviderError(
                    f"{self._vendor.label} returned {vectors.shape[1]}-dimensional vectors for '{self.model}', "
                    f"but its space is {self.space.label}",
                    provider=self._vendor.provider,
                )
            out[start:stop] = vectors
        return out

    def close(self) -> None:
        """Close the HTTP connections. The embedder must not be used afterwards."""
        self._client.close()

    def _prepare(self, text: str) -> tuple[str, int]:
        """The text as sent, and its token count (0 when no batch limit counts tokens)."""
        return text, 0

    @abstractmethod
    def _request(self, texts: list[str]) -> Vectors:
        """One request: a unit vector per text, in order (:meth:`_rows` checks the answer)."""

    def _rows(self, rows: Sequence[Sequence[float] | Vectors], count: int) -> Vectors:
        """The answer's rows as one array of unit vectors; ProviderError unless one row per input,
        all of one length."""
        if len(rows) != count:
            raise ProviderError(
                f"{self._vendor.label} returned {len(rows)} embeddings for {count} inputs",
                provider=self._vendor.provider,
            )
        try:
            return normalise(np.stack([np.asarray(row, dtype=np.float32) for row in rows]))
        except ValueError as exc:
            raise ProviderError(
                f"{self._vendor.label} returned vectors of different lengths", provider=self._vendor.provider
            ) from exc


def batches(
    prepared: Sequence[tuple[str, int]], max_inputs: int, max_tokens: int | None = None
) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` runs of consecutive inputs within both per-request limits (``max_tokens``
    summed over a run's token counts; None: no limit)."""
    start, total = 0, 0
    for index, (_, tokens) in enumerate(prepared):
        too_many = index - start >= max_inputs or (max_tokens is not None and total + tokens > max_tokens)
        if index > start and too_many:
            yield start, index
            start, total = index, 0
        total += tokens
    if start < len(prepared):
        yield start, len(prepared)
