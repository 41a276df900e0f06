"""The API's types say what they hold (issue 14 item 2): enums instead of strings, per-entity delete
payloads, separate create and update inputs, ChatError as an Error, a session's project never null,
a score null only when there is none. Through the real endpoint and store."""

from __future__ import annotations

from sqlalchemy import text

from app.container import Container
from tests.backends import delete_vectors
from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION, SEND, nodes

UPDATE_PROJECT = """mutation($id: ID!, $input: UpdateProjectInput!) { updateProject(id: $id, input: $input) {
  __typename ... on Project { id name description } ... on Error { message }
  ... on ValidationError { fields { field message } } } }"""
PROJECT = """query($id: ID!) { project(id: $id) { ... on Project { name description
  documents { ... on DocumentConnection { edges { node { id name kind status } } } } } } }"""


def _project(api: Api, name: str = "kb") -> str:
    return str(api.run(CREATE_PROJECT, name=name)["createProject"]["id"])


def test_update_project_changes_what_it_is_given_and_leaves_the_rest(api: Api) -> None:
    pid = _project(api)
    described = api.run(UPDATE_PROJECT, id=pid, input={"description": "Field notes on birds"})["updateProject"]
    assert described == {"__typename": "Project", "id": pid, "name": "kb", "description": "Field notes on birds"}
    renamed = api.run(UPDATE_PROJECT, id=pid, input={"name": "  Birds   of the  coast "})["updateProject"]
    assert (renamed["name"], renamed["description"]) == ("Birds of the coast", "Field notes on birds")
    both = api.run(UPDATE_PROJECT, id=pid, input={"name": "Birds", "description": ""})["updateProject"]
    assert (both["name"], both["description"]) == ("Birds", "")
    unchanged = api.run(UPDATE_PROJECT, id=pid, input={"name": None})["updateProject"]
    assert unchanged["name"] == "Birds"  # null is "leave it", like an omitted field


def test_update_project_is_checked_like_create_and_writes_nothing_when_refused(api: Api) -> None:
    pid = _project(api, "Birds")
    _project(api, "Fish")
    clash = api.run(UPDATE_PROJECT, id=pid, input={"name": "FISH", "description": "new"})["updateProject"]
    assert clash["__typename"] == "ConflictError" and "'FISH' already exists" in clash["message"]
    same = api.run(UPDATE_PROJECT, id=pid, input={"name": "birds"})["updateProject"]
    assert same["name"] == "birds"  # its own name, in another case, is no clash
    bad = api.run(UPDATE_PROJECT, id=pid, input={"name": "  ", "description": "x" * 2001})["updateProject"]
    assert bad["__typename"] == "ValidationError"
    assert bad["fields"] == [
        {"field": "name", "message": "must not be empty"},
        {"field": "description", "message": "must be at most 2000 characters"},
    ]
    assert api.run(PROJECT, id=pid)["project"] == {"name": "birds", "description": "", "documents": {"edges": []}}
    missing = api.run(UPDATE_PROJECT, id="999", input={"name": "x"})["updateProject"]
    assert missing["__typename"] == "NotFoundError"


def test_document_kinds_are_an_enum_and_old_rows_read_as_the_kind_they_name(
    api: Api, fake_container: Container
) -> None:
    pid = _project(api)
    for name in ("notes.md", "page.html", "main.py", "plain.txt"):
        api.run(ADD_DOC, p=pid, name=name, text="Penguins huddle together in winter.")
    kinds = {d["name"]: d["kind"] for d in nodes(api.run(PROJECT, id=pid)["project"]["documents"])}
    assert kinds == {"notes.md": "MARKDOWN", "page.html": "HTML", "main.py": "CODE", "plain.txt": "TEXT"}
    # Before kinds were an enum, a failed document stored its file's extension (or "unknown").
    with fake_container.store.write() as db:
        for name, stored in (("notes.md", "md"), ("page.html", "HTM"), ("main.py", "odt"), ("plain.txt", "unknown")):
            db.execute(text("UPDATE documents SET kind = :kind WHERE name = :name"), {"kind": stored, "name": name})
    kinds = {d["name"]: d["kind"] for d in nodes(api.run(PROJECT, id=pid)["project"]["documents"])}
    assert kinds == {"notes.md": "MARKDOWN", "page.html": "HTML", "main.py": "UNKNOWN", "plain.txt": "UNKNOWN"}


def test_a_file_that_fails_is_stored_with_the_kind_its_name_says(api: Api, fake_container: Container) -> None:
    pid = _project(api)
    # A page with no visible text fails in the HTML parser (an empty file would be skipped).
    report = api.run(ADD_DOC, p=pid, name="scripts.html", text="<script>go()</script>")["addDocument"]
    assert [f["status"] for f in report["files"]] == ["FAILED"]
    (doc,) = nodes(api.run(PROJECT, id=pid)["project"]["documents"])
    assert (doc["kind"], doc["status"]) == ("HTML", "FAILED")
    with fake_container.store.read() as db:
        assert db.connection().exec_driver_sql("SELECT kind FROM documents").scalar() == "html"


def test_a_chat_sessions_project_is_always_there(api: Api) -> None:
    pid = _project(api)
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]["id"]
    got = api.run("query($id: ID!) { chatSession(id: $id) { ... on ChatSession { project { id name } } } }", id=sid)
    assert got["chatSession"]["project"] == {"id": pid, "name": "kb"}


def test_chat_errors_are_errors_with_an_enum_code(api: Api) -> None:
    query = """subscription { chat(sessionId: "404", content: "hi") { __typename
      ... on Error { message } ... on ChatError { code } } }"""
    with api.websocket() as ws:
        (event,) = [e["data"]["chat"] for e in ws.subscribe(query)]
    assert event == {"__typename": "ChatError", "message": "chat session 404 not found", "code": "NOT_FOUND"}


def _penguin_session(api: Api) -> str:
    """A chat session on a knowledge base of one short document about penguins."""
    pid = _project(api)
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle together in winter.")
    return str(
        api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.2})[
            "createChatSession"
        ]["id"]
    )


def test_a_chunk_without_a_stored_vector_is_found_by_keyword_with_no_score(
    api: Api, fake_container: Container, model: FakeChatModel
) -> None:
    sid = _penguin_session(api)
    with fake_container.store.write() as db:  # as if its chunks had never been embedded
        delete_vectors(db.connection(), "vec_space_1")
    model.enqueue("Penguins huddle [1].")
    with api.websocket() as ws:
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="penguins huddle")]
    events = [e for e in events if e["__typename"] != "ChatSearchProgress"]
    assert events[0]["sources"][0]["score"] is None  # found by keyword alone: no cosine to show
    assert events[0]["degraded"] == []  # nothing failed: there is just no vector
    answer = events[-1]["answer"]
    assert answer["citations"][0]["score"] is None and answer["citations"][0]["documentName"] == "penguins.md"
    assert [c["score"] for c in answer["trace"]["candidates"]] == [None]


def test_without_stored_vectors_a_source_has_no_score_and_its_citation_none(
    api: Api, fake_container: Container, model: FakeChatModel
) -> None:
    sid = _penguin_session(api)
    with fake_container.store.write() as db:  # the vector index and the stored vectors are gone
        db.connection().exec_driver_sql("DROP TABLE vec_space_1")
    model.enqueue("Penguins huddle [1].", "Penguins huddle [1].")
    with api.websocket() as ws:
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="penguins huddle")]
    events = [e for e in events if e["__typename"] != "ChatSearchProgress"]
    assert events[0]["sources"][0]["score"] is None  # found by keyword alone: no cosine to show
    assert [d["reason"] for d in events[0]["degraded"]] == ["VECTOR_SEARCH_FAILED", "SCORES_UNAVAILABLE"]
    answer = events[-1]["answer"]
    assert answer["citations"][0]["score"] is None and answer["citations"][0]["documentName"] == "penguins.md"
    assert [c["score"] for c in answer["trace"]["candidates"]] == [None]
    sent = api.run(SEND, s=sid, c="penguins huddle")["sendMessage"]
    assert [d["reason"] for d in sent["degraded"]] == ["VECTOR_SEARCH_FAILED", "SCORES_UNAVAILABLE"]
    assert sent["citations"][0]["score"] is None
