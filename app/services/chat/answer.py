"""Writing a turn's answer once retrieval is done: quoted from the sources (extractive), or generated
by the chat model and then checked by the answer guard — with the trace entry that says which ran,
why, and what the guard decided. Called by :mod:`app.services.chat.service` from worker threads.

A generated answer the guard finds degenerate (a loop, only echoed prompt, only citation talk, mostly
unsupported) is never stored as if it were fine: it is replaced by the extractive answer from the
same sources, or — when there are none to quote — stored as failed (:class:`UnusableAnswerError`),
which also keeps it out of the history sent to the model on the next turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.db.enums import CitationKind
from app.errors import ProviderError
from app.llm.base import Embedder, Vectors
from app.rag.answer import citations, extractive, guard
from app.rag.answer.mode import ModeChoice
from app.rag.search import query_cache
from app.services.chat.events import SourceRef
from app.services.chat.trace_model import TraceAnswer, TraceGuard, TraceSentence

log = logging.getLogger(__name__)

RAG_OFF = (
    "Extractive answers quote the knowledge base, and retrieval is off for this chat session: "
    "turn retrieval on, or choose the generative or auto answer mode."
)
ORIGINAL_MAX = 4000  # the model's own text kept in the trace when the stored answer differs


@dataclass(frozen=True)
class Written:
    """An answer ready to store: its text and citations ``(source, kind)``."""

    content: str
    cited: list[tuple[SourceRef, CitationKind]]
    no_answer: bool = False


def _embedding(embedder: Callable[[], Embedder]) -> Callable[[list[str]], Vectors] | None:
    try:
        model = embedder()
    except ProviderError as exc:
        log.warning("answer checks without embeddings: %s", exc.message)
        return None
    return cached_embed(model)


def cached_embed(model: Embedder) -> Callable[[list[str]], Vectors]:
    """``model.embed`` through the embedder's text cache (app/rag/search/query_cache.py): the guard, the
    extractive answer and attribution embed the sources' sentences, and the same chunks come back
    turn after turn in a conversation (with the local embedder, ~220-280 ms a turn re-embedded)."""
    return lambda texts: query_cache.embed(model, texts)


def extract(
    question: str,
    sources: list[SourceRef],
    embedder: Callable[[], Embedder],
    earlier: Sequence[str] = (),
    *,
    continues: bool | None = None,
) -> extractive.ExtractiveAnswer:
    """The extractive answer (``earlier``: the chat's earlier user turns, oldest first;
    ``continues``: whether retrieval read the question with them, None when it did not decide); by
    words and rank alone when the embedder fails."""
    embed = _embedding(embedder)
    try:
        return extractive.compose(question, sources, embed, earlier=earlier, continues=continues)
    except ProviderError as exc:
        log.warning("extractive answer without embeddings: %s", exc.message)
        return extractive.compose(question, sources, None, earlier=earlier, continues=continues)


def review(answer_guard: guard.AnswerGuard, embedder: Callable[[], Embedder]) -> guard.Verdict:
    """The guard's verdict; support by words alone when the embedder fails."""
    embed = _embedding(embedder)
    try:
        return answer_guard.review(embed)
    except ProviderError as exc:
        log.warning("answer support checked without embeddings: %s", exc.message)
        return answer_guard.review(None)


def quoted(answer: extractive.ExtractiveAnswer, sources: list[SourceRef], cite: bool) -> Written:
    """Store form of an extractive answer: one citation per quoted sentence, located at its span
    and carrying the sentence as its snippet; without markers when the session does not cite."""
    if not cite:
        text = re.sub(r"[ \t]*" + citations.MARKER.pattern, "", answer.text)
        return Written(text, [], answer.no_answer)
    by_number = {s.number: s for s in sources}
    cited = [
        (replace(by_number[e.number], location=e.location, text=e.text), CitationKind.EXTRACTED)
        for e in answer.evidence
        if e.number in by_number
    ]
    return Written(answer.text, cited, answer.no_answer)


def trace_entry(
    choice: ModeChoice,
    *,
    verdict: guard.Verdict | None = None,
    decision: guard.Decision | None = None,
    original: str | None = None,
    sentences: int | None = None,
    extracted: extractive.ExtractiveAnswer | None = None,
) -> TraceAnswer:
    """The trace's ``answer`` entry (app.services.chat.trace_model.TraceAnswer)."""
    return TraceAnswer(
        requested_mode=choice.requested,
        mode=choice.used,
        reason=choice.reason,
        sentences=sentences if extracted is None else len(extracted.evidence),
        no_answer=extracted is not None and extracted.no_answer,
        bar=None if extracted is None else extracted.bar,
        considered=[]
        if extracted is None
        else [
            TraceSentence(source=c.number, text=c.text, score=c.score, quoted=c.quoted, reason=c.reason)
            for c in extracted.considered
        ],
        guard=None
        if verdict is None
        else TraceGuard(
            decision=decision or verdict.decision,
            reasons=[r.message for r in verdict.reasons],
            codes=[r.code for r in verdict.reasons],
            unsupported_sentences=len(verdict.unsupported),
            echo_removed=verdict.echoes_removed,
            markers_dropped=verdict.markers_dropped,
            stopped_early=any(r.code == "loop" for r in verdict.reasons),
            original=original[:ORIGINAL_MAX] if original is not None else None,
        ),
    )
