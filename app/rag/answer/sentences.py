"""Sentences, clauses and content words: the units answers are composed from and checked against.

One splitter for the rag layer (the extractive composer, the answer guard, citations). ``split``
returns :class:`Unit` s with exact offsets (``text[unit.start:unit.end] == unit.text``), whitespace
trimmed, in order, never overlapping. It reads Markdown-ish text line by line:

- Blocks: a fenced code block (or leading YAML front matter) is one ``code`` unit; ``# Title``
  lines and setext-underlined lines are ``heading`` s; table rows are ``table``, table and
  thematic rules are ``rule`` (also a plain-text table's: columns two or more spaces apart over a
  line of dashes, a row's overflow indented past its first column); a list item is an ``item``
  (its marker left out of the span). Everything else is prose.
- Prose is cut at blank lines, at ``.``/``!``/``?``/``…`` followed by space and an upper-case letter,
  digit, quote or bracket (so "e.g. this" and "3.5" stay whole; "Dr. Who" too), at the CJK full stops and at a
  line end after such punctuation. A single line break elsewhere is a wrapped line and joins the
  next one — except after a short unpunctuated line followed by a capitalised one, which is a
  ``title`` (a heading in plain text or PDF); so is a paragraph's short first line when the lines
  below it are indented deeper (a definition list's term). ``[n]`` markers right after a sentence end belong to
  that sentence.
- A sentence longer than ``max_chars`` is cut into clauses at ``;``/``:``/dashes, else at commas,
  nearest the middle, each piece at least ``_MIN_CLAUSE`` characters; pieces stay ``sentence`` s.

``terms`` gives a text's content words: lower-cased, light-stemmed (plural, -ing, -ed, -ation),
stop words out, numbers kept (they carry facts). Words alone match across inflections
("installing" / "installation" / "installed" -> "install"); no dictionary is needed.
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["PROSE", "STOP_WORDS", "Unit", "initials", "names", "numbers", "runs", "split", "stem", "terms", "words"]

Kind = Literal["sentence", "item", "title", "heading", "code", "table", "rule"]
PROSE: frozenset[str] = frozenset({"sentence", "item"})

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]+|$)")
_SETEXT = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
_THEMATIC = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_RULE = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ITEM = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+(?=\S)")
_QUOTE = re.compile(r" {0,3}>[ \t]?")
# A sentence end: punctuation, closing quotes/brackets, whitespace, then any [n] markers.
_END = re.compile(
    r"(?:[.!?\u2026]+[\"'\u201d\u2019)\]]*)(?=\s)(?P<space>\s+)(?P<markers>(?:\[\d{1,3}(?:\s*,\s*\d{1,3})*\]\s*)*)"
)
_CJK_END = re.compile(r"[\u3002\uff01\uff1f]+")
_STARTS_SENTENCE = re.compile(r"[\"'\u201c\u2018(\[`*_]*[^\W\d_a-z]|[\"'\u201c\u2018(\[`*_]*\d|[^\x00-\x7f]")
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st sr jr vs fig no vol cf approx inc ltd co dept ca".split())
_CLAUSE_STRONG = re.compile(r"[;:]\s+|\s+[\u2014\u2013]\s+|\s+-\s+")
_CLAUSE_WEAK = re.compile(r",\s+")
_MIN_CLAUSE = 40
_TITLE_MAX = 60
_TERM_MAX = 40
_RUNS_ON = ".,;:!?\u2026-\u2013\u2014([{"  # a line ending so ends a sentence or leads into more: not a title
_FIELD = re.compile(r"(?:\*\*|__)[^*_\n]{1,40}(?::(?:\*\*|__)|(?:\*\*|__):)\s")  # **Label:** value
_LABELLED = re.compile(r"[^:\n]{1,30}:\s+\S")  # Label: value


@dataclass(frozen=True)
class Unit:
    start: int  # offset of the first character in the text given to split()
    end: int  # offset just past the last character
    text: str  # exactly text[start:end]
    kind: Kind

    @property
    def normalised(self) -> str:
        """The text on one line: whitespace runs and quote markers of wrapped lines collapsed."""
        return " ".join(re.sub(r"\n[ \t]*>[ \t]?", " ", self.text).split())


@functools.lru_cache(maxsize=16)
def units(text: str) -> tuple[Unit, ...]:
    """``split(text)``, remembered for the last few texts: the answer guard's review splits one answer
    up to four times (its echoes of the question and of the instructions, its repeats, the review
    itself), and the text is usually the same each time."""
    return tuple(split(text))


def split(text: str, *, max_chars: int = 300) -> list[Unit]:
    """Cut ``text`` into units; see the module docstring."""
    units: list[Unit] = []
    para: list[tuple[int, int]] = []  # (start, end) of the prose lines of the current paragraph
    para_kind: Kind = "sentence"
    lines = _lines(text)
    i = 0
    if text.startswith("---") and _THEMATIC.match(text[: lines[0][1]]):  # YAML front matter: metadata
        close = next(
            (j for j in range(1, len(lines)) if text[lines[j][0] : lines[j][1]].rstrip() in ("---", "...")), None
        )
        if close is not None:
            units.extend(_block(text, 0, lines[close][1], "code"))
            i = close + 1

    def flush() -> None:
        nonlocal para
        if para:
            units.extend(_prose(text, para, para_kind, max_chars))
        para = []

    while i < len(lines):
        start, end = lines[i]
        line = text[start:end]
        fence = _FENCE.match(line)
        if fence:
            flush()
            close = next((j for j in range(i + 1, len(lines)) if _closes(text, lines[j], fence.group(1))), None)
            last = close if close is not None else len(lines) - 1
            units.extend(_block(text, start, lines[last][1], "code"))
            i = last + 1
            continue
        if not line.strip():
            flush()
        elif _ATX.match(line):
            flush()
            units.extend(_block(text, start + _ATX.match(line).end(), end, "heading"))  # type: ignore[union-attr]
        elif _SETEXT.match(line) and para and para_kind == "sentence" and _columns(text, para[-1], lines, i):
            header, para = para[-1], para[:-1]
            flush()
            units.extend(_block(text, *header, "table"))  # a plain-text table: its header row, rule, rows
            units.extend(_block(text, start, end, "rule"))
            i = _plain_rows(text, lines, i + 1, _depth(text, header), units)
            continue
        elif _SETEXT.match(line) and para and para_kind == "sentence":
            heading, para = para[-1], para[:-1]  # the underlined line; CommonMark would take the paragraph
            flush()
            units.extend(_block(text, heading[0], heading[1], "heading"))
        elif _THEMATIC.match(line) or (_TABLE_RULE.match(line) and "|" in line):
            flush()
            units.extend(_block(text, start, end, "rule"))
        elif line.lstrip().startswith("|"):
            flush()
            units.extend(_block(text, start, end, "table"))
        elif item := _ITEM.match(line):
            flush()
            para, para_kind = [(start + item.end(), end)], "item"
        else:
            quote = _QUOTE.match(line)
            if quote and not para:
                start += quote.end()
            if not para:
                para_kind = "sentence"
            para.append((start, end))
        i += 1
    flush()
    return units


def _lines(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    offset = 0
    for line in text.split("\n"):
        out.append((offset, offset + len(line)))
        offset += len(line) + 1
    return out


def _closes(text: str, line: tuple[int, int], fence: str) -> bool:
    stripped = text[line[0] : line[1]].strip()
    return stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0])


def _block(text: str, start: int, end: int, kind: Kind) -> list[Unit]:
    piece = text[start:end]
    if kind == "heading":  # without its closing hashes ("C#" keeps its own)
        piece = re.sub(r"(?:^|[ \t]+)#+[ \t]*$", "", piece)
    left = len(piece) - len(piece.lstrip())
    right = len(piece.rstrip())
    if right <= left:
        return []
    return [Unit(start + left, start + right, text[start + left : start + right], kind)]


def _prose(text: str, lines: list[tuple[int, int]], kind: Kind, max_chars: int) -> list[Unit]:
    """Sentences of one paragraph. A line opening with a bold label ("**Opened:** 2014") starts a
    field, an ``item`` running to the next field; a short unpunctuated line followed by a
    capitalised one is a title, or an ``item`` when it reads "Label: value"."""
    out: list[Unit] = []
    begin = lines[0][0]
    for n, (start, end) in enumerate(lines):
        line = text[start:end].strip()
        if n == 0 and kind == "sentence" and len(lines) > 1 and _is_term(line, text, lines[0], lines[1]):
            out.extend(_block(text, start, end, "title"))  # a definition's term: its explanation follows
            begin = lines[1][0]
            continue
        following = text[lines[n + 1][0] : lines[n + 1][1]].lstrip() if n + 1 < len(lines) else ""
        if _FIELD.match(line) and start > begin:
            out.extend(_sentences(text, begin, start, kind, max_chars))
            begin = start
        if _FIELD.match(line):
            kind = "item"
        if n and not following and _LABELLED.match(line) and _is_title(line, "X"):
            out.extend(_sentences(text, begin, start, kind, max_chars))  # the last of "Label: value" lines
            begin, kind = start, "item"
        elif following and not _FIELD.match(line) and _is_title(line, following):
            out.extend(_sentences(text, begin, start, kind, max_chars))
            label = _LABELLED.match(line) is not None
            out.extend(_sentences(text, start, end, "item", max_chars) if label else _block(text, start, end, "title"))
            begin = lines[n + 1][0]
            kind = "sentence"
        elif _FIELD.match(following):
            out.extend(_sentences(text, begin, end, kind, max_chars))
            begin = lines[n + 1][0]
            kind = "sentence"
    out.extend(_sentences(text, begin, lines[-1][1], kind, max_chars))
    return out


def _is_term(line: str, text: str, at: tuple[int, int], following: tuple[int, int]) -> bool:
    """Whether a paragraph's first line is the term of a plain-text definition list: a few words
    with no sentence's punctuation at their end, the explanation below indented deeper ("   adm" over
    "          Group adm is used for …", as reStructuredText, man pages and DocBook's text output
    write them). Lower-case terms count; a capitalised title needs no indentation (:func:`_is_title`)."""
    return (
        0 < len(line) <= _TERM_MAX
        and len(line.split()) <= 5
        and line[-1] not in _RUNS_ON
        and _depth(text, following) > _depth(text, at) + 1
    )


_GAP = re.compile(r"\S {2,}(?=\S)")  # between two columns of a plain-text table


def _columns(text: str, header: tuple[int, int], lines: list[tuple[int, int]], rule: int) -> bool:
    """Whether the line over the dashes at ``rule`` heads a plain-text table ("Name   Value
    Meaning" over "------", as DocBook's text output and man pages write them) rather than being
    a setext heading: it and the line after the dashes both have columns two or more spaces apart."""
    row = text[lines[rule + 1][0] : lines[rule + 1][1]] if rule + 1 < len(lines) else ""
    return bool(_GAP.search(text[header[0] : header[1]].strip()) and _GAP.search(row.strip()))


def _plain_rows(text: str, lines: list[tuple[int, int]], i: int, depth: int, units: list[Unit]) -> int:
    """The rows of a plain-text table from line ``i`` to the next blank line, each a ``table`` unit;
    a line indented past the first column continues the row above it. Returns the next line's index."""
    rows: list[tuple[int, int]] = []
    while i < len(lines) and text[lines[i][0] : lines[i][1]].strip():
        if rows and _depth(text, lines[i]) > depth + 2:
            rows[-1] = (rows[-1][0], lines[i][1])
        else:
            rows.append(lines[i])
        i += 1
    for start, end in rows:
        units.extend(_block(text, start, end, "table"))
    return i


def _depth(text: str, line: tuple[int, int]) -> int:
    """The column of a line's first character (a tab counts as four)."""
    raw = text[text.rfind("\n", 0, line[0]) + 1 : line[1]].expandtabs(4)
    return len(raw) - len(raw.lstrip())


def _is_title(line: str, following: str) -> bool:
    return (
        0 < len(line) <= _TITLE_MAX
        and len(line.split()) <= 8
        and line[-1] not in _RUNS_ON + "\"'\u201d\u2019"
        and bool(_STARTS_SENTENCE.match(line))
        and bool(_STARTS_SENTENCE.match(following))
    )


def _sentences(text: str, start: int, end: int, kind: Kind, max_chars: int) -> list[Unit]:
    cuts: list[tuple[int, int]] = []  # (end of a sentence, start of the next)
    for match in _END.finditer(text, start, end):
        after = match.end()
        if "\n" not in match.group("space") and (
            (after < end and not _STARTS_SENTENCE.match(text, after)) or _abbreviation(text, start, match.start())
        ):
            continue
        cuts.append((after if match.group("markers") else match.start("space"), after))
    cuts.extend((m.end(), m.end()) for m in _CJK_END.finditer(text, start, end))
    out: list[Unit] = []
    at = start
    for stop, resume in sorted(cuts):
        if stop > at:
            out.extend(_clauses(text, at, stop, kind, max_chars))
            at, kind = resume, "sentence"
    out.extend(_clauses(text, at, end, kind, max_chars))
    return out


def _abbreviation(text: str, start: int, dot: int) -> bool:
    """Whether the full stop at ``dot`` ends an abbreviation or an initial rather than a sentence."""
    if text[dot] != ".":
        return False
    before = text[max(start, dot - 12) : dot]
    word = re.search(r"(\w+)$", before)
    if word is None:
        return False
    w = word.group(1)
    return w.lower() in _ABBREVIATIONS or (len(w) == 1 and w.isupper()) or before.lower().endswith(("e.g", "i.e"))


def _clauses(text: str, start: int, end: int, kind: Kind, max_chars: int) -> list[Unit]:
    found = _block(text, start, end, kind)
    if not found or len(found[0].text) <= max_chars:
        return found
    unit = found[0]
    for pattern in (_CLAUSE_STRONG, _CLAUSE_WEAK):
        cuts = [
            m.end()
            for m in pattern.finditer(text, unit.start, unit.end)
            if m.start() - unit.start >= _MIN_CLAUSE and unit.end - m.end() >= _MIN_CLAUSE
        ]
        if cuts:
            middle = (unit.start + unit.end) / 2
            at = min(cuts, key=lambda c: (abs(c - middle), c))
            return _clauses(text, unit.start, at, kind, max_chars) + _clauses(text, at, unit.end, "sentence", max_chars)
    return found


# -- words ------------------------------------------------------------------------------------

_WORD = re.compile(r"\d+(?:[.,:]\d+)*|[^\W\d_]+(?:['\u2019][^\W\d_]+)*")
STOP_WORDS = frozenset(
    """a an the and or but nor not no yes so if then than that this these those there here it its it's
    i me my we our you your he him his she her they them their what which who whom whose when where why how
    is am are was were be been being do does did done doing have has had having can could may might must
    shall should will would of to in on at by for from with without into onto about above below over under
    as per via up out off all any some each every both either neither other such more most much many few
    also only just very too again once own same s t don't doesn't isn't aren't can't won't please tell
    let say said use used using get got one""".split()
)


# Small numbers written out meet their digits ("three days" / "3 days", "ten days" / "10 days"):
# an asker and a document rarely write a number the same way. "one" stays a stop word.
NUMBER_WORDS: dict[str, str] = {
    w: str(n)
    for n, w in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
    if w != "_"
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "ninety": "90", "hundred": "100"}


def words(text: str) -> list[str]:
    """Lower-cased words and numbers, in order ("0.25" and "2024" are one word each)."""
    return [w.lower() for w in _WORD.findall(text)]


_POSSESSIVE = re.compile(r"['\u2019]s$")
# A verb's clitic after its pronoun or wh-word: "I'm", "we're", "I've", "they'll", "you'd".
_CLITICS = "m|re|ve|ll|d"
# The guard, citations, widen and extractive answers take the terms of the same sources again and
# again (every turn, several times per turn): remembered, per word and per text. Bounded; texts
# longer than TERMS_CACHED_CHARS (a long answer or document) are not kept.
TERMS_CACHED_CHARS = 4096


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light suffix stripper: enough for plurals and common verb forms to meet."""
    w = _POSSESSIVE.sub("", word)
    if len(w) <= 3 or w[0].isdigit():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if w.endswith("ation") and len(w) - 5 >= 3:
        w = w[:-5]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def terms(text: str, *, digits: bool = False) -> list[str]:
    """Content words: stemmed, stop words and one-letter words out, numbers kept; in order. With
    ``digits``, small numbers written out are their digits ("three" -> "3")."""
    return list(_terms(text, digits) if len(text) <= TERMS_CACHED_CHARS else _terms.__wrapped__(text, digits))


# A contraction's clitic: "what's", "we're", "I've" are their stop word ("what", "we", "i"), not
# a content word "what" or "we'r"; a word ending in "n't" is always a function word ("can't", "don't").
_CLITIC = re.compile(rf"['\u2019](?:s|{_CLITICS})$")
_NEGATED = re.compile(r"n['\u2019]t$")


@functools.lru_cache(maxsize=4096)
def _terms(text: str, digits: bool) -> tuple[str, ...]:
    bare = (_CLITIC.sub("", w) for w in words(text) if not _NEGATED.search(w))
    kept = [w for w in bare if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]
    return tuple([NUMBER_WORDS[w] if digits and w in NUMBER_WORDS else stem(w) for w in kept])


def numbers(text: str) -> set[str]:
    """The numbers written in ``text`` ("2", "0.25", "2024")."""
    return {w for w in words(text) if w[0].isdigit()}


_NOT_LETTER_OR_DIGIT = re.compile(r"[^\w]|_")


def squashed(text: str) -> str:
    """``text`` as :func:`names` keys a name: lower-case letters and digits only ("SM-40" -> "sm40")."""
    return _NOT_LETTER_OR_DIGIT.sub("", text).lower()


def names(text: str) -> dict[str, str]:
    """Names and codes: capitalised words after the first ("Lisbon", "Priya"), words with inner
    capitals or digits ("SM-40", "Q1", "NB-IoT"), numbers ("2024"). Squashed to lower-case letters
    and digits -> as written; compare them with :func:`runs`."""
    out = {}
    previous = ""
    for word in text.split():
        token = _POSSESSIVE.sub("", word.strip(".,;:!?()[]{}*_`\"'\u201c\u201d"))
        key = squashed(token)
        # A capital after a sentence's end is the sentence's, not a name's ("… trusted. Anything I can try?").
        opens = not previous or previous.endswith((".", "!", "?", ":"))
        previous = word
        # A number is a name ("2024"), a number with a word is not ("12-month"): :func:`numbers` has it.
        if (token[:1].isdigit() and not token.isdigit()) or _CONTRACTION.fullmatch(token):
            continue
        coded = any(map(str.isdigit, token)) or any(map(str.isupper, token[1:]))
        if len(key) >= 2 and key not in STOP_WORDS and (coded or (not opens and token[:1].isupper())):
            out[key] = token
    return out


# "I'm", "We're", "They'll": a pronoun with its verb, capitalised because "I" is.
_CONTRACTION = re.compile(rf"[^\W\d_]+['\u2019](?:{_CLITICS})", re.I)


def runs(text: str) -> set[str]:
    """Lower-case words, and adjacent pairs and triples run together: the forms :func:`names`
    squashes to, so "SM-40", "Wi-Fi" and "7,120" are found however a text spaces them."""
    parts = re.findall(r"[^\W_]+", text.lower())
    out = set(parts)
    out.update(map(operator.add, parts, parts[1:]))  # pairs run together (map: no Python frame per pair)
    out.update(map("".join, zip(parts, parts[1:], parts[2:], strict=False)))
    return out


_CAPITALISED = re.compile(r"[A-Z][\w']*")


def initials(text: str) -> set[str]:
    """The acronyms a text spells out: the lower-cased initials of every two to five consecutive
    capitalised words ("Backus-Naur Form" -> "bn", "nf", "bnf"), so a question's "BNF" finds the
    document that writes the words."""
    out: set[str] = set()
    run: list[str] = []
    for word in [*re.split(r"[\s\-/]+", text), ""]:
        token = word.strip(".,;:!?()[]{}*_`\"'\u201c\u201d")
        if _CAPITALISED.fullmatch(token):
            run.append(token[0].lower())
            if not word.endswith((".", ",", ";", ":", "!", "?", ")")):
                continue  # punctuation ends the run: "… Objective. The API" is two
        for size in range(2, min(len(run), 5) + 1):
            out.update("".join(run[i : i + size]) for i in range(len(run) - size + 1))
        run = []
    return out
