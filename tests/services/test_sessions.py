"""Chat sessions' settings over a real migrated database: what a new session inherits from the server."""

from __future__ import annotations

import pytest

from app.container import Container
from app.rag.search.document_filter import DocumentFilter
from app.services import projects, sessions
from app.services.sessions import SessionChanges
from app.settings import Settings, load_settings
from tests.fakes import FakeEmbedder, FakeModels


def test_a_new_session_inherits_the_servers_document_filter_unless_it_picks_one(
    migrated: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGCHAT_RAG__DOCUMENT_FILTER", '{"path_prefix": "runbooks/", "tags_any": ["ops"]}')
    settings = load_settings(_env_file=None, database_url=migrated.database_url)
    container = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels())
    try:
        pid = projects.create(container.store, "kb").id
        models = FakeModels()

        def created(**changes: object) -> str | None:
            row = sessions.create(
                container.store,
                settings,
                models,
                pid,
                SessionChanges(provider="fake", model="scripted", **changes),  # type: ignore[arg-type]
            )
            return row.document_filter

        inherited = DocumentFilter.from_json(created())
        assert inherited == DocumentFilter(tags_any=("ops",), path_prefix="runbooks/")
        chosen = DocumentFilter.from_json(created(document_filter=DocumentFilter(kinds=("pdf",))))
        assert chosen == DocumentFilter(kinds=("pdf",))
        assert created(document_filter=DocumentFilter()) is None  # an empty filter: every document
    finally:
        container.close()
