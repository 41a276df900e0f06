"""Tool calling on the wire: OpenAIChatModel and OllamaChatModel against loopback servers streaming
each vendor's tool-call format (OpenAI: ``delta.tool_calls`` fragments under an index; Ollama:
``message.tool_calls`` whole, arguments as an object), and what each sends back for a second round."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from app.errors import ProviderError
from app.llm.base import GenerationOptions, Message, ModelCapabilities, TextDelta, Usage
from app.llm.chat.ollama import OllamaChatModel
from app.llm.chat.openai import OpenAIChatModel
from app.llm.chat.registry import chat_registry
from app.llm.tool_calling import (
    AssistantToolCalls,
    ToolCall,
    ToolCallDelta,
    ToolCallingModel,
    ToolCalls,
    ToolResult,
    ToolSpec,
    ToolStreamEvent,
)
from app.settings import OllamaSettings, OpenAISettings, Settings
from tests.llm.chat_wire.scripted import ScriptedServer, ndjson_reply, sse_reply

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SEARCH = ToolSpec("search_knowledge_base", "Search the documents", {"type": "object", "properties": {}})
QUESTION = [Message("system", "Use tools."), Message("user", "Weather in Paris and Oslo?")]


@dataclass
class Got:
    text: str = ""
    deltas: list[ToolCallDelta] = field(default_factory=list)
    calls: list[ToolCalls] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    order: list[str] = field(default_factory=list)


async def collect(events: AsyncIterator[ToolStreamEvent]) -> Got:
    got = Got()
    async for event in events:
        assert not got.usage, "nothing may follow Usage"
        got.order.append(type(event).__name__)
        if isinstance(event, TextDelta):
            got.text += event.text
        elif isinstance(event, ToolCallDelta):
            got.deltas.append(event)
        elif isinstance(event, ToolCalls):
            got.calls.append(event)
        else:
            got.usage.append(event)
    return got


def openai_chunk(
    delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [choice],
        "usage": usage,
    }


def call_piece(index: int, *, id: str | None = None, name: str | None = None, arguments: str = "") -> dict[str, Any]:
    piece: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        piece.update(id=id, type="function")
        piece["function"]["name"] = name
    return {"tool_calls": [piece]}


def openai_model(url: str) -> OpenAIChatModel:
    settings = OpenAISettings(api_key=SecretStr("sk-test"), base_url=url + "/v1", timeout=10)
    return OpenAIChatModel("gpt-4o-mini", settings, context_window=8192, max_retries=0)


# --- OpenAI -----------------------------------------------------------------------------------


async def test_openai_streams_two_interleaved_calls_and_assembles_them() -> None:
    events = [
        openai_chunk({"role": "assistant", "content": "Checking. "}),
        openai_chunk(call_piece(0, id="call_p", name="get_weather")),
        openai_chunk(call_piece(0, arguments='{"ci')),
        openai_chunk(call_piece(1, id="call_o", name="get_weather", arguments='{"city"')),
        openai_chunk(call_piece(0, arguments='ty": "Paris"}')),
        openai_chunk(call_piece(1, arguments=': "Oslo"}')),
        openai_chunk({}, finish="tool_calls"),
        {**openai_chunk({}), "choices": [], "usage": {"prompt_tokens": 80, "completion_tokens": 25}},
    ]
    async with ScriptedServer([sse_reply(events)]) as server:
        model = openai_model(server.url)
        try:
            got = await collect(model.stream_tools(QUESTION, [WEATHER, SEARCH], GenerationOptions(max_tokens=64)))
        finally:
            await model.aclose()
    assert got.text == "Checking. "
    assert [(d.index, d.id, d.name, d.arguments) for d in got.deltas] == [
        (0, "call_p", "get_weather", ""),
        (0, None, None, '{"ci'),
        (1, "call_o", "get_weather", '{"city"'),
        (0, None, None, 'ty": "Paris"}'),
        (1, None, None, ': "Oslo"}'),
    ]
    [calls] = got.calls
    assert calls.calls == (
        ToolCall("call_p", "get_weather", '{"city": "Paris"}'),
        ToolCall("call_o", "get_weather", '{"city": "Oslo"}'),
    )
    assert [c.parsed_arguments() for c in calls.calls] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert got.order[-2:] == ["ToolCalls", "Usage"] and got.usage == [Usage(80, 25)]
    body = server.received[0].json()
    assert body["tools"] == [WEATHER.wire(), SEARCH.wire()]
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": WEATHER.parameters,
        },
    }


async def test_openai_sends_calls_and_results_back_in_its_format() -> None:
    call = ToolCall("call_p", "get_weather", '{"city": "Paris"}')
    turns = [*QUESTION, AssistantToolCalls((call,), "Checking."), ToolResult("call_p", "get_weather", "18 C, sunny")]
    events = [openai_chunk({"content": "Paris: 18 C."}), openai_chunk({}, finish="stop")]
    async with ScriptedServer([sse_reply(events)]) as server:
        model = openai_model(server.url)
        try:
            got = await collect(model.stream_tools(turns, [WEATHER], GenerationOptions()))
        finally:
            await model.aclose()
    assert got.text == "Paris: 18 C." and not got.calls and not got.deltas
    # No usage reported: counted with the tokenizer, over the calls and results too.
    assert got.usage[0].prompt_tokens > model.count_message_tokens(QUESTION)
    messages = server.received[0].json()["messages"]
    assert messages[2:] == [
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_p",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_p", "content": "18 C, sunny"},
    ]


async def test_openai_keeps_invalid_json_arguments_for_the_loop_to_answer() -> None:
    events = [openai_chunk(call_piece(0, id="c", name="get_weather", arguments='{"city": Par')), openai_chunk({})]
    async with ScriptedServer([sse_reply(events)]) as server:
        model = openai_model(server.url)
        try:
            got = await collect(model.stream_tools(QUESTION, [WEATHER], GenerationOptions()))
        finally:
            await model.aclose()
    [call] = got.calls[0].calls
    assert call.arguments == '{"city": Par'
    with pytest.raises(ValueError):
        call.parsed_arguments()


async def test_openai_call_without_a_name_is_a_provider_error() -> None:
    events = [openai_chunk(call_piece(0, arguments='{"city": "Paris"}'))]
    async with ScriptedServer([sse_reply(events)]) as server:
        model = openai_model(server.url)
        try:
            with pytest.raises(ProviderError, match="without a function name"):
                await collect(model.stream_tools(QUESTION, [WEATHER], GenerationOptions()))
        finally:
            await model.aclose()


async def test_openai_plain_stream_sends_no_tools() -> None:
    events = [openai_chunk({"content": "Hi"})]
    async with ScriptedServer([sse_reply(events)]) as server:
        model = openai_model(server.url)
        try:
            got = await collect(model.stream(QUESTION, GenerationOptions()))
        finally:
            await model.aclose()
    assert got.text == "Hi" and got.order == ["TextDelta", "Usage"]
    assert "tools" not in server.received[0].json()


# --- Ollama -----------------------------------------------------------------------------------


def ollama_line(message: dict[str, Any], *, done: bool = False, **counts: int) -> dict[str, Any]:
    line = {"model": "qwen3", "created_at": "2025-05-27T22:54:57.641643Z", "message": message, "done": done}
    return {**line, **({"done_reason": "stop", **counts} if done else {})}


async def test_ollama_streams_whole_calls_and_assembles_them() -> None:
    lines = [
        ollama_line({"role": "assistant", "content": "Let me check."}),
        ollama_line(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                    {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
                ],
            }
        ),
        ollama_line({"role": "assistant", "content": ""}, done=True, prompt_eval_count=90, eval_count=30),
    ]
    async with ScriptedServer([ndjson_reply(lines)]) as server:
        model = OllamaChatModel("qwen3", OllamaSettings(host=server.url, timeout=10), context_window=4096)
        try:
            got = await collect(model.stream_tools(QUESTION, [WEATHER], GenerationOptions(max_tokens=40)))
        finally:
            await model.aclose()
    assert got.text == "Let me check."
    assert [(d.index, d.id, d.name) for d in got.deltas] == [(0, "call_0", "get_weather"), (1, "call_1", "get_weather")]
    [calls] = got.calls
    assert [(c.id, c.name, c.parsed_arguments()) for c in calls.calls] == [
        ("call_0", "get_weather", {"city": "Paris"}),
        ("call_1", "get_weather", {"city": "Oslo"}),
    ]
    assert got.order[-2:] == ["ToolCalls", "Usage"] and got.usage == [Usage(90, 30)]
    [request] = server.received
    assert (request.method, request.path) == ("POST", "/api/chat")
    body = request.json()
    assert body["tools"] == [WEATHER.wire()] and body["stream"] is True
    assert body["options"]["num_predict"] == 40


async def test_ollama_sends_calls_and_results_back_in_its_format() -> None:
    call = ToolCall("call_0", "get_weather", '{"city": "Paris"}')
    turns = [*QUESTION, AssistantToolCalls((call,)), ToolResult("call_0", "get_weather", "18 C, sunny")]
    lines = [
        ollama_line({"role": "assistant", "content": "Paris: 18 C."}),
        ollama_line({"role": "assistant", "content": ""}, done=True, prompt_eval_count=50, eval_count=5),
    ]
    async with ScriptedServer([ndjson_reply(lines)]) as server:
        model = OllamaChatModel("qwen3", OllamaSettings(host=server.url, timeout=10), context_window=4096)
        try:
            got = await collect(model.stream_tools(turns, [WEATHER], GenerationOptions()))
        finally:
            await model.aclose()
    assert got.text == "Paris: 18 C." and not got.calls
    messages = server.received[0].json()["messages"]
    assert messages[2]["role"] == "assistant"
    assert messages[2]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert messages[3] == {"role": "tool", "content": "18 C, sunny", "tool_name": "get_weather"}


async def test_ollama_plain_stream_sends_no_tools() -> None:
    lines = [ollama_line({"role": "assistant", "content": ""}, done=True, prompt_eval_count=5, eval_count=0)]
    async with ScriptedServer([ndjson_reply(lines)]) as server:
        model = OllamaChatModel("qwen3", OllamaSettings(host=server.url, timeout=10), context_window=4096)
        try:
            await collect(model.stream(QUESTION, GenerationOptions()))
        finally:
            await model.aclose()
    assert not server.received[0].json().get("tools")  # the ollama client always sends the key, empty


# --- capabilities -----------------------------------------------------------------------------


def test_remote_adapters_are_tool_capable_and_the_local_default_is_not() -> None:
    registry = chat_registry(Settings(openai={"base_url": "http://127.0.0.1:9/v1"}))
    assert registry.capabilities("openai", "gpt-4o-mini").tool_calling
    assert registry.capabilities("ollama", "qwen3").tool_calling
    assert registry.capabilities("local", "SmolLM2-135M-Instruct") == ModelCapabilities(
        grounded_writing=False, tool_calling=False
    )
    assert ModelCapabilities().tool_calling is False  # a provider must declare it
    model = openai_model("http://127.0.0.1:9")
    assert isinstance(model, ToolCallingModel)
    assert isinstance(OllamaChatModel("q", OllamaSettings(), context_window=4096), ToolCallingModel)


async def test_the_scripted_model_calls_tools_through_the_same_interface() -> None:
    from tests.fakes import FakeChatModel

    model = FakeChatModel(capabilities=ModelCapabilities(tool_calling=True))
    call = ToolCall("c1", "get_weather", '{"city": "Paris"}')
    model.enqueue(ToolCalls((call,)), "Paris: 18 C.")
    assert isinstance(model, ToolCallingModel)
    first = await collect(model.stream_tools(QUESTION, [WEATHER], GenerationOptions()))
    assert first.order == ["ToolCallDelta", "ToolCalls", "Usage"] and first.calls == [ToolCalls((call,))]
    turns = [*QUESTION, AssistantToolCalls((call,)), ToolResult("c1", "get_weather", "18 C")]
    second = await collect(model.stream_tools(turns, [WEATHER], GenerationOptions()))
    assert second.text == "Paris: 18 C." and not second.calls
    assert model.offered == [["get_weather"], ["get_weather"]]
    assert model.history[1][-1] == Message("user", "18 C")  # the result, as the model read it


async def test_the_scripted_provider_reads_tool_calls_from_its_script(tmp_path: Path) -> None:
    from app.errors import SettingsError
    from tests.providers import chat_providers, scripted_model

    script = tmp_path / "script.json"
    script.write_text('[{"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}, "Oslo: 3 C."]')
    model = scripted_model(script)
    got = await collect(model.stream_tools(QUESTION, [WEATHER], GenerationOptions()))
    assert got.calls == [ToolCalls((ToolCall("call_0_0", "get_weather", '{"city": "Oslo"}'),))]
    assert (await collect(model.stream_tools(QUESTION, [WEATHER], GenerationOptions()))).text == "Oslo: 3 C."
    [provider] = chat_providers(Settings(test_providers="tests.providers", llm={"script": script}))
    assert provider.capabilities.tool_calling  # so browser tests can give a session tool groups
    script.write_text('["hi", {"calls": [{"name": "get_weather"}]}]')
    with pytest.raises(SettingsError, match="cannot call tools"):
        scripted_model(script)
