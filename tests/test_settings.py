"""Settings: typed, from the environment, refusing unsafe values with the variable's name."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.errors import SettingsError
from app.rag.search.document_filter import DocumentFilter
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


# -- unknown variables and open binds ---------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "nearest"),
    [
        ("RAGCHAT_API__KEYS", "RAGCHAT_API__API_KEYS"),
        ("RAGCHAT_API_KEYS", "RAGCHAT_API__API_KEYS"),
        ("ragchat_api__keys", "RAGCHAT_API__API_KEYS"),  # read in any case, so refused in any case
        ("RAGCHAT_OPENAI_API_KEY", "RAGCHAT_OPENAI__API_KEY"),
        ("RAGCHAT_RAG__TOPK", "RAGCHAT_RAG__TOP_K"),
        ("RAGCHAT_DATABASE", "RAGCHAT_DATABASE_URL"),
    ],
)
def test_an_unknown_variable_is_refused_naming_the_nearest_setting(
    monkeypatch: pytest.MonkeyPatch, variable: str, nearest: str
) -> None:
    monkeypatch.setenv(variable, "a-key-0123456789")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert f"unknown setting {variable}; did you mean {nearest}?" in caught.value.message
    assert "a-key-0123456789" not in caught.value.message


def test_every_setting_and_dict_key_is_a_known_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    # Groups given whole as JSON, keys of dict fields, and what serve sets for its workers pass.
    monkeypatch.setenv("RAGCHAT_RAG", '{"top_k": 7}')
    monkeypatch.setenv("RAGCHAT_TOOLS__SECRETS__CRM_TOKEN", "t")
    monkeypatch.setenv("RAGCHAT_TOOLS__SECRET_ORIGINS__CRM_TOKEN", '["https://crm.example.com"]')
    monkeypatch.setenv("RAGCHAT_CHAT__LIMITS__OPENAI", "4")
    monkeypatch.setenv("RAGCHAT_LOG_LEVEL", "warning")
    monkeypatch.setenv("RAGCHAT_WORKER_SLOTS", "/nowhere")
    settings = load_settings(_env_file=None)
    assert settings.rag.top_k == 7 and settings.chat.limits == {"openai": 4}
    assert list(settings.tools.secrets) == ["crm_token"]


def test_unknown_names_in_the_env_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OTHER_TOOL=1\nRAGCHAT_PORT=8001\nRAGCHAT_API__KEYS=k\n")
    with pytest.raises(
        SettingsError, match=r"unknown setting RAGCHAT_API__KEYS; did you mean RAGCHAT_API__API_KEYS\? \(in \.env\)"
    ):
        load_settings()
    assert load_settings(_env_file=None).port == 8000  # a caller that reads no file checks none


def _ragchat(tmp_path: Path, database_url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
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


@pytest.mark.parametrize("command", [["serve", "--port", "8999"], ["migrate"], ["ingest", "note.txt", "-p", "notes"]])
def test_commands_refuse_an_unknown_variable(tmp_path: Path, database_url: str, command: list[str]) -> None:
    (tmp_path / "note.txt").write_text("a note")
    result = _ragchat(tmp_path, database_url, *command, RAGCHAT_API__KEYS='["k-0123456789"]')
    assert result.returncode == 2, result.stdout + result.stderr
    assert "unknown setting RAGCHAT_API__KEYS; did you mean RAGCHAT_API__API_KEYS?" in result.stderr


@pytest.mark.parametrize("args", [["--host", "0.0.0.0"], ["--host", "::", "--workers", "2"]])
def test_serve_refuses_an_open_bind_without_keys(tmp_path: Path, database_url: str, args: list[str]) -> None:
    # Refused before anything listens, so no test binds beyond loopback.
    result = _ragchat(tmp_path, database_url, "serve", "--port", "8999", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no API keys are set (RAGCHAT_API__API_KEYS)" in result.stderr
    assert "RAGCHAT_API__ALLOW_OPEN_NETWORK=true" in result.stderr


@pytest.mark.parametrize(
    ("host", "keys", "allow", "refused"),
    [
        ("0.0.0.0", 0, False, True),
        ("192.0.2.7", 0, False, True),
        ("0.0.0.0", 1, False, False),
        ("0.0.0.0", 0, True, False),
        ("127.0.0.2", 0, False, False),
        ("::1", 0, False, False),
        ("localhost", 0, False, False),
    ],
)
def test_an_open_bind_needs_keys_or_the_opt_in(host: str, keys: int, allow: bool, refused: bool) -> None:
    from app.security import check_exposure

    if refused:
        with pytest.raises(SettingsError, match="RAGCHAT_API__ALLOW_OPEN_NETWORK"):
            check_exposure(host, keys=keys, allow_open_network=allow)
    else:
        check_exposure(host, keys=keys, allow_open_network=allow)


def test_the_open_network_opt_in_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCHAT_API__ALLOW_OPEN_NETWORK", "true")
    assert load_settings(_env_file=None).api.allow_open_network is True


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('{"tags_any": ["policy"], "kinds": ["spreadsheet"]}', "kinds: unknown file type 'spreadsheet'"),
        ('{"tagsAny": ["policy"]}', "unknown field 'tagsAny' (known: tags_any, tags_all, path_prefix"),
        ('{"tags_any": "policy"}', "tags_any: Input should be a list"),
        ('{"tags_all": [" padded"]}', "tags_all: a tag cannot start or end with spaces"),
        ('{"date_from": "2026-06-01", "date_to": "2026-01-01"}', "date_to: the range ends before it starts"),
        ('{"date_from": "June"}', "date_from: Input should be a valid datetime"),
        ('["policy"]', "must be a JSON object with some of the fields tags_any"),
        ("tags_any=policy", "not JSON"),
    ],
)
def test_a_bad_default_document_filter_is_refused_naming_the_variable_and_the_field(
    monkeypatch: pytest.MonkeyPatch, value: str, said: str
) -> None:
    monkeypatch.setenv("RAGCHAT_RAG__DOCUMENT_FILTER", value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert "RAGCHAT_RAG__DOCUMENT_FILTER: " in caught.value.message
    assert said in caught.value.message


def test_the_default_document_filter_is_read_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "RAGCHAT_RAG__DOCUMENT_FILTER", '{"tags_any": ["ops", "billing", "ops"], "date_from": "2026-01-01T00:00:00"}'
    )
    only = load_settings().rag.document_filter
    assert only == DocumentFilter(tags_any=("billing", "ops"), date_from=datetime(2026, 1, 1, tzinfo=UTC))
    monkeypatch.setenv("RAGCHAT_RAG__DOCUMENT_FILTER", "{}")
    assert load_settings().rag.document_filter is None  # an empty filter: every document, one form
