"""A repeat penalty that leaves digits alone, for the local model.

llama.cpp's repeat penalty divides the (positive) logit of every token among the last 64 sampled.
SmolLM2 writes numbers one digit per token, so once an answer has restated "the 2023 travel
policy", the digits 2, 0 and 3 are penalised and the fact that follows comes out wrong: with a
penalty of 1.1, "£120" became "£18" (tests/llm/test_chat_local_sampling.py). Loops are made of
words, not of digits, so this penalty skips digit tokens and otherwise does what llama.cpp does, on
the answer's own tokens only (the prompt is never penalised: copying a source is the point).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

LAST_N = 64  # llama-cpp-python's default window (Llama(last_n_tokens_size=64))


def digit_tokens(tokenize: Callable[[str], list[int]]) -> frozenset[int]:
    """The tokens that are one digit, with or without a leading space."""
    found: set[int] = set()
    for digit in "0123456789":
        for text in (digit, f" {digit}"):
            ids = tokenize(text)
            if len(ids) == 1:
                found.add(ids[0])
    return frozenset(found)


class RepeatPenalty:
    """A llama-cpp-python logits processor: ``penalty`` on the tokens of the answer's last ``last_n``,
    except ``exempt`` ones. Called once per sampled token with every token so far (prompt first)."""

    def __init__(self, penalty: float, prompt_tokens: int, exempt: Iterable[int], last_n: int = LAST_N) -> None:
        self.penalty = penalty
        self.prompt_tokens = prompt_tokens
        self.exempt = np.fromiter(exempt, dtype=np.intc)
        self.last_n = last_n

    def __call__(self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        answer = input_ids[self.prompt_tokens :][-self.last_n :]
        if answer.size == 0:
            return scores
        seen = np.setdiff1d(np.unique(answer), self.exempt)
        logits = scores[seen]
        scores[seen] = np.where(logits > 0, logits / self.penalty, logits * self.penalty)
        return scores
