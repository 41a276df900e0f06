"""Helpers shared by the reliability tests."""

from __future__ import annotations

from collections import Counter
from typing import cast

import httpx

from app.container import Container
from app.db.database import Database
from app.llm.base import ChatModels, Embedder
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels

CASES: Counter[str] = Counter()  # generated cases per suite, shown in the terminal summary
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
