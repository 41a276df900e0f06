"""A server whose lease connection to PostgreSQL ends while it runs (issue 18): the other server takes
it for stopped and recovers it; the server notices at its next look, registers again under a new
id, and the answers it serves from then on complete (before, every one of them was failed by the
other server as a stopped server's, for as long as it ran). Real processes, a real PostgreSQL, its
lock backend ended with ``pg_terminate_backend``."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, text

from app.db.database import Database
from app.db.models import Server
from app.settings import Settings
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION
from tests.reliability.helpers import SLOW, scripted_server
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres

# Long enough for several recoveries (every 0.5 s) to look at it while it streams: ~2.4 s.
ANSWER = " ".join(SLOW.split()[:120])


def _servers(store: Database) -> dict[int, int]:
    """Each registered server's id and pid."""
    with store.read() as db:
        return {row.id: row.pid for row in db.scalars(select(Server))}


def _end_lock_backend(store: Database, server_id: int) -> int:
    """Terminate the PostgreSQL backend holding server ``server_id``'s advisory lock (its session)."""
    with store.write() as db:
        ended = db.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND classid = CAST(hashtext('ragchat server') AS oid) AND objid = CAST(:id AS oid) AND objsubid = 2"
            ),
            {"id": server_id},
        ).all()
    return len(ended)


def test_a_server_that_lost_its_lease_registers_again_and_goes_on_serving(
    tmp_path: Path, migrated: Settings, backend: str
) -> None:
    if backend != "postgresql":
        pytest.skip("a file lock (SQLite) ends only with its process: there is no connection to lose")
    store = Database.from_url(migrated.database_url)
    a = scripted_server(tmp_path, "a", migrated.database_url, [ANSWER], delay_ms=20)
    b = scripted_server(tmp_path, "b", migrated.database_url, [ANSWER], delay_ms=20)
    try:
        with a, b:
            api = Api(a.base)
            pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
            api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in winter.")
            scripted = {"provider": "scripted", "model": "scripted", "threshold": 0.1, "answerMode": "GENERATIVE"}
            sid = api.run(CREATE_SESSION, p=pid, input=scripted)["createChatSession"]["id"]
            assert a.proc is not None
            (old,) = [server_id for server_id, p in _servers(store).items() if p == a.proc.pid]

            assert _end_lock_backend(store, old) == 1
            # B finds A's lock free and recovers it, or A notices first and hands itself over.
            wait_until(lambda: old not in _servers(store), 20, "A's old registration to go")
            again = wait_until(
                lambda: [s for s, p in _servers(store).items() if p == a.proc.pid],  # type: ignore[union-attr]
                20,
                "A to register again",
            )
            assert again[0] > old

            for question in ("How do penguins keep warm?", "And in a blizzard?"):
                with api.websocket() as ws:
                    done = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c=question)][-1]
                assert done["__typename"] == "ChatDone", done
            api.http.close()
        assert "was lost: its lock's connection to the database ended; registered again" in a.log_text()
        assert "answers were interrupted" not in b.log_text(), b.log_text()
    finally:
        store.dispose()
