"""One log line per chat turn, when it ends: its ids, model, answer mode, outcome and stage timings.

The question and the answer are not logged: they are the user's words and their documents' text,
stored with the message for whoever may read the conversation. The line carries the request id of
the request that started the turn (app/logs.py), also when the turn outlives it.
"""

from __future__ import annotations

import logging
import time

from app.ops import metrics
from app.services.chat.store import Turn
from app.services.chat.trace import TraceBuilder

log = logging.getLogger("ragchat.chat")

COMPLETE = "complete"
FAILED = "failed"
CANCELLED = "cancelled"
NOT_KEPT = "not_kept"  # written, but its session was deleted meanwhile


class TurnLog:
    """Made when a turn starts running; :meth:`end` logs its line once, whichever way it ended."""

    def __init__(self, turn: Turn, trace: TraceBuilder) -> None:
        self.turn = turn
        self.trace = trace
        self.started = time.perf_counter()
        # Until the turn says otherwise: a turn whose client left ends at a yield, with no word.
        self.outcome = CANCELLED
        self.error: str | None = None

    def stored(self, kept: bool) -> None:
        self.outcome = COMPLETE if kept else NOT_KEPT

    def failed(self, code: str) -> None:
        self.outcome, self.error = FAILED, code

    def end(self) -> None:
        ms = (time.perf_counter() - self.started) * 1000
        chat, timings, answer = self.turn.chat, self.trace.timings_ms, self.trace.answer
        mode = answer.mode if answer is not None else None
        fields = {
            "session_id": chat.id,
            "message_id": self.turn.message_id,
            "user_message_id": self.turn.user_message_id,
            "provider": chat.provider,
            "model": chat.model,
            "answer_mode": mode,
            "answer_mode_requested": chat.rag.answer_mode.value,
            "guard": answer.guard.decision if answer is not None and answer.guard is not None else None,
            "outcome": self.outcome,
            "error": self.error,
            "duration_ms": round(ms, 1),
            "timings_ms": timings,
            "degraded": [d.message for d in self.trace.degraded],
        }
        tokens = self.trace.tokens
        metrics.turn(
            mode=mode,
            provider=chat.provider,
            outcome=self.outcome,
            seconds=ms / 1000,
            stages_ms={str(stage): value for stage, value in timings.items()},
            tokens_in=tokens.prompt if tokens is not None else None,
            tokens_out=tokens.completion if tokens is not None else None,
        )
        self.trace.flush_spans()
        self.trace.span.end(
            self.outcome,
            mode,
            tokens.prompt if tokens is not None else None,
            tokens.completion if tokens is not None else None,
        )
        stages = ", ".join(f"{stage} {value:.1f}" for stage, value in timings.items()) or "none"
        log.info(
            "chat turn %s (session %s) %s%s in %.1f ms: %s/%s, %s answer; stages (ms): %s",
            self.turn.message_id,
            chat.id,
            self.outcome,
            f" ({self.error})" if self.error else "",
            ms,
            chat.provider,
            chat.model,
            mode or "no",
            stages,
            extra=fields,
        )
