"""The answer guard: every generated answer, from any provider, is checked before it is kept.

While the answer streams, :meth:`AnswerGuard.feed` watches for a **loop** and says stop as soon
as one is certain, so the model is cancelled early instead of running to its token limit. Tokens
are words, numbers, sentence ends and line breaks; a loop is any of:

- the tail repeating one stretch exactly: ``p`` tokens 8 times in a row for p <= 2 (so "very,
  very, very" does not trip it), 3 times for longer stretches, at least ``min_loop_tokens`` in all
  ("the source of" x 4, "The threshold is set to 5." x 3);
- one sentence or line of 4+ words written ``sentence_repeats`` times anywhere, numbers counting
  as one ("3. The 31-day training" and "5. The 31-day training" are the same line);
- the last ``window`` tokens with fewer than ``min_distinct`` distinct 4-grams, or with no word at
  all ("1. 2. 3. 4. …");
- one non-space character 64 times in a row.

Nothing is held back: the caller streams every delta on; the stored text is the verdict's.

Once the answer ends, :meth:`AnswerGuard.review` cleans it and decides:

- **Echoes** of the prompt are cut out (:mod:`app.rag.answer.echoes`), ``[n]`` markers inside them too.
- A sentence repeated verbatim is kept once.
- **Content**: a sentence saying nothing but citation talk ("The source for the answer is [1].",
  "The nearest station is [1]." — a marker standing in for the answer) or bare numbers is not
  content. A sentence saying the documents do not cover it (``declined``) is content, unchecked.
- **Support** (only when there are sources): each content sentence with 2+ content words is
  unsupported when ``0.6 x cosine + 0.4 x cover`` is below ``support_bar`` (cosine: the best over
  every source sentence, one batched ``embed`` call; cover: the share of its content words the
  best-covering source has, the question's words counting as covered — the blend citations use),
  or when it invents: a number found in no source sentence that shares two of its words (one if
  it has one), a quantity whose unit differs ("14 years" from "14 months"), or a name no source
  writes ("The Manchester office has …" from the Leeds page). Without an embedder, cover alone
  against ``cover_bar``.

Decision: ``FALLBACK`` (``degenerate``) for a loop, nothing left, only echo, only citation talk, or
more than half of the content sentences unsupported; ``FLAGGED`` when something was removed or a
minority is unsupported; else ``PASS``, the text untouched.

Calibration: 89 answers SmolLM2-135M wrote (no sampling penalties, temperature 0.2, 256 tokens)
to the benchmarks/answers questions. 55 are FALLBACK (36 loops, 8 only citation talk, 11 mostly
invented), 9 FLAGGED, 25 PASS; stopping the loops early spares 4,918 of the 11,322 tokens. Of
the 25, 6 hold the expected fact, 3 decline, the rest are fluent but wrong in ways only reading
the sources closely shows (a real manager's name given for the wrong office): the guard removes
the degenerate, it does not certify the correct. The support blend of
real sentences the model copied or paraphrased was 0.57-1.0, of word salad 0.29-0.49: hence 0.5.
The same decisions come out with and without embeddings on this set; the invention checks carry
most of the weight.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from app.llm.base import Vectors
from app.rag import prompting
from app.rag.answer import sentences
from app.rag.answer.echoes import MARKER, drop_repeats, strip

__all__ = ["AnswerGuard", "Decision", "GuardOptions", "Reason", "StreamCheck", "Verdict", "check"]

_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|\w+|[.!?\n]")
_RUN_CHAR = re.compile(r"(\S)\1{63,}")
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100", "thousand": "1000"}
_POINTER = re.compile(r"\b(?:is|are|was|were|in|see)\s*:?\s*(?:\[\d{1,3}\][\s,and]*)+[.!]?\s*$", re.IGNORECASE)
_DECLINE = re.compile(
    r"\b(?:do|does|did)(?:n't| not) (?:cover|contain|mention|say|include|answer|provide|specify)\b"
    r"|\bnot (?:available|mentioned|covered|provided|stated|specified|given)\b|\bno (?:information|mention)\b"
    r"|\bI (?:do not|don't|cannot|can't) (?:know|find|answer)\b",
    re.IGNORECASE,
)
_QUANTITY = re.compile(
    r"\b(\d+(?:[.,]\d+)*|" + "|".join(_NUMBER_WORDS) + r")[\s-]*"
    r"(%|percent|years?|months?|weeks?|days?|hours?|minutes?|seconds?|km|kg|g|gb|mb|tb|m|cm|mm|metres?|meters?"
    r"|miles?|pence|p|pounds?|euros?)(?!\w)",
    re.IGNORECASE,
)
_SPACED_MARKER = re.compile(rf"\s*{MARKER.pattern}")  # a marker with the space before it
_META = frozenset(
    """source sources answer answers document documents passage passages cite cited citation citations
    reference references refer provided information given found question context mentioned based according
    above following see listed stated shown number numbers text""".split()
)


class Decision(StrEnum):
    PASS = "pass"
    FLAGGED = "flagged"  # kept, with a notice: something minor was removed or is unsupported
    FALLBACK = "fallback"  # degenerate: show the extractive answer instead, keep out of history
    # Never the guard's own verdict: the chat engine records it for a FALLBACK with no sources to
    # quote instead, whose answer is stored as failed (app/services/chat/service.py).
    REJECTED = "rejected"


@dataclass(frozen=True)
class Reason:
    code: str  # loop | echo | duplicate | unsupported | empty | only_echo | citations_only | mostly_unsupported
    message: str


@dataclass(frozen=True)
class StreamCheck:
    stop: bool
    reason: Reason | None = None


@dataclass(frozen=True)
class GuardOptions:
    max_period: int = 40  # longest repeated stretch looked for, in tokens
    min_loop_tokens: int = 12
    window: int = 60
    min_distinct: float = 0.4  # distinct 4-grams / 4-grams in the window
    sentence_repeats: int = 3
    echo_ngram: int = 4
    support_bar: float = 0.5  # blend of cosine and cover; calibration in the module docstring
    cover_bar: float = 0.6  # cover alone, without embeddings
    cosine_weight: float = 0.6


@dataclass(frozen=True)
class Verdict:
    text: str  # the cleaned answer (the original when PASS)
    decision: Decision
    reasons: tuple[Reason, ...]
    sentences: tuple[str, ...]  # the cleaned answer's prose sentences, as checked
    unsupported: tuple[int, ...]  # indices into ``sentences``
    echoes_removed: int
    markers_dropped: int
    duplicates_removed: int
    declined: bool = False  # every sentence says the documents do not answer (not checked for support)

    @property
    def degenerate(self) -> bool:
        """Unusable as an answer: keep it out of the history sent to the model."""
        return self.decision is Decision.FALLBACK


class _LoopWatch:
    """Incremental loop detection over the tokens of a growing text. Numbers count as one token
    "#" for the sentence and variety checks: "1. 2. 3. …" and "3. The 31-day training 4. The
    31-day training" loop with a counter that changes."""

    def __init__(self, options: GuardOptions) -> None:
        self.o = options
        self.tokens: list[str] = []
        self.shapes: list[str] = []  # tokens with numbers as "#"
        self.sentences: Counter[str] = Counter()
        self.current: list[str] = []
        self.loop: Reason | None = None
        # Kept up to date token by token, so a token costs the same however long the answer and
        # wide the window (a fresh pass over the window per token was a tenth of the event loop's
        # work per relayed token on long answers):
        self._seen: dict[str, list[int]] = {}  # token -> where it occurred, within max_period
        self._window: deque[tuple[int, str]] = deque()  # the window's shapes but line breaks, by position
        self._grams: Counter[tuple[str, ...]] = Counter()  # the 4-grams of _window's shapes
        self._words = 0  # _window's shapes that are words

    def push(self, token: str) -> Reason | None:
        shape = "#" if token[0].isdigit() else token
        self.tokens.append(token)
        self.shapes.append(shape)
        periods = self._recur(token)
        self._slide(shape)
        if token in ".!?\n":
            words, self.current = self.current, []
            sentence = " ".join(words)
            if len(words) >= 4 and sum(t[0].isalpha() for t in words) >= 2:
                self.sentences[sentence] += 1
                if self.sentences[sentence] >= self.o.sentence_repeats:
                    return Reason("loop", f"the sentence “{sentence}” was written {self.sentences[sentence]} times")
        else:
            self.current.append(shape)
        return self._periodic(periods) or self._low_variety()

    def _recur(self, token: str) -> list[int]:
        """The periods p <= max_period with tokens[-1 - p] == token, shortest first (the only ones
        that can repeat); records the token's place."""
        last = len(self.tokens) - 1
        seen = self._seen.setdefault(token, [])
        while seen and seen[0] < last - self.o.max_period:
            del seen[0]
        periods = [last - at for at in reversed(seen)]
        seen.append(last)
        return periods

    def _periodic(self, periods: list[int]) -> Reason | None:
        t = self.tokens
        for p in periods:
            if p > len(t) // 2:
                break
            repeats = 8 if p <= 2 else 3
            need = max(p * repeats, self.o.min_loop_tokens)
            if need > len(t):
                continue
            if all(t[-i] == t[-i - p] for i in range(2, need - p + 1)):
                shown = " ".join(x for x in t[-p:] if x != "\n")
                return Reason("loop", f"the text “{shown}” repeats {need // p}+ times in a row")
        return None

    def _slide(self, shape: str) -> None:
        """Move the window of the last ``window`` shapes on by ``shape``."""
        window, grams = self._window, self._grams
        at = len(self.shapes) - 1
        if shape != "\n":
            window.append((at, shape))
            self._words += shape[0].isalpha()
            if len(window) >= 4:  # a deque is indexed from its ends in constant time
                grams[(window[-4][1], window[-3][1], window[-2][1], shape)] += 1
        while window and window[0][0] <= at - self.o.window:
            if len(window) >= 4:
                first = (window[0][1], window[1][1], window[2][1], window[3][1])
                grams[first] -= 1
                if not grams[first]:
                    del grams[first]
            self._words -= window.popleft()[1][0].isalpha()

    def _low_variety(self) -> Reason | None:
        if len(self.shapes) < self.o.window:
            return None
        if not self._words:
            return Reason("loop", f"the last {self.o.window} tokens hold no words")
        if len(self._grams) < self.o.min_distinct * max(len(self._window) - 3, 0):
            return Reason("loop", f"the last {self.o.window} words repeat the same few phrases")
        return None


class AnswerGuard:
    """Guards one answer: :meth:`feed` while it streams, :meth:`review` once it has ended.

    ``sources`` are the prompt's sources (``budget.Prompt.sources``), ``session_prompt`` the
    session's own system prompt: both are what the model saw and may echo.
    """

    def __init__(
        self,
        question: str,
        sources: Sequence[prompting.Source],
        *,
        session_prompt: str = "",
        options: GuardOptions | None = None,
    ) -> None:
        self.question = question
        self.sources = list(sources)
        self.session_prompt = session_prompt
        self.options = options or GuardOptions()
        self._parts: list[str] = []
        self._pending = ""  # text after the last complete token
        self._tail = ""  # the last characters, for runs of one character
        self._watch = _LoopWatch(self.options)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    @property
    def loop(self) -> Reason | None:
        return self._watch.loop

    def feed(self, delta: str) -> StreamCheck:
        """Take the next piece of the stream. ``stop=True`` once a loop is certain (then stays so)."""
        self._parts.append(delta)
        if self._watch.loop is not None:
            return StreamCheck(True, self._watch.loop)
        self._pending += delta
        # The last token may continue in the next delta ("thres" + "hold", "0." + "25"): it waits.
        matches = list(_TOKEN.finditer(self._pending))
        last = matches[-1] if matches else None
        if last is not None and last.end() == len(self._pending) and (last.group(0)[0].isalnum() or _after_digit(last)):
            complete, self._pending = matches[:-1], self._pending[matches[-1].start() :]
        else:
            complete, self._pending = matches, ""
        for match in complete:
            reason = self._watch.push(match.group(0).lower())
            if reason is not None:
                self._watch.loop = reason
                return StreamCheck(True, reason)
        self._tail = (self._tail + delta)[-200:]
        # A run the tail did not hold before ends in this delta: only its last characters can hold it.
        if _RUN_CHAR.search(self._tail, max(len(self._tail) - len(delta) - 63, 0)):
            self._watch.loop = Reason("loop", "one character repeated 64 times or more")
            return StreamCheck(True, self._watch.loop)
        return StreamCheck(False)

    def review(self, embed: Callable[[list[str]], Vectors] | None = None) -> Verdict:
        """Clean and judge the text fed so far (call once the stream has ended or was stopped).
        Errors of ``embed`` propagate: the caller may retry with ``embed=None``."""
        if self._pending:
            self.feed(" ")
            self._parts.pop()
        stripped = strip(
            self.text, self.question, self.sources, session_prompt=self.session_prompt, ngram=self.options.echo_ngram
        )
        echoes, markers = stripped.echoes, stripped.markers
        text, duplicates = drop_repeats(stripped.text)
        units = [u for u in sentences.units(text) if u.kind in sentences.PROSE | {"title", "table"}]
        content = [u for u in units if _content(u.text)]
        checked = tuple(u.normalised for u in content)
        declined = bool(content) and all(_DECLINE.search(s) for s in checked)
        reasons: list[Reason] = []
        if self.loop is not None:
            reasons.append(self.loop)
        if echoes:
            reasons.append(Reason("echo", f"{echoes} piece(s) of the prompt echoed and removed"))
        if duplicates:
            reasons.append(Reason("duplicate", f"{duplicates} repeated sentence(s) removed"))
        unsupported: tuple[int, ...] = ()
        if self.sources and content and self.loop is None:
            unsupported = _unsupported(checked, self, embed)
            if unsupported:
                reasons.append(Reason("unsupported", f"{len(unsupported)} of {len(checked)} sentence(s) unsupported"))
        fatal = _fatal(self.text, units, content, echoes, unsupported)
        if fatal is not None:
            reasons.append(fatal)
        if self.loop is not None or fatal is not None:
            decision = Decision.FALLBACK
        else:
            decision = Decision.FLAGGED if reasons or markers else Decision.PASS
        return Verdict(text, decision, tuple(reasons), checked, unsupported, echoes, markers, duplicates, declined)


def _after_digit(match: re.Match[str]) -> bool:
    """A full stop right after a digit may be a decimal point still being written ("0." + "25")."""
    return match.group(0) == "." and match.start() > 0 and match.string[match.start() - 1].isdigit()


def check(
    answer: str,
    question: str,
    sources: Sequence[prompting.Source],
    embed: Callable[[list[str]], Vectors] | None = None,
    *,
    session_prompt: str = "",
    options: GuardOptions | None = None,
) -> Verdict:
    """Review a whole answer at once (not streamed): the same checks as feed() then review()."""
    guard = AnswerGuard(question, sources, session_prompt=session_prompt, options=options)
    guard.feed(answer)
    return guard.review(embed)


# -- support ----------------------------------------------------------------------------------


def _meta_only(text: str) -> bool:
    """Only words about sources and answers ("See the source.", "The answer.")."""
    words = [w for w in sentences.words(text) if w[0].isalpha() and w not in sentences.STOP_WORDS]
    return bool(words) and all(w in _META for w in words)


def _content(text: str) -> bool:
    """Says something beyond citation talk: not "The source for the answer is [1].", "The station
    is [1]." (a marker standing in for the answer) or bare numbers."""
    if _POINTER.search(text):
        return False
    words = sentences.words(MARKER.sub("", text))
    return any(w[0].isalpha() and w not in sentences.STOP_WORDS and w not in _META for w in words)


def _numbers(text: str) -> set[str]:
    words = sentences.words(MARKER.sub("", text))
    return {_NUMBER_WORDS.get(w, w).replace(",", "") for w in words if w[0].isdigit() or w in _NUMBER_WORDS}


def _quantities(text: str) -> set[tuple[str, str]]:
    """(number, unit) pairs: "14 months", "2 GB", "5 %", "two minutes" -> ("2", "minute")."""
    out = set()
    for number, unit in _QUANTITY.findall(MARKER.sub("", text)):
        value = _NUMBER_WORDS.get(number.lower(), number).replace(",", "")
        out.add((value, sentences.stem(unit.lower()).rstrip("s") or unit))
    return out


SOURCE_FACTS_CACHED = 128  # sources whose facts are kept: ~70 kB for 1,500 characters of text, ~9 MB in all


@dataclass(frozen=True, slots=True)
class _SourceFacts:
    """What the support checks read from one source. The same chunks come back turn after turn in a
    conversation, and reading one (sentences, stems, quantities, runs) is ~0.3 ms of Python."""

    units: tuple[str, ...]  # its sentences and table rows, normalised (not code or rules)
    terms: frozenset[str]
    quantities: frozenset[tuple[str, str]]  # in its document name, location and text
    mentioned: frozenset[str]  # runs of its document name, location and text (names are looked up here)
    contexts: tuple[tuple[str, frozenset[str]], ...]  # each number with the words of the units it is in


@functools.lru_cache(maxsize=SOURCE_FACTS_CACHED)
def _facts(document: str, location: str, text: str) -> _SourceFacts:
    """Each source on its own: a quantity or a name is never read across two sources' boundary."""
    units = tuple(u.normalised for u in sentences.split(text) if u.kind not in {"code", "rule"})
    about = f"{document} {location} {text}"
    contexts: dict[str, set[str]] = {}
    for unit in units:
        for number in _numbers(unit):
            contexts.setdefault(number, set()).update(sentences.terms(unit))
    return _SourceFacts(
        units,
        frozenset(sentences.terms(text)),
        frozenset(_quantities(about)),
        frozenset(sentences.runs(about)),
        tuple((number, frozenset(words)) for number, words in contexts.items()),
    )


def _unsupported(
    checked: Sequence[str], guard: AnswerGuard, embed: Callable[[list[str]], Vectors] | None
) -> tuple[int, ...]:
    """Indices of the sentences no source supports: too little similarity and word cover, or a
    number, a quantity or a name that no source has."""
    o = guard.options
    texts = [_SPACED_MARKER.sub("", s) for s in checked]
    facts = [_facts(s.document, s.location, s.text) for s in guard.sources]
    source_units = [u for f in facts for u in f.units]
    asked = set(sentences.terms(guard.question))  # restating the question's subject invents nothing
    source_terms = [f.terms | asked for f in facts]
    quantities = set().union(*(f.quantities for f in facts))
    mentioned = set().union(*(f.mentioned for f in facts))
    # Each number with the words of the sentences (or table rows) it appears in.
    contexts: dict[str, set[str]] = {}
    for f in facts:
        for number, near in f.contexts:
            contexts.setdefault(number, set()).update(near)
    cosine = np.zeros(len(texts))
    if embed is not None and source_units:
        vectors = embed([*texts, *source_units])
        cosine = np.clip((vectors[: len(texts)] @ vectors[len(texts) :].T).max(axis=1), 0.0, 1.0)
    out: list[int] = []
    for i, text in enumerate(texts):
        terms = set(sentences.terms(text))
        if len(terms) < 2 or _DECLINE.search(text):
            continue
        cover = max((len(terms & st) / len(terms) for st in source_terms), default=0.0)
        support = o.cosine_weight * cosine[i] + (1 - o.cosine_weight) * cover if embed is not None else cover
        # A number must appear in a source sentence that shares two words with this one (one if it has
        # one: "12 meeting rooms in the office" is not supported by "12 parking spaces at the office");
        # quantities keep their unit; names must be in a source.
        numbers = _numbers(text)
        words = terms - numbers
        invented = (
            any(len(contexts.get(n, set()) & words) < min(2, len(words)) for n in numbers)
            or _quantities(text) - quantities
            or sentences.names(text).keys() - mentioned
        )
        if support < (o.support_bar if embed is not None else o.cover_bar) or invented:
            out.append(i)
    return tuple(out)


def _fatal(
    original: str,
    units: list[sentences.Unit],
    content: list[sentences.Unit],
    echoes: int,
    unsupported: tuple[int, ...],
) -> Reason | None:
    if not content:
        if echoes and _content(original):
            return Reason("only_echo", "the answer only repeated the prompt")
        if units and (MARKER.search(original) or _POINTER.search(original) or _meta_only(original)):
            return Reason("citations_only", "the answer only points at sources and says nothing")
        if units:
            return None  # a terse answer ("42", "Yes.") says something; nothing to check it against
        return Reason("empty", "the answer is empty")
    if len(unsupported) * 2 > len(content):
        return Reason("mostly_unsupported", "most sentences are not supported by the sources")
    return None
