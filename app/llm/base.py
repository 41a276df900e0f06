"""The seams every provider plugs into. The core never special-cases a vendor.

- :class:`Tokenizer` counts tokens and tells where each token sits in the text (for chunking and
  token budgets).
- :class:`Embedder` turns texts into L2-normalised float32 vectors of one embedding space.
- :class:`ChatModel` streams an answer for a list of messages, then reports usage.
- :class:`ChatModels` is the chat models a service may use (:class:`app.llm.registry.ProviderRegistry`
  of chat models, or a test's fake): validated by name, one shared instance of each.

Vendor errors are translated into :mod:`app.errors` ``ProviderError`` subclasses at the adapter
boundary (``raise ProviderAuthError(...) from exc``), so callers handle one error tree.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class SpaceId:
    """An embedding space: vectors from different spaces are never compared."""

    provider: str
    model: str
    dimensions: int

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}@{self.dimensions}"


@runtime_checkable
class Tokenizer(Protocol):
    """A model's tokenizer (or a documented estimate where the provider exposes none)."""

    name: str
    exact: bool  # False when counts are an estimate

    def count(self, text: str) -> int:
        """Number of tokens ``text`` encodes to (no special tokens)."""
        ...

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of each token, in order; never splits a character."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Embeds texts into one space. Synchronous: CPU-bound or blocking I/O; call from a thread."""

    space: SpaceId
    tokenizer: Tokenizer
    max_tokens: int  # longest input the model reads; longer texts are truncated by the model

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an ``(len(texts), dimensions)`` float32 array, each row L2-normalised."""
        ...


Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    # Data the conversation carries but nobody wrote to the model (an approved tool's output): sent
    # fenced as a user-side message, and never taken for something the user asked.
    data: bool = False


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


StreamEvent = TextDelta | Usage


@dataclass(frozen=True)
class GenerationOptions:
    """How to sample an answer. A sampling knob left None takes the model's own default, which its
    adapter declares as ``generation_defaults`` (what keeps a 135M model from looping would only
    hurt a large one); an adapter whose vendor has no such knob ignores it."""

    max_tokens: int = 384
    temperature: float = 0.2
    stop: tuple[str, ...] = ()
    top_p: float | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None  # llama.cpp/Ollama: divides the logits of recent tokens
    frequency_penalty: float | None = None  # OpenAI-style: grows with each repetition
    presence_penalty: float | None = None


@dataclass(frozen=True)
class ModelCapabilities:
    """What a chat model can be trusted with, and how many answers at once, as its provider
    declares it (the core never guesses from a vendor or a model name)."""

    # Writes answers that stay within the given sources, without looping or echoing the prompt.
    # False for very small local models (SmolLM2-135M loops, echoes and invents; docs/BENCHMARKS.md).
    grounded_writing: bool = True
    # Rewrites a follow-up into a standalone search query well enough to search with it instead of
    # the model-free history-aware query (a session's rewrite AUTO; app/rag/search/rewrite.py). A provider
    # declares it; not the shipped local models (measured on benchmarks/conversations, docs/BENCHMARKS.md).
    query_rewriting: bool = False
    # Judges whether retrieved sources answer a question (evaluate-and-widen, app/rag/search/widen.py);
    # a provider declares it; otherwise the model-free heuristic decides.
    retrieval_judging: bool = False
    # How many answers its provider writes at once without slowing each (app/services/chat/slots.py);
    # None: the server's cap for in-process models (RAGCHAT_CHAT__MAX_CONCURRENT_GENERATIONS).
    concurrency: int | None = None
    # Can be offered tools (app/llm/tool_calling.py: the adapter implements ToolCallingModel). False
    # unless the provider declares it: a session with tool groups needs a model that can.
    tool_calling: bool = False


@runtime_checkable
class ChatModel(Protocol):
    """A chat model that streams. One instance per (provider, model)."""

    provider: str
    model: str
    context_window: int
    tokenizer: Tokenizer

    def stream(self, messages: Sequence[Message], options: GenerationOptions) -> AsyncIterator[StreamEvent]:
        """Yield ``TextDelta`` events as text arrives, then one ``Usage``. Cancelling the iteration
        (``aclose()`` or task cancellation) stops generation. Raises ``ProviderError`` subclasses."""
        ...

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens the messages take once formatted with the model's chat template."""
        ...


@dataclass(frozen=True)
class ProviderModels:
    """What one provider offers, for the API to show."""

    provider: str
    available: bool
    reason: str | None  # why not available, or else why not reachable
    models: tuple[str, ...]  # known names (suggestions when ``open_ended``)
    open_ended: bool  # any model name the provider knows is accepted
    default_model: str | None  # the configured default, when this is the default provider
    reachable: bool = True  # answered its probe (cached briefly); never when not available
    concurrency: int | None = None  # what it declares (ModelCapabilities.concurrency)
    tool_calling: bool = False  # its models can be offered tools (ModelCapabilities.tool_calling)


class ChatModels(Protocol):
    """The chat models a service may use, by ``(provider, model)``."""

    def get(self, provider: str, model: str) -> ChatModel:
        """The shared instance, built on first use. Raises ``ValidationError`` for a bad choice."""
        ...

    def validate(self, provider: str, model: str) -> None:
        """Raise ``ValidationError`` unless ``model`` of ``provider`` can be used; never calls the network."""
        ...

    def capabilities(self, provider: str, model: str) -> ModelCapabilities:
        """What the model declares it can do, without building (or loading) it."""
        ...

    async def list_models(self) -> Sequence[ProviderModels]:
        """Every provider, whether it can be used and answers now, and its known model names."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores how relevant each passage is to a query (a cross-encoder behind an HTTP ``rerank``
    endpoint, or a chat model as judge). Scores are comparable within one call only: callers use
    their order, never their scale."""

    name: str  # shown in the trace, e.g. "http:bge-reranker-v2-m3" or "judge:openai/gpt-4o-mini"

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in input order, higher is more relevant. Raises ``ProviderError``."""
        ...
