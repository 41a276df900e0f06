""".env.example lists every setting once, with a comment and its real default, in a form that loads."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from app.settings import Settings, env_name

EXAMPLE = Path(__file__).resolve().parents[1] / ".env.example"
ASSIGNMENT = re.compile(r"^# (RAGCHAT_[A-Z0-9_]+)=(.*)$")


def setting_names(model: type[BaseModel] = Settings, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """The environment variable of every leaf setting, nested groups walked."""
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from setting_names(kind, (*prefix, name))
        else:
            yield env_name((*prefix, name))


def example() -> list[tuple[str, str, str]]:
    """(variable, value, the comment line above it) for each commented-out assignment."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    found = []
    for above, line in zip(["", *lines], lines, strict=False):
        if match := ASSIGNMENT.match(line):
            found.append((match.group(1), match.group(2), above))
    return found


def test_every_setting_is_there_once_with_a_comment() -> None:
    names = [name for name, _, _ in example()]
    assert sorted(names) == sorted(set(setting_names())), "settings missing from or unknown to .env.example"
    for name, _, comment in example():
        assert comment.startswith("# ") and not ASSIGNMENT.match(comment), f"{name} has no comment line above it"


def test_the_values_shown_are_the_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    for name in list(os.environ):
        if name.startswith("RAGCHAT_"):
            monkeypatch.delenv(name)
    defaults = Settings().model_dump()
    shown = {name: value for name, value, _ in example() if value != ""}  # empty: unset, the default is None
    assert len(shown) > 40
    for name, value in shown.items():
        monkeypatch.setenv(name, value)
    assert Settings().model_dump() == defaults
    for name in [n for n, value, _ in example() if value == ""]:
        assert _default_of(name) is None, f"{name} is shown empty but defaults to {_default_of(name)!r}"


def _default_of(variable: str) -> object:
    model: object = Settings()
    for part in variable.removeprefix("RAGCHAT_").lower().split("__"):
        model = getattr(model, part)
    return model
