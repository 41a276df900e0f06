"""Multi-query expansion: the chat model proposes a few alternative phrasings of the question,
each searched beside it (app/rag/search/retrieval.py fuses them, the question weighted highest).

Bounded: one call, ``count`` lines of at most :data:`MAX_CHARS` characters, a timeout. Whatever
goes wrong — the model fails, times out, or says nothing usable — the question is searched alone,
and :class:`Expansion` says why.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field

from app.errors import ProviderError
from app.llm.base import ChatModel, Message
from app.llm.complete import complete
from app.rag.prompting import template
from app.rag.sanitize import strip_control

log = logging.getLogger(__name__)

MAX_CHARS = 300  # a phrasing longer than this is an answer or a ramble, not a query
_LEADER = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.):]|\w\))\s*")


@dataclass(frozen=True)
class Expansion:
    phrasings: list[str] = field(default_factory=list)
    failed: str | None = None  # why there are none
    ms: float = 0.0


async def expand(model: ChatModel, question: str, *, count: int, seconds: float) -> Expansion:
    """Up to ``count`` alternative phrasings of ``question``; never raises a provider's error."""
    started = time.perf_counter()
    prompt = template("expand").format(count=count, question=strip_control(question))
    try:
        reply = await complete(model, [Message("user", prompt)], max_tokens=48 * count, seconds=seconds)
    except ProviderError as exc:
        log.warning("query expansion failed, searching the question alone: %s", exc)
        return Expansion(failed=exc.message, ms=_since(started))
    phrasings = parse(reply, question, count)
    if not phrasings:
        return Expansion(failed=f"the model proposed no usable phrasing (it said: {reply[:120]!r})", ms=_since(started))
    return Expansion(phrasings, ms=_since(started))


def parse(reply: str, question: str, count: int) -> list[str]:
    """The reply's lines as phrasings: list markers and quotes removed; empty, overlong, repeated
    lines and the question itself dropped; the first ``count``."""
    seen = {_key(question)}
    found: list[str] = []
    for line in strip_control(reply).splitlines():
        text = _LEADER.sub("", line).strip().strip("\"'“”").strip()
        if not text or len(text) > MAX_CHARS or _key(text) in seen or text.endswith(":"):
            continue
        seen.add(_key(text))
        found.append(text)
        if len(found) == count:
            break
    return found


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
