"""Remembered token counts: the same numbers as the tokenizer's, each text tokenized once while it
is among the most recently counted."""

from concurrent.futures import ThreadPoolExecutor

from app.llm import token_counts
from app.llm.tokenizers import EstimateTokenizer


class CallCountingTokenizer(EstimateTokenizer):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return super().count(text)


def test_counts_are_the_tokenizers_and_each_text_is_tokenized_once() -> None:
    inner = CallCountingTokenizer()
    counter = token_counts.cached(inner)
    texts = ["A source about bees.", "Another, longer source about hives and honey.", ""]
    assert [counter.count(t) for t in texts * 3] == [EstimateTokenizer().count(t) for t in texts * 3]
    assert inner.calls == texts
    assert (counter.name, counter.exact) == (inner.name, inner.exact)
    assert counter.spans(texts[1]) == inner.spans(texts[1])


def test_one_cache_per_tokenizer_instance() -> None:
    a, b = CallCountingTokenizer(), CallCountingTokenizer()
    assert token_counts.cached(a) is token_counts.cached(a)
    assert token_counts.cached(token_counts.cached(a)) is token_counts.cached(a)
    token_counts.cached(a).count("shared text")
    token_counts.cached(b).count("shared text")
    assert a.calls == b.calls == ["shared text"]


def test_the_least_recently_used_count_is_dropped_first() -> None:
    inner = CallCountingTokenizer()
    counter = token_counts.CountingTokenizer(inner, size=2)
    for text in ["one", "two", "one", "three", "one", "two"]:
        counter.count(text)
    assert inner.calls == ["one", "two", "three", "two"]


def test_threads_share_one_cache() -> None:
    inner = CallCountingTokenizer()
    counter = token_counts.cached(inner)
    texts = [f"text number {i} " * 20 for i in range(50)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(counter.count, texts * 8))
    assert results == [EstimateTokenizer().count(t) for t in texts * 8]
    assert len(set(inner.calls)) == 50
