"""Split a :class:`ParsedDocument` into chunks bounded in tokens and characters that follow its structure.

The text is tokenised once per page (once in all for unpaged documents); every cut falls between
two of the tokenizer's spans, so no token or character is ever split — except a stretch longer than
128 characters that the tokenizer reads as one token or skips (WordPiece turns a word of more than
100 characters into a single ``[UNK]``): that is counted, and may be cut, as 4-character tokens, so
``"x" * 3_000_000`` is 750,000 tokens, not 1. Cuts are chosen greedily from the start of each page:

1. A chunk starting at token ``i`` ends at a boundary ``j`` with ``i + target/2 <= j <= i + max``
   (from ``i + target/4`` for a heading), and no further than ``max_chars`` characters allow (a
   chunk may then be smaller). The best class of boundary present wins; classes, best
   first: a heading start, a blank line, a line end, a sentence end (". ", "? ", "! ", "。"), other
   whitespace, a bare token boundary (one splitting a grapheme last). A cut right after a heading's
   own line counts only as whitespace, so titles are not orphaned.
2. Among boundaries of that class the pick is content-defined: a hash of the characters around each
   boundary, nudged towards ``i + target``. After an edit shifts where a chunk starts, the same
   boundary tends to win again, so the chunks after the edit realign with the old ones.
3. Boundaries inside a fenced code block (Markdown) are used only when the fence alone exceeds
   ``max_tokens``; otherwise the chunk ends before the fence, or takes it whole.
4. The next chunk starts ``overlap_tokens`` or fewer tokens before the cut, at the best boundary in
   that stretch (preferring at least half the overlap), except after a heading cut, where a new
   section starts clean. Pages are never crossed and never overlap.
5. Whatever remains once it fits in ``max_tokens`` is the last chunk, so a short document is one chunk.

Stability (MiniLM, target 200, one paragraph edited, inserted or removed in a ~35-chunk document):
about 1.5 chunk hashes change on average, 90% of edits change at most 3.

``ChunkSpec.token_count`` is the number of the tokenizer's spans inside the chunk (long ones counted
as above), counted in the context of the whole page, and never exceeds ``max_tokens``; a chunk's
text never exceeds ``max_chars`` characters. For WordPiece (MiniLM) and the
estimate tokenizer it equals ``tokenizer.count(chunk.text)`` whenever the chunk's edges fall on
whitespace or punctuation; a chunk with a bare-token edge is re-counted on its own and shrunk if
needed. A BPE tokenizer's isolated count can differ at the edges, and ``TiktokenTokenizer.spans``
merges the byte tokens of one character into one span, so non-ASCII text counts higher there.
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.llm.base import Tokenizer
from app.rag.ingest.parsers.markdown import fence_spans
from app.rag.ingest.types import ChunkSpec, Heading, ParsedDocument

__all__ = ["chunk"]

_HEADING, _PARAGRAPH, _LINE, _SENTENCE, _SPACE, _TOKEN = 6, 5, 4, 3, 2, 1  # boundary classes, best first
# Lookup tables indexed by code point (clipped to the table's last entry, which is False).
_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3002)], dtype=bool)
_SENTENCE_END = np.zeros(0xFF21, dtype=bool)  # after whitespace: ". ", "? ", "! "
_SENTENCE_END[[ord("."), ord("?"), ord("!")]] = True
_CJK_SENTENCE_END = np.zeros(0xFF21, dtype=bool)  # ideographic full stop, fullwidth ! and ?, no space needed
_CJK_SENTENCE_END[[0x3002, 0xFF01, 0xFF1F]] = True
_JOINERS = frozenset("\u200d\ufe0e\ufe0f") | {chr(c) for c in range(0x1F3FB, 0x1F400)}
_NEVER = -(2**62)
_SALT_RANGE = 1 << 20
_SETEXT_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)[ \t]*(?:\n|$)")
# Longer than any real token (cl100k's longest is 128 spaces; WordPiece reads words up to 100
# characters): an unknown word, or text the tokenizer skipped. Counted as 4 characters a token.
_LONG_SPAN, _CHARS_PER_TOKEN = 128, 4
_NON_BLANK = re.compile(r"\S+")
# The shortest chunk that cannot be cut: a token and the skipped characters on either side of it.
MIN_MAX_CHARS = 3 * _LONG_SPAN
DEFAULT_MAX_CHARS = 4000  # IngestSettings.max_chunk_chars
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Limits:
    target: int
    overlap: int
    max: int
    min: int
    min_at_heading: int
    max_chars: int


def chunk(
    doc: ParsedDocument,
    tokenizer: Tokenizer,
    *,
    target_tokens: int = 200,
    overlap_tokens: int = 32,
    max_tokens: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> list[ChunkSpec]:
    """Chunks of about ``target_tokens`` tokens, never more than ``max_tokens`` (default 1.25 x target)
    nor ``max_chars`` characters, consecutive chunks sharing about ``overlap_tokens``. Deterministic;
    see the module docstring."""
    limit = max_tokens if max_tokens is not None else target_tokens + target_tokens // 4
    if target_tokens < 1 or overlap_tokens < 0 or overlap_tokens >= target_tokens or limit < target_tokens:
        raise ValueError(
            f"need 1 <= target_tokens <= max_tokens and 0 <= overlap_tokens < target_tokens, got "
            f"target={target_tokens} overlap={overlap_tokens} max={limit}"
        )
    if max_chars < MIN_MAX_CHARS:
        raise ValueError(
            f"need max_chars >= {MIN_MAX_CHARS} (a token with what it cannot be cut from), got {max_chars}"
        )
    limits = _Limits(
        target_tokens, overlap_tokens, limit, max(1, target_tokens // 2), max(1, target_tokens // 4), max_chars
    )
    if not doc.text.strip():
        return []
    fences = fence_spans(doc.text) if doc.kind == "markdown" else []
    headings = sorted(doc.headings, key=lambda h: h.start)
    ranges: list[tuple[int, int, int]] = []
    for start, end in _segments(doc):
        ranges.extend(_Segment(doc.text, start, end, tokenizer, limits).cut(headings, fences))
    locate = _Locator(doc.text, headings, doc.page_starts)
    return [locate.spec(ordinal, *found) for ordinal, found in enumerate(ranges)]


def _bounded(text: str, spans: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """``spans``, with every span longer than ``_LONG_SPAN`` and every longer stretch of non-blank
    text between spans (characters the tokenizer dropped) cut into 4-character spans; and where
    those cuts are (the start of each piece but the first)."""
    flat = np.fromiter(itertools.chain.from_iterable(spans), dtype=np.int64, count=2 * len(spans))
    starts, ends = flat[0::2], flat[1::2]
    previous = np.concatenate(([0], np.maximum.accumulate(ends)[:-1]))
    if not ((ends - starts > _LONG_SPAN).any() or (starts - previous > _LONG_SPAN).any()) and (
        len(text) - int(ends.max(initial=0)) <= _LONG_SPAN
    ):
        return spans, []  # the usual case: nothing to change
    out: list[tuple[int, int]] = []
    inner: list[int] = []
    covered = 0
    for start, end in [*spans, (len(text), len(text))]:
        if start - covered > _LONG_SPAN and text[covered:start].strip():
            out.extend(_pieces(text, covered, start, inner))
        if end - start > _LONG_SPAN:
            out.extend(_pieces(text, start, end, inner))
        elif end > start:
            out.append((start, end))
        covered = max(covered, end)
    return out, inner


def _pieces(text: str, start: int, end: int, inner: list[int]) -> list[tuple[int, int]]:
    """4-character spans over the non-blank runs of ``text[start:end]`` (blank tokens would make
    chunks that end where the one before them ended)."""
    out: list[tuple[int, int]] = []
    for run in _NON_BLANK.finditer(text, start, end):
        inner.extend(range(run.start() + _CHARS_PER_TOKEN, run.end(), _CHARS_PER_TOKEN))
        out.extend((s, min(s + _CHARS_PER_TOKEN, run.end())) for s in range(run.start(), run.end(), _CHARS_PER_TOKEN))
    return out


def _segments(doc: ParsedDocument) -> list[tuple[int, int]]:
    """Stretches no chunk may cross: the pages of a paged document, else the whole text."""
    cuts = sorted({0, len(doc.text), *(s for s in doc.page_starts if 0 < s < len(doc.text))})
    return list(itertools.pairwise(cuts))


class _Segment:
    """One page (or a whole unpaged document): its token spans and the class of every boundary."""

    def __init__(self, text: str, start: int, end: int, tokenizer: Tokenizer, limits: _Limits) -> None:
        self.text = text[start:end]
        self.offset = start
        self.tokenizer = tokenizer
        self.limits = limits
        self.spans, inner = _bounded(self.text, tokenizer.spans(self.text))
        self.inner_offsets = np.asarray(inner, dtype=np.int64)
        self.k = len(self.spans)
        self.starts: IntArray = np.zeros(0, dtype=np.int64)
        self.ends: IntArray = np.zeros(0, dtype=np.int64)
        # Where a chunk starting (ending) at boundary j starts (ends) once whitespace is trimmed.
        self.start_at: IntArray = np.zeros(0, dtype=np.int64)
        self.end_at: IntArray = np.zeros(0, dtype=np.int64)
        # Boundary j lies between token j - 1 and token j; filled in by _classify when needed.
        self.cls: IntArray = np.zeros(0, dtype=np.int64)
        self.salt: IntArray = np.zeros(0, dtype=np.int64)
        self.allowed = np.zeros(0, dtype=bool)  # a clean cut: not inside a fence, not inside a character
        self.valid = np.zeros(0, dtype=bool)  # a possible cut at all
        self.inner = np.zeros(0, dtype=bool)  # a cut inside a stretch counted per 4 characters

    def cut(self, headings: Sequence[Heading], fences: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
        """``(char_start, char_end, token_count)`` of each chunk, absolute offsets, whitespace trimmed."""
        if not self.text.strip():
            return []
        whole = self._range(0, self.k)
        if self.k <= self.limits.max and whole and whole[1] - whole[0] <= self.limits.max_chars:
            return [whole]
        self._classify(headings, fences)
        out: list[tuple[int, int, int]] = []
        i = prev = 0
        while prev < self.k:
            end = self._end(i, prev)
            if end is None:
                i, end = prev, self._end(prev, prev)
            assert end is not None  # without overlap there is always an end
            j = end
            found = self._range(i, j)
            if found:
                out.append(found)
            i, prev = self._next_start(i, j), j
        return out

    def _classify(self, headings: Sequence[Heading], fences: Sequence[tuple[int, int]]) -> None:
        # Arrays only for documents that need cutting: most short documents are a single chunk.
        flat = np.fromiter(itertools.chain.from_iterable(self.spans), dtype=np.int64, count=2 * self.k)
        self.starts, self.ends = flat[0::2], flat[1::2]
        codes = np.frombuffer(self.text.encode("utf-32-le"), dtype=np.uint32)
        nonspace = np.flatnonzero(~_IS_SPACE[np.minimum(codes, len(_IS_SPACE) - 1)])
        newlines = np.concatenate(([0], np.cumsum(codes == 10)))
        # The whitespace run around each boundary, wherever the tokenizer put the whitespace itself.
        after = np.searchsorted(nonspace, self.starts[1:], side="left")
        run_end = np.where(after < len(nonspace), nonspace[np.minimum(after, len(nonspace) - 1)], len(codes))
        run_start = np.where(after > 0, nonspace[np.maximum(after - 1, 0)] + 1, 0)
        lines = newlines[run_end] - newlines[run_start]
        cuts = np.concatenate(([0], self.starts[1:], [len(codes)]))
        self.start_at = nonspace[np.minimum(np.searchsorted(nonspace, cuts), len(nonspace) - 1)]
        before_cut = np.searchsorted(nonspace, cuts) - 1
        self.end_at = np.where(before_cut >= 0, nonspace[np.maximum(before_cut, 0)] + 1, 0)
        before = np.minimum(codes[np.maximum(run_start - 1, 0)], len(_SENTENCE_END) - 1)
        spaced = run_end > run_start
        sentence = (spaced & _SENTENCE_END[before]) | _CJK_SENTENCE_END[before]
        inner = np.select(
            [lines >= 2, lines == 1, sentence, spaced],
            [_PARAGRAPH, _LINE, _SENTENCE, _SPACE],
            default=_TOKEN,
        )
        self.cls = np.concatenate(([_PARAGRAPH], inner, [_PARAGRAPH])).astype(np.int64)
        self.salt = self._salt(codes)
        self.valid = np.concatenate(([True], self.ends[:-1] <= self.starts[1:], [True]))
        self.allowed = self.valid.copy()
        self.inner = np.concatenate(([False], np.isin(self.starts[1:], self.inner_offsets), [False]))
        self._mark_headings(headings, nonspace)
        for start, end in fences:
            first = int(np.searchsorted(self.ends, start - self.offset, side="right")) + 1
            last = int(np.searchsorted(self.starts, end - self.offset, side="left"))
            # A fence too long for one chunk is cut like any text (at its line ends, mostly).
            if first < last and last - first < self.limits.max:
                self.allowed[first:last] = False

    def _salt(self, codes: npt.NDArray[np.uint32]) -> IntArray:
        """A pseudo-random number per boundary from the characters around it (content, not position)."""
        padded = np.concatenate((np.zeros(4, np.uint64), codes.astype(np.uint64), np.zeros(4, np.uint64)))
        pos = np.concatenate(([0], self.starts[1:], [0])) + 4
        h = np.zeros(len(pos), dtype=np.uint64)
        for d in range(-4, 4):  # the 8 characters around the boundary
            h = (h * np.uint64(1000003)) ^ padded[pos + d]
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(32)
        return (h & np.uint64(_SALT_RANGE - 1)).astype(np.int64)

    def _mark_headings(self, headings: Sequence[Heading], nonspace: IntArray) -> None:
        """A cut just before a heading is the best kind; one just after its line is poor (an orphan title)."""
        for heading in headings:
            rel = heading.start - self.offset
            if not 0 <= rel < len(self.text):
                continue
            content = nonspace[min(int(np.searchsorted(nonspace, rel)), len(nonspace) - 1)]
            j = int(np.searchsorted(self.starts, rel, side="left"))
            if 0 < j < self.k and self.ends[j - 1] <= content:
                self.cls[j] = _HEADING
            line_end = self.text.find("\n", rel)
            if line_end >= 0 and _SETEXT_UNDERLINE.match(self.text, line_end + 1):
                line_end = self.text.find("\n", line_end + 1)
            after = int(np.searchsorted(self.starts, line_end if line_end >= 0 else len(self.text), side="left"))
            title = self.cls[j + 1 : after + 1]
            self.cls[j + 1 : after + 1] = np.minimum(title, _SPACE)

    def _pick(self, i: int, prev: int) -> tuple[int, bool]:
        """The end boundary of a chunk starting at token ``i``; ``True`` when it splits a fence."""
        # The furthest end within max_chars; a token longer than that still makes a chunk on its own.
        reach = max(
            i + 1, int(np.searchsorted(self.end_at, self.start_at[i] + self.limits.max_chars, side="right")) - 1
        )
        if self.k - i <= self.limits.max and reach >= self.k:
            return self.k, False
        last = min(i + self.limits.max, reach)
        if last <= prev:  # this chunk's overlap leaves no room for anything new
            return last, True
        first = min(max(prev + 1, i + self.limits.min), last)
        # A heading may end a chunk earlier than anything else: sections stay apart when they can.
        j = self._best(i, max(prev + 1, i + self.limits.min_at_heading), last, self.allowed, plain_from=first)
        if j is None:  # a fence fills the window: end before it, if that is past the previous cut
            j = self._best(i, prev + 1, first - 1, self.allowed)
        if j is not None:
            return j, False
        j = self._best(i, first, last, self.valid)
        return (j if j is not None else last), True

    def _best(self, i: int, first: int, last: int, mask: npt.NDArray[np.bool_], plain_from: int = 0) -> int | None:
        """The best boundary in ``[first, last]`` under ``mask``; below ``plain_from`` only headings count."""
        if first > last:
            return None
        index = np.arange(first, last + 1)
        cls = self.cls[first : last + 1]
        # Structure first; then a content-defined pick (the salt), nudged towards the target size. Being
        # content-defined, the same boundary tends to win after an edit shifts the start: chunks realign.
        drift = np.abs(index - i - self.limits.target) * (_SALT_RANGE // (4 * self.limits.target))
        key = cls * (4 * _SALT_RANGE) + self.salt[first : last + 1] - drift
        key = np.where(mask[first : last + 1] & ((index >= plain_from) | (cls == _HEADING)), key, _NEVER)
        best = int(np.argmax(key))
        if key[best] == _NEVER:
            return None
        if self.cls[first + best] == _TOKEN:
            # A bare token boundary: take the best one that keeps graphemes (base + marks, emoji) whole.
            for candidate in np.argsort(-key, kind="stable"):
                if key[candidate] == _NEVER or self.cls[first + candidate] != _TOKEN:
                    break
                if not self._splits_grapheme(int(self.starts[first + candidate])):
                    return first + int(candidate)
        return first + best

    def _splits_grapheme(self, pos: int) -> bool:
        char, before = self.text[pos], self.text[pos - 1]
        return unicodedata.category(char).startswith("M") or char in _JOINERS or before == "\u200d"

    def _next_start(self, i: int, j: int) -> int:
        """First token of the chunk after a cut at ``j``: up to ``overlap`` tokens back, at a clean boundary."""
        overlap = self.limits.overlap
        # A stretch counted per 4 characters tokenises otherwise on its own: no overlap in or into it.
        if j >= self.k or overlap == 0 or self.cls[j] == _HEADING or self.inner[j]:
            return j
        earliest = max(i + 1, j - overlap)
        # Overlap stays out of fences, unless the cut itself had to split one.
        mask = (self.allowed if self.allowed[j] else self.valid) & ~self.inner
        for last in (j - (overlap + 1) // 2, j - 1):
            if earliest > last:
                continue
            index = np.arange(earliest, last + 1)
            # Best class first, then the longest overlap.
            key = self.cls[earliest : last + 1] * (4 * overlap) + j - index
            key = np.where(mask[earliest : last + 1], key, _NEVER)
            best = int(np.argmax(key))
            if key[best] != _NEVER and (self.cls[earliest + best] >= _SPACE or last == j - 1):
                return earliest + best
        return j

    def _end(self, i: int, prev: int) -> int | None:
        """Where the chunk from token ``i`` ends; ``None`` when its overlap (``i < prev``) must go because
        it pushes a fence out of reach or makes the chunk too long once tokenised on its own."""
        j, forced = self._pick(i, prev)
        if forced and i < prev:
            return None
        j, fits = self._fit(i, j, prev)
        return j if fits or i == prev else None

    def _fit(self, i: int, j: int, prev: int) -> tuple[int, bool]:
        """Shrink a chunk whose bare-token edge makes it longer in isolation than in context."""
        if not ((i > 0 and self.cls[i] <= _TOKEN) or (j < self.k and self.cls[j] <= _TOKEN)):
            return j, True
        floor = max(i + 1, prev + 1)
        while True:
            found = self._range(i, j)
            count = self.tokenizer.count(self.text[found[0] - self.offset : found[1] - self.offset]) if found else 0
            if count <= self.limits.max or j <= floor:
                return j, count <= self.limits.max
            j = max(floor, j - (count - self.limits.max))
            while j > floor and not self.valid[j]:
                j -= 1

    def _range(self, i: int, j: int) -> tuple[int, int, int] | None:
        start = 0 if i == 0 else int(self.starts[i])
        end = len(self.text) if j >= self.k else int(self.starts[j])
        piece = self.text[start:end]
        stripped = piece.lstrip()
        if not stripped:
            return None
        start += len(piece) - len(stripped)
        end -= len(stripped) - len(stripped.rstrip())
        # Tokens overlapping the trimmed text: a BPE's whitespace-only tokens at the edges do not count.
        first = bisect.bisect_right(self.spans, start, lo=i, hi=j, key=lambda span: span[1])
        tokens = bisect.bisect_left(self.spans, end, lo=first, hi=j, key=lambda span: span[0]) - first
        return start + self.offset, end + self.offset, tokens


class _Locator:
    """Line numbers, page numbers and heading paths for character offsets."""

    def __init__(self, text: str, headings: Sequence[Heading], page_starts: Sequence[int]) -> None:
        self.text = text
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.page_starts = list(page_starts)
        self.heading_starts = [h.start for h in headings]
        self.paths: list[str] = []
        stack: list[Heading] = []
        for heading in headings:
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            self.paths.append(" > ".join(h.title for h in stack))

    def spec(self, ordinal: int, start: int, end: int, tokens: int) -> ChunkSpec:
        at = bisect.bisect_right(self.heading_starts, start) - 1
        page = bisect.bisect_right(self.page_starts, start) if self.page_starts else None
        return ChunkSpec(
            ordinal=ordinal,
            text=self.text[start:end],
            char_start=start,
            char_end=end,
            line_start=bisect.bisect_left(self.newlines, start) + 1,
            line_end=bisect.bisect_left(self.newlines, end - 1) + 1,
            page=page or None,
            heading_path=self.paths[at] if at >= 0 else "",
            token_count=tokens,
        )
