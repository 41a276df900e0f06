"""The retrieval trace stored with every answer: why the answer is what it is.

Every candidate considered with its scores and fate (kept, below threshold, beyond top_k, over
budget), the settings used, stage timings in ms, token counts, provider/model, degradations.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict

from app.llm.base import Usage
from app.rag.budget import BudgetReport
from app.rag.retrieval import RetrievalResult
from app.services.chat_events import SourceRef
from app.services.chat_store import Turn
from app.settings import Settings

TRACE_VERSION = 1


class TraceBuilder:
    def __init__(self, turn: Turn, settings: Settings) -> None:
        session = turn.session
        self.degraded: list[str] = []
        self._timings: dict[str, float] = {}
        self._retrieval: RetrievalResult | None = None
        self._data: dict[str, object] = {
            "version": TRACE_VERSION,
            "query": turn.question,
            "provider": session.provider,
            "model": session.model,
            "settings": {
                "enableRag": session.enable_rag,
                "topK": session.top_k,
                "threshold": session.threshold,
                "includeCitations": session.include_citations,
                "mode": settings.rag.mode,
            },
            "noContext": False,
            "historyTurns": len(turn.history),
        }

    def degrade(self, reason: str) -> None:
        self.degraded.append(reason)

    def timing(self, stage: str, ms: float) -> None:
        self._timings[stage] = round(ms, 3)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timing(name, (time.perf_counter() - start) * 1000)

    def set_retrieval(self, result: RetrievalResult) -> None:
        self._retrieval = result
        self.degraded.extend(result.degraded)
        for stage, ms in result.timings_ms.items():
            self.timing(f"retrieval_{stage}", ms)
        self._data["embeddingSpace"] = result.space
        self._data["effectiveMode"] = result.mode

    def set_budget(self, report: BudgetReport) -> None:
        self._data["tokens"] = {
            "prompt": report.prompt_tokens,
            "context": report.context_tokens,
            "completion": 0,
            "answerReserve": report.answer_reserve,
            "contextWindow": report.context_window,
            "tokenizer": report.tokenizer,
            "exact": report.exact,
        }
        self._data["budget"] = {
            "chunksOverBudget": report.chunks_over_budget,
            "historyDropped": report.history_dropped,
        }

    def set_sources(self, sources: list[SourceRef], no_context: bool) -> None:
        self._data["noContext"] = no_context
        self._data["sourceChunkIds"] = [s.chunk_id for s in sources]

    def set_usage(self, usage: Usage) -> None:
        tokens = self._data.setdefault("tokens", {})
        assert isinstance(tokens, dict)
        tokens["prompt"] = usage.prompt_tokens
        tokens["completion"] = usage.completion_tokens

    def set_answer(self, answer: dict[str, object]) -> None:
        """How the answer was written: mode requested and used, why, and the guard's verdict
        (built by app.services.chat_answer)."""
        self._data["answer"] = answer

    def set_citations(self, valid: int, invalid: int, *, attributed: bool) -> None:
        self._data["citations"] = {"valid": valid, "invalidRemoved": invalid, "attributed": attributed}

    def build(self) -> dict[str, object]:
        data = dict(self._data)
        data["degraded"] = list(self.degraded)
        data["timingsMs"] = dict(self._timings)
        if self._retrieval is not None:
            data["candidates"] = [
                {
                    "chunkId": c.chunk_id,
                    "documentId": c.document_id,
                    "documentName": c.document_name,
                    "score": c.score,
                    "vectorRank": c.vector_rank,
                    "keywordRank": c.keyword_rank,
                    "fusedRank": c.fused_rank,
                    "fusedScore": c.fused_score,
                    "fate": c.fate,
                    "location": asdict(c.location),
                }
                for c in self._retrieval.candidates
            ]
        else:
            data["candidates"] = []
        return data
