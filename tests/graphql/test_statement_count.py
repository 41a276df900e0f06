"""DataLoaders keep the number of SQL statements constant however many sessions are listed, a page of
each one's messages included."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from app.container import Container
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION, SEND, nodes

LIST = """{ chatSessions(first: 100) { ... on ChatSessionConnection { edges { node { id title topK
  project { name documentCount }
  lastMessage { content citations { marker documentName } }
  messages(last: 2) { ... on ChatMessageConnection { totalCount edges { node { content citations { marker } } } } }
} } } } }"""


def _statements(container: Container, api: Api) -> int:
    seen: list[str] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        # Naming the caller asks whether people exist at most once a second on a server without
        # any (app/services/people/identify.py): that is the request's, not the listing's.
        if not statement.startswith(("BEGIN", "PRAGMA")) and "FROM users" not in statement:
            seen.append(statement)

    event.listen(container.store.engine, "before_cursor_execute", count)
    try:
        data = api.run(LIST)
    finally:
        event.remove(container.store.engine, "before_cursor_execute", count)
    listed = nodes(data["chatSessions"])
    assert all(s["lastMessage"]["citations"] for s in listed)
    assert all([m["content"] for m in nodes(s["messages"])] == ["penguins?", "Penguins huddle [1]."] for s in listed)
    assert all(s["messages"]["totalCount"] == 2 for s in listed)
    return len(seen)


def test_listing_sessions_with_last_messages_and_citations_is_constant(
    api: Api, fake_container: Container, model
) -> None:  # type: ignore[no-untyped-def]
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="Emperor penguins huddle in the winter.")

    def add_sessions(n: int) -> None:
        for _ in range(n):
            sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.0})[
                "createChatSession"
            ]["id"]
            model.enqueue("Penguins huddle [1].")
            api.run(SEND, s=sid, c="penguins?")

    add_sessions(5)
    few = _statements(fake_container, api)
    add_sessions(45)
    many = _statements(fake_container, api)
    # sessions and their count, projects, 3 for project stats, last messages, a page of messages and
    # their counts, and citations: one batch or two, as the last messages and the pages' messages
    # resolve on the same turn of the event loop or not. Without batching, 50 sessions would be 150+.
    assert few <= 11 and many <= 11, (few, many)


PROJECT_TAGS = """{ projects(first: 100) { ... on ProjectConnection { edges { node { name
  documentTags { tag documents }
  documents(first: 10) { ... on DocumentConnection { edges { node { name tags } } } }
} } } } }"""
TAG = """mutation($id: ID!, $tags: [String!]!) { setDocumentTags(id: $id, tags: $tags) { __typename } }"""
ADD = """mutation($p: ID!, $n: String!, $t: String!) { addDocument(projectId: $p, name: $n, text: $t) {
  ... on UploadReport { files { document { id } } } } }"""


def test_listing_knowledge_bases_with_their_tags_is_constant(api: Api, fake_container: Container) -> None:
    def add_projects(first: int, n: int) -> None:
        for i in range(first, first + n):
            pid = api.run(CREATE_PROJECT, name=f"kb{i}")["createProject"]["id"]
            for j in range(2):
                report = api.run(ADD, p=pid, n=f"d{j}.md", t=f"document {j} of base {i}")["addDocument"]
                api.run(TAG, id=report["files"][0]["document"]["id"], tags=[f"t{j}", "shared"])

    def statements() -> int:
        seen: list[str] = []

        def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
            if not statement.startswith(("BEGIN", "PRAGMA")) and "FROM users" not in statement:
                seen.append(statement)

        event.listen(fake_container.store.engine, "before_cursor_execute", count)
        try:
            listed = nodes(api.run(PROJECT_TAGS)["projects"])
        finally:
            event.remove(fake_container.store.engine, "before_cursor_execute", count)
        assert all(
            p["documentTags"]
            == [{"tag": "shared", "documents": 2}, {"tag": "t0", "documents": 1}, {"tag": "t1", "documents": 1}]
            for p in listed
        )
        assert all([d["tags"] for d in nodes(p["documents"])] == [["shared", "t0"], ["shared", "t1"]] for p in listed)
        return len(seen)

    add_projects(0, 2)
    few = statements()
    add_projects(2, 8)
    assert statements() == few


BACKGROUND = ("FROM users", " servers", " ingestion_")  # the server's own polls, not the turn's


def _turn_statements(container: Container, api: Api, sid: str, question: str) -> tuple[int, int]:
    """The statements and the transactions one sendMessage turn takes, request included: each
    transaction's statements, by connection, unless it is one of the server's polls meanwhile."""
    transactions: dict[int, list[str]] = {}
    seen: list[list[str]] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        if statement.startswith("BEGIN") or id(conn) not in transactions:
            transactions[id(conn)] = []
            seen.append(transactions[id(conn)])
        if not statement.startswith("PRAGMA"):
            transactions[id(conn)].append(statement)

    event.listen(container.store.engine, "before_cursor_execute", count)
    try:
        sent = api.run(SEND, s=sid, c=question)["sendMessage"]
    finally:
        event.remove(container.store.engine, "before_cursor_execute", count)
    assert sent["status"] == "COMPLETE" and [c["marker"] for c in sent["citations"]] == [1], sent
    turns = [t for t in seen if t and not any(b in s for s in t for b in BACKGROUND)]
    begun = sum(t[0].startswith("BEGIN") for t in turns)
    return sum(len(t) for t in turns) - begun, begun


@pytest.mark.sqlite_only(reason="counts SQLite's BEGIN statements; PostgreSQL's searches run other statements")
def test_a_chat_turn_reads_its_session_once_and_writes_each_step_in_one_statement(
    api: Api, fake_container: Container, model
) -> None:  # type: ignore[no-untyped-def]
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="Emperor penguins huddle in the winter.")
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.0})[
        "createChatSession"
    ]["id"]
    model.enqueue("Penguins huddle [1].")
    _turn_statements(fake_container, api, sid, "penguins?")  # the first search loads the index
    model.enqueue("They huddle in the winter [1].")
    statements, transactions = _turn_statements(fake_container, api, sid, "When do emperor penguins huddle together?")
    # The access check's read of the session (which also chooses the generation slot); the session
    # touched and read, question and placeholder, history, tool groups; the message looked up alone
    # (the space, the journal: its score only), then the search (the space, the journals, the
    # chunks); the answer, the citations (which read whether their chunks are still there). Before:
    # the session read three times, the lookup a whole search, seven transactions, 20 statements.
    assert statements <= 14 and transactions <= 5, (statements, transactions)
