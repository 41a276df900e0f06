"""Rerank endpoints on loopback, with their real request and response shapes.

- ``POST /v1/rerank`` as Cohere, Jina, vLLM and llama.cpp's server speak it: request
  ``{"model", "query", "documents": [str], "top_n"?, "return_documents"?}``, response
  ``{"id", "model", "usage", "results": [{"index", "relevance_score", "document"?}]}`` sorted by
  score, best first, cut to ``top_n``; an unknown model is a 404 ``{"error": ...}``.
- ``POST /rerank`` as Text Embeddings Inference speaks it: request ``{"query", "texts": [str],
  "raw_scores"?, "truncate"?, "return_text"?}``, response ``[{"index", "score", "text"?}]`` sorted
  by score; errors ``{"error", "error_type"}``.

The "model" scores a passage by the share of the query's words it contains (a toy cross-encoder
whose order a test can derive).
"""

from __future__ import annotations

import re

from tests.llm.wire.server import Received, Reply, WireServer

MODELS = ("bge-reranker-v2-m3", "jina-reranker-v2-base-multilingual")


def overlap(query: str, passage: str) -> float:
    words = set(re.findall(r"\w+", query.lower()))
    return len(words & set(re.findall(r"\w+", passage.lower()))) / max(len(words), 1)


class RerankWire(WireServer):
    """Answers like a rerank server holding :data:`MODELS` (cohere wire) or TEI's one model."""

    key: str | None = None  # when set, a request must carry it as a bearer token

    def answer(self, request: Received) -> Reply:
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            return Reply(401, {"message": "invalid api token"})
        if request.path == "/v1/rerank":
            return self._cohere(request.body)
        if request.path == "/rerank":
            return self._tei(request.body)
        return Reply(404, b"Not Found")

    def _cohere(self, body: dict) -> Reply:
        model = body.get("model")
        if model not in MODELS:
            return Reply(404, {"error": f"The model `{model}` does not exist."})
        scored = [(i, overlap(body["query"], d)) for i, d in enumerate(body["documents"])]
        scored.sort(key=lambda item: -item[1])
        top = scored[: body.get("top_n") or len(scored)]
        results = [{"index": i, "relevance_score": s, "document": {"text": body["documents"][i]}} for i, s in top]
        usage = {"total_tokens": sum(len(d.split()) for d in body["documents"])}
        return Reply(200, {"id": "rerank-1", "model": model, "usage": usage, "results": results})

    def _tei(self, body: dict) -> Reply:
        if not body.get("texts"):
            return Reply(422, {"error": "`texts` cannot be empty", "error_type": "Validation"})
        scored = sorted(((i, overlap(body["query"], t)) for i, t in enumerate(body["texts"])), key=lambda x: -x[1])
        return Reply(200, [{"index": i, "score": s} for i, s in scored])
