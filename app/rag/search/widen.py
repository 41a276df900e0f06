"""Evaluate and widen: is what a retrieval pass found good enough, and if not,
what does the next pass search.

The evaluator is the chat model as a judge when it declares it can (``retrieval_judging``), else a
model-free heuristic: the best source's score and how many of the question's key terms (content
words, stemmed: app/rag/answer/sentences.py) the sources cover. A widened pass takes more candidates from
each ranking, lowers the threshold by a step (never below a floor under the session's), and brings
in the neighbouring chunks of its strongest hits; alternative phrasings (app/rag/search/expansion.py) would join through
``Widening.queries`` (a hook: none are made here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from app.errors import ProviderError
from app.llm.base import ChatModel, Message
from app.llm.complete import complete
from app.rag.answer import sentences
from app.rag.index import vector_store
from app.rag.prompting import Source, format_source, template
from app.rag.search.retrieval import RetrievalParams, RetrievalResult

ADEQUATE_SCORE = 0.45  # the best source's cosine at or above which a pass can be adequate
ADEQUATE_COVERAGE = 0.6  # share of the question's key terms the sources must hold
THRESHOLD_STEP = 0.05  # each widened pass lowers the threshold by this much ...
THRESHOLD_FLOOR = 0.1  # ... but never more than this below the session's
IMPROVEMENT = 0.01  # a pass whose value gains less than this is no improvement
NEIGHBOURS = 2  # the strongest hits whose neighbouring chunks a widened pass brings in


class Judge(StrEnum):
    """Who decided whether a pass was adequate."""

    HEURISTIC = "heuristic"
    MODEL = "model"


class Decision(StrEnum):
    """What the loop did after a pass."""

    ADEQUATE = "adequate"  # good enough: answer with it
    WIDEN = "widen"  # not good enough: search again, wider
    BUDGET = "budget"  # not good enough, but the session's quality allows no more passes
    NO_IMPROVEMENT = "no_improvement"  # a wider pass found nothing better: answer with the best


@dataclass(frozen=True)
class Verdict:
    adequate: bool
    value: float  # in [0, 1], higher is better: what "improvement" compares
    reason: str
    judge: Judge


def key_terms(question: str) -> set[str]:
    return set(sentences.terms(question))


def heuristic(question: str, result: RetrievalResult) -> Verdict:
    """The model-free verdict on a pass for ``question`` (the text searched)."""
    kept = result.kept
    if not kept:
        return Verdict(False, 0.0, "no source passed the threshold", Judge.HEURISTIC)
    best = max((c.score for c in kept if c.score is not None), default=0.0)
    wanted = key_terms(question)
    held = set().union(*(sentences.terms(c.text) for c in kept))
    covered = len(wanted & held) / len(wanted) if wanted else 1.0
    adequate = best >= ADEQUATE_SCORE and covered >= ADEQUATE_COVERAGE
    value = round(0.5 * max(best, 0.0) + 0.5 * covered, 4)
    reason = (
        f"best score {best:.2f} (needs {ADEQUATE_SCORE:.2f}), "
        f"key terms covered {covered:.0%} (needs {ADEQUATE_COVERAGE:.0%})"
    )
    return Verdict(adequate, value, reason, Judge.HEURISTIC)


async def judged(
    model: ChatModel, question: str, result: RetrievalResult, fallback: Verdict, seconds: float
) -> Verdict:
    """The chat model's verdict (YES/NO: do the sources answer the question?), keeping the
    heuristic's value for comparing passes; the heuristic's verdict when the model fails."""
    kept = result.kept
    if not kept:
        return fallback
    sources = "\n\n".join(format_source(Source(i, c.document_name, "", c.text)) for i, c in enumerate(kept, start=1))
    messages = [Message("system", template("adequacy_judge")), Message("user", f"{sources}\n\nQuestion: {question}")]
    try:
        reply = (await complete(model, messages, max_tokens=4, seconds=seconds)).strip().upper()
    except ProviderError as exc:  # a timeout too (ProviderTimeoutError)
        reason = f"{fallback.reason} (the model's judgement failed: {exc.message})"
        return replace(fallback, reason=reason)
    if reply.startswith("YES"):
        return Verdict(True, max(fallback.value, 0.5), "the chat model judged the sources adequate", Judge.MODEL)
    if reply.startswith("NO"):
        return Verdict(False, fallback.value, "the chat model judged the sources inadequate", Judge.MODEL)
    return replace(fallback, reason=f"{fallback.reason} (the model's judgement was neither YES nor NO)")


@dataclass(frozen=True)
class Widening:
    """What pass ``number`` (1-based) searches beyond the first pass's query and parameters."""

    params: RetrievalParams
    queries: tuple[str, ...] = ()  # extra queries (multi-query expansion joins here)


def widen(first: RetrievalParams, number: int, session_threshold: float, extra: Sequence[str] = ()) -> Widening:
    """Pass ``number``'s parameters: the first pass's for 1; more candidates, a lower threshold and
    the neighbours of the strongest hits after that."""
    if number <= 1:
        return Widening(first)
    step = number - 1
    floor = max(0.0, session_threshold - THRESHOLD_FLOOR)
    params = replace(
        first,
        candidates=min(first.candidates * 2**step, vector_store.MAX_K),
        threshold=max(floor, first.threshold - THRESHOLD_STEP * step),
        neighbours=NEIGHBOURS,
    )
    return Widening(params, tuple(extra))


def decide(verdict: Verdict, number: int, budget: int, best_before: float | None) -> Decision:
    """After pass ``number`` of at most ``budget``: stop (and why) or widen."""
    if verdict.adequate:
        return Decision.ADEQUATE
    if best_before is not None and verdict.value < best_before + IMPROVEMENT:
        return Decision.NO_IMPROVEMENT
    if number >= budget:
        return Decision.BUDGET
    return Decision.WIDEN
