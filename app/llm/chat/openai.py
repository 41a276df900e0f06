"""Chat through the official ``openai`` SDK: OpenAI itself or any OpenAI-compatible server.

Streams ``/v1/chat/completions`` and asks for usage in the last chunk
(``stream_options.include_usage``). Compatible servers often ignore that option (llama.cpp's
Python server does), so when no usage arrives we count with the tokenizer instead: exact for
OpenAI's own models, an estimate for anything else behind a ``base_url``. The SDK sends the
request (retries, errors); the server-sent events are read by app/llm/chat/sse.py, as the JSON
they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast

import openai

from app.llm.base import GenerationOptions, Message, TextDelta, Tokenizer, Usage
from app.llm.chat.common import EventStream, ToolEventStream, templated_token_count, wire_messages
from app.llm.chat.sse import ChunkStream
from app.llm.tokenizers import TiktokenTokenizer
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
from app.llm.vendor_errors import OPENAI_BASE_URL, Vendor, from_openai, stopped
from app.settings import OpenAISettings

# Sent when only a base_url is configured: the SDK insists on some key, and keyless servers ignore it.
NO_KEY = "no-key"

# Context windows of OpenAI's chat models (prompt + answer), by name or dated-snapshot prefix.
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}


def context_window_for(model: str, default: int) -> int:
    """The known window of ``model`` (longest matching name, so ``gpt-4o-2024-08-06`` is gpt-4o),
    else ``default``."""
    matches = [name for name in KNOWN_CONTEXT_WINDOWS if model == name or model.startswith(name + "-")]
    return KNOWN_CONTEXT_WINDOWS[max(matches, key=len)] if matches else default


class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible API. Close with :meth:`aclose`."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        settings: OpenAISettings,
        *,
        context_window: int,
        max_retries: int = 2,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        self.model = model
        self.context_window = context_window
        self.tokenizer: Tokenizer = tokenizer or TiktokenTokenizer()
        key = settings.api_key.get_secret_value() if settings.api_key else None
        base_url = settings.base_url or OPENAI_BASE_URL
        self._vendor = Vendor.openai(settings)
        # Everything explicit: the SDK would otherwise fill gaps from OPENAI_* environment variables.
        # The SDK retries connection errors, 429 and 5xx before the stream starts, never mid-stream.
        self._client = openai.AsyncOpenAI(
            api_key=key or NO_KEY, base_url=base_url, timeout=settings.timeout, max_retries=max_retries
        )

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        return templated_token_count(self.tokenizer, messages, per_message=3, per_reply=3)

    def stream(self, messages: Sequence[Message], options: GenerationOptions) -> EventStream:
        # No tools offered, so only text and usage come: the one loop serves both.
        return cast(EventStream, self._events(self._body(wire_messages(messages), options), messages))

    def stream_tools(
        self, turns: Sequence[Turn], tools: Sequence[ToolSpec], options: GenerationOptions
    ) -> ToolEventStream:
        body = self._body(wire_turns(turns), options)
        if tools:
            body["tools"] = [tool.wire() for tool in tools]
        return self._events(body, as_messages(turns))

    def _body(self, messages: list[dict[str, Any]], options: GenerationOptions) -> dict[str, object]:
        body: dict[str, object] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if options.stop:
            body["stop"] = list(options.stop)
        return body

    async def _events(self, body: dict[str, object], counted: Sequence[Message]) -> ToolEventStream:
        parts: list[str] = []
        usage: Usage | None = None
        calls = ToolCallAssembler()
        called = False
        try:
            # The SDK's request, retries and errors; the server-sent events read by app/llm/chat/sse.py
            # and each chunk left as the JSON it is: building its ChatCompletionChunk model cost ~0.1 ms
            # of the event loop per token, and the SDK's SSE reader ~13% of the loop's time, at 32
            # streams (docs/BENCHMARKS.md, 7).
            chunks = await self._client.post(
                "/chat/completions", body=body, cast_to=object, stream=True, stream_cls=ChunkStream
            )
            async with chunks:  # closes the response when the consumer stops early
                async for chunk in chunks:
                    if not isinstance(chunk, dict):
                        continue
                    reported = chunk.get("usage")
                    if isinstance(reported, dict):
                        prompt, completion = reported.get("prompt_tokens"), reported.get("completion_tokens")
                        if isinstance(prompt, int) and isinstance(completion, int):
                            usage = Usage(prompt, completion)
                    for choice in chunk.get("choices") or ():
                        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                            continue
                        delta = choice.get("delta")
                        if not isinstance(delta, dict):
                            continue
                        text = delta.get("content")
                        if isinstance(text, str) and text:
                            parts.append(text)
                            yield TextDelta(text)
                        for piece in _call_deltas(delta.get("tool_calls")):
                            called = True
                            calls.feed(piece)
                            yield piece
            assembled = calls.calls() if called else ()
        except openai.APIError as exc:
            raise from_openai(exc, self._vendor, self.model) from exc
        except MalformedToolCall as exc:
            raise stopped(self._vendor, self.model, str(exc)) from exc
        if assembled:
            yield ToolCalls(assembled)
        if usage is None:
            written = "".join(parts) + "".join(c.name + c.arguments for c in assembled)
            usage = Usage(self.count_message_tokens(counted), self.tokenizer.count(written))
        yield usage

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()


def wire_turns(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """Turns as OpenAI's messages: an assistant reply's calls under ``tool_calls``, a result as a
    ``tool`` message answering its call's id."""
    out: list[dict[str, Any]] = []
    for turn in turns:
        if isinstance(turn, Message):
            out.append({"role": turn.role, "content": turn.content})
        elif isinstance(turn, AssistantToolCalls):
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in turn.calls
            ]
            out.append({"role": "assistant", "content": turn.content or None, "tool_calls": calls})
        elif isinstance(turn, ToolResult):
            out.append({"role": "tool", "tool_call_id": turn.call_id, "content": turn.content})
    return out


def _call_deltas(value: object) -> Iterator[ToolCallDelta]:
    """``delta.tool_calls`` of a chunk: ``[{"index", "id"?, "type"?, "function": {"name"?, "arguments"?}}]``."""
    for item in value if isinstance(value, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("index"), int):
            continue
        function = item.get("function")
        if not isinstance(function, dict):
            function = {}
        name, arguments, ident = function.get("name"), function.get("arguments"), item.get("id")
        yield ToolCallDelta(
            index=item["index"],
            id=ident if isinstance(ident, str) else None,
            name=name if isinstance(name, str) else None,
            arguments=arguments if isinstance(arguments, str) else "",
        )
