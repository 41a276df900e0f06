"""The ``providers`` query over HTTP with the real registry: available, reachable and why not."""

from __future__ import annotations

from pathlib import Path

from app.container import Container
from app.llm.chat.registry import chat_registry
from app.settings import ChatModelSettings, OllamaSettings, Settings
from tests.graphql.client import live_api
from tests.llm.wire.server import refusing_url

QUERY = "{ providers { provider available reachable reason defaultModel toolCalling } }"


def test_each_provider_says_whether_it_answers_and_why_not(migrated: Settings, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('["Hello [1]."]')
    with refusing_url() as ollama_host:
        settings = migrated.model_copy(
            update={
                "llm": ChatModelSettings(provider="scripted", model="scripted", script=script),
                "ollama": OllamaSettings(host=ollama_host),
                "test_providers": "tests.providers",
            }
        )
        container = Container.build(settings, chat_models=chat_registry(settings))
        try:
            with live_api(container) as api:
                found = {p.pop("provider"): p for p in api.run(QUERY)["providers"]}
                script.unlink()
                cached = {p["provider"]: p["reachable"] for p in api.run(QUERY)["providers"]}
        finally:
            container.close()
    # Whether a provider's models can be offered tools: the bundled model cannot, Ollama's can.
    calling = {name: p.pop("toolCalling") for name, p in found.items()}
    assert (calling["local"], calling["ollama"], calling["openai"]) == (False, True, True)
    assert found["local"] == {"available": True, "reachable": True, "reason": None, "defaultModel": None}
    assert found["scripted"] == {"available": True, "reachable": True, "reason": None, "defaultModel": "scripted"}
    assert found["ollama"] == {
        "available": True,
        "reachable": False,
        "reason": f"connection refused at {ollama_host}",
        "defaultModel": None,
    }
    assert not found["openai"]["available"] and not found["openai"]["reachable"]
    assert "RAGCHAT_OPENAI__API_KEY" in found["openai"]["reason"]
    # A second ask within the cache's lifetime is answered from it, not probed again.
    assert cached["scripted"] is True
