"""The chat model as a reranker (:class:`app.llm.base.Reranker`): one call rates every passage
0-3, within a bounded budget — at most ``candidates`` passages, each cut to ``chars`` characters,
4 answer tokens per passage, and ``timeout`` seconds. A passage the model did not rate scores -1,
below any rated one; a reply that rates none is an error (the caller keeps the fused order)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.errors import ProviderError
from app.llm.base import ChatModel, Message
from app.llm.complete import complete
from app.rag.prompting import template
from app.rag.sanitize import strip_control

_RATING = re.compile(r"\[?\s*(\d{1,3})\s*[\]\):.-]?\s*(?:rating\s*[:=]?\s*)?([0-3])\b", re.IGNORECASE)
UNRATED = -1.0


class ChatJudge:
    """Rates passages with a chat model; the first ``candidates`` passages only (the rest: UNRATED)."""

    def __init__(self, model: ChatModel, *, candidates: int, chars: int, timeout: float) -> None:
        self._model = model
        self._candidates = candidates
        self._chars = chars
        self._timeout = timeout
        self.name = f"judge:{model.provider}/{model.model}"

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        judged = list(passages[: self._candidates])
        if not judged:
            return []
        listed = "\n\n".join(f"[{i}] {_cut(strip_control(p), self._chars)}" for i, p in enumerate(judged, start=1))
        prompt = template("rerank_judge").format(question=strip_control(query), passages=listed)
        reply = await complete(
            self._model, [Message("user", prompt)], max_tokens=6 * len(judged) + 8, seconds=self._timeout
        )
        ratings = parse_ratings(reply, len(judged))
        if not ratings:
            raise ProviderError(
                f"{self.name} rated no passage (it said: {reply[:120]!r})", provider=self._model.provider
            )
        return [float(ratings.get(i, UNRATED)) for i in range(len(judged))] + [UNRATED] * (len(passages) - len(judged))


def parse_ratings(reply: str, count: int) -> dict[int, int]:
    """``{passage index (0-based): rating}`` from lines like ``[2] 3`` or ``2: 1``; the first rating
    of a passage counts, numbers outside 1..count are ignored."""
    found: dict[int, int] = {}
    for line in reply.splitlines():
        match = _RATING.search(line)
        if match and 1 <= int(match.group(1)) <= count:
            found.setdefault(int(match.group(1)) - 1, int(match.group(2)))
    return found


def _cut(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"
