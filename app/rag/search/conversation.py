"""The question searched is the message in its conversation.

A follow-up such as "and how many parking spaces does it have?" names nothing; the earlier user
turns do. Always on, needing no model: the query's vector is the normalised weighted sum of the
current message's vector and the earlier user turns' (each earlier turn ``decay`` times the weight
of the one after it, so the current message weighs most), and its keyword terms are the union of
theirs with the same weights. With no earlier turns it is exactly the plain query. The weights are
tuned on benchmarks/conversations (docs/BENCHMARKS.md, "Conversations").
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.llm.base import Embedder, Vectors
from app.rag.index import keyword_index
from app.rag.search import query_cache


@dataclass(frozen=True)
class HistoryWeights:
    """How much the earlier user turns count."""

    turns: int = 2  # earlier user turns taken into account (the most recent ones)
    decay: float = 0.8  # an earlier turn's weight relative to the turn after it (vector)
    term_decay: float = 0.25  # the same for keyword terms: an earlier turn's words must not outvote the message's

    @property
    def off(self) -> bool:
        return self.turns <= 0 or self.decay <= 0


DEFAULT_WEIGHTS = HistoryWeights()


@dataclass(frozen=True)
class Query:
    """What one retrieval searches: the text shown, its vector and its weighted keyword terms."""

    text: str  # the current message (or the rewritten, standalone one)
    earlier: tuple[str, ...]  # the earlier user turns taken into account, oldest first
    vector: Vectors
    terms: dict[int, float]

    @property
    def key(self) -> tuple[object, ...]:
        """What identifies the query for the retrieval cache."""
        return (self.text, self.earlier)


def build(
    embedder: Embedder,
    message: str,
    earlier: Sequence[str] = (),
    weights: HistoryWeights = DEFAULT_WEIGHTS,
    *,
    cache_hits: list[bool] | None = None,
) -> Query:
    """The history-aware query for ``message`` after the user turns ``earlier`` (oldest first).
    Embeddings come from the query-embedding cache when they can; each lookup's hit or miss is
    appended to ``cache_hits``."""
    taken = () if weights.off else tuple(t for t in earlier if t.strip())[-weights.turns :]
    texts = [message, *reversed(taken)]  # current first, then back in time
    vectors = query_cache.embed(embedder, texts, cache_hits)
    combined = np.zeros(vectors.shape[1], dtype=np.float64)
    terms: dict[int, float] = {}
    tokenizer = keyword_index.tokenizer()
    for age, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        combined += (weights.decay**age) * vector.astype(np.float64)
        term_weight = weights.term_decay**age
        if term_weight <= 0:
            continue
        for term, count in tokenizer.question(text).items():
            terms[term] = max(terms.get(term, 0.0), count * term_weight)
    norm = float(np.linalg.norm(combined))
    vector = (combined / norm if norm > 0 else combined).astype(np.float32)
    return Query(message, taken, vector, terms)


# A message that opens with a connective ("and ...", "what about ...") or is short and points back
# with a pronoun ("does that apply to str?") continues the conversation whatever it finds alone.
_CONNECTIVE = re.compile(r"^\W*(and|but|or|also|so|then|what about|how about|what if)\b", re.IGNORECASE)
_POINTER = re.compile(r"\b(it|its|they|them|their|that|this|those|these|there|he|she|his|her)\b", re.IGNORECASE)
SHORT_WORDS = 10


def points_back(message: str) -> bool:
    """Whether ``message`` has a pronoun that may point back, at any length ("how can we use it in a
    monorepo?"); in a long message it often points inside the message itself, so this alone does
    not make a follow-up (app/services/chat/turn_search.py weighs what the earlier turns add)."""
    return bool(_POINTER.search(message))


def leans_back(message: str) -> bool:
    """Whether ``message`` reads as a continuation of the conversation (English cues)."""
    return bool(_CONNECTIVE.match(message)) or (len(message.split()) <= SHORT_WORDS and bool(_POINTER.search(message)))


# How much more of the message's own words the message's first passage must hold than the blended
# query's first passage before the earlier turns count as outvoting them (a share of the words' idf).
# Any margin from 0.01 to 0.06 measured the same (retrieval alone) on docs-qa and fresh-qa, 0.07 to
# 0.12 one docs-qa topic change fewer (docs/BENCHMARKS.md, "Topic changes").
OUTVOTED_MARGIN = 0.05


def own_words(idf: Mapping[int, float], passage: str) -> float:
    """The share of a message's words that ``passage`` holds, each word weighted by its ``idf`` in
    the knowledge base (the message's terms that no passage has are not in ``idf``): a rare name
    the message asks about counts for more than "what" or "should"."""
    return held_share(idf, set(keyword_index.tokenizer().terms(passage)))


def held_share(weights: Mapping[int, float], held: Container[int]) -> float:
    """The share of ``weights`` (term id -> weight) whose terms are ``held``; 0 when they weigh
    nothing. A passage's own words (:func:`own_words`) and a document's (app/rag/search/evidence.py)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(weight for term, weight in weights.items() if term in held) / total


def outvoted(own: float, blended: float) -> bool:
    """Whether the earlier turns outvoted a message's own words: the blended query's first passage
    holds less of them (``blended``, an :func:`own_words` share) than the first passage of the
    message searched alone (``own``) by at least ``OUTVOTED_MARGIN``. A follow-up that names little
    ("which form is needed for a second week?") has nothing of its own that the conversation's
    passage lacks; a new question with names of its own ("who prints badges for guests?") loses them
    to the earlier topic's passage, which shares only its commoner words."""
    return own - blended >= OUTVOTED_MARGIN


def user_turns(history: Sequence[object]) -> list[str]:
    """The user messages of a turn's history (``Message``s, oldest first; not the data it carries)."""
    return [
        m.content  # type: ignore[attr-defined]
        for m in history
        if getattr(m, "role", None) == "user" and not getattr(m, "data", False)
    ]
