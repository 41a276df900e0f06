"""The scripted test provider exists only when test providers are loaded and a script is
configured, and follows the script through the real registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.errors import ProviderUnavailableError, SettingsError, ValidationError
from app.llm.base import GenerationOptions, Message, TextDelta
from app.llm.chat.registry import chat_registry
from app.settings import Settings

TEST_PROVIDERS = "tests.providers"


async def _text(model, options=GenerationOptions()):  # type: ignore[no-untyped-def]
    return "".join([e.text async for e in model.stream([Message("user", "hi")], options) if isinstance(e, TextDelta)])


def test_absent_without_a_script(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        chat_registry(Settings(test_providers=TEST_PROVIDERS)).validate("scripted", "scripted")
    production = Settings()
    production.llm.script = tmp_path / "answers.json"
    with pytest.raises(ValidationError):
        chat_registry(production).validate("scripted", "scripted")


async def test_answers_in_turn_fails_on_cue_and_repeats_the_last(tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps(["first answer [1].", {"fail": "down for maintenance"}, "half <FAIL> never", "last"]))
    settings = Settings(test_providers=TEST_PROVIDERS)
    settings.llm.script = script
    registry = chat_registry(settings)
    registry.validate("scripted", "scripted")
    model = registry.get("scripted", "scripted")
    assert await _text(model) == "first answer [1]."
    with pytest.raises(ProviderUnavailableError, match="down for maintenance"):
        await _text(model)
    with pytest.raises(ProviderUnavailableError, match="mid-stream"):
        await _text(model)
    assert await _text(model) == "last" and await _text(model) == "last"


def test_a_bad_script_is_a_settings_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{}")
    settings = Settings(test_providers=TEST_PROVIDERS)
    settings.llm.script = tmp_path / "bad.json"
    with pytest.raises(SettingsError, match="RAGCHAT_LLM__SCRIPT"):
        chat_registry(settings).get("scripted", "scripted")


def test_a_module_that_cannot_be_imported_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match=r"RAGCHAT_TEST_PROVIDERS.*no_such_module"):
        chat_registry(Settings(test_providers="tests.no_such_module"))
