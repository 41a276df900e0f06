"""The guard's streaming loop check, kept up to date token by token, says exactly what its
definition says: each check below is written as the module docstring defines it (a fresh pass
over the whole text per token) and compared with the guard on generated streams that loop often."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from app.rag.answer.guard import _RUN_CHAR, AnswerGuard, GuardOptions, Reason, _LoopWatch

SMALL = GuardOptions(max_period=6, min_loop_tokens=4, window=12, min_distinct=0.5)


class Definition:
    """The loop rules read off the whole token list at every token."""

    def __init__(self, o: GuardOptions) -> None:
        self.o, self.tokens, self.shapes = o, list[str](), list[str]()
        self.sentences: Counter[str] = Counter()
        self.current: list[str] = []

    def push(self, token: str) -> Reason | None:
        shape = "#" if token[0].isdigit() else token
        self.tokens.append(token)
        self.shapes.append(shape)
        if token in ".!?\n":
            words, self.current = self.current, []
            sentence = " ".join(words)
            if len(words) >= 4 and sum(t[0].isalpha() for t in words) >= 2:
                self.sentences[sentence] += 1
                if self.sentences[sentence] >= self.o.sentence_repeats:
                    return Reason("loop", f"the sentence “{sentence}” was written {self.sentences[sentence]} times")
        else:
            self.current.append(shape)
        return self.periodic() or self.low_variety()

    def periodic(self) -> Reason | None:
        t = self.tokens
        for p in range(1, min(self.o.max_period, len(t) // 2) + 1):
            need = max(p * (8 if p <= 2 else 3), self.o.min_loop_tokens)
            if need <= len(t) and all(t[-i] == t[-i - p] for i in range(1, need - p + 1)):
                shown = " ".join(x for x in t[-p:] if x != "\n")
                return Reason("loop", f"the text “{shown}” repeats {need // p}+ times in a row")
        return None

    def low_variety(self) -> Reason | None:
        if len(self.shapes) < self.o.window:
            return None
        window = [t for t in self.shapes[-self.o.window :] if t != "\n"]
        if not any(t[0].isalpha() for t in window):
            return Reason("loop", f"the last {self.o.window} tokens hold no words")
        grams = [tuple(window[i : i + 4]) for i in range(len(window) - 3)]
        if len(set(grams)) < self.o.min_distinct * len(grams):
            return Reason("loop", f"the last {self.o.window} words repeat the same few phrases")
        return None


# Few distinct tokens, numbers (all one shape) and line breaks among them: loops, counters and
# wordless stretches are common.
WORDS = st.sampled_from(["a", "b", "the", "source", ".", "\n", "?"])
NUMBERS = st.integers(0, 99).map(str)
TOKENS = st.lists(st.one_of(WORDS, NUMBERS), max_size=160)
# Whole sentences from a few, so that one written again and again stops the stream too.
SENTENCES = st.lists(
    st.sampled_from([["the", "source", "of", "a", "."], ["a", "b", "the", "1", "\n"], ["b", "a", "source", "?"]]),
    max_size=30,
).map(lambda sentences: [token for sentence in sentences for token in sentence])


@settings(max_examples=300, deadline=None)
@given(tokens=st.one_of(TOKENS, SENTENCES), small=st.booleans())
def test_each_token_gets_the_verdict_of_the_definition(tokens: list[str], small: bool) -> None:
    options = SMALL if small else GuardOptions()
    watch, definition = _LoopWatch(options), Definition(options)
    for token in tokens:
        assert watch.push(token) == definition.push(token)


def test_the_window_is_the_last_window_tokens() -> None:
    # A word, then 12 tokens without one and varied enough: only the window of 12 says "no words".
    watch = _LoopWatch(SMALL)
    assert watch.push("a") is None
    verdicts = [watch.push(t) for t in ["22", "?", "1", "3", "1", ".", ".", ".", "!", ".", "22", "1"]]
    assert verdicts[:-1] == [None] * 11
    assert verdicts[-1] == Reason("loop", "the last 12 tokens hold no words")


def test_a_run_is_seen_when_its_last_character_arrives_alone() -> None:
    guard = AnswerGuard("q", [])
    assert not guard.feed("y" + "x" * 63).stop
    assert guard.feed("x").stop


@settings(max_examples=200, deadline=None)
@given(deltas=st.lists(st.text(alphabet="xy .", min_size=1, max_size=90), max_size=40))
def test_a_run_of_one_character_stops_the_stream_where_the_whole_tail_shows_it(deltas: list[str]) -> None:
    guard, tail = AnswerGuard("q", []), ""
    for delta in deltas:
        check = guard.feed(delta)
        tail = (tail + delta)[-200:]
        if check.stop and check.reason is not None and "character" in check.reason.message:
            assert _RUN_CHAR.search(tail)
            return
        if not check.stop:
            assert not _RUN_CHAR.search(tail)
