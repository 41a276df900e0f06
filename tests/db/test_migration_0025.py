"""0025 on a database filled before people existed: its knowledge bases and chats come through the
upgrade intact, every chat owned by nobody (the administrators'), unshared; an administrator made
afterwards sees and reads them, a member of the knowledge base does not."""

from __future__ import annotations

from functools import partial

import pytest

from app.db import migrate
from app.db.database import Database
from app.db.engine import make_engine
from app.db.enums import MemberRole
from app.db.models import Membership
from app.errors import NotFoundError
from app.services import projects, sessions
from app.services.pages import PageRequest
from app.services.people import access, users
from app.services.people.access import Caller, CallerKind
from tests.backends import execute

pytestmark = pytest.mark.postgres

NOW = "2026-01-01 00:00:00"


def test_0025_keeps_projects_and_chats_and_gives_the_old_chats_to_the_administrators(database_url: str) -> None:
    migrate.upgrade(database_url, "0024")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        for pid, name in ((1, "handbook"), (2, "wiki")):
            run("INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (?, ?, '', ?, ?)",
                (pid, name, NOW, NOW))  # fmt: skip
        for sid, pid, title in ((1, 1, "leave policy"), (2, 1, "expenses"), (3, 2, "deploys")):
            run("INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, threshold, "
                "created_at, updated_at) VALUES (?, ?, ?, '', 'openai', 'gpt-4o', 0.3, ?, ?)",
                (sid, pid, title, NOW, NOW))  # fmt: skip
            run("INSERT INTO chat_messages(session_id, role, content, status, created_at) "
                "VALUES (?, 'user', ?, 'complete', ?)", (sid, f"about {title}", NOW))  # fmt: skip
    engine.dispose()

    migrate.upgrade(database_url, "head")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        assert run("SELECT id, name FROM projects ORDER BY id").all() == [(1, "handbook"), (2, "wiki")]
        chats = run("SELECT id, project_id, title, owner_id, shared FROM chat_sessions ORDER BY id").all()
        assert [tuple(c[:4]) for c in chats] == [
            (1, 1, "leave policy", None),
            (2, 1, "expenses", None),
            (3, 2, "deploys", None),
        ]
        assert not any(c[4] for c in chats)
        assert run("SELECT count(*) FROM chat_messages").scalar_one() == 3
    engine.dispose()

    store = Database.from_url(database_url)
    try:
        with store.write() as db:
            admin = users.create(db, users.NewPerson("admin@example.org", "Admin", is_admin=True)).id
            member = users.create(db, users.NewPerson("member@example.org", "Member")).id
            db.add(Membership(user_id=member, project_id=1, role=MemberRole.OWNER))
        as_admin = Caller(CallerKind.PERSON, user_id=admin, is_admin=True)
        as_member = Caller(CallerKind.PERSON, user_id=member)
        seen = sessions.list_page(store, None, PageRequest(first=50), caller=as_admin).rows
        assert sorted(chat.title for chat in seen) == ["deploys", "expenses", "leave policy"]
        assert sessions.get(store, 1, caller=as_admin).title == "leave policy"
        # The member owns knowledge base 1 now, yet the chats made before people existed are not theirs.
        assert sessions.list_page(store, None, PageRequest(first=50), caller=as_member).rows == []
        with pytest.raises(NotFoundError):
            sessions.get(store, 1, caller=as_member)
        assert [p.name for p in projects.list_page(store, PageRequest(first=50), caller=as_member).rows] == ["handbook"]
        with store.read() as db:
            assert access.require_project(db, as_admin, 2).name == "wiki"
    finally:
        store.dispose()
