"""`require`: the row a service was given the id of, or the NotFoundError the API shows."""

from __future__ import annotations

import pytest

from app.db.database import Database
from app.db.models import ChatSession, Project
from app.db.rows import require
from app.errors import NotFoundError
from app.settings import Settings


def test_a_row_that_exists_is_returned_and_a_missing_one_names_its_kind(migrated: Settings) -> None:
    store = Database.from_url(migrated.database_url)
    try:
        with store.write() as db:
            project = Project(name="kb", description="")
            db.add(project)
            db.flush()
            project_id = project.id
        with store.read() as db:
            assert require(db, Project, project_id).name == "kb"
            with pytest.raises(NotFoundError) as missing:
                require(db, ChatSession, 999)
        assert (missing.value.kind, missing.value.ident, missing.value.message) == (
            "chat session",
            999,
            "chat session 999 not found",
        )
    finally:
        store.dispose()
