"""Context hygiene: what a chat turn's sources should not waste the context on.

- Near-duplicates: a chunk whose words are nearly all those of a better-ranked candidate (the same
  paragraph in two uploads, a template repeated across documents) is dropped before the cut to
  top_k, so it does not take the place of a different source.
- A per-document cap: at most ``per_document`` sources from one document, so one long document
  cannot fill the whole context.
- Adjacent chunks of one document that are both kept are merged into one source (their overlap
  once), so the model reads one passage rather than two halves with a repeated seam.

Each decision is a candidate's fate (app/rag/search/retrieval.py), so the trace shows it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from app.rag.search.candidates import Candidate

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
    # Shingles as small ints (numbered in this call): the n^2 comparisons then hash no tuples.
    numbers: dict[tuple[str, ...], int] = {}
    seen: list[frozenset[int]] = []
    exact: set[str] = set()
    found: set[int] = set()
    for candidate in candidates[:COMPARED]:
        normal = " ".join(_WORD.findall(candidate.text.lower()))
        if normal in exact:
            found.add(candidate.chunk_id)
            continue
        shingles = frozenset([numbers.setdefault(t, len(numbers)) for t in _shingles(candidate.text)])
        if any(_near(shingles, s) for s in seen):
            found.add(candidate.chunk_id)
            continue
        exact.add(normal)
        seen.append(shingles)
    return found


def _near(a: frozenset[int], b: frozenset[int]) -> bool:
    """Jaccard(a, b) >= NEAR_DUPLICATE. Sizes too far apart cannot reach it (the intersection is at
    most the smaller, the union at least the larger), so most pairs need no set operation."""
    small, large = sorted((len(a), len(b)))
    if small < NEAR_DUPLICATE * large:
        return False
    both = len(a & b)
    return both >= NEAR_DUPLICATE * (len(a) + len(b) - both)


def merge_adjacent(kept: list[Candidate]) -> tuple[list[Candidate], set[int]]:
    """``kept`` (best first) with each run of adjacent chunks of one document merged into one source,
    in the place of the run's best-ranked chunk; also the ids of the chunks merged into another."""
    by_document: dict[int, list[Candidate]] = defaultdict(list)
    for candidate in kept:
        if candidate.ordinal is not None:
            by_document[candidate.document_id].append(candidate)
    rank = {c.chunk_id: i for i, c in enumerate(kept)}
    merged: dict[int, Candidate] = {}
    gone: set[int] = set()
    for items in by_document.values():
        items.sort(key=lambda c: c.ordinal_span)
        runs = [[items[0]]]
        for candidate in items[1:]:
            if candidate.ordinal_span[0] == runs[-1][-1].ordinal_span[1] + 1:
                runs[-1].append(candidate)
            else:
                runs.append([candidate])
        for run in runs:
            if len(run) > 1:
                head = min(run, key=lambda c: rank[c.chunk_id])
                merged[head.chunk_id] = _joined(head, run)
                gone.update(c.chunk_id for c in run if c is not head)
    return [merged.get(c.chunk_id, c) for c in kept if c.chunk_id not in gone], gone


def _joined(head: Candidate, run: list[Candidate]) -> Candidate:
    """``head`` (a member of ``run``, its chunks in document order) covering the whole run: their
    texts in order, each overlap with the previous chunk once."""
    text, end = run[0].text, run[0].location.char_end
    for chunk in run[1:]:
        overlap = end - chunk.location.char_start
        text += chunk.text[overlap:] if 0 <= overlap <= len(chunk.text) else "\n" + chunk.text
        end = max(end, chunk.location.char_end)
    first = run[0].location
    location = replace(
        head.location,
        char_start=first.char_start,
        char_end=end,
        line_start=first.line_start,
        line_end=max(c.location.line_end for c in run),
        page=first.page,
        heading_path=first.heading_path,
    )
    return replace(head, text=text, location=location, ordinal=run[0].ordinal, ordinal_end=run[-1].ordinal_span[1])
