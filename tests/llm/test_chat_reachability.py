"""Provider reachability probes against loopback servers speaking each vendor's protocol: the real
llama.cpp OpenAI-compatible server, an Ollama stand-in, and scripted servers for refusals, 401s
and silence. Plus the cache that keeps the ``providers`` query cheap."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.llm.chat.local import SMOLLM2, shipped_models
from app.llm.chat.registry import chat_registry
from app.llm.reachability import ProbeCache, Reachability, probe_model_files, probe_ollama, probe_openai
from app.settings import ChatModelSettings, OllamaSettings, OpenAISettings, Settings
from tests.live import serve
from tests.llm.chat_wire import ollama_server
from tests.llm.chat_wire.llama_server import llama_server
from tests.llm.chat_wire.scripted import STALL, ScriptedServer, json_reply
from tests.llm.wire.server import refusing_url
from tests.net.trickle import trickling

API_KEY = "sk-test-reach-93a1c7"
MODELS = {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model", "created": 0, "owned_by": "openai"}]}
UNAUTHORIZED = {"error": {"message": f"Incorrect API key provided: {API_KEY}.", "code": "invalid_api_key"}}


def openai(base_url: str | None, key: str | None = API_KEY) -> OpenAISettings:
    return OpenAISettings(api_key=SecretStr(key) if key else None, base_url=base_url)


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    with llama_server(shipped_models()[SMOLLM2], api_key=API_KEY) as url:
        yield url


@pytest.fixture(scope="module")
def ollama_url() -> Iterator[str]:
    app, _ = ollama_server.create_app()
    with serve(app) as url:
        yield url


# --- OpenAI-compatible servers -----------------------------------------------------------------


@pytest.mark.slow
async def test_llama_cpp_server_with_the_right_key_is_reachable(llama_url: str) -> None:
    assert await probe_openai(openai(llama_url))() == Reachability(True)


@pytest.mark.slow
async def test_llama_cpp_server_refusing_the_key_names_the_setting_not_the_key(llama_url: str) -> None:
    found = await probe_openai(openai(llama_url, "sk-wrong-5e0d77"))()
    assert not found.reachable and found.reason
    assert "401" in found.reason and "RAGCHAT_OPENAI__API_KEY" in found.reason
    assert "5e0d77" not in found.reason


async def test_openai_probe_is_one_authenticated_get_of_the_model_list() -> None:
    async with ScriptedServer([json_reply(200, MODELS)]) as server:
        found = await probe_openai(openai(f"{server.url}/v1"))()
    assert found == Reachability(True)
    [request] = server.received
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


async def test_openai_401_does_not_repeat_the_body_that_echoes_the_key() -> None:
    async with ScriptedServer([json_reply(401, UNAUTHORIZED)]) as server:
        base = f"{server.url}/v1"
        found = await probe_openai(openai(base))()
    assert found.reason == f"{base} rejected the API key (HTTP 401): check RAGCHAT_OPENAI__API_KEY"


async def test_keyless_compatible_server_gets_no_authorization_header() -> None:
    async with ScriptedServer([json_reply(200, MODELS)]) as server:
        assert (await probe_openai(openai(f"{server.url}/v1", key=None))()).reachable
    assert "authorization" not in server.received[0].headers


async def test_openai_refused_says_where() -> None:
    with refusing_url() as url:
        found = await probe_openai(openai(f"{url}/v1"))()
    assert found == Reachability(False, f"connection refused at {url}/v1")


async def test_a_server_that_never_answers_is_given_up_on_quickly() -> None:
    async with ScriptedServer([STALL]) as server:
        base = f"{server.url}/v1"
        started = time.monotonic()
        found = await probe_openai(openai(base), timeout=0.3)()
        elapsed = time.monotonic() - started
    assert found == Reachability(False, f"no answer from {base} within 0.3 s")
    assert elapsed < 2


async def test_a_server_trickling_its_answer_is_given_up_on_at_the_probe_timeout() -> None:
    # Each byte renews httpx's per-read timeout: only the probe's wall clock ends this.
    with trickling() as slow:
        base = f"http://127.0.0.1:{slow.port}/v1"
        found = await probe_openai(openai(base), timeout=0.5)()
        assert found == Reachability(False, f"no answer from {base} within 0.5 s")
        for _ in range(250):  # bounded: until the server sees the connection closed
            if slow.sent_when_closed:
                break
            await asyncio.sleep(0.02)
        assert slow.sent_when_closed and slow.sent_when_closed[0] < len(slow.head) // 2


async def test_a_wrong_base_url_points_at_its_setting() -> None:
    async with ScriptedServer([json_reply(404, {"detail": "Not Found"})]) as server:
        url = server.url
        found = await probe_openai(openai(url))()
    assert found.reason == f"GET {url}/models answered HTTP 404: check RAGCHAT_OPENAI__BASE_URL"


async def test_something_else_answering_is_not_taken_for_an_openai_server() -> None:
    async with ScriptedServer([json_reply(200, {"hello": "world"})]) as server:
        found = await probe_openai(openai(f"{server.url}/v1"))()
    assert not found.reachable and "not as an OpenAI-compatible server" in (found.reason or "")


async def test_a_probe_costs_the_event_loop_next_to_no_cpu() -> None:
    # A new httpx client loads the CA bundle (70-200 ms of CPU) unless given a ready SSL context:
    # on the event loop's thread that would stall every stream for as long, every 30 s.
    async with ScriptedServer([json_reply(200, MODELS)]) as server:
        probe = probe_openai(openai(f"{server.url}/v1"))
        await probe()  # imports and the one shared TLS context (built in a worker thread)
        started = time.thread_time()
        assert (await probe()).reachable
        loop_cpu = time.thread_time() - started
    assert loop_cpu < 0.008, f"{loop_cpu * 1000:.0f} ms of CPU on the event loop's thread"


# --- Ollama --------------------------------------------------------------------------------------


async def test_ollama_answering_its_version_is_reachable(ollama_url: str) -> None:
    assert await probe_ollama(OllamaSettings(host=ollama_url))() == Reachability(True)


async def test_ollama_refused_says_where() -> None:
    with refusing_url() as url:
        found = await probe_ollama(OllamaSettings(host=url))()
    assert found == Reachability(False, f"connection refused at {url}")


async def test_ollama_behind_a_proxy_that_wants_a_key() -> None:
    async with ScriptedServer([json_reply(401, {"error": "unauthorized"})]) as server:
        url = server.url
        found = await probe_ollama(OllamaSettings(host=url))()
    assert not found.reachable
    assert found.reason == f"{url} rejected the request (HTTP 401): check the proxy in front of Ollama"


# --- the local model -----------------------------------------------------------------------------


async def test_the_shipped_gguf_file_is_reachable_without_loading_it() -> None:
    assert await probe_model_files(shipped_models())() == Reachability(True)


async def test_a_missing_or_broken_model_file_is_not(tmp_path: Path) -> None:
    broken = tmp_path / "model.gguf"
    broken.write_text("version https://git-lfs.github.com/spec/v1\n")  # an LFS pointer, not the model
    found = await probe_model_files({"tiny": broken})()
    assert found == Reachability(False, f"{broken} is not a GGUF model file")
    gone = tmp_path / "gone.gguf"
    assert await probe_model_files({"tiny": gone})() == Reachability(False, f"the model file {gone} is missing")


# --- the cache -----------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_results_are_cached_for_the_ttl_and_shared_by_concurrent_askers() -> None:
    clock = Clock()
    cache = ProbeCache(ttl=30.0, clock=clock)
    async with ScriptedServer([json_reply(200, MODELS)]) as server:
        probe = probe_openai(openai(f"{server.url}/v1"))
        together = await asyncio.gather(*(cache.check("openai", probe) for _ in range(5)))
        assert together == [Reachability(True)] * 5 and len(server.received) == 1
        clock.now += 29
        await cache.check("openai", probe)
        assert len(server.received) == 1
        clock.now += 2
        await cache.check("openai", probe)
        assert len(server.received) == 2


# --- the registry --------------------------------------------------------------------------------


async def test_list_models_reports_each_providers_reachability() -> None:
    with refusing_url() as ollama_host:
        reg = chat_registry(
            Settings(
                llm=ChatModelSettings(provider="ollama", model="qwen2.5:0.5b"), ollama=OllamaSettings(host=ollama_host)
            )
        )
        listed = {p.provider: p for p in await reg.list_models()}
    assert listed["local"].reachable and listed["local"].reason is None
    assert not listed["ollama"].reachable and listed["ollama"].available
    assert listed["ollama"].reason == f"connection refused at {ollama_host}"
    # Not configured at all: neither available nor reachable, and nothing was dialled to learn it.
    assert not listed["openai"].available and not listed["openai"].reachable
    assert "RAGCHAT_OPENAI__API_KEY" in (listed["openai"].reason or "")
