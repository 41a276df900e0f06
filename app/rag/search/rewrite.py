"""An LLM rewrite of a follow-up into a standalone query.

Used when the session asks for it (``RewriteMode``): ON always, AUTO when the chat model declares it
can (``ModelCapabilities.query_rewriting``), OFF never. Bounded by a timeout; whatever goes wrong
(a provider error, a timeout, a reply that is no question) the caller falls back to the model-free
history-aware query (app/rag/search/conversation.py), and the trace says which way it went and why.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.errors import ProviderError, ProviderTimeoutError
from app.llm.base import ChatModel, Message, ModelCapabilities
from app.llm.complete import complete
from app.rag.prompting import template
from app.rag.sanitize import strip_control
from app.rag.search.conversation_settings import RewriteMode

MAX_TOKENS = 64
MAX_CHARS = 400


class RewriteOutcome(StrEnum):
    """What became of a rewrite."""

    USED = "used"  # the rewritten query was searched
    FAILED = "failed"  # the model failed or gave no usable question: the model-free query was searched
    TIMED_OUT = "timed_out"  # no rewrite within the timeout: the model-free query was searched
    SKIPPED = "skipped"  # not asked for (OFF, AUTO with an incapable model, or a first message)


@dataclass(frozen=True)
class Rewrite:
    outcome: RewriteOutcome
    query: str | None  # the rewritten query when USED
    reason: str
    ms: float = 0.0


def wanted(mode: RewriteMode, capabilities: ModelCapabilities, earlier: Sequence[str]) -> str | None:
    """Why a rewrite is skipped, or None when it should run."""
    if not earlier:
        return "no earlier turn: the message is searched as it is"
    if mode is RewriteMode.OFF:
        return "rewrite is off for this session"
    if mode is RewriteMode.AUTO and not capabilities.query_rewriting:
        return "the chat model does not declare reliable query rewriting (rewrite AUTO)"
    return None


def messages(message: str, earlier: Sequence[str]) -> list[Message]:
    lines = [f"Earlier question: {strip_control(t).strip()}" for t in earlier]
    lines.append(f"Last question: {strip_control(message).strip()}")
    return [Message("system", template("rewrite")), Message("user", "\n".join(lines))]


async def rewrite(model: ChatModel, message: str, earlier: Sequence[str], seconds: float) -> Rewrite:
    """Ask ``model`` for a standalone version of ``message``; never raises a provider's error."""
    started = time.perf_counter()

    def done(outcome: RewriteOutcome, query: str | None, reason: str) -> Rewrite:
        return Rewrite(outcome, query, reason, round((time.perf_counter() - started) * 1000, 3))

    try:
        reply = await complete(model, messages(message, earlier), max_tokens=MAX_TOKENS, seconds=seconds, stop=("\n",))
    except ProviderTimeoutError:
        return done(RewriteOutcome.TIMED_OUT, None, f"no rewrite within {seconds:g} s")
    except ProviderError as exc:
        return done(RewriteOutcome.FAILED, None, f"the model failed: {exc.message}")
    text = clean(reply)
    if text is None:
        return done(RewriteOutcome.FAILED, None, "the model's reply was not a usable question")
    return done(RewriteOutcome.USED, text, "rewritten by the chat model")


def clean(reply: str) -> str | None:
    """The first line of the reply without labels or quotes; None when nothing usable is left."""
    line = strip_control(reply).strip().splitlines()[0].strip() if reply.strip() else ""
    for label in ("Standalone question:", "Rewritten question:", "Question:", "Last question:"):
        if line.lower().startswith(label.lower()):
            line = line[len(label) :].strip()
    line = line.strip("\"'“”` ")
    if len(line) < 3 or len(line) > MAX_CHARS or not any(c.isalpha() for c in line):
        return None
    return line
