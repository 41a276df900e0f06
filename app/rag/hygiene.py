"""Context hygiene (issue 15, item 5): what a chat turn's sources should not waste the context on.

- Near-duplicates: a chunk whose words are nearly all those of a better-ranked candidate (the same
  paragraph in two uploads, a template repeated across documents) is dropped before the cut to
  top_k, so it does not take the place of a different source.
- A per-document cap: at most ``per_document`` sources from one document, so one long document
  cannot fill the whole context.
- Adjacent chunks of one document that are both kept are merged into one source (their overlap
  once), so the model reads one passage rather than two halves with a repeated seam.

Each decision is a candidate's fate (app/rag/retrieval.py), so the trace shows it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.rag.retrieval import Candidate

_WORD = re.compile(r"\w+")
NEAR_DUPLICATE = 0.9  # Jaccard similarity of word 3-gram sets at which two chunks are one
COMPARED = 200  # only the best-ranked candidates are compared (n^2 on small sets)


def _shingles(text: str) -> frozenset[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < 3:
        return frozenset([tuple(words)])
    return frozenset(zip(words, words[1:], words[2:], strict=False))


def near_duplicates(candidates: Sequence[Candidate]) -> set[int]:
    """Chunk ids of candidates nearly identical to a better-ranked one (``candidates`` best first)."""
    seen: list[frozenset[tuple[str, ...]]] = []
    exact: set[str] = set()
    found: set[int] = set()
    for candidate in candidates[:COMPARED]:
        normal = " ".join(_WORD.findall(candidate.text.lower()))
        if normal in exact:
            found.add(candidate.chunk_id)
            continue
        shingles = _shingles(candidate.text)
        if any(len(shingles & s) >= NEAR_DUPLICATE * len(shingles | s) for s in seen):
            found.add(candidate.chunk_id)
            continue
        exact.add(normal)
        seen.append(shingles)
    return found


def merge_adjacent(kept: list[Candidate]) -> tuple[list[Candidate], set[int]]:
    """``kept`` (best first) with each pair of adjacent chunks of one document merged into the
    better-ranked one's place; also the ids of the chunks merged into another."""
    by_id = {c.chunk_id: c for c in kept}
    merged_into: dict[int, int] = {}
    changed: dict[int, Candidate] = {}
    for candidate in kept:
        if candidate.chunk_id in merged_into:
            continue
        current = changed.get(candidate.chunk_id, candidate)
        for other in kept:
            if other.chunk_id == candidate.chunk_id or other.chunk_id in merged_into or other.chunk_id in changed:
                continue
            joined = _join(current, other)
            if joined is not None:
                current = joined
                merged_into[other.chunk_id] = candidate.chunk_id
        changed[candidate.chunk_id] = current
    out = [changed[c.chunk_id] for c in kept if c.chunk_id not in merged_into and c.chunk_id in by_id]
    return out, set(merged_into)


def _join(a: Candidate, b: Candidate) -> Candidate | None:
    """One candidate covering both when they are the same document's touching or overlapping chunks."""
    if a.document_id != b.document_id or a.ordinal is None or b.ordinal is None:
        return None
    first, second = (a, b) if a.location.char_start <= b.location.char_start else (b, a)
    low, high = sorted((a.ordinal_span, b.ordinal_span))
    if high[0] - low[1] != 1:  # not neighbours in the document
        return None
    overlap = first.location.char_end - second.location.char_start
    if overlap < 0 or overlap > len(second.text):
        text = first.text + "\n" + second.text
    else:
        text = first.text + second.text[overlap:]
    location = replace(
        first.location,
        char_end=max(first.location.char_end, second.location.char_end),
        line_end=max(first.location.line_end, second.location.line_end),
    )
    span = (low[0], high[1])
    return replace(a, text=text, location=location, ordinal=min(a.ordinal, b.ordinal), ordinal_end=span[1])
