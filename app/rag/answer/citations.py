"""Citations: parse the model's ``[n]`` markers, drop the invalid ones, attribute when there are none.

Small models often write no markers at all. Then each answer sentence is matched to the source that
best supports it — cosine similarity of their embeddings blended with lexical overlap — and a marker
is added only where that support clears ``ATTRIBUTION_BAR``. Such citations are stored as
``attributed``, never passed off as the model's own. Sentences and content words are the shared
ones of :mod:`app.rag.answer.sentences` (so "0.31 kg" is not cut at its decimal point).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.llm.base import Vectors
from app.rag.answer import sentences

MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
ATTRIBUTION_BAR = 0.45
COSINE_WEIGHT = 0.6


@dataclass(frozen=True)
class Parsed:
    text: str  # the answer with invalid markers removed
    used: list[int]  # valid source numbers, in order of first use
    invalid: int  # markers removed


def parse(answer: str, source_count: int) -> Parsed:
    used: list[int] = []
    invalid = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal invalid
        numbers = [int(n) for n in re.split(r"\s*,\s*", match.group(1))]
        valid = [n for n in numbers if 1 <= n <= source_count]
        invalid += len(numbers) - len(valid)
        for n in valid:
            if n not in used:
                used.append(n)
        return "".join(f"[{n}]" for n in valid)

    text = MARKER.sub(replace, answer)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text) if invalid else text
    return Parsed(text, used, invalid)


def _words(text: str) -> set[str]:
    return set(sentences.terms(text))


def attribute(
    answer: str,
    sources: Sequence[str],
    embed: Callable[[list[str]], Vectors] | None,
) -> Parsed:
    """Add markers to sentences a source supports. ``sources[i]`` is source number i + 1."""
    units = [u for u in sentences.split(answer) if u.kind in sentences.PROSE and _words(u.text)]
    if not sources or not units:
        return Parsed(answer, [], 0)
    cosine = np.zeros((len(units), len(sources)))
    if embed is not None:
        vectors = embed([u.normalised for u in units] + list(sources))
        cosine = np.clip(vectors[: len(units)] @ vectors[len(units) :].T, 0.0, 1.0)
    source_words = [_words(s) for s in sources]
    weight = COSINE_WEIGHT if embed is not None else 0.0
    used: list[int] = []
    out: list[str] = []
    at = 0
    for i, unit in enumerate(units):
        words = _words(unit.text)
        overlap = np.array([len(words & sw) / len(words) for sw in source_words])
        support = weight * cosine[i] + (1 - weight) * overlap
        best = int(np.argmax(support))
        if support[best] >= ATTRIBUTION_BAR:
            number = best + 1
            if number not in used:
                used.append(number)
            out.append(f"{answer[at : unit.end]} [{number}]")
            at = unit.end
    out.append(answer[at:])
    return Parsed("".join(out), used, 0)
