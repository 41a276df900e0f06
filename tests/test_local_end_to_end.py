"""The offline defaults end to end: `ragchat ingest` a tiny knowledge base with the real local
embedder, then `ragchat ask` the real local chat model, and a cited answer comes back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.requires_llama

FACTS = """# Freedonia

Freedonia is a small country in the Alps. The capital of Freedonia is Zubrowka.
Its national dish is a stew of lentils and smoked plums.
"""


def test_ingest_then_ask_gives_a_cited_answer(tmp_path: Path, database_url: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "freedonia.md").write_text(FACTS, encoding="utf-8")
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02" * 10)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "RAGCHAT_DATABASE_URL": database_url,
        "RAGCHAT_LLM__MAX_ANSWER_TOKENS": "48",
    }

    def ragchat(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app", *args], env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path
        )

    assert ragchat("migrate").returncode == 0
    ingested = ragchat("ingest", str(docs), "--project", "facts")
    assert ingested.returncode == 0, ingested.stderr  # a binary file is skipped, listed with its reason
    assert "skipped (binary): 1" in ingested.stderr and "binary.txt: binary data" in ingested.stderr

    # AUTO on the offline default: SmolLM2-135M declares it is no reliable writer, so the answer
    # quotes the sentence that says it, cited to that sentence's own line.
    asked = ragchat("ask", "--project", "facts", "What is the capital of Freedonia?")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    answer, _, sources = asked.stdout.partition("\n[")
    assert "The capital of Freedonia is Zubrowka." in answer, asked.stdout
    assert sources.startswith("1] freedonia.md lines 3-3") and "extracted" in sources, asked.stdout
    assert "answer mode: extractive" in asked.stderr, asked.stderr

    # Generative on request: the real model writes, and the guard reviews what it wrote.
    written = ragchat("ask", "--project", "facts", "--mode", "generative", "What is the capital of Freedonia?")
    assert written.returncode in (0, 1), written.stdout + written.stderr
    assert "guard: " in written.stderr or "unusable_answer" in written.stderr, written.stderr
