"""Helpers shared by the reliability tests."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import cast

import httpx

from app.container import Container
from app.db.database import Database
from app.llm.base import ChatModels, Embedder
from app.settings import Settings
from benchmarks.load import Server
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.providers import scripted_env

TABLES = ("projects", "documents", "chunks", "chat_sessions", "chat_messages", "citations", "embedding_spaces")


def fake_container(
    settings: Settings, model: FakeChatModel | None = None, embedder: FakeEmbedder | None = None
) -> Container:
    """A container over ``settings`` with the fake providers (they satisfy the Protocols structurally;
    their attributes are narrower types, hence the casts)."""
    return Container.build(
        settings,
        embedder=cast(Embedder, embedder or FakeEmbedder()),
        chat_models=cast(ChatModels, FakeModels(model or FakeChatModel())),
    )


def row_counts(store: Database) -> dict[str, int]:
    """Rows per table, to prove that a refused request wrote nothing."""
    with store.read() as db:
        conn = db.connection()
        return {t: int(conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar_one()) for t in TABLES}


def check(response: httpx.Response, before: dict[str, int], after: dict[str, int]) -> None:
    """The contract: a clear GraphQL error or a correct result; a failure writes nothing."""
    assert response.status_code in (200, 400), (response.status_code, response.text[:500])
    body = response.json()
    errors = body.get("errors") or []
    for error in errors:
        assert isinstance(error["message"], str) and error["message"], body
        assert "Unexpected error" not in error["message"], body
    data = body.get("data") or {}
    failed = bool(errors) or any(
        isinstance(v, dict) and v.get("__typename", "").endswith("Error") for v in data.values()
    )
    if failed:
        assert after == before, f"a failed request wrote rows: {body}"


SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "po")
CITED = "Emperor penguins huddle together [1]."
# A long answer of distinct words (no loop for the answer guard to stop): a minute at 20 ms a word.
SLOW = "Emperor penguins huddle " + " ".join("".join(w) for w in itertools.product(SYLLABLES, repeat=4))


def scripted_server(tmp_path: Path, name: str, url: str, answers: list[str], delay_ms: int) -> Server:
    """``ragchat serve`` (or, through its ``env``, any ragchat command) on ``url`` with the scripted chat
    model answering ``answers`` a word every ``delay_ms``, the fake embedder, recovery every 0.5 s."""
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps(answers), encoding="utf-8")
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    env = scripted_env(script, token_delay_ms=delay_ms)
    env.update(
        {
            "RAGCHAT_DATABASE_URL": url,
            "RAGCHAT_EMBEDDER__PROVIDER": "fake",
            "RAGCHAT_EMBEDDER__MODEL": "hash-words",
            "RAGCHAT_RECOVERY_SECONDS": "0.5",
            "RAGCHAT_JOBS__SPOOL_DIR": str(tmp_path / "uploads"),  # what servers share
        }
    )
    return Server(folder, env)
