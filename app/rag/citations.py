"""Citations: parse the model's ``[n]`` markers, drop the invalid ones, attribute when there are none.

Small models often write no markers at all. Then each answer sentence is matched to the source that
best supports it — cosine similarity of their embeddings blended with lexical overlap — and a marker
is added only where that support clears ``ATTRIBUTION_BAR``. Such citations are stored as
``attributed``, never passed off as the model's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.llm.base import Vectors

MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*[\"')\]]*\s*|\n+")
_WORD = re.compile(r"[a-z0-9]{3,}")
_STOP = frozenset(
    """the and for are but not you all any can had her was one our out has his how its may new now old see
    two who did get let put say she too use that with have this will your from they been were said each
    which their there what about would these other into more some than then them also only over such""".split()
)
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
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def attribute(
    answer: str,
    sources: Sequence[str],
    embed: Callable[[list[str]], Vectors] | None,
) -> Parsed:
    """Add markers to sentences a source supports. ``sources[i]`` is source number i + 1."""
    sentences = [m.group(0) for m in _SENTENCE.finditer(answer)]
    if not sources or not sentences:
        return Parsed(answer, [], 0)
    content = [i for i, s in enumerate(sentences) if _words(s)]
    cosine = np.zeros((len(sentences), len(sources)))
    if embed is not None and content:
        vectors = embed([sentences[i].strip() for i in content] + list(sources))
        sims = vectors[: len(content)] @ vectors[len(content) :].T
        cosine[content] = np.clip(sims, 0.0, 1.0)
    source_words = [_words(s) for s in sources]
    used: list[int] = []
    out: list[str] = []
    for i, sentence in enumerate(sentences):
        words = _words(sentence)
        if not words:
            out.append(sentence)
            continue
        overlap = np.array([len(words & sw) / len(words) for sw in source_words])
        weight = COSINE_WEIGHT if embed is not None else 0.0
        support = weight * cosine[i] + (1 - weight) * overlap
        best = int(np.argmax(support))
        if support[best] >= ATTRIBUTION_BAR:
            number = best + 1
            if number not in used:
                used.append(number)
            stripped = sentence.rstrip()
            out.append(f"{stripped} [{number}]{sentence[len(stripped) :]}")
        else:
            out.append(sentence)
    return Parsed("".join(out), used, 0)
