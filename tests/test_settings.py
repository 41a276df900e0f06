"""Settings: typed, from the environment, refusing unsafe values with the variable's name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.errors import SettingsError
from app.settings import Settings, load_settings


def test_defaults_are_safe_and_local() -> None:
    settings = Settings()
    assert settings.host == "127.0.0.1"
    assert settings.database_url == "sqlite:///./data/ragchat.db"
    assert settings.embedder.provider == "local" and settings.llm.provider == "local"
    assert settings.rag.top_k == 5 and 0 <= settings.rag.threshold <= 1


def test_nested_values_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCHAT_RAG__TOP_K", "9")
    monkeypatch.setenv("RAGCHAT_OPENAI__API_KEY", "sk-test")
    settings = load_settings()
    assert settings.rag.top_k == 9
    assert settings.openai.api_key is not None and settings.openai.api_key.get_secret_value() == "sk-test"
    assert "sk-test" not in repr(settings)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RAGCHAT_RAG__THRESHOLD", "1.5"),
        ("RAGCHAT_RAG__THRESHOLD", "nan"),
        ("RAGCHAT_RAG__TOP_K", "0"),
        ("RAGCHAT_PORT", "70000"),
        ("RAGCHAT_WORKERS", "0"),
        ("RAGCHAT_WORKERS", "65"),
        ("RAGCHAT_DATABASE_URL", "postgresql://x"),
    ],
)
def test_bad_values_fail_naming_the_variable(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert variable in caught.value.message


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"RAGCHAT_RAG__THRESHOLD": "1.5"}, ["RAGCHAT_RAG__THRESHOLD", "less than or equal to 1"]),
        # A test provider in a production configuration (no RAGCHAT_TEST_PROVIDERS).
        ({"RAGCHAT_LLM__PROVIDER": "scripted"}, ["RAGCHAT_LLM__PROVIDER='scripted' is not a provider"]),
        # Refused in the parent, before any worker process is started.
        ({"RAGCHAT_WORKERS": "0"}, ["RAGCHAT_WORKERS", "greater than or equal to 1"]),
    ],
)
def test_server_refuses_to_start_with_bad_settings(
    tmp_path: Path, database_url: str, env: dict[str, str], said: list[str]
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--port", "8999"],
        # PYTHONPATH kept: a worktree's checkout, not the venv's editable install, is the one tested.
        env={
            **env,
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "RAGCHAT_DATABASE_URL": database_url,
        },
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    for words in said:
        assert words in result.stderr


def test_chunk_overlap_must_be_below_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCHAT_INGEST__CHUNK_TOKENS", "100")
    monkeypatch.setenv("RAGCHAT_INGEST__OVERLAP_TOKENS", "100")
    with pytest.raises(SettingsError, match=r"RAGCHAT_INGEST: .*must be below chunk_tokens"):
        load_settings()


@pytest.mark.parametrize("variable", ["RAGCHAT_LLM__PROVIDER", "RAGCHAT_EMBEDDER__PROVIDER"])
@pytest.mark.parametrize("name", ["scripted", "fake", "olama"])
def test_only_production_providers_without_test_providers(
    monkeypatch: pytest.MonkeyPatch, variable: str, name: str
) -> None:
    monkeypatch.setenv(variable, name)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert f"{variable}={name!r}" in caught.value.message
    assert "local, openai, ollama" in caught.value.message and "RAGCHAT_TEST_PROVIDERS" in caught.value.message


def test_test_providers_may_be_chosen_once_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCHAT_TEST_PROVIDERS", "tests.providers")
    monkeypatch.setenv("RAGCHAT_LLM__PROVIDER", "scripted")
    assert load_settings().llm.provider == "scripted"


def test_generation_limits_come_as_json_by_provider_or_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCHAT_CHAT__LIMITS", '{"openai": 64, "ollama/llama3": 2}')
    monkeypatch.setenv("RAGCHAT_CHAT__QUEUE_TIMEOUT", "2.5")
    chat = load_settings(_env_file=None).chat
    assert (chat.limits, chat.queue_timeout, chat.max_concurrent_generations) == (
        {"openai": 64, "ollama/llama3": 2},
        2.5,
        3,
    )


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ('{"opneai": 8}', "'opneai' names no provider; choose one of local, openai, ollama"),
        ('{"openai/": 8}', '\'openai/\' is not "provider" or "provider/model"'),
        ('{"openai": 0}', "openai: 0 is not a cap between 1 and 1000"),
        ('{"openai": "many"}', "RAGCHAT_CHAT__LIMITS"),
    ],
)
def test_bad_generation_limits_are_refused(monkeypatch: pytest.MonkeyPatch, limits: str, said: str) -> None:
    monkeypatch.setenv("RAGCHAT_CHAT__LIMITS", limits)
    with pytest.raises(SettingsError) as caught:
        load_settings(_env_file=None)
    assert said in caught.value.message and "RAGCHAT_CHAT" in caught.value.message
