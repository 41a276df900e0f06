"""Two `ragchat serve` processes on one database (issue 18, item 5): what one stores the other
serves at once; killing one mid-answer leaves the other serving, and the interrupted answer is
marked failed by the survivor; a server starting while another streams never touches that answer.

On PostgreSQL this is the deployment the issue is about; on SQLite (two servers on one file, one
machine) the same recovery holds (app/services/leases.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION, UPDATE_SESSION
from tests.reliability.helpers import CITED, SLOW, scripted_server
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres

SEARCH = """query($p: ID!) { search(projectId: $p, query: "penguins huddle winter", topK: 3, threshold: 0) {
  __typename ... on SearchResults { kept { documentName } } } }"""
MESSAGE = (
    "query($id: ID!) { message(id: $id) { ... on ChatMessage { status error content citations { documentName } } } }"
)
SESSION = "query($id: ID!) { chatSession(id: $id) { ... on ChatSession { title topK threshold } } }"


def stream_until_tokens(ws: Any, session: str, question: str, tokens: int) -> tuple[str, Iterator[dict[str, Any]]]:
    stream = ws.subscribe(CHAT, s=session, c=question)
    message_id = ""
    while True:
        event = next(stream)["data"]["chat"]
        message_id = event.get("messageId", message_id)
        if event["__typename"] == "ChatToken":
            tokens -= 1
            if tokens == 0:
                return message_id, stream


def _ended(api: Api, message_id: str) -> dict[str, Any] | None:
    message: dict[str, Any] = api.run(MESSAGE, id=message_id)["message"]
    return message if message["status"] != "STREAMING" else None


def test_two_servers_share_one_database_and_a_killed_ones_answer_is_failed_by_the_other(
    tmp_path: Path, migrated: Settings
) -> None:
    url = migrated.database_url
    a = scripted_server(tmp_path, "a", url, [SLOW], delay_ms=50)
    b = scripted_server(tmp_path, "b", url, [CITED, SLOW], delay_ms=20)
    with a, b:
        api_a, api_b = Api(a.base), Api(b.base)
        pid = api_a.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
        added = api_a.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in winter.")
        assert added["addDocument"]["added"] == 1
        # Searchable and citable through the other server at once.
        hits = api_b.run(SEARCH, p=pid)["search"]["kept"]
        assert [h["documentName"] for h in hits] == ["penguins.md"]
        scripted = {"provider": "scripted", "model": "scripted", "threshold": 0.1, "answerMode": "GENERATIVE"}
        sid = api_a.run(CREATE_SESSION, p=pid, input={**scripted, "title": "shared"})["createChatSession"]["id"]
        changed = api_b.run(UPDATE_SESSION, id=sid, input={"topK": 9, "threshold": 0.2})["updateChatSession"]
        assert changed == {"__typename": "ChatSession", "id": sid, "topK": 9, "threshold": 0.2}
        assert api_a.run(SESSION, id=sid)["chatSession"] == {"title": "shared", "topK": 9, "threshold": 0.2}
        with api_b.websocket() as ws:
            done = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="How do penguins keep warm?")][-1]
        assert done["__typename"] == "ChatDone" and done["answer"]["content"] == CITED
        assert api_a.run(MESSAGE, id=done["answer"]["id"])["message"]["citations"] == [{"documentName": "penguins.md"}]

        # Kill A in the middle of an answer: B marks it failed, and goes on serving.
        with api_a.websocket() as ws_a:
            killed, _ = stream_until_tokens(ws_a, sid, "And in a blizzard?", tokens=3)
            a.kill()
        wait_until(lambda: api_b.run(MESSAGE, id=killed)["message"]["status"] == "FAILED", 20, "B to fail A's answer")
        assert "interrupted" in api_b.run(MESSAGE, id=killed)["message"]["error"]

        # B streams a long answer while A starts again: A's recoveries (at start-up, then every
        # 0.5 s) leave it alone. The client then leaves: B, its owner, ends it as disconnected.
        with api_b.websocket() as ws_b:
            streaming, _ = stream_until_tokens(ws_b, sid, "Why do emperor penguins huddle in winter?", tokens=3)
            a.start()
            time.sleep(1.5)
            assert api_a.run(MESSAGE, id=streaming)["message"]["status"] == "STREAMING", api_a.run(
                MESSAGE, id=streaming
            )
        ended = wait_until(lambda: _ended(api_a, streaming), 20, "B to end its answer")
        assert ended["status"] == "FAILED" and "disconnected" in ended["error"], ended
        api_a.http.close()
        api_b.http.close()
    assert "answers were interrupted by a server or command that stopped" in b.log_text()
