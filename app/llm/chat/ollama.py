"""Chat through the official ``ollama`` client: ``POST /api/chat`` streaming NDJSON.

Each line carries a piece of the answer; the last one (``"done": true``) carries
``prompt_eval_count`` and ``eval_count``, which become :class:`Usage`. Ollama exposes no
tokenizer, so token counts before generation are estimates (:class:`EstimateTokenizer`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import httpx
import ollama
import pydantic

from app.llm.base import GenerationOptions, Message, TextDelta, Tokenizer, Usage
from app.llm.chat.common import EventStream, ToolEventStream, templated_token_count, wire_messages
from app.llm.tokenizers import EstimateTokenizer
from app.llm.tool_calling import (
    AssistantToolCalls,
    MalformedToolCall,
    ToolCallAssembler,
    ToolCallDelta,
    ToolCalls,
    ToolResult,
    ToolSpec,
    Turn,
    as_messages,
)
from app.llm.vendor_errors import Vendor, from_ollama, stopped
from app.settings import OllamaSettings


class OllamaChatModel:
    """A model served by Ollama. Close with :meth:`aclose`."""

    provider = "ollama"

    def __init__(self, model: str, settings: OllamaSettings, *, context_window: int) -> None:
        self.model = model
        self.context_window = context_window
        self.tokenizer: Tokenizer = EstimateTokenizer()
        self._vendor = Vendor.ollama(settings)
        self._client = ollama.AsyncClient(host=settings.host, timeout=settings.timeout)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        # Typical Ollama templates wrap each message in a start marker, role and end marker.
        return templated_token_count(self.tokenizer, messages, per_message=4, per_reply=3)

    def stream(self, messages: Sequence[Message], options: GenerationOptions) -> EventStream:
        # No tools offered, so only text and usage come: the one loop serves both.
        return cast(EventStream, self._events(wire_messages(messages), (), options, messages))

    def stream_tools(
        self, turns: Sequence[Turn], tools: Sequence[ToolSpec], options: GenerationOptions
    ) -> ToolEventStream:
        return self._events(wire_turns(turns), [tool.wire() for tool in tools], options, as_messages(turns))

    async def _events(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        options: GenerationOptions,
        counted: Sequence[Message],
    ) -> ToolEventStream:
        final: ollama.ChatResponse | None = None
        parts: list[str] = []
        calls = ToolCallAssembler()
        called = 0
        try:
            responses = await self._client.chat(
                model=self.model,
                messages=messages,
                tools=list(tools) or None,
                stream=True,
                options=self._options(options),
            )
            try:
                async for response in responses:
                    content = response.message.content
                    if content:
                        parts.append(content)
                        yield TextDelta(content)
                    # Ollama sends each call whole, in the chunk that finishes it, without an id.
                    for call in response.message.tool_calls or ():
                        piece = ToolCallDelta(
                            called, f"call_{called}", call.function.name, json.dumps(dict(call.function.arguments))
                        )
                        called += 1
                        calls.feed(piece)
                        yield piece
                    if response.done:
                        final = response
            finally:
                # The client's generator holds the HTTP response open until it is closed.
                aclose = getattr(responses, "aclose", None)
                if aclose is not None:
                    await aclose()
            assembled = calls.calls()
        except (ollama.ResponseError, ConnectionError, httpx.TransportError) as exc:
            raise from_ollama(exc, self._vendor, self.model) from exc
        except (httpx.RequestError, json.JSONDecodeError, pydantic.ValidationError, MalformedToolCall) as exc:
            raise stopped(self._vendor, self.model, str(exc) or type(exc).__name__) from exc
        if final is None:
            raise stopped(self._vendor, self.model, "the stream ended without its final message")
        if assembled:
            yield ToolCalls(assembled)
        # Ollama leaves prompt_eval_count out when the whole prompt came from its cache.
        prompt_tokens = final.prompt_eval_count
        completion_tokens = final.eval_count
        written = "".join(parts) + "".join(c.name + c.arguments for c in assembled)
        yield Usage(
            prompt_tokens=self.count_message_tokens(counted) if prompt_tokens is None else prompt_tokens,
            completion_tokens=self.tokenizer.count(written) if completion_tokens is None else completion_tokens,
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    def _options(self, options: GenerationOptions) -> dict[str, Any]:
        # num_ctx: Ollama's own default window is small and it truncates longer prompts silently;
        # asking for ours keeps the chat service's token budget true.
        sent: dict[str, Any] = {
            "num_predict": options.max_tokens,
            "temperature": options.temperature,
            "num_ctx": self.context_window,
        }
        if options.stop:
            sent["stop"] = list(options.stop)
        return sent


def wire_turns(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """Turns as Ollama's messages: an assistant reply's calls under ``tool_calls`` (arguments as an
    object), a result as a ``tool`` message naming its tool (Ollama's calls carry no id)."""
    out: list[dict[str, Any]] = []
    for turn in turns:
        if isinstance(turn, Message):
            out.append({"role": turn.role, "content": turn.content})
        elif isinstance(turn, AssistantToolCalls):
            calls = [{"function": {"name": c.name, "arguments": _object(c.arguments)}} for c in turn.calls]
            out.append({"role": "assistant", "content": turn.content, "tool_calls": calls})
        elif isinstance(turn, ToolResult):
            out.append({"role": "tool", "content": turn.content, "tool_name": turn.name})
    return out


def _object(arguments: str) -> dict[str, Any]:
    # An earlier call's arguments were invalid JSON (its result told the model so); Ollama's
    # messages need an object, so it goes back empty.
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
