"""Token counts remembered per tokenizer and text, so a chat turn does not tokenize again what the
turns before it already counted: the system prompt, each source (the same chunks come back for
related questions) and each message of the history (counted again on every later turn).

:func:`cached` wraps a :class:`~app.llm.base.Tokenizer` in one that remembers up to ``SIZE``
counts (least recently used dropped first); ``spans`` is passed through. One cache per tokenizer
instance, shared by every thread that counts with it (budgets run in worker threads).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from app.llm.base import Tokenizer

SIZE = 4096  # texts per tokenizer: a few MB of chunk text at most

_caches: weakref.WeakKeyDictionary[Tokenizer, CountingTokenizer] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


class CountingTokenizer:
    """``tokenizer``, with ``count`` remembered per text."""

    def __init__(self, tokenizer: Tokenizer, size: int = SIZE) -> None:
        self.tokenizer = tokenizer
        self.name = tokenizer.name
        self.exact = tokenizer.exact
        self._size = size
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        with self._lock:
            known = self._counts.get(text)
            if known is not None:
                self._counts.move_to_end(text)
                return known
        counted = self.tokenizer.count(text)  # outside the lock: other threads count meanwhile
        with self._lock:
            self._counts[text] = counted
            if len(self._counts) > self._size:
                self._counts.popitem(last=False)
        return counted

    def spans(self, text: str) -> list[tuple[int, int]]:
        return self.tokenizer.spans(text)


def cached(tokenizer: Tokenizer) -> CountingTokenizer:
    """The counting wrapper of ``tokenizer`` (the same one on every call, while it lives)."""
    if isinstance(tokenizer, CountingTokenizer):
        return tokenizer
    with _caches_lock:
        try:
            found = _caches.get(tokenizer)
            if found is None:
                found = _caches[tokenizer] = CountingTokenizer(tokenizer)
        except TypeError:  # not weakly referable or not hashable: remember for this caller only
            return CountingTokenizer(tokenizer)
        return found
