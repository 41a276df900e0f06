"""LocalChatModel with the real SmolLM2 GGUF: generation, cancellation, exact token counts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from app.errors import ProviderError
from app.llm.base import ChatModel, GenerationOptions, Message, TextDelta, Tokenizer
from app.llm.chat.local import SMOLLM2, LocalChatModel, shipped_models
from tests.llm.chat_wire.streams import collect

if TYPE_CHECKING:
    from llama_cpp import Llama

pytestmark = [pytest.mark.slow, pytest.mark.requires_llama]

QUESTION = [
    Message("system", "You are a helpful assistant."),
    Message("user", "What is the capital of France?"),
    Message("assistant", "Paris."),
    Message("user", "And of Italy? Answer in one sentence."),
]
SHORT = GenerationOptions(max_tokens=24, temperature=0.0)


@pytest.fixture(scope="module")
def model() -> Iterator[LocalChatModel]:
    yield LocalChatModel(SMOLLM2, shipped_models()[SMOLLM2], context_window=2048, threads=1)


@pytest.fixture(scope="module")
def vocab() -> Iterator[Llama]:
    """The same GGUF's vocabulary, loaded independently of the adapter."""
    from llama_cpp import Llama

    vocab = Llama(str(shipped_models()[SMOLLM2]), vocab_only=True, verbose=False)
    yield vocab
    vocab.close()


async def wait_idle(model: LocalChatModel, within: float = 5.0) -> float:
    started = time.monotonic()
    while model.busy:
        assert time.monotonic() - started < within, "the worker did not stop"
        await asyncio.sleep(0.005)
    return time.monotonic() - started


async def test_generates_an_answer_with_real_usage(model: LocalChatModel) -> None:
    assert isinstance(model, ChatModel) and isinstance(model.tokenizer, Tokenizer)
    got = await collect(model.stream(QUESTION, SHORT))
    assert got.text.strip()
    [usage] = got.usage
    assert usage.prompt_tokens == model.count_message_tokens(QUESTION)
    assert len(got.deltas) <= usage.completion_tokens <= SHORT.max_tokens
    assert model.load_seconds is not None and model.last_timings is not None
    assert model.last_timings.completion_tokens == usage.completion_tokens


async def test_closing_the_stream_stops_the_worker(model: LocalChatModel) -> None:
    stream = model.stream(QUESTION, GenerationOptions(max_tokens=400, temperature=0.8))
    assert isinstance(await anext(stream), TextDelta)
    await stream.aclose()
    assert await wait_idle(model) < 1.0
    again = await collect(model.stream(QUESTION, SHORT))
    assert again.text and len(again.usage) == 1


async def test_cancelling_the_task_stops_the_worker(model: LocalChatModel) -> None:
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in model.stream(QUESTION, GenerationOptions(max_tokens=400, temperature=0.8)):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_idle(model) < 1.0


async def test_concurrent_streams_take_turns(model: LocalChatModel) -> None:
    options = GenerationOptions(max_tokens=8, temperature=0.0)
    first, second = await asyncio.gather(*(collect(model.stream(QUESTION, options)) for _ in range(2)))
    assert first.text == second.text  # greedy, and no interleaving inside one llama.cpp context
    assert len(first.usage) == len(second.usage) == 1


async def test_sampling_differs_between_generations(model: LocalChatModel) -> None:
    invent = [Message("user", "Invent a name for a cat and say why.")]
    options = GenerationOptions(max_tokens=12, temperature=1.2)
    answers = {(await collect(model.stream(invent, options))).text for _ in range(3)}
    assert len(answers) > 1  # what a user pressing 'regenerate' expects


def chatml(*turns: tuple[str, str]) -> str:
    return "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in turns) + "<|im_start|>assistant\n"


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (QUESTION, chatml(*((m.role, m.content) for m in QUESTION))),
        # SmolLM2's template supplies its own system prompt when the conversation has none.
        (
            [Message("user", "Hi")],
            chatml(("system", "You are a helpful AI assistant named SmolLM, trained by Hugging Face"), ("user", "Hi")),
        ),
    ],
)
def test_counts_the_chat_template_formatted_prompt_exactly(
    model: LocalChatModel, vocab: Llama, messages: list[Message], expected: str
) -> None:
    exact = len(vocab.tokenize(expected.encode(), add_bos=False, special=True))
    assert model.count_message_tokens(messages) == exact


async def test_a_prompt_longer_than_the_window_is_refused(model: LocalChatModel) -> None:
    huge = [Message("user", "word " * 3000)]
    with pytest.raises(ProviderError, match="reads at most 2048"):
        await collect(model.stream(huge, SHORT))
    assert not model.busy


@pytest.mark.parametrize("text", ["Paris is the capital.", "naïve café — 日本語 🙂 done", "", "  spaced\n\nout  "])
def test_tokenizer_is_the_models_own(model: LocalChatModel, vocab: Llama, text: str) -> None:
    assert model.tokenizer.exact
    assert model.tokenizer.count(text) == (len(vocab.tokenize(text.encode(), add_bos=False)) if text else 0)
    spans = model.tokenizer.spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(b > a for a, b in spans) and len(spans) <= model.tokenizer.count(text)
