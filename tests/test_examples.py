"""The scripts in examples/ run green against a live server (fake providers, real everything else)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.container import Container
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def server(migrated: Settings) -> Iterator[tuple[Api, FakeChatModel]]:
    migrated.llm.provider, migrated.llm.model = "fake", "scripted"
    model = FakeChatModel()
    container = Container.build(migrated, embedder=FakeEmbedder(), chat_models=FakeModels(model))
    with live_api(container) as api:
        yield api, model
    container.close()


def test_python_quickstart(server: tuple[Api, FakeChatModel]) -> None:
    api, model = server
    # A sentence the demo documents support: the answer guard replaces unsupported ones.
    model.enqueue("Passages below the threshold are dropped before top_k is applied [1].")
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"), "--url", f"{api.base}/graphql"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "added  rag-settings.md" in result.stdout
    assert "A: Passages below the threshold are dropped before top_k is applied [1]." in result.stdout
    assert "[1] " in result.stdout and "(model)" in result.stdout


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_quickstart(server: tuple[Api, FakeChatModel]) -> None:
    api, model = server
    model.enqueue("The threshold drops weak passages [1].")
    result = subprocess.run(
        ["bash", str(ROOT / "examples" / "quickstart.sh")],
        env={**os.environ, "RAGCHAT_URL": f"{api.base}/graphql"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "A: The threshold drops weak passages [1]." in result.stdout
    assert "[1] rag-settings.md score=" in result.stdout
