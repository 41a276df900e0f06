"""Extractive answers: the sources' own sentences that answer the question, each cited to its span.

No chat model runs, so the answer can only say what the documents say. ``compose`` takes the
sources' sentences (and list items, fields, table rows) as candidates, scores each against the
question (``ExtractiveOptions``: embedding similarity, the question's words and names, the kind of
answer asked for, the source's rank), selects the best above ``min_score`` and quotes them in
document order, each followed by its ``[n]``. Each step, the offsets and the calibration of the
weights: docs/ANSWERS.md, "The extractive answer".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from app.llm.base import Vectors
from app.rag.answer import sentences
from app.rag.ingest.parsers.markdown import rendered
from app.rag.search import conversation
from app.rag.search.candidates import Location

__all__ = [
    "CLOSEST",
    "NO_ANSWER",
    "Considered",
    "Evidence",
    "ExtractiveAnswer",
    "ExtractiveOptions",
    "Passage",
    "compose",
    "pieces",
]

NO_ANSWER = "The documents do not answer this question."
CLOSEST = "The closest passage is in"  # how a no-answer reply points at the best candidate
_OWN_MARKERS = re.compile(r"\s*\[\d{1,3}(?:\s*[,\u2013-]\s*\d{1,3})*\]")


class Passage(Protocol):
    """A kept source as the chat service has it (``app.services.chat.events.SourceRef`` fits)."""

    @property
    def number(self) -> int: ...  # the [n] the answer cites it by, 1-based
    @property
    def text(self) -> str: ...  # the chunk's text
    @property
    def document_id(self) -> int: ...
    @property
    def document_name(self) -> str: ...
    @property
    def location(self) -> Location: ...  # where the chunk sits in its document
    @property
    def rank(self) -> int: ...  # 1 = best
    @property
    def score(self) -> float | None: ...


@dataclass(frozen=True)
class ExtractiveOptions:
    # Five: on docs-qa the answering sentence is often fourth or fifth among close scores (three -> four:
    # +4 facts of 107, 41 -> 49 words at the median; four -> five: +4 facts, +4 topic-change facts, 50 ->
    # 54 words, p90 94 -> 101, and +1 fact on benchmarks/fresh-qa); benchmarks/answers unchanged.
    max_sentences: int = 5
    # With embeddings; calibrated on docs-qa's 107 answerable and 18 unanswerable questions: 0.40 -> 0.39
    # answers one more (declined 6 -> 5) and follow-ups +2 with the same 13 of 18 declined; 0.38 answers the
    # 2022 per diem from the 2023 policy on benchmarks/answers, 0.37 answers one more docs-qa NONE question.
    min_score: float = 0.39
    min_score_without_embeddings: float = 0.35
    # A sentence naming what the question names scores as about it, so more sentences score close to the
    # best: at 0.75 the median answer was 62 words on docs-qa (54 before), at 0.77 58 with the same facts;
    # heading words counting half lifted it to 61, and 0.78 gives 59, no fact won or lost on any set.
    # Whole list items and "why" reasons lifted it to 60.5 (answerable and follow-ups): 0.79 gave 59 with
    # the same docs-qa facts (held-out: one systemd fact lost, one onboarding fact kept; 0.80 loses one).
    # With document coverage in retrieval, 62; only the best sentence's item made whole, 60.5; other items
    # alone under their lead-in, 59.5.
    relative_floor: float = 0.79
    cosine_weight: float = 0.55
    overlap_weight: float = 0.35
    heading_overlap: float = 0.5  # a question word the sentence's headings have counts this much
    rank_weight: float = 0.10
    kind_weight: float = 0.10
    subject_weight: float = 0.20
    entity_penalty: float = 0.5  # factor for sources that lack a name or code the question has
    signpost_penalty: float = 0.5  # factor for a sentence about its page, not its subject ("This page outlines …")
    adjacency_bonus: float = 0.05
    duplicate_overlap: float = 0.8
    min_words: int = 3  # table rows: 2
    max_chars: int = 300  # longer sentences are cut into clauses
    max_code_lines: int = 6  # a code block a chosen sentence introduces joins it up to this size
    max_code_chars: int = 400
    max_list_items: int = 8  # a list a chosen sentence introduces ("… the following:") joins it up to this size
    max_list_chars: int = 600
    # A list item comes with the sentences that continue it when the whole item is at most this long:
    # on docs-qa 250 and 300 win the same facts (300: +1 held-out fact, median 59 -> 60.5 words at the
    # 0.79 floor), 200 one fewer.
    max_item_chars: int = 250
    max_lead_chars: int = 120  # a list item's lead-in longer than this is not repeated before it
    # The words no source has must carry the question: without them it reads as another question (its
    # embedding this far from the whole one's), not the same question with a story around it ("I joined
    # eight months ago and we're expecting a baby. Can I use paid parental leave yet?").
    beyond_similarity: float = 0.85
    # A follow-up is read with the earlier turns as retrieval reads it (app/rag/search/conversation.py).
    history_turns: int = 2
    history_decay: float = 0.8
    history_term_weight: float = 0.25
    embed_limit: int = 64  # more candidates than this: only the best by words and rank are embedded


@dataclass(frozen=True)
class Evidence:
    """One picked sentence and exactly where it is."""

    number: int  # the source's [n]
    document_id: int
    document_name: str
    text: str  # as it reads in the answer
    chunk_start: int  # [chunk_start, chunk_end) in the source's text
    chunk_end: int
    location: Location  # the sentence's own span, lines, page and heading path in the document
    score: float
    cosine: float | None  # None without embeddings
    overlap: float


@dataclass(frozen=True)
class Considered:
    """A candidate sentence, and why it was or was not quoted (the trace shows the best few)."""

    number: int  # the source's [n]
    text: str  # as it would read, cut to CONSIDERED_CHARS
    score: float
    quoted: bool
    reason: str  # in words: "quoted", or the rule that left it out


CONSIDERED = 8  # candidate sentences the trace shows, best first
CONSIDERED_CHARS = 200


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    no_answer: bool  # no sentence of the kept sources answers the question: the text says so
    evidence: tuple[Evidence, ...]  # in answer order; empty when no_answer
    used: tuple[int, ...]  # source numbers cited, in order of first use
    closest: Evidence | None  # the best candidate, also when it fell short of the bar
    bar: float | None = None  # the score a sentence needed (None: there was no sentence at all)
    considered: tuple[Considered, ...] = ()  # the best candidates, with why each was (not) quoted

    def pieces(self) -> Iterator[str]:
        """The text in word-sized pieces, to stream like a model's tokens."""
        return pieces(self.text)


def pieces(text: str) -> Iterator[str]:
    """Word-sized pieces (each with the whitespace before it) that concatenate to ``text``."""
    return (m.group(0) for m in re.finditer(r"\s*\S+|\s+$", text))


@dataclass
class _Candidate:
    source: Passage
    order: int  # the source's position by rank, 0 = best
    unit: sentences.Unit
    text: str  # as shown
    heading_path: str
    terms: frozenset[str]
    about: str  # its document name, headings and table header
    context: frozenset[str]  # the words of ``about``
    doc_start: int
    doc_end: int
    cosine: float | None = None
    vector: Vectors | None = field(default=None, compare=False, repr=False)  # its embedding, when embedded
    overlap: float = 0.0
    missing_entity: bool = False  # its source does not name something the question names
    other_edition: bool = False  # its document's title has another year or code of the same form
    signpost: bool = False  # it says what its page covers or where to read more, not the thing itself
    subject: float = 0.0  # the share of the question's names its document name, headings or own text have
    fit: float = 0.0  # 1 when it has the kind of answer the question asks for (a date, a number, a name)
    score: float = 0.0
    index: int = 0  # its unit's position in ``units``
    units: list[sentences.Unit] = field(default_factory=list, compare=False, repr=False)  # its source's
    code: str | None = None  # the code block it introduces, when composed with it
    lead: str | None = None  # a list item's lead-in ("Three to five weeks in advance for:"), which ``text`` starts with
    lead_index: int = 0  # the lead-in's position in ``units``
    items: tuple[str, ...] = ()  # the list it introduces, when composed with it

    @property
    def embed_text(self) -> str:
        # Its headings say what a short row or item is about ("Weight: 310 g" of which product).
        return f"{self.heading_path}: {self.text}" if self.heading_path else self.text


def compose(
    question: str,
    sources: Sequence[Passage],
    embed: Callable[[list[str]], Vectors] | None,
    *,
    options: ExtractiveOptions | None = None,
    earlier: Sequence[str] = (),
    continues: bool | None = None,
) -> ExtractiveAnswer:
    """Answer ``question`` from ``sources``' own sentences; see the module docstring. ``earlier``:
    the conversation's earlier user turns, oldest first, which a follow-up is scored with: one that
    reads as one ("and how do I cancel it?"), or, when retrieval has decided (``continues``), one it
    read with them. Errors of ``embed`` propagate: the caller may retry with ``embed=None`` (words
    and rank only)."""
    opts = options or ExtractiveOptions()
    ordered = sorted(sources, key=lambda s: (s.rank, s.number))
    candidates = _dedupe(_candidates(ordered, opts))
    if not candidates:
        return ExtractiveAnswer(NO_ANSWER, True, (), (), None)
    before = _before(question, earlier, opts, continues)
    asked = _score(question, candidates, embed, opts, before)
    if before and continues and not conversation.leans_back(question):
        # Retrieval's guess (the message found no passage alone), not a cue in its words: read both
        # ways and keep the reading whose best sentence scores higher. A standalone question on a
        # new topic loses by the earlier turns; a follow-up that names nothing gains.
        read_with = max(c.score for c in candidates)
        alone = _score(question, candidates, embed, opts)
        if max(c.score for c in candidates) < read_with:
            asked = _score(question, candidates, embed, opts, before)
        else:
            asked = alone
    best = max(candidates, key=_preference)
    bar = opts.min_score if embed is not None else opts.min_score_without_embeddings
    beyond = best.score >= bar and _beyond_sources(question, ordered, best, asked, embed, opts)
    unstated = _unstated(question, candidates, bar) if best.score >= bar and not beyond else None
    if best.score < bar or beyond or unstated:
        closest = _evidence(best)
        why = _Why(bar, bar, opts, beyond=beyond, unstated=unstated)
        return ExtractiveAnswer(
            f"{NO_ANSWER} {_closest(closest)}", True, (), (), closest, bar, why.considered(candidates, [])
        )
    floor = max(bar, opts.relative_floor * best.score)
    chosen = _select(candidates, floor, opts)
    why = _Why(bar, floor, opts)
    considered = why.considered(candidates, chosen)
    first_rank: dict[int, int] = {}
    for c in chosen:
        first_rank[c.source.document_id] = min(first_rank.get(c.source.document_id, c.order), c.order)
    chosen.sort(key=lambda c: (first_rank[c.source.document_id], c.source.document_id, c.doc_start))
    own = frozenset(_content(_INTERROGATIVE.sub(" ", question)))
    first = max(chosen, key=lambda c: c.score)
    chosen = [_in_context(c, chosen, own, opts, whole=c is first) for c in chosen]
    if _WHY.search(question):
        chosen = [_with_reason(c, chosen, opts) for c in chosen]
    spans = {(c.source.document_id, c.doc_start, c.doc_end): c for c in reversed(chosen)}  # the first of each
    chosen = [c for c in chosen if spans[(c.source.document_id, c.doc_start, c.doc_end)] is c]
    chosen = [c for c in chosen if not any(k is not c and _inside(c, k) for k in chosen)]  # an item of a quoted list
    evidence = tuple(_evidence(c) for c in chosen)
    used = tuple(dict.fromkeys(e.number for e in evidence))
    return ExtractiveAnswer(_compose_text(chosen, evidence), False, evidence, used, _evidence(best), floor, considered)


@dataclass(frozen=True)
class _Why:
    """Why a candidate sentence was or was not quoted, in the order the rules decide it."""

    bar: float  # the fixed bar
    floor: float  # the bar for this answer: the fixed one, or a share of the best sentence's score
    opts: ExtractiveOptions
    beyond: bool = False  # the question is about something no source mentions
    unstated: str | None = None  # the value asked for (a number, a date…) that no sentence above the bar has

    def considered(self, candidates: list[_Candidate], chosen: list[_Candidate]) -> tuple[Considered, ...]:
        best = sorted(candidates, key=_preference, reverse=True)[:CONSIDERED]
        return tuple(
            Considered(
                c.source.number,
                _cut(_shown(c)),
                round(c.score, 4),
                any(c is k for k in chosen),
                self.reason(c, chosen),
            )
            for c in best
        )

    def reason(self, c: _Candidate, chosen: list[_Candidate]) -> str:
        penalised = (
            "; scored at half: its source lacks a name or code the question has" if c.missing_entity
            else "; scored at half: its document is another edition than the one asked about" if c.other_edition
            else ""
        ) + ("; scored at half: it says what its page covers, not the answer" if c.signpost else "")  # fmt: skip
        if any(c is k for k in chosen):
            return "quoted" + penalised
        if self.beyond:
            return "not quoted: the question is about something no kept source mentions" + penalised
        if self.unstated:
            asked = f"no sentence above the bar states the kind of value the question asks for: {self.unstated}"
            return f"not quoted: {asked}" + penalised
        if c.score < self.bar:
            return f"below the bar: {c.score:.2f} < {self.bar:.2f}" + penalised
        if c.score < self.floor:
            share = f"{self.opts.relative_floor:.0%}"
            return f"below {share} of the best sentence's score: {c.score:.2f} < {self.floor:.2f}" + penalised
        if any(_near_duplicate(c, k, self.opts) for k in chosen):
            return "repeats a quoted sentence" + penalised
        return f"beyond the {self.opts.max_sentences} sentences an answer quotes" + penalised


def _content(text: str) -> list[str]:
    """Content words, with numbers written out as digits: an asker's "three days" is a table's "3 days"."""
    return sentences.terms(text, digits=True)


def _cut(text: str) -> str:
    return text if len(text) <= CONSIDERED_CHARS else text[: CONSIDERED_CHARS - 1].rstrip() + "…"


def _preference(c: _Candidate) -> tuple[float, int, int]:
    return (c.score, -c.order, -c.doc_start)


def _candidates(ordered: Sequence[Passage], opts: ExtractiveOptions) -> list[_Candidate]:
    out: list[_Candidate] = []
    for order, source in enumerate(ordered):
        units = sentences.split(source.text, max_chars=opts.max_chars)
        paths = _heading_paths(source, units)
        first_prose = next((u for u in units if u.kind in sentences.PROSE), None)
        header: list[str] = []
        term: tuple[str, int] | None = None  # a definition list's term and its line's indentation
        for n, unit in enumerate(units):
            lead = None
            if term is not None and _indent(source.text, unit) <= term[1]:
                term = None
            if unit.kind == "table" and n + 1 < len(units) and units[n + 1].kind == "rule":
                header = _cells(unit.text)  # a header row: context for the rows below, not a candidate
                continue
            columns = header  # a row's column names, when the row does not write them itself
            if unit.kind == "table":
                cells = _cells(rendered(unit.text))
                text = _row(cells, header)
                columns = [] if _named_columns(cells, header) else header
                enough = len(sentences.words(text)) >= 2
            elif unit.kind in sentences.PROSE:
                text = _quoted(unit)
                enough = len(sentences.words(text)) >= opts.min_words
                if unit is first_prose and source.location.char_start > 0 and text[:1].islower():
                    continue  # the tail of a sentence the chunk boundary cut
                if _LINK_DEFINITIONS.fullmatch(unit.normalised):
                    continue  # "[`Box::into_raw`]: https://…": where a link goes, not something the text says
                lead = _lead_in(source.text, units, n, opts) if unit.kind == "item" else None
                if lead is not None:
                    text, enough = f"{lead[0]} {text}", True
                elif term is not None and not set(sentences.words(term[0])) <= set(sentences.words(text)):
                    # "Members of this group can read …" says which group only under its term.
                    text = f"{term[0]}: {text}"
                    enough = len(sentences.words(text)) >= opts.min_words
            else:
                header = [] if unit.kind == "heading" else header
                term = _term(source.text, units, n, cut=source.location.char_start > 0)
                continue
            if not enough:
                continue
            start = source.location.char_start + unit.start
            terms = frozenset(_content(text))
            about = _about(source, paths[n], " ".join([*columns, *(term[:1] if term else ())]))
            context = frozenset(_content(about))
            out.append(
                _Candidate(
                    source, order, unit, text, paths[n], terms, about, context, start, start + len(unit.text), index=n
                )
            )
            out[-1].units = units
            if lead is not None:
                out[-1].lead, out[-1].lead_index = lead
    return out


def _lead_in(text: str, units: list[sentences.Unit], n: int, opts: ExtractiveOptions) -> tuple[str, int] | None:
    """The line that introduces list item ``n`` when it ends with a colon and is short enough to
    repeat: the item it is nested in ("- Three to five weeks in advance for:" over "- Conference
    events that cost more than $2,500"), or the sentence before the list ("To be eligible, you must
    have all of the following:"). An item alone often says only half of the answer. An item nested
    in a bare label ("- Definition of Ready" over "- How complete a story must be …") explains
    it: the label is its term, given a colon."""
    indent = _indent(text, units[n])
    for j in range(n - 1, max(n - 2 * opts.max_list_items, 0) - 1, -1):
        unit = units[j]
        if unit.kind == "item" and _indent(text, unit) >= indent:
            continue  # a sibling, or an item nested in one
        if unit.kind == "sentence" and _item_text(text, units, j):
            continue  # the rest of a sibling item's text
        if unit.kind not in sentences.PROSE:
            return None
        lead = _quoted(unit)
        if unit.kind == "item" and _LABEL.fullmatch(lead):
            lead += ":"
        return (lead, j) if lead.endswith(":") and len(lead) <= opts.max_lead_chars else None
    return None


def _term(text: str, units: list[sentences.Unit], n: int, *, cut: bool) -> tuple[str, int] | None:
    """Unit ``n`` as a definition list's term, with its indentation, when it is a plain-text title
    whose next unit is indented deeper (its explanation). Not the first words of a chunk that starts
    inside its document (``cut``): the chunk may start inside a line, and the last words of a wrapped
    line over its indented rest read like a term over its explanation."""
    unit = units[n]
    if unit.kind != "title" or n + 1 >= len(units) or (cut and not text[: unit.start].strip()):
        return None
    indent = _indent(text, unit)
    return (rendered(unit.text), indent) if _indent(text, units[n + 1]) > indent else None


# A term on its own: a few words, no sentence's punctuation at its end.
_LABEL = re.compile(r"\S+(?:\s+\S+){0,5}(?<![.!?;,:])")


def _item_text(text: str, units: list[sentences.Unit], j: int) -> bool:
    """Whether sentence ``j`` is the rest of a list item's text (no blank line back to the item)."""
    while j > 0 and "\n\n" not in text[units[j - 1].end : units[j].start]:
        j -= 1
        if units[j].kind == "item":
            return True
        if units[j].kind != "sentence":
            return False
    return False


def _indent(text: str, unit: sentences.Unit) -> int:
    """How far ``unit``'s line is indented (a list item's marker counts as indentation)."""
    line_start = text.rfind("\n", 0, unit.start) + 1
    return unit.start - line_start


# Markdown's reference-style link definitions, one or more on a line: "[text]: url" or "[text]: url 'title'".
# A url has no brackets, so where one definition ends and the next begins is never in doubt (with
# `\S+` a line of them could be split 2^n ways before a mismatch at its end).
_LINK_DEFINITION = r"\[[^\]\n]+\]:[ \t]*[^\s\[\]]+(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?"
_LINK_DEFINITIONS = re.compile(rf"(?:{_LINK_DEFINITION}\s*)+")


def _quoted(unit: sentences.Unit) -> str:
    """A unit as an answer quotes it: on one line, as it reads rendered, without the document's own
    ``[n]`` markers."""
    return rendered(_OWN_MARKERS.sub("", unit.normalised))


def _cells(row: str) -> list[str]:
    if "|" not in row:  # a plain-text table's: columns two or more spaces apart, overflow lines joined
        return re.split(r" {2,}", " ".join(line.strip() for line in row.strip().split("\n")))
    return [" ".join(c.split()) for c in row.strip().strip("|").split("|")]


def _named_columns(cells: list[str], header: list[str]) -> bool:
    """Whether ``_row`` writes the columns' names into the row's line ("`to_`: cost Expensive, …"):
    then they are the row's own words, what it says, not only what it is about — "how costly is
    `to_`?" is answered by the row whose "cost" column says so."""
    return len(cells) != 2 and len(header) == len(cells)


def _row(cells: list[str], header: list[str]) -> str:
    """A table row as a line: "Weight: 310 g"; with more columns, "Water level: range 0.3 to 12 m, …"."""
    if len(cells) == 2:
        return f"{cells[0]}: {cells[1]}"
    if _named_columns(cells, header):
        return f"{cells[0]}: " + ", ".join(f"{h.lower()} {c}" for h, c in zip(header[1:], cells[1:], strict=True))
    return " | ".join(cells)


def _dedupe(candidates: list[_Candidate]) -> list[_Candidate]:
    """One candidate per stretch of a document (overlapping chunks) and per identical text."""
    kept: list[_Candidate] = []
    by_document: dict[int, list[_Candidate]] = {}
    seen: dict[str, _Candidate] = {}
    # Longest first, so a full sentence absorbs the fragment of it another chunk starts with.
    for c in sorted(candidates, key=lambda c: (-(c.doc_end - c.doc_start), c.order, c.doc_start)):
        same_doc = by_document.setdefault(c.source.document_id, [])
        twin = next((k for k in same_doc if k.doc_start < c.doc_end and c.doc_start < k.doc_end), None)
        twin = twin or seen.get(c.text.lower())
        if twin is not None:
            twin.order = min(twin.order, c.order)
            continue
        same_doc.append(c)
        seen[c.text.lower()] = c
        kept.append(c)
    kept.sort(key=lambda c: (c.order, c.doc_start))
    return kept


def _score(
    question: str,
    candidates: list[_Candidate],
    embed: Callable[[list[str]], Vectors] | None,
    opts: ExtractiveOptions,
    before: Sequence[str] = (),
) -> Vectors | None:
    """Score every candidate in place; returns the question's own embedding (None without
    ``embed``). With ``before`` (earlier turns, oldest first) the question is read in the
    conversation, as retrieval reads it: their words count at ``history_term_weight``, and the
    question's vector is blended with theirs, each turn back ``history_decay`` times the weight of
    the one after it."""
    own = set(_content(_INTERROGATIVE.sub(" ", question)))
    asked = own | set(_content(" ".join(before)))
    vocabulary = set().union(*(c.terms | c.context for c in candidates))
    meets = {t: {v for v in vocabulary if _same_word(t, v)} for t in asked}
    n = len(candidates)
    weight = {t: math.log(1 + n / (1 + sum(bool(meets[t] & c.terms) for c in candidates))) for t in asked}
    weight.update({t: opts.history_term_weight * weight[t] for t in asked - own})
    wanted = _answer_kind(question)
    names, theirs = _asked_names(question)
    # A part the question gives nothing to measure (no name for ``subject``, no kind of answer for
    # ``kind``) is left out of the blend, as the cosine is without embeddings: a zero every sentence
    # shares would only lower every score against the bar.
    # The asker's own case ("an SUV", "my type `Foo`") is neither what a source must name nor what
    # makes a sentence about the question: it stays out of the focus words all the same.
    named = set(_content(" ".join([*names.values(), *theirs.values()])))
    asks = {"subject": bool(names), "kind": wanted is not None}
    mentions: dict[int, set[str]] = {}  # per document: what all its given chunks name
    editions: dict[int, bool] = {}  # per source: whether its title is another edition's
    for source in {id(c.source): c.source for c in candidates}.values():
        about = _about(source, source.location.heading_path, source.text)
        mentions.setdefault(source.document_id, set()).update(
            sentences.runs(about), sentences.initials(about), map(sentences.stem, sentences.words(about))
        )
        editions[id(source)] = _other_edition(names, _title(source))
    # The asker's case counts as a name where a source writes it (then a sentence about it is about
    # the question: "a follow-up PR" where pages say "PR").
    names |= {k: v for k, v in theirs.items() if any(_names(k, said) for said in mentions.values())}
    asks["subject"] = bool(names)
    entities = _entities(names)
    short = _acronyms(question, names)
    for c in candidates:
        said = mentions[c.source.document_id]
        c.missing_entity = any(not _names(e, said) and not _names(short.get(e) or e, said) for e in entities)
        c.other_edition = editions[id(c.source)]
        # A sentence that writes the name is about it as much as a page whose heading does: "An error that
        # is not Send cannot …" under "Error types" against every sentence under a heading "Send and Sync".
        carried = sentences.runs(c.about) | sentences.runs(c.text)
        carries = [_names(e, carried) or _names(short.get(e) or e, carried) for e in names]
        c.subject = sum(carries) / len(names) if names else 0.0
        # The question's names say nothing about which sentence answers (``subject`` measures them): the
        # overlap is over the rest, the focus. A focus word the sentence's headings or document name have
        # counts in part for each sentence under them (``_met``): it does not tell them apart, yet a list
        # under "Criteria for a Production-Like Environment" is what answers "what makes one so?".
        focus = [t for t in asked if t not in named]
        total = sum(weight[t] for t in focus)
        met = sum(weight[t] * _met(meets[t], c, opts) for t in focus)
        c.overlap = met / total if total else 1.0
        c.fit = 1.0 if wanted is not None and wanted.search(_EMPHASIS.sub("", c.text)) else 0.0
    if embed is not None:
        embedded = sorted(candidates, key=lambda c: -_blend(c, opts, cosine=False, **asks))[: opts.embed_limit]
        vectors = embed([question, *before, *(c.embed_text for c in embedded)])
        turns, vectors = vectors[: 1 + len(before)], vectors[1 + len(before) :]
        blended = sum(opts.history_decay**age * v.astype(np.float64) for age, v in enumerate([turns[0], *turns[:0:-1]]))
        blended = (blended / (np.linalg.norm(blended) or 1.0)).astype(np.float32)
        for c, vector, cosine in zip(embedded, vectors, np.clip(vectors @ blended, 0.0, 1.0), strict=True):
            c.cosine, c.vector = float(cosine), vector
    for c in candidates:
        off = c.missing_entity or c.other_edition
        c.signpost = bool(_SIGNPOST.match(c.text))
        c.score = _blend(c, opts, cosine=embed is not None, **asks) * (opts.entity_penalty if off else 1.0)
        c.score *= opts.signpost_penalty if c.signpost else 1.0
    return turns[0] if embed is not None else None


# Emphasis markers: "select the **Transit Coordinator**" names a role as plain "select the Transit
# Coordinator" does; the kinds' patterns read words, not markup (identifiers such as ``into_inner`` keep theirs).
_EMPHASIS = re.compile(r"\*+|(?<![\w])_+(?=\w)|(?<=\w)_+(?![\w])")


# A sentence about its own page ("This page outlines how to sign up and how to cancel", "Read more
# here") shares the question's words but points at the answer instead of giving it (English cues).
_SIGNPOST = re.compile(
    r"\W*(?:(?:this|the following|the next|below,?)\s+(?:page|section|document|doc|guide|article|chapter|readme)"
    r"\b[^.!?]{0,60}?\b(?:outlines?|describes?|covers?|explains?|lists?|contains?|provides?|summari[sz]es?"
    r"|walks?|shows?|will)\b|(?:read|learn|find out)\s+more\b|(?:see|refer to)\b[^.!?]{0,80}\bfor\s+"
    r"(?:more|details|further))",
    re.IGNORECASE,
)


# An amount the asker states ("about $3,000", "12,500 users") is their case, which a document states
# as a range or a bar ("more than $2,500"), not a name it must repeat.
_QUANTITY = re.compile(r"[$\u20ac\u00a3\u00a5]\d[\d,.]*|\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def _names(name: str, said: set[str]) -> bool:
    """Whether ``said`` (a text's squashed words and runs) has ``name``, also in the plural or the
    singular: a question's "API" is a document's "APIs", its "PRs" a document's "PR" (the stemmer
    leaves "-is" words alone, "analysis", so "apis" is not "api" to it)."""
    return (
        name in said
        or sentences.stem(name) in said
        or f"{name}s" in said
        or (len(name) > 3 and name.endswith("s") and name[:-1] in said)
    )


def _acronyms(question: str, names: dict[str, str]) -> dict[str, str]:
    """Each word of a name the question spells out in two to five capitalised words, with the
    name's acronym: "Individual Development Plan" -> "idp" for each of its words, so a sentence that
    writes "An IDP is no longer required …" names what the question names, as one that spells it out
    does (the other way round, a question's "IDP" finds the words through ``sentences.initials``)."""
    out: dict[str, str] = {}
    run: list[str] = []
    for word in [*question.split(), ""]:
        token = word.strip(".,;:!?()[]{}*_`\"'\u201c\u201d")
        squashed = token.lower()
        if squashed in names and token[:1].isupper() and token.isalpha():
            run.append(squashed)
            if not word.endswith((".", ",", ";", ":", "!", "?", ")")):
                continue
        short = "".join(w[0] for w in run)
        if 2 <= len(run) <= 5 and short not in sentences.STOP_WORDS:  # "Office Relocation" is no "or"
            out.update(dict.fromkeys(run, short))
        run = []
    return out


def _asked_names(question: str) -> tuple[dict[str, str], dict[str, str]]:
    """The names the question asks about, and the names of the asker's own case, apart.

    Besides :func:`sentences.names`: a version after a name ("Python 2.7"). The asker's own case is
    a name they introduce as theirs or as one instance of a kind, right after "my", "our", "a" or
    "an", with at most two lower-case words between ("an SUV", "my type `Foo`", "an API key"): documents
    state the rule for the kind ("the lowest cost compact car"), not for the asker's example, so a
    source that never writes it is not about something else."""
    names = sentences.names(question)
    for span in _CODE_SPAN.findall(question):
        if not re.search(r"_|::|#", span):
            continue  # "`static`", "`const`": a word in code quotes, which prose writes as a word ("Constants")
        key = sentences.squashed(span)
        if len(key) >= 2 and key not in sentences.STOP_WORDS:
            names.setdefault(key, span)
    for version in _VERSION.findall(question):
        names.setdefault(sentences.squashed(version), version)
    own = {sentences.squashed(m["name"]) for m in _OWN_CASE.finditer(question)}
    own |= {sentences.squashed(m) for m in _PROPOSED.findall(question)}
    theirs = {k: v for k, v in names.items() if k in own}
    return {k: v for k, v in names.items() if k not in own}, theirs


# An identifier in code quotes ("`must_use`", "`#[inline]`", "`Box::into_raw`"), not an expression: with an
# underscore, a path or an attribute's "#" it can only be written as itself.
_CODE_SPAN = re.compile(r"`(#?\[?[A-Za-z_]\w*(?:::\w+)*\]?)`")
# A name the asker proposes: "be called `get_name`", "named `Uuid`".
_PROPOSED = re.compile(
    r"\b(?:called|named|call (?:it|them)|name (?:it|them))\s+[`\"'\u201c]?([^\s`\"'\u201d?!,;:]+)", re.I
)
_VERSION = re.compile(r"(?<=[A-Za-z] )v?(\d+(?:\.\d+)+)\b(?![.,]\d|\s*%)")
_OWN_CASE = re.compile(r"\b(?i:my|our|an?)\s+(?:[a-z][a-z-]*\s+){0,2}[`\"'\u201c]?(?P<name>[^\s`\"'\u201d?!,;:]+)")


def _entities(names: dict[str, str]) -> list[str]:
    """The question's names a source must have to be about what it asks (quantities left out)."""
    return [squashed for squashed, written in names.items() if not _QUANTITY.fullmatch(written)]


def _before(
    question: str, earlier: Sequence[str], opts: ExtractiveOptions, continues: bool | None = None
) -> tuple[str, ...]:
    """The earlier turns ``question`` is read with: the last ``history_turns``, when it continues
    the conversation — as retrieval decided (``continues``), or else as it reads ("and for
    contractors?", "how long does that take?"); a question that stands on its own is read alone."""
    follows = conversation.leans_back(question) if continues is None else continues
    if opts.history_turns <= 0 or not follows:
        return ()
    return tuple(t for t in earlier if t.strip())[-opts.history_turns :]


def _beyond_sources(
    question: str,
    sources: Sequence[Passage],
    best: _Candidate,
    asked: Vectors | None,
    embed: Callable[[list[str]], Vectors] | None,
    opts: ExtractiveOptions,
) -> bool:
    """Whether the question is about something the sources never mention, though its best sentence
    scores well on the rest: at least half of its focus words are in no source (text, headings or
    document name), and those words do not bring the question nearer the best sentence — the
    question without them is at least as close to it. "Who is the head of marketing?" over
    sources that never say "marketing" is not answered by "Head office moves to Leeds"; "Which
    formats are accepted?" is answered by "The file types you can upload are…", which the
    embedder finds nearer with "formats" and "accepted" than without them. Without embeddings,
    a missing word and a paraphrase cannot be told apart, and this never says no."""
    missing = _unmentioned(question, sources)
    if not missing or embed is None or asked is None or best.vector is None:
        return False
    without = re.sub(r"[^\W\d_]+", lambda m: "" if set(_content(m[0])) & missing else m[0], question)
    (reduced,) = embed([" ".join(without.split())])
    carried = float(asked @ reduced) < opts.beyond_similarity
    return carried and float(best.vector @ asked) <= float(best.vector @ reduced)


def _unmentioned(question: str, sources: Sequence[Passage]) -> set[str]:
    """The question's focus words (content words, names left out) that are in no source, when they
    are at least half of them; else none."""
    names, theirs = _asked_names(question)
    named = set(_content(" ".join([*names.values(), *theirs.values()])))
    focus = {t for t in _content(_INTERROGATIVE.sub(" ", question)) if t not in named}
    said = set(_content(" ".join(f"{_about(s, s.location.heading_path)} {s.text}" for s in sources)))
    missing = {t for t in focus if not any(_same_word(t, w) for w in said)}
    return missing if 2 * len(missing) >= len(focus) > 0 else set()


def _about(source: Passage, heading_path: str, extra: str = "") -> str:
    """What a sentence is about beyond its own words: its document's name, its headings, ``extra``."""
    name = re.sub(r"[.]\w{1,5}$", "", source.document_name)
    return f"{name} {heading_path} {extra}"


def _title(source: Passage) -> str:
    """The document's name (its separators as spaces) and its top heading: what it says it is."""
    name = re.sub(r"[.]\w{1,5}$", "", source.document_name)
    return f"{re.sub(r'[-_.]+', ' ', name)} {source.location.heading_path.split(' > ')[0]}"


def _other_edition(asked: dict[str, str], title: str) -> bool:
    """Whether ``title`` is another edition of what the question asks about: for a year or code the
    question names ("2024", "Q3"), the title has one of the same form ("2025", "Q2") and none of the
    question's. The body does not count: the 2025 policy says "what changed from 2024"."""
    titled = [t for t in sentences.names(title) if any(ch.isdigit() for ch in t)]
    for name in asked:
        if not any(ch.isdigit() for ch in name):
            continue
        alike = {t for t in titled if _form(t) == _form(name)}
        if alike and not alike & asked.keys():
            return True
    return False


def _form(code: str) -> str:
    """A code's shape: "q3" and "q2" -> "a9", "2024" -> "9999"."""
    return re.sub(r"\d", "9", re.sub(r"[^\W\d]", "a", code))


def _met(forms: set[str], c: _Candidate, opts: ExtractiveOptions) -> float:
    """How far a sentence has one of the question's words (``forms``: the word as the candidates
    write it): ``heading_overlap`` when its headings, document name or table header have it — every
    sentence under them alike, whether or not it repeats the word, so the heading does not tell them
    apart, but under "Criteria for a Production-Like Environment", "Runs the same operating system as
    production" is about being production-like though it does not say so —, else 1 in its own words."""
    return opts.heading_overlap if forms & c.context else 1.0 if forms & c.terms else 0.0


def _blend(c: _Candidate, opts: ExtractiveOptions, *, cosine: bool, subject: bool = True, kind: bool = True) -> float:
    parts = [(opts.overlap_weight, c.overlap), (opts.rank_weight, 1 / (1 + c.order))]
    if kind:
        parts.append((opts.kind_weight, c.fit))
    if subject:
        parts.append((opts.subject_weight, c.subject))
    if cosine:
        parts.append((opts.cosine_weight, c.cosine or 0.0))
    return sum(w * v for w, v in parts) / sum(w for w, _ in parts)


def _same_word(a: str, b: str) -> bool:
    """Equal stems, or one a short extension of the other ("weigh"/"weight", "launch"/"launcher")."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and long.startswith(short) and len(long) - len(short) <= 3 and not short[0].isdigit()


# Words that say what kind of answer is wanted, not what it is about: the answer need not repeat them
# ("What is the name of the company VPN?" is answered by "Use Corvid Connect").
_INTERROGATIVE = re.compile(
    r"\bhow (?:long|many|much|far|often|old|big|large|soon)\b|\bwhat (?:kinds?|types?|sorts?) of\b|\blast\s*\?\s*$"
    r"|\bnames? of\b|\b(?:called|named)\b|\b(?:mean|stand for|describe|refer to)\s*\?\s*$",
    re.I,
)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_SPELLED = f"(?:{'|'.join(sentences.NUMBER_WORDS)})"  # a number written out ("three to five weeks")
_KINDS = (  # what kind of answer a question asks for, and how a sentence shows it has one
    (
        re.compile(r"^\s*when\b|\bwhat (?:year|date|day|month)\b|\bwhich (?:year|date|day|month)\b", re.I),
        re.compile(rf"\b(?:{_MONTHS}|(?:19|20)\d\d)\b|\b\d{{1,2}}[/.-]\d{{1,2}}[/.-]\d{{2,4}}\b", re.I),
    ),
    (
        re.compile(r"\bhow (?:long|far ahead|soon)\b|\bhow many (?:hours|minutes|days|weeks|months|years)\b", re.I),
        re.compile(
            rf"(?:\d|\b{_SPELLED})\s*(?:[a-z]+\s+)?(?:hours?|minutes?|days?|nights?|weeks?|months?|quarters?|years?|seconds?|h|min)\b",
            re.I,
        ),
    ),
    (
        re.compile(r"\bwhat time\b|\bat what time\b|\bopening hours\b", re.I),
        re.compile(r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)", re.I),
    ),
    (
        re.compile(
            r"\bhow (?:many|much|far|big|large|heavy|old|often|fast|tall|wide)\b|\bwhat (?:percentage|share)\b"
            r"|\b(?:price|cost|number of|rate|amount|limit|maximum|minimum)\b",
            re.I,
        ),
        re.compile(r"\d"),
    ),
    (
        re.compile(r"^\s*who\b|\bwhose\b|\bwhich (?:person|manager)\b", re.I),
        re.compile(r"(?<=\S\s)[A-Z][a-z]+(?:\s+(?:[A-Z][a-z]+|[A-Z]\.))+|^[A-Z][a-z]+\s+[A-Z][a-z]+\b"),
    ),
    (  # a yes/no question (its last sentence opens with a verb) is answered by a rule: a verdict
        re.compile(
            r"(?:^|[.!?]\s+|,\s*(?:so|but|or)\s+)(?:can|could|may|might|should|must|shall|is|are|am|do|does|did|will"
            r"|would|has|have)\b[^.!?]*\?\s*$",
            re.I,
        ),
        re.compile(
            r"\b(?:must|should|shall|never|not|no longer|cannot|only|required?|prohibited|allowed|permitted"
            r"|recommended|exempt|forbidden|mandatory|optional|unless)\b|n't\b",
            re.I,
        ),
    ),
)


# The kinds whose answer is a value a sentence must state (not a verdict or a name, which prose may
# give in many ways): dates, durations, times, numbers.
_VALUE_KINDS = frozenset(shows for _, shows in _KINDS[:4])
# Asked for in so many words: "when" also opens a condition ("When someone leaves, …?") and "limit" is
# also a verb, so the kinds' own cues are too loose to decline on.
_VALUE_QUESTION = re.compile(
    r"\bhow (?:long|many|much|far|old|often|soon)\b|\b(?:what|which) (?:year|date|day|month|time|percentage)\b", re.I
)


# "What is X?", "What does X mean?": a definition is asked for; the sentence that defines X answers
# it ("X is …", "**X**: …", "X means …"), not one that merely mentions X.
_DEFINE = re.compile(
    r"^\s*(?:what(?:'s|\u2019s| is| are)|what does|define)\s+(?:an?\s+|the\s+)?[\"'\u201c\u2018`*]*"
    r"(?P<term>[^\"'\u201d\u2019`*?]{2,60}?)[\"'\u201d\u2019`*]*"
    r"(?:\s+(?:mean|stand for|describe|cover|refer to))?\s*\??\s*$",
    re.I,
)


def _definition(term: str) -> re.Pattern[str]:
    words = r"[\s\-_*`\"'\u201c\u201d]+".join(re.escape(w) for w in term.split())
    return re.compile(
        rf"^\W*(?:an?\s+|the\s+)?{words}\W*(?:\([^)]*\)\s*)?(?:is|are|means|refers to|stands for|:|\u2014|\u2013|-)\s",
        re.I,
    )


def _unstated(question: str, candidates: list[_Candidate], bar: float) -> str | None:
    """What value the question asks for, when no sentence scoring at least ``bar`` states it (else
    None): "How long should we keep logs?" is not answered by a sentence about logging that gives no
    duration. A count of things that are not a measure ("how many holidays") is not stated by a
    number of hours, days or money ("8 hours for the paid holiday"), nor a rate ("the per-mile rate")
    by a number that is not per anything (an expense "over $75")."""
    above = [c for c in candidates if c.score >= bar]
    if (unit := _counted(question)) is not None:
        if not any(_counts(c.text) for c in above):
            return f"a number of {unit}, and the numbers there are amounts of time or money, or none"
        return None
    if _RATE_QUESTION.search(question):
        if not any(_RATE.search(c.text) for c in above):
            return "a rate, and no number there is per anything"
        return None
    asks = _VALUE_QUESTION.search(question) and _answer_kind(question) in _VALUE_KINDS
    return "a value of that kind" if asks and not any(c.fit for c in above) else None


# "How many paid federal holidays do …": the words after "how many" up to a stop word (the verb, a
# preposition, a pronoun); the last of them names what is counted.
_HOW_MANY = re.compile(r"\bhow many\s+((?:[a-z][\w-]*\s+){0,4})", re.I)
# Amounts that are measures, not counts of things: time ("four 10-hour days", "15+ years"), money,
# shares, dates; and numbers that label ("Example 1", "Line #1145", "version 2").
_UNITS = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|months?|quarters?|years?|h|s|ms)"
# A number's digits are one atomic group that never ends in its separator: "1,2,3" is read one way
# only, where a number that could end in "," beside a "," between numbers backtracked exponentially
# (a line of 22 "1," took 21 s).
_NUMBER = rf"(?:(?>\d+(?:[,.]\d+)*)\+?|\b{_SPELLED}\b)"
# Numbers in a row ("1, 2 or 3", "10-12"): a run starts where no number goes on before it, and is
# never given back, so a line of "1-1-1-…" costs one pass, not one per start and length.
_AMOUNTS = rf"(?<![\d.,\u2013-]){_NUMBER}(?:\s*(?:,|-|\u2013|to|or|and)\s*{_NUMBER})*+"
_MEASURE = re.compile(
    rf"[$\u20ac\u00a3\u00a5]\s?\d[\d,.]*|{_AMOUNTS}\s*(?:%|(?:[\w-]++\s+){{0,2}}{_UNITS}\b)"
    r"|\b(?:examples?|steps?|lines?|items?|sections?|chapters?|figures?|tables?|pages?|versions?|rules?|no\.|number)"
    r"\s*#?\d[\d.]*"
    rf"|\b(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)\b|\b(?:19|20)\d\d\b",
    re.I,
)
_COUNT = re.compile(rf"{_NUMBER}", re.I)
# "What's the per-mile rate", "what rate … per night": a number per something is asked for.
_RATE_QUESTION = re.compile(
    r"^(?=.*\brates?\b)(?=.*\bper[\s-]+[a-z])|^\s*what(?:'s|\u2019s| is)? (?:the )?rate\b", re.I
)
_RATE = re.compile(rf"\d[^.;]{{0,40}}?(?:\bper\b|/\s*[a-z]|\ban?\s+(?:[a-z]+\s+)?{_UNITS}\b|%|\beach\b)", re.I)


def _counted(question: str) -> str | None:
    """What a "how many" question counts, when it is not itself a measure of time: "holidays" in "How
    many paid federal holidays do we get?"; None for "how many days …" (a duration, whatever follows)."""
    if not (m := _HOW_MANY.search(question)):
        return None
    said: list[str] = []
    for word in m[1].split():
        if word.lower() in sentences.STOP_WORDS or word.lower() == "gets":
            break
        said.append(word)
    # "How many days until payment?": a unit of time among the words is the measure asked for, and
    # the word after it ("until", "before") a connective the stop words do not list.
    if not said or any(re.fullmatch(_UNITS, word, re.I) for word in said):
        return None
    return said[-1]


def _counts(text: str) -> bool:
    """Whether ``text`` has a number that is not an amount of time or money, a share or a date."""
    return bool(_COUNT.search(_MEASURE.sub(" ", text)))


def _answer_kind(question: str) -> re.Pattern[str] | None:
    if (asked := _DEFINE.match(question)) and len(asked["term"].split()) <= 5:
        return _definition(asked["term"].strip())
    return next((shows for asks, shows in _KINDS if asks.search(question)), None)


def _select(candidates: list[_Candidate], floor: float, opts: ExtractiveOptions) -> list[_Candidate]:
    chosen: list[_Candidate] = []
    eligible = [c for c in candidates if c.score >= floor]
    while len(chosen) < opts.max_sentences:
        pool = [c for c in eligible if c not in chosen and not any(_near_duplicate(c, k, opts) for k in chosen)]
        if not pool:
            break
        chosen.append(max(pool, key=lambda c: (c.score + _adjacency(c, chosen, opts), -c.order, -c.doc_start)))
    return chosen


def _near_duplicate(a: _Candidate, b: _Candidate, opts: ExtractiveOptions) -> bool:
    shorter = min(len(a.terms), len(b.terms))
    return shorter > 0 and len(a.terms & b.terms) >= opts.duplicate_overlap * shorter


def _adjacency(c: _Candidate, chosen: list[_Candidate], opts: ExtractiveOptions) -> float:
    for k in chosen:
        if k.source.document_id != c.source.document_id:
            continue
        first, second = (k, c) if k.doc_start < c.doc_start else (c, k)
        if first.source is second.source:
            gap = first.source.text[first.unit.end : second.unit.start]
        else:
            gap = " " * max(second.doc_start - first.doc_end, 0)
        if 0 < len(gap) <= 3 and not gap.strip():
            return opts.adjacency_bonus
    return 0.0


# A sentence opening with one of these points back at the sentence before it ("This person will
# coordinate the fix": which person?).
_ANAPHOR = re.compile(r"(?:this|that|these|those|it|its|they|their|them|he|she|his|her|such|both)\b", re.I)


# A "why" question, and a sentence that says "why" itself: it points at the reason ("this is why X is
# defined the way it is", "to see why, consider …") rather than giving it.
_WHY = re.compile(r"\bwhy\b", re.I)


def _with_reason(c: _Candidate, chosen: list[_Candidate], opts: ExtractiveOptions) -> _Candidate:
    """``c`` with the next sentence of its section when it only points at a reason ("this is why …"):
    past a code block or link definitions between them, not past a heading or a list."""
    if c.items or c.code is not None or c.lead is not None or not _WHY.search(c.text) or not c.units:
        return c
    units, source = c.units, c.source
    end = c.unit.end
    for unit in units[c.index + 1 :]:
        if unit.start < end:
            continue
        if unit.kind == "code" or (unit.kind in sentences.PROSE and _LINK_DEFINITIONS.fullmatch(unit.normalised)):
            continue
        if unit.kind != "sentence" or len(unit.text) > opts.max_chars:
            return c
        if any(k.source is source and k.unit.start <= unit.start < k.unit.end for k in chosen):
            return c
        span = sentences.Unit(c.unit.start, unit.end, source.text[c.unit.start : unit.end], c.unit.kind)
        return replace(c, unit=span, text=f"{c.text} {_quoted(unit)}", doc_end=c.doc_end + (unit.end - c.unit.end))
    return c


def _in_context(
    c: _Candidate, chosen: list[_Candidate], asked: frozenset[str], opts: ExtractiveOptions, *, whole: bool
) -> _Candidate:
    """``c`` as it can be read alone: with the sentence before it when it opens with a pronoun or
    demonstrative (same paragraph, and not itself chosen), and with the code block it introduces
    ("… run the following command:" and the fenced command) when that block is short. ``asked``:
    the question's own content words. ``whole``: ``c`` is the answer's best sentence, so a list item
    comes with the sentences that continue it, and with the rest of its list under a lead-in that is
    a sentence; the other items an answer quotes are supporting points, each quoted alone under its
    lead-in: their continuations and the items beside them cost words that seldom answer
    (docs/ANSWERS.md)."""
    units, n, source = c.units, c.index, c.source
    if not units:
        return c
    if whole and c.unit.kind == "item":
        c = _whole_item(c, opts)
    if c.lead is not None:
        return _under_lead_in(c, asked, opts) if whole else c
    unit, text = c.unit, c.text
    if unit.kind == "sentence" and n > 0 and _ANAPHOR.match(text):
        prev = units[n - 1]
        gap = source.text[prev.end : unit.start]
        taken = any(k.source is source and k.index == n - 1 for k in chosen)
        if prev.kind in sentences.PROSE and "\n\n" not in gap and not taken and len(prev.text) <= opts.max_chars:
            before = _quoted(prev)
            unit = sentences.Unit(prev.start, unit.end, source.text[prev.start : unit.end], prev.kind)
            c = replace(c, unit=unit, text=f"{before} {text}", doc_start=c.doc_start - (c.unit.start - prev.start))
    if _LEAD_IN.search(text) and n + 1 < len(units) and units[n + 1].kind == "item":
        c = _with_list(c, opts)
    elif _introduces_code(text) and n + 1 < len(units) and units[n + 1].kind == "code":
        block = units[n + 1]
        code: tuple[str, int] | None = (block.text, block.end)
        if block.text.count("\n") > opts.max_code_lines + 1 or len(block.text) > opts.max_code_chars:
            code = _code_lines(block, asked)
        if code is not None:
            end = code[1]
            unit = sentences.Unit(c.unit.start, end, source.text[c.unit.start : end], c.unit.kind)
            c = replace(c, unit=unit, code=code[0], doc_end=c.doc_end + (end - c.unit.end))
    return c


# A line that starts a command or a statement, not the output of the one before it.
_PROMPT = re.compile(r"\s*(?:[$#%>]|>>>|\.\.\.)\s")


def _code_lines(block: sentences.Unit, asked: frozenset[str]) -> tuple[str, int] | None:
    """From a code block too long to quote, the one line with more words the question has than any
    other line (identifiers read as their parts: ``system_uid_max`` is "system uid max"), with the
    line after it when that is its output, as a block of its own; and where that excerpt ends in the
    document. None when no line stands out."""
    lines = block.text.split("\n")
    fence = lines[0].strip() if lines[0].lstrip().startswith(("```", "~~~")) else None
    body = range(1, len(lines) - 1) if fence else range(len(lines))
    hits = {
        i: sum(any(_same_word(t, w) for t in asked) for w in set(_content(re.sub(r"[_\W]+", " ", lines[i]))))
        for i in body
    }
    ranked = sorted(hits.values(), reverse=True)
    if not ranked or ranked[0] == 0 or (len(ranked) > 1 and ranked[1] == ranked[0]):
        return None
    best = max(hits, key=hits.__getitem__)
    taken = [best]
    if (
        best + 1 in hits
        and lines[best + 1].strip()
        and _PROMPT.match(lines[best])
        and not _PROMPT.match(lines[best + 1])
    ):
        taken.append(best + 1)  # "$ pkg-config --variable=system_uid_max systemd" and its "999"
    excerpt = "\n".join(lines[i].strip() for i in taken)
    end = block.start + sum(len(line) + 1 for line in lines[: taken[-1] + 1]) - 1
    marker = fence[:3] if fence else "```"
    return f"{marker}\n{excerpt}\n{marker}", end


def _introduces_code(text: str) -> bool:
    """A line that says what the code block right after it does: it ends with a colon ("Run:"), or it
    is a short caption without a full stop ("Enable the extension", "Get the nearest neighbors"), as
    READMEs write them: the block is the answer such a line only names."""
    return text.endswith(":") or (not text.endswith((".", "!", "?", ")")) and len(text.split()) <= 12)


# A sentence that introduces the list right after it: it ends with a colon, or speaks of "the following".
_LEAD_IN = re.compile(r":$|\bthe following\b|\bas follows\b", re.I)


def _under_lead_in(c: _Candidate, asked: frozenset[str], opts: ExtractiveOptions) -> _Candidate:
    """A list item with its lead-in: the whole list under the lead-in when the lead-in is a sentence
    and the list short enough ("you must have all of the following:" is answered by all of them);
    else, or when the question names something only this item of the list has (asked which of
    "four UIDs are special" is the `nobody` one), the item as it reads, after its lead-in."""
    lead = c.units[c.lead_index]
    if lead.kind != "sentence" or c.lead is None:
        return c
    start = c.source.location.char_start + lead.start
    alone = replace(
        c, unit=lead, index=c.lead_index, text=c.lead, lead=None, doc_start=start, doc_end=start + len(lead.text)
    )
    listed = _with_list(alone, opts)
    if not listed.items:
        return c
    mine = c.text[len(c.lead) :].strip()
    here = set(_content(mine))
    others = set(_content(c.lead)).union(*(_content(item) for item in listed.items if item != mine))
    only_here = any(any(_same_word(t, w) for w in here) and not any(_same_word(t, w) for w in others) for t in asked)
    return c if only_here else listed


def _inside(c: _Candidate, k: _Candidate) -> bool:
    same = c.source.document_id == k.source.document_id
    whole = bool(k.items) or (k.unit.kind == "item" and k.doc_end - k.doc_start > c.doc_end - c.doc_start)
    return same and whole and k.doc_start <= c.doc_start and c.doc_end <= k.doc_end


def _whole_item(c: _Candidate, opts: ExtractiveOptions) -> _Candidate:
    """A list item with the sentences that continue it (up to a blank line or the next item), when
    the whole item is short: an item is one point, and its first sentence often only sets it up
    ("It is tempting to micro-optimize." before why not; "Do not attack X." before what is tolerated)."""
    units, source = c.units, c.source
    previous, extra = c.unit, []
    for unit in units[c.index + 1 :]:
        if unit.kind != "sentence" or "\n\n" in source.text[previous.end : unit.start]:
            break
        extra.append(_quoted(unit))
        previous = unit
    if not extra or len(c.text) + sum(len(e) + 1 for e in extra) > opts.max_item_chars:
        return c
    end = previous.end
    unit = sentences.Unit(c.unit.start, end, source.text[c.unit.start : end], c.unit.kind)
    return replace(c, unit=unit, text=" ".join([c.text, *extra]), doc_end=c.doc_end + (end - c.unit.end))


def _with_list(c: _Candidate, opts: ExtractiveOptions) -> _Candidate:
    """``c`` with the items of the list it introduces (each item's first sentence), when the list is
    short enough to quote: "submit the following paperwork" is answered by the paperwork."""
    units, source = c.units, c.source
    items: list[str] = []
    end = c.unit.end
    previous = c.unit
    for unit in units[c.index + 1 :]:
        gap = source.text[previous.end : unit.start]
        if unit.kind == "sentence" and "\n\n" not in gap and items:
            previous = unit  # the rest of an item's text: the item's first sentence stands for it
            continue
        if unit.kind != "item":
            break
        items.append(_quoted(unit))
        previous, end = unit, unit.end
        if len(items) > opts.max_list_items:
            return c
    if not items or sum(map(len, items)) > opts.max_list_chars:
        return c
    unit = sentences.Unit(c.unit.start, end, source.text[c.unit.start : end], c.unit.kind)
    return replace(c, unit=unit, items=tuple(items), doc_end=c.doc_end + (end - c.unit.end))


def _evidence(c: _Candidate) -> Evidence:
    source, unit = c.source, c.unit
    loc = source.location
    line = loc.line_start + source.text.count("\n", 0, unit.start)
    where = replace(
        loc,
        char_start=c.doc_start,
        char_end=c.doc_end,
        line_start=line,
        line_end=line + unit.text.count("\n"),
        heading_path=c.heading_path,
    )
    return Evidence(
        source.number,
        source.document_id,
        source.document_name,
        _shown(c),
        unit.start,
        unit.end,
        where,
        round(c.score, 4),
        None if c.cosine is None else round(c.cosine, 4),
        round(c.overlap, 4),
    )


def _shown(c: _Candidate) -> str:
    if c.code is not None:
        return f"{c.text}\n{c.code}"
    if c.items:
        return "\n".join([c.text, *(f"- {item}" for item in c.items)])
    return c.text


def _heading_paths(source: Passage, units: list[sentences.Unit]) -> list[str]:
    """The heading path at each unit: the chunk's own, updated by the Markdown headings inside it."""
    path = source.location.heading_path.split(" > ") if source.location.heading_path else []
    shift: int | None = None  # path depth minus Markdown level, known from the chunk's first heading
    out: list[str] = []
    for unit in units:
        if unit.kind == "heading":
            level = _level(source.text, unit)
            if shift is None:
                shift = len(path) - level if path and path[-1] == unit.text else 0
            depth = max(1, min(level + shift, len(path) + 1))
            path = [*path[: depth - 1], unit.text]
        out.append(" > ".join(path))
    return out


def _level(text: str, unit: sentences.Unit) -> int:
    line_start = text.rfind("\n", 0, unit.start) + 1
    hashes = len(text[line_start : unit.start].strip())
    if hashes:
        return hashes
    underline = text[unit.end : unit.end + 3].lstrip(" \t\n")[:1]
    return 1 if underline == "=" else 2


def _compose_text(chosen: list[_Candidate], evidence: tuple[Evidence, ...]) -> str:
    blocks: list[str] = []
    for c, e in zip(chosen, evidence, strict=True):
        if c.code is not None:  # the sentence, its citation, then the block it introduces, on its own
            blocks.append(f"{c.text} [{e.number}]\n\n{c.code}")
            blocks.append("")  # what follows starts a paragraph of its own
            continue
        if c.items:  # the lead-in and its citation, then its list
            blocks.append(f"{c.text} [{e.number}]\n" + "\n".join(f"- {item}" for item in c.items))
            blocks.append("")
            continue
        text = re.sub(r"[,;:]$", "…", e.text)
        cited = f"{text} [{e.number}]"
        if c.lead is not None:  # under its lead-in, once for the items of one list
            item = f"- {text[len(c.lead) :].strip()} [{e.number}]"
            if blocks and blocks[-1].startswith(f"{c.lead}\n"):
                blocks[-1] += f"\n{item}"
            else:
                blocks.append(f"{c.lead}\n{item}")
            continue
        if c.unit.kind == "item":
            cited = f"- {cited}"
            if blocks and blocks[-1].startswith("- "):
                blocks[-1] += f"\n{cited}"
                continue
        elif blocks and blocks[-1] and not blocks[-1].startswith("- ") and "\n" not in blocks[-1]:
            # A paragraph of sentences (one line); after a lead-in and its items a sentence starts its own.
            blocks[-1] += f" {cited}"
            continue
        blocks.append(cited)
    return "\n\n".join(b for b in blocks if b)


def _closest(e: Evidence) -> str:
    loc = e.location
    if loc.heading_path:
        where = f"under “{loc.heading_path.split(' > ')[-1]}”"
    elif loc.page:
        where = f"page {loc.page}"
    else:
        where = f"lines {loc.line_start}-{loc.line_end}"
    return f"{CLOSEST} {e.document_name}, {where}."
