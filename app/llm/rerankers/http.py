"""A cross-encoder behind an HTTP ``rerank`` endpoint.

Two wire formats exist in practice:

- ``cohere``: ``POST {"model", "query", "documents": [str], "top_n"}`` answered by
  ``{"results": [{"index", "relevance_score"}, ...]}`` — Cohere's and Jina's APIs, vLLM's
  ``/v1/rerank``, llama.cpp's server (``--reranking``), Infinity, LiteLLM.
- ``tei``: Hugging Face Text Embeddings Inference's ``POST /rerank`` with
  ``{"query", "texts": [str], "truncate"}`` answered by a bare list ``[{"index", "score"}, ...]``.

Results may come in any order and, with ``top_n``, only partly: every passage must be scored, or
the answer is refused. Failures become :mod:`app.errors` ``ProviderError`` subclasses here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from app.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from app.llm.vendor_errors import display_url
from app.settings import RerankSettings

PROVIDER = "rerank"
_DETAIL = 200


class HttpReranker:
    """:class:`app.llm.base.Reranker` over HTTP. ``transport`` is for tests that need no socket."""

    def __init__(self, settings: RerankSettings, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if settings.url is None:
            raise ValueError("RerankSettings.url is not set")
        self._settings = settings
        self._url = settings.url
        self.name = f"http:{settings.model or display_url(settings.url)}"
        headers = {"content-type": "application/json"}
        if settings.api_key is not None:
            headers["authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        self._client = httpx.AsyncClient(headers=headers, timeout=settings.timeout, transport=transport)

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        try:
            response = await self._client.post(self._url, json=self._body(query, passages))
        except httpx.TimeoutException as exc:
            raise ProviderTimeoutError(
                f"the rerank endpoint at {self._shown} did not answer within {self._settings.timeout:g} s: "
                "try again, or raise RAGCHAT_RERANK__TIMEOUT",
                provider=PROVIDER,
                retryable=True,
            ) from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailableError(
                f"cannot reach the rerank endpoint at {self._shown} ({type(exc).__name__}): is it running? "
                "(RAGCHAT_RERANK__URL)",
                provider=PROVIDER,
                retryable=True,
            ) from exc
        if response.status_code != 200:
            raise self._refused(response)
        try:
            return self._scores(response.json(), len(passages))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ProviderError(
                f"the rerank endpoint at {self._shown} sent an answer ragchat cannot read ({_clip(str(exc))})",
                provider=PROVIDER,
            ) from exc

    async def aclose(self) -> None:
        await self._client.aclose()

    @property
    def _shown(self) -> str:
        return display_url(self._url)

    def _body(self, query: str, passages: Sequence[str]) -> dict[str, Any]:
        if self._settings.protocol == "tei":
            return {"query": query, "texts": list(passages), "truncate": True, "raw_scores": False}
        body: dict[str, Any] = {"query": query, "documents": list(passages), "top_n": len(passages)}
        if self._settings.model:
            body["model"] = self._settings.model
        return body

    def _scores(self, answer: object, count: int) -> list[float]:
        if self._settings.protocol == "tei":
            if not isinstance(answer, list):
                raise ValueError("expected a list of {index, score}")
            pairs = [(int(r["index"]), float(r["score"])) for r in answer]
        else:
            if not isinstance(answer, dict) or not isinstance(answer.get("results"), list):
                raise ValueError('expected {"results": [{index, relevance_score}, ...]}')
            pairs = [(int(r["index"]), float(r["relevance_score"])) for r in answer["results"]]
        scores: list[float | None] = [None] * count
        for index, score in pairs:
            if not 0 <= index < count or scores[index] is not None or not math.isfinite(score):
                raise ValueError(f"index {index} with score {score} does not fit {count} passages")
            scores[index] = score
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise ValueError(f"{len(missing)} of {count} passages were not scored")
        return [s for s in scores if s is not None]

    def _refused(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        text = response.text
        if self._settings.api_key is not None:
            text = text.replace(self._settings.api_key.get_secret_value(), "[redacted]")
        said = "" if status in (401, 403) else f": {_clip(text)}"  # a 401 may echo part of the key
        where = f"the rerank endpoint at {self._shown}"
        if status in (401, 403):
            return ProviderAuthError(
                f"{where} refused the key ({status}): check RAGCHAT_RERANK__API_KEY", provider=PROVIDER
            )
        if status == 404:
            return ModelNotFoundError(
                f"{where} answered 404 (wrong path or unknown model {self._settings.model or '-'}){said}",
                provider=PROVIDER,
            )
        if status == 429:
            return ProviderRateLimitError(f"{where} is rate limiting (429){said}", provider=PROVIDER, retryable=True)
        if status in (408, 504):
            return ProviderTimeoutError(f"{where} timed out ({status}){said}", provider=PROVIDER, retryable=True)
        if status >= 500:
            return ProviderUnavailableError(f"{where} failed ({status}){said}", provider=PROVIDER, retryable=True)
        return ProviderError(f"{where} refused the request ({status}){said}", provider=PROVIDER)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL else text[: _DETAIL - 1] + "…"
