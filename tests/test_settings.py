"""Settings: typed, from the environment, refusing unsafe values with the variable's name."""

from __future__ import annotations

import subprocess
import sys

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
        ("RAGCHAT_DATABASE_URL", "postgresql://x"),
    ],
)
def test_bad_values_fail_naming_the_variable(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert variable in caught.value.message


def test_server_refuses_to_start_with_bad_settings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--port", "8999"],
        env={"RAGCHAT_RAG__THRESHOLD": "1.5", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "RAGCHAT_RAG__THRESHOLD" in result.stderr
    assert "less than or equal to 1" in result.stderr


def test_chunk_overlap_must_be_below_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCHAT_INGEST__CHUNK_TOKENS", "100")
    monkeypatch.setenv("RAGCHAT_INGEST__OVERLAP_TOKENS", "100")
    with pytest.raises(SettingsError, match=r"RAGCHAT_INGEST: .*must be below chunk_tokens"):
        load_settings()
