"""Test providers for a real ragchat server: browser tests, crash tests, load benchmarks, UI demos.

Loaded only when ``RAGCHAT_TEST_PROVIDERS=tests.providers`` (with the repository on
``PYTHONPATH``): a production server knows none of them, and its settings refuse their names.
:func:`app.llm.registry.plugin_providers` calls ``<kind>_providers(settings)`` here.

- ``scripted`` (chat): answers from the JSON file ``RAGCHAT_LLM__SCRIPT``, a list given in turn
  with the last one repeating. A string is streamed word by word, ``RAGCHAT_LLM__TOKEN_DELAY_MS``
  apart; ``<FAIL>`` inside it fails the stream at that point; ``{"fail": "message"}`` fails before
  the first token; ``{"calls": [{"name": ..., "arguments": {...}}]}`` is a reply calling tools (to
  a session with tool groups: the provider declares tool calling; never the last item). The model is
  :class:`tests.fakes.FakeChatModel`, so everything around it (budget, citations, storage) is real.
  Without a script there is no ``scripted`` provider.
- ``fake`` (embedder): :class:`tests.fakes.FakeEmbedder` (hashed words, 64 dimensions), model
  ``hash-words``, or ``hash-words-<n>ms`` to take n milliseconds per text, as a slow embedder would
  (the ingestion crash test and benchmark use it to have a job under way for a while).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.errors import ProviderUnavailableError, SettingsError
from app.llm.base import ChatModel, Embedder, ModelCapabilities, Vectors
from app.llm.reachability import REACHABLE, Probe, Reachability
from app.llm.registry import Provider
from app.llm.tool_calling import ToolCall, ToolCalls
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder

SCRIPTED = "scripted"  # the provider's name, and its one model's
REPOSITORY = Path(__file__).resolve().parent.parent


def scripted_env(script: Path, *, token_delay_ms: int = 0) -> dict[str, str]:
    """Environment for a ragchat subprocess whose chat model is the scripted one (the browser tests'
    ``scriptedEnv`` in frontend/e2e/helpers.mjs is the same)."""
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")])),
        "RAGCHAT_TEST_PROVIDERS": __name__,
        "RAGCHAT_LLM__PROVIDER": SCRIPTED,
        "RAGCHAT_LLM__MODEL": SCRIPTED,
        "RAGCHAT_LLM__SCRIPT": str(script),
        "RAGCHAT_LLM__TOKEN_DELAY_MS": str(token_delay_ms),
    }


def chat_providers(settings: Settings) -> list[Provider[ChatModel]]:
    llm = settings.llm
    script = llm.script
    if script is None:
        return []
    return [
        Provider[ChatModel](
            name=SCRIPTED,
            build=lambda model: scripted_model(script, token_delay=llm.token_delay_ms / 1000),
            models=(SCRIPTED,),
            probe=_readable(script),
            capabilities=ModelCapabilities(tool_calling=True),
        )
    ]


def scripted_model(script: Path, *, token_delay: float = 0.0) -> FakeChatModel:
    """The scripted chat model following ``script``. Raises :class:`SettingsError` for a bad script."""
    try:
        answers = json.loads(script.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SettingsError(f"RAGCHAT_LLM__SCRIPT: cannot read {script}: {exc}") from exc
    if not isinstance(answers, list) or not answers:
        raise SettingsError("RAGCHAT_LLM__SCRIPT: expected a non-empty JSON list of answers")
    model = FakeChatModel(SCRIPTED, token_delay=token_delay, provider=SCRIPTED, mid_stream=ProviderUnavailableError)
    *first, last = [_answer(each, n) for n, each in enumerate(answers)]
    if isinstance(last, ToolCalls):
        raise SettingsError("RAGCHAT_LLM__SCRIPT: the last answer repeats, so it cannot call tools")
    model.enqueue(*first)
    model.default_answer = last
    return model


def _answer(item: str | dict[str, Any], n: int) -> str | Exception | ToolCalls:
    if isinstance(item, dict) and "calls" in item:
        calls = [
            ToolCall(f"call_{n}_{i}", str(call["name"]), json.dumps(call.get("arguments", {})))
            for i, call in enumerate(item["calls"])
        ]
        return ToolCalls(tuple(calls))
    if isinstance(item, dict):
        return ProviderUnavailableError(str(item.get("fail", "scripted failure")), provider=SCRIPTED)
    return item


def _readable(path: Path) -> Probe:
    """Reachable while the script file exists."""

    def check() -> Reachability:
        if path.is_file():
            return REACHABLE
        return Reachability(False, f"{path} does not exist (set by RAGCHAT_LLM__SCRIPT)")

    return lambda: asyncio.to_thread(check)


class SlowFakeEmbedder(FakeEmbedder):
    """The fake embedder, ``delay`` seconds per text."""

    def __init__(self, model: str, delay: float) -> None:
        super().__init__(model=model)
        self.delay = delay

    def embed(self, texts: Sequence[str]) -> Vectors:
        time.sleep(self.delay * len(texts))
        return super().embed(texts)


def embedder_providers(settings: Settings) -> list[Provider[Embedder]]:
    def build(model: str) -> Embedder:
        delay = model.removeprefix("hash-words").removeprefix("-").removesuffix("ms")
        return SlowFakeEmbedder(model, int(delay) / 1000 if delay else 0.0)

    models = tuple(f"hash-words-{n}ms" for n in (0, 5, 20, 50, 200))
    return [Provider[Embedder](name="fake", build=build, models=("hash-words", *models))]
