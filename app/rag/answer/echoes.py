"""Prompt echoes: what a model copied from its own prompt, found and cut out of its answer.

Removed, and counted as one echo per stretch:

- runs of ``ngram``+ words copied from the prompt's instructions (system prompt, session prompt,
  the cite/no-cite instruction, the untrusted-sources preamble), when the run is a whole sentence,
  6+ words, or 5+ words opening a sentence — shorter runs inside a sentence are coincidence ("from
  the knowledge base"). "…say that the documents do not cover it" is left out of the instruction
  text: saying so is a legitimate answer;
- source fences (``<source id="1" …>`` and whatever was copied inside) and labels (``Source [1]:``,
  ``[1] name.md, lines 1-4``: at a line start with its marker, after a sentence the marker stays);
- a ``Question:`` label, and the question repeated as a sentence.

``[n]`` markers inside removed text go with it (counted), and so does what is left of "…, like
[1]" once its words went: the instruction's example never becomes a citation chip. A leading
``Answer:`` label is dropped silently. Removal mends whitespace and takes a list item's marker
along, so no empty "3." lines are left behind.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.rag import prompting
from app.rag.answer import sentences
from app.rag.prompting import template

__all__ = ["MARKER", "Stripped", "drop_repeats", "strip"]

MARKER = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
_ECHO_TOKEN = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]|\w+(?:['\u2019]\w+)*")

# A source fence the model wrote out, with whatever it copied inside it (to the end if unclosed).
_FENCE = re.compile(
    r"<source\b.*?(?:</source>|\Z)|</source>|\b(?:id|document|location)=\"[^\"\n]*\"", re.IGNORECASE | re.DOTALL
)
_LABEL = re.compile(
    r"^[ \t]*(?:\*\*)?(?:sources?|documents?|passages?|context)[ \t]*\[?\d{0,3}\]?(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
_QUESTION_LABEL = re.compile(r"^[ \t]*(?:\*\*)?question(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*", re.IGNORECASE | re.MULTILINE)
_ANSWER_LABEL = re.compile(r"^\s*(?:\*\*)?answer(?:\*\*)?[ \t]*:(?:\*\*)?\s*", re.IGNORECASE)
_TRAILING = re.compile(r"[ \t]*[.,:;!?…]*")
_LISTMARKER = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])?[ \t]*")
# What is left of "cite it …, like [1]" once the words around it went; "… is [1]." stands in for an answer.
_EXAMPLEMARKER = re.compile(r"(?:like|e\.g\.|such as|for example)?\s*\[\d{1,3}\]\W*", re.IGNORECASE)

# Fine to say: the no-answer the instructions themselves ask for.
_EXEMPT = "the documents do not cover it"


@dataclass(frozen=True)
class Stripped:
    text: str
    echoes: int  # stretches removed
    markers: int  # [n] markers that went with them


def _instructions(session_prompt: str) -> list[str]:
    preamble = template("sources").split("{sources}")[0]
    texts = [template("system"), template("cite"), template("no_cite"), preamble, session_prompt]
    return [t.replace(_EXEMPT, " ") for t in texts if t.strip()]


def _echo_tokens(text: str) -> list[tuple[str, int, int]]:
    return [
        ("[n]" if m.group(0).startswith("[") else m.group(0).lower(), m.start(), m.end())
        for m in _ECHO_TOKEN.finditer(text)
    ]


def strip(
    text: str, question: str, sources: Sequence[prompting.Source], *, session_prompt: str = "", ngram: int = 4
) -> Stripped:
    """``text`` without what it echoed of the prompt; see the module docstring."""
    spans: list[tuple[int, int]] = [m.span() for m in _FENCE.finditer(text)]
    spans += [m.span() for m in _LABEL.finditer(text) if m.group(0).strip()]
    spans += _source_labels(text, sources)
    spans += _question_echoes(text, question)
    spans += _instruction_echoes(text, _instructions(session_prompt), ngram)
    echoes = _merge(spans)
    markers = sum(len(MARKER.findall(text[a:b])) for a, b in echoes)
    label = _ANSWER_LABEL.match(text)  # "Answer:" is not an echo, just noise
    cleaned = _cut(text, _merge([*echoes, label.span()] if label else echoes))
    if echoes:  # "… like [1]" left over from a cut instruction goes too
        leftovers = [_whole(cleaned, u) for u in sentences.units(cleaned) if _EXAMPLEMARKER.fullmatch(u.text)]
        markers += sum(len(MARKER.findall(cleaned[a:b])) for a, b in leftovers)
        cleaned = _cut(cleaned, leftovers)
    return Stripped(cleaned, len(echoes), markers)


def _whole(text: str, unit: sentences.Unit) -> tuple[int, int]:
    """A unit's span with its list marker, when it is the only thing before it on its line."""
    line = text.rfind("\n", 0, unit.start) + 1
    marker = _LISTMARKER.match(text, line)
    start = line if marker is not None and marker.end() >= unit.start else unit.start
    return start, unit.end


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the (sorted, disjoint) spans, whitespace mended where they were."""
    if not spans:
        return text
    out = text[: spans[0][0]]
    for (_, b), (a, _) in zip(spans, [*spans[1:], (len(text), len(text))], strict=True):
        left, right = out.rstrip(" \t"), text[b:a].lstrip(" \t")
        glue = left and right and not left.endswith("\n") and not right.startswith(("\n", ".", ",", ";", ":", "!", "?"))
        out = left + (" " if glue else "") + right
    return re.sub(r"\n{3,}", "\n\n", out).strip()


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _source_labels(text: str, sources: Sequence[prompting.Source]) -> list[tuple[int, int]]:
    """``[1] name.md, lines 1-4`` (marker and all at a line start; after a sentence the marker stays)."""
    spans: list[tuple[int, int]] = []
    folded = text.casefold()
    for source in sources:
        if source.document.casefold() not in folded:
            continue  # no label without the name: the pattern, new for each name, is not compiled
        heading = source.location.partition(", ")[2]
        where = r"(?:lines?\s+\d+(?:\s*[-\u2013]\s*\d+)?|pages?\s+\d+)"
        where += rf"(?:\s*,\s*{re.escape(heading)})?" if heading else ""
        label = re.compile(
            rf"\[\d{{1,3}}\][ \t]*[:\-\u2013]?[ \t]*[\"'(]?{re.escape(source.document)}[\"')]?"
            rf"(?:[ \t]*[,(\-\u2013][ \t]*{where}\)?)?[ \t]*:?",
            re.IGNORECASE,
        )
        for m in label.finditer(text):
            at_line_start = not text[text.rfind("\n", 0, m.start()) + 1 : m.start()].strip()
            start = m.start() if at_line_start else text.index("]", m.start()) + 1
            spans.append((start, m.end()))
    return spans


def _question_echoes(text: str, question: str) -> list[tuple[int, int]]:
    """The ``Question:`` label, and any sentence that is the question again."""
    spans = [m.span() for m in _QUESTION_LABEL.finditer(text)]
    asked = sentences.words(question)
    if len(asked) >= 2:
        for unit in sentences.units(text):
            if sentences.words(_QUESTION_LABEL.sub("", MARKER.sub("", unit.text))) == asked:
                spans.append(_whole(text, unit))
    return spans


@functools.lru_cache(maxsize=64)
def _grams(instructions: tuple[str, ...], n: int) -> frozenset[tuple[str, ...]]:
    """The instructions' word n-grams: the same templates every turn (and a session's own prompt)."""
    grams: set[tuple[str, ...]] = set()
    for instruction in instructions:
        words = [w for w, _, _ in _echo_tokens(instruction)]
        grams |= {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}
    return frozenset(grams)


def _instruction_echoes(text: str, instructions: list[str], n: int) -> list[tuple[int, int]]:
    grams = _grams(tuple(instructions), n)
    tokens = _echo_tokens(text)
    covered = [False] * len(tokens)
    words = [t for t, _, _ in tokens]
    for i, gram in enumerate(zip(*(words[k:] for k in range(n)), strict=False)):  # shorter tails end it
        if gram in grams:
            covered[i : i + n] = [True] * n
    units = [(u.start, u.end) for u in sentences.units(text)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not covered[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(tokens) and covered[j + 1]:
            j += 1
        start, end = tokens[i][1], tokens[j][2]
        first = next((u for u in units if u[0] <= start < u[1]), (start, end))
        last = next((u for u in units if u[0] < end <= u[1]), (start, end))
        opens = not text[first[0] : start].strip()  # nothing of the sentence before the echo
        closes = not MARKER.sub("", text[end : last[1]]).strip(" \t.,:;!?…")  # nothing but markers after
        length = sum(1 for t in tokens[i : j + 1] if t[0] != "[n]")
        if (opens and closes) or length >= 6 or (length >= 5 and opens):
            tail = _TRAILING.match(text, end)
            spans.append((first[0] if opens else start, last[1] if closes else tail.end() if tail else end))
        i = j + 1
    return spans


def drop_repeats(text: str) -> tuple[str, int]:
    """``text`` with each sentence of 3+ words kept only the first time; how many went."""
    seen: set[str] = set()
    spans: list[tuple[int, int]] = []
    for unit in sentences.units(text):
        key = " ".join(sentences.words(MARKER.sub("", unit.text)))
        if len(key.split()) >= 3 and key in seen:
            spans.append(_whole(text, unit))
        seen.add(key)
    return _cut(text, spans), len(spans)
