"""Tool calling: the typed extension of :class:`app.llm.base.ChatModel` for models that may call tools.

A :class:`ToolCallingModel` takes :class:`ToolSpec` s (name, description, JSON Schema of the
arguments) beside the conversation and streams, in order:

- :class:`~app.llm.base.TextDelta` as text arrives (a model may write some text before calling);
- :class:`ToolCallDelta` as a call's pieces arrive (OpenAI streams a call's arguments in fragments,
  Ollama sends each call whole, as one delta);
- one :class:`ToolCalls` with every call assembled (:class:`ToolCallAssembler`), when the reply asked
  for any: the loop runs these;
- one :class:`~app.llm.base.Usage`, last.

The conversation may hold, besides plain :class:`~app.llm.base.Message` s, the assistant's earlier
calls (:class:`AssistantToolCalls`) and their results (:class:`ToolResult`), so the loop can hand results
back. Whether a model can do this is its provider's declaration (``ModelCapabilities.tool_calling``);
the core never guesses from a vendor or a model name.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from app.llm.base import ChatModel, GenerationOptions, Message, TextDelta, Usage


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model is told about it."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # a JSON Schema of an object: the call's arguments

    def wire(self) -> dict[str, Any]:
        """The ``{"type": "function", "function": {...}}`` form both OpenAI and Ollama take."""
        function = {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of call number ``index`` of this reply: its id and name (once, usually first) and a
    fragment of its JSON arguments, as they arrive."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True)
class ToolCall:
    """One complete call. ``arguments`` is the JSON text the model wrote, unparsed: a model can write
    invalid JSON, and that is an answer for the model (the loop's to give), not a crash."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as an object; ``ValueError`` when they are not a JSON object."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError(f"the arguments are a JSON {type(value).__name__}, not an object")
        return value


@dataclass(frozen=True)
class ToolCalls:
    """Every call of one reply, complete, in the order the model numbered them."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class AssistantToolCalls:
    """An earlier reply of the assistant that asked for calls (with whatever text it wrote first)."""

    calls: tuple[ToolCall, ...]
    content: str = ""


@dataclass(frozen=True)
class ToolResult:
    """What a call returned (or why it failed), for the model to read."""

    call_id: str
    name: str
    content: str


Turn = Message | AssistantToolCalls | ToolResult
ToolStreamEvent = TextDelta | ToolCallDelta | ToolCalls | Usage


@runtime_checkable
class ToolCallingModel(ChatModel, Protocol):
    """A chat model that can be offered tools."""

    def stream_tools(
        self, turns: Sequence[Turn], tools: Sequence[ToolSpec], options: GenerationOptions
    ) -> AsyncIterator[ToolStreamEvent]:
        """Yield the events of this module's docstring, in that order. Cancelling stops generation.
        Raises ``ProviderError`` subclasses."""
        ...


def as_messages(turns: Sequence[Turn]) -> list[Message]:
    """The turns as plain messages, for token estimates (calls and results count as their text)."""
    out: list[Message] = []
    for turn in turns:
        if isinstance(turn, Message):
            out.append(turn)
        elif isinstance(turn, AssistantToolCalls):
            calls = " ".join(f"{c.name}({c.arguments})" for c in turn.calls)
            out.append(Message("assistant", f"{turn.content} {calls}".strip()))
        else:
            out.append(Message("user", turn.content))
    return out


class MalformedToolCall(ValueError):
    """A provider streamed a call that cannot be assembled (no name)."""


@dataclass
class _Partial:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Joins :class:`ToolCallDelta` s into :class:`ToolCall` s. OpenAI sends a call's id and name in its
    first delta and the arguments in fragments after it, all under the call's ``index``; a provider
    that sends no id gets ``call_<index>``."""

    def __init__(self) -> None:
        self._partials: dict[int, _Partial] = {}

    def feed(self, delta: ToolCallDelta) -> None:
        partial = self._partials.setdefault(delta.index, _Partial())
        if delta.id:
            partial.id = delta.id
        if delta.name:
            partial.name = delta.name
        if delta.arguments:
            partial.arguments.append(delta.arguments)

    def calls(self) -> tuple[ToolCall, ...]:
        """The assembled calls, by index; raises :class:`MalformedToolCall` for one without a name."""
        out = []
        for index in sorted(self._partials):
            partial = self._partials[index]
            if not partial.name:
                raise MalformedToolCall(f"tool call {index} came without a function name")
            out.append(ToolCall(partial.id or f"call_{index}", partial.name, "".join(partial.arguments) or "{}"))
        return tuple(out)
