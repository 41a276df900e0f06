"""Scoring one answer of `ragchat bench answers`: does it hold the fact, is it degenerate, does it
echo the prompt, which of its sentences no source supports.

Every check works on text normalised the same way (:func:`normalise`): case folded, dashes and
quotes unified, Markdown emphasis dropped, thousands separators removed (``1,240`` → ``1240``) and
``.00`` decimals trimmed, so ``£1,240.00`` and ``£1240`` are the same fact.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import Path

from app.rag.answer.citations import MARKER
from app.rag.answer.extractive import CLOSEST

PROMPTS = Path(__file__).resolve().parents[1] / "rag" / "prompts"

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2212"), "-")
_QUOTES = {ord("\u2018"): "'", ord("\u2019"): "'", ord("\u201c"): '"', ord("\u201d"): '"'}
_WORDS = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_ENUMERATOR = re.compile(r"^\s*\d{1,2}[.)](?=\s)", re.MULTILINE)
_SENTENCES = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
# Saying the documents do not answer: the expected reply to a question they do not cover.
NO_ANSWER = re.compile(
    r"\b(?:do|does|did)(?: not|n't) (?:cover|contain|mention|say|answer|include|provide|specify|state|have)\b"
    r"|\bno (?:information|mention|relevant|details?|data|passages?|answer|record)\b"
    r"|\bnot (?:covered|mentioned|found|available|specified|stated|provided|included|listed|known)\b"
    r"|\b(?:cannot|can't|could not|couldn't|unable to) (?:find|answer|determine|locate|tell)\b"
    r"|\bthere (?:is|are) no\b"
)
_STOP = frozenset(
    """a an the and or of to in on at for by with from as is are was were be been it its this that these
    those there their they he she his her we our you your i me my which who what when where how why
    not no yes do does did has have had can could will would should may might must than then so if
    also about into per each any all some such only up out over""".split()
)
# Words an answer uses to talk about sources rather than to say anything ("The source is [1].").
_META = frozenset(
    "answer answers question questions source sources document documents cite cited citation citations "
    "see based according given provided information following above below reference".split()
)
LOOP_NGRAM = 4
LOOP_REPEATS = 4  # the same 4 words four times is a loop, not style
LOOP_DISTINCT_RATIO = 0.5  # or fewer than half the 4-grams of a longer answer are distinct
COUNTING_RUN = 8
ECHO_SHINGLE = 5  # 5 consecutive words of a prompt line in an answer is an echo
SUPPORT_OVERLAP = 0.5  # a sentence is supported when half its content words appear in its sources
# Where a no-answer reply points the reader ("… is in office-leeds.md, lines 3-9."): a pointer, no claim.
_POINTER = re.compile(re.escape(CLOSEST) + r"[^\n]*")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_QUOTES).lower()
    text = re.sub(r"\*\*|__|`", "", text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<=\d)\.0+\b", "", text)
    text = re.sub(r"(?<=\d) %", "%", text)
    return re.sub(r"\s+", " ", text).strip()


def without_markers(text: str) -> str:
    return MARKER.sub("", text)


def words(text: str) -> list[str]:
    return _WORDS.findall(normalise(text))


def _content(tokens: Iterable[str]) -> list[str]:
    return [t for t in tokens if t not in _STOP]


# -- the fact ----------------------------------------------------------------------------------
def matches(answer: str, form: str) -> bool:
    """``form`` found in ``answer``: a regex when it starts with ``re:``, else a literal that must not
    run into neighbouring letters or digits ("4" is not found in "14" nor in "4.5"), except a unit
    written straight after a number ("310g")."""
    text = normalise(answer)
    if form.startswith("re:"):
        return re.search(form[3:], text, re.IGNORECASE) is not None
    literal = normalise(form)
    after = r"(?![0-9]|[.,]\d)" if literal[-1:].isdigit() else r"(?![a-z0-9]|[.,]\d)"  # "310g" says 310
    pattern = r"(?<![a-z0-9])(?<!\d\.)" + re.escape(literal) + after
    return re.search(pattern, text) is not None


def contains_fact(answer: str, expected: str | None, accept: Sequence[str]) -> bool:
    """The expected fact, in any accepted form; for a question the documents do not answer
    (``expected`` None), saying so. Citation markers and list numbers are not facts ("[4]" does not
    say "4"), and a degenerate answer holds none: a loop counting to 40 does not know it is 20."""
    if degenerate(answer) is not None:
        return False
    if expected is None:
        return is_no_answer(answer)
    text = _ENUMERATOR.sub("", without_markers(answer))
    return any(matches(text, form) for form in (expected, *accept))


def is_no_answer(answer: str) -> bool:
    return NO_ANSWER.search(normalise(answer)) is not None


# -- degenerate and echoed answers -------------------------------------------------------------
def degenerate(answer: str) -> str | None:
    """Why the answer is useless whatever the question: ``empty``, ``citation-only`` (markers, or
    a sentence about the sources and nothing else) or ``loop``; None when it is none of those."""
    if not answer.strip():
        return "empty"
    tokens = words(without_markers(answer))
    grams = [tuple(tokens[i : i + LOOP_NGRAM]) for i in range(len(tokens) - LOOP_NGRAM + 1)]
    if grams:
        most = Counter(grams).most_common(1)[0][1]
        if most >= LOOP_REPEATS or (len(grams) >= 12 and len(set(grams)) / len(grams) < LOOP_DISTINCT_RATIO):
            return "loop"
    if _counts_up(tokens):
        return "loop"
    if not [t for t in tokens if t not in _STOP and t not in _META] and not is_no_answer(answer):
        return "citation-only"  # ("The documents do not answer this question." is an answer, not this)
    return None


def _counts_up(tokens: Sequence[str]) -> bool:
    """Eight numbers in a row, each one more than the last ("1. 2. 3. 4. ..."): counting, not answering."""
    run = 1
    for previous, token in pairwise(tokens):
        run = run + 1 if previous.isdigit() and token.isdigit() and int(token) == int(previous) + 1 else 1
        if run >= COUNTING_RUN:
            return True
    return False


class EchoDetector:
    """Finds text an answer copied from the prompt: any 5 consecutive words of a prompt template's
    fixed text, or one of its labels (``Question:``, a ``<source`` tag). Wording a no-answer reply
    the way the prompt asks ("your documents do not cover this") is the expected answer, not an echo."""

    def __init__(self, templates: Iterable[str]) -> None:
        self.shingles: set[str] = set()
        labels = {"question", "source", "sources"}
        for template in templates:
            for line in template.splitlines():
                if label := re.match(r"\s*([A-Za-z][A-Za-z ]{0,30}):\s*\{", line):
                    labels.add(label.group(1).strip().lower())
                for fixed in re.split(r"\{[a-z_]+\}", line):
                    tokens = words(fixed)
                    for i in range(len(tokens) - ECHO_SHINGLE + 1):
                        shingle = " ".join(tokens[i : i + ECHO_SHINGLE])
                        if not NO_ANSWER.search(shingle):
                            self.shingles.add(shingle)
        self.labels = re.compile(
            r"</?source\b|\bsource id=|(?:^|\n)\s*(?:" + "|".join(sorted(map(re.escape, labels))) + r")\s*\d*\s*:",
            re.IGNORECASE,
        )

    @classmethod
    def from_prompt_files(cls, folder: Path = PROMPTS) -> EchoDetector:
        return cls(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt")))

    def echoed(self, answer: str) -> str | None:
        """The first echoed text (a label, or the longest run of prompt words), or None."""
        if label := self.labels.search(answer):
            return label.group(0).strip()
        tokens = words(without_markers(answer))
        hits = [" ".join(tokens[i : i + ECHO_SHINGLE]) in self.shingles for i in range(len(tokens))]
        if True not in hits:
            return None
        start = end = hits.index(True)
        while end + 1 < len(hits) and hits[end + 1]:
            end += 1
        return " ".join(tokens[start : end + ECHO_SHINGLE])


# -- support -----------------------------------------------------------------------------------
def unsupported_sentences(answer: str, sources: Sequence[str]) -> list[str]:
    """Sentences (of at least three content words) with fewer than half their content words in
    ``sources``; sentences saying the documents do not answer, and the pointer to the closest
    passage that follows them in an extractive reply, are never counted."""
    vocabulary = {t for source in sources for t in words(source)}
    found: list[str] = []
    for match in _SENTENCES.finditer(_POINTER.sub("", without_markers(answer))):
        sentence = match.group(0).strip()
        content = _content(words(sentence))
        if len(content) < 3 or is_no_answer(sentence):
            continue
        if sum(1 for t in content if t in vocabulary) / len(content) < SUPPORT_OVERLAP:
            found.append(sentence)
    return found
