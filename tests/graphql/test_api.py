"""Every query and mutation through the real HTTP endpoint, including error unions."""

from __future__ import annotations

from sqlalchemy import text

from app.container import Container
from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION, SEND, UPDATE_SESSION, UPLOAD, nodes

PENGUINS = "# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter."
OWLS = "# Owls\n\nBarn owls hunt at night and find mice by sound alone."


def _kb(api: Api, name: str = "kb") -> str:
    project = api.run(CREATE_PROJECT, name=name)["createProject"]
    api.run(ADD_DOC, p=project["id"], name="penguins.md", text=PENGUINS)
    api.run(ADD_DOC, p=project["id"], name="owls.md", text=OWLS)
    return project["id"]


def _count(container: Container, table: str) -> int:
    with container.store.read() as db:
        return int(db.connection().exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one())


def test_projects_create_update_delete_and_their_errors(api: Api, fake_container: Container) -> None:
    created = api.run(CREATE_PROJECT, name="  Field notes ")["createProject"]
    assert created["__typename"] == "Project" and created["name"] == "Field notes"
    dup = api.run(CREATE_PROJECT, name="field NOTES")["createProject"]
    assert dup["__typename"] == "ConflictError" and "already exists" in dup["message"]
    empty = api.run(CREATE_PROJECT, name="   ")["createProject"]
    assert empty["__typename"] == "ValidationError" and empty["fields"] == [
        {"field": "name", "message": "must not be empty"}
    ]

    renamed = api.run(
        'mutation($id: ID!) { updateProject(id: $id, input: {name: "Notes"}) { __typename ... on Project { name } } }',
        id=created["id"],
    )
    assert renamed["updateProject"] == {"__typename": "Project", "name": "Notes"}
    missing = api.run(
        'mutation { updateProject(id: "999", input: {name: "x"}) { __typename ... on NotFoundError { kind id } } }'
    )
    assert missing["updateProject"] == {"__typename": "NotFoundError", "kind": "project", "id": "999"}
    bad_id = api.run('mutation { deleteProject(id: "abc") { __typename ... on ValidationError { fields { field } } } }')
    assert bad_id["deleteProject"] == {"__typename": "ValidationError", "fields": [{"field": "id"}]}
    deleted = api.run(
        "mutation($id: ID!) { deleteProject(id: $id) { __typename ... on ProjectDeleted { id } } }", id=created["id"]
    )
    assert deleted["deleteProject"] == {"__typename": "ProjectDeleted", "id": created["id"]}
    assert _count(fake_container, "projects") == 0


def test_documents_by_text_and_multipart_upload(api: Api, fake_container: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    added = api.run(ADD_DOC, p=pid, name="notes.md", text=PENGUINS)["addDocument"]
    assert added["added"] == 1 and added["files"][0]["chunks"] >= 1
    again = api.run(ADD_DOC, p=pid, name="notes.md", text=PENGUINS)["addDocument"]
    assert again["unchanged"] == 1

    report = api.upload(
        UPLOAD,
        {
            "variables.files.0": ("a.txt", b"alpha beta gamma"),
            "variables.files.1": ("bad.html", b"<script>go()</script>"),
            "variables.files.2": ("blob.txt", b"\x00\x01\x02binary"),
        },
        {"p": pid},
    )["data"]["uploadDocuments"]
    assert report["__typename"] == "IngestionJob" and report["finished"]
    progress = report["progress"]
    assert (progress["ready"], progress["failed"], progress["skipped"]) == (1, 1, 1)
    assert sorted(f["outcome"] for f in report["items"]) == ["ADDED", "FAILED", "SKIPPED"]
    failed = next(f for f in report["items"] if f["state"] == "FAILED")
    assert failed["name"] == "bad.html" and failed["error"] and failed["document"]["status"] == "FAILED"
    assert failed["document"]["kind"] == "HTML"  # named .html: the HTML parser refused it (no visible text)
    skipped = next(f for f in report["items"] if f["state"] == "SKIPPED")  # binary: nothing stored (issue 17 item 7)
    assert (skipped["name"], skipped["document"]) == ("blob.txt", None)
    assert skipped["error"].startswith("binary: ") and "NUL" in skipped["error"]

    data = api.run(
        "query($id: ID!) { project(id: $id) { ... on Project { documentCount chunkCount embeddingSpace { label } "
        "documents { ... on DocumentConnection { edges { node { name status chunkCount "
        "chunks(first: 5) { ... on ChunkConnection { edges { node { ordinal text location { lineStart } } } } } } } } } } } }",
        id=pid,
    )["project"]
    assert data["documentCount"] == 3 and data["embeddingSpace"]["label"] == "fake/hash-words@64"
    names = {d["name"]: d for d in nodes(data["documents"])}
    assert nodes(names["a.txt"]["chunks"])[0]["text"] == "alpha beta gamma"


def test_uploads_that_are_too_big_or_unsupported_write_nothing(api: Api, fake_container: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    fake_container.settings.api.max_upload_bytes = 1024
    big = api.upload(
        UPLOAD, {"variables.files.0": ("ok.txt", b"ok"), "variables.files.1": ("big.txt", b"x" * 2000)}, {"p": pid}
    )
    assert big["data"]["uploadDocuments"]["__typename"] == "ValidationError"
    assert big["data"]["uploadDocuments"]["fields"][0]["field"] == "files[1]"
    exe = api.upload(UPLOAD, {"variables.files.0": ("tool.exe", b"MZ\x90\x00")}, {"p": pid})
    assert exe["data"]["uploadDocuments"]["fields"][0]["field"] == "files[0]"
    assert _count(fake_container, "documents") == 0


def test_sessions_with_rag_settings_defaults_and_validation(api: Api, fake_container: Container) -> None:
    pid = _kb(api)
    default = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]
    rag = fake_container.settings.rag
    assert (default["enableRag"], default["topK"], default["threshold"], default["includeCitations"]) == (
        rag.enable_rag,
        rag.top_k,
        rag.threshold,
        rag.include_citations,
    )
    custom = api.run(
        CREATE_SESSION,
        p=pid,
        input={
            "provider": "fake",
            "model": "scripted",
            "title": "Tuned",
            "topK": 2,
            "threshold": 0.4,
            "enableRag": False,
        },
    )["createChatSession"]
    assert (custom["title"], custom["topK"], custom["threshold"], custom["enableRag"]) == ("Tuned", 2, 0.4, False)

    for field, value, expected in (
        ("topK", 0, "topK"),
        ("topK", 51, "topK"),
        ("threshold", 1.5, "threshold"),
        ("threshold", -0.1, "threshold"),
        ("provider", "nope", "provider"),
    ):
        result = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", field: value})
        error = result["createChatSession"]
        assert error["__typename"] == "ValidationError" and error["fields"][0]["field"] == expected, error
    assert (
        "between 1 and 50"
        in api.run(UPDATE_SESSION, id=custom["id"], input={"topK": 99})["updateChatSession"]["message"]
    )
    assert _count(fake_container, "chat_sessions") == 2


def test_send_message_and_settings_take_effect_from_the_next_message(api: Api, model: FakeChatModel) -> None:
    pid = _kb(api)
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "topK": 1, "threshold": 0.1})[
        "createChatSession"
    ]["id"]
    model.enqueue("Penguins huddle [1].", "Owls hunt [2].")
    first = api.run(SEND, s=sid, c="How do penguins survive winter?")["sendMessage"]
    assert first["__typename"] == "ChatMessage" and first["status"] == "COMPLETE"
    assert first["citations"][0]["documentName"] == "penguins.md" and first["citations"][0]["kind"] == "MODEL"
    assert first["trace"]["settings"]["topK"] == 1 and first["usage"]["completion"] > 0
    assert {c["fate"] for c in first["trace"]["candidates"]} <= {"KEPT", "BELOW_THRESHOLD", "BEYOND_TOP_K"}

    api.run(UPDATE_SESSION, id=sid, input={"topK": 2, "threshold": 0.0})
    second = api.run(SEND, s=sid, c="penguins and owls")["sendMessage"]
    assert second["trace"]["settings"] == {"topK": 2, "threshold": 0.0, "mode": "HYBRID"}

    history = api.run(
        "query($id: ID!) { chatSession(id: $id) { ... on ChatSession { "
        "messages { ... on ChatMessageConnection { edges { node { role content } } } } lastMessage { id } } } }",
        id=sid,
    )["chatSession"]
    assert [m["role"] for m in nodes(history["messages"])] == ["USER", "ASSISTANT", "USER", "ASSISTANT"]
    assert history["lastMessage"]["id"] == second["id"]


def test_a_failed_answer_is_returned_with_its_error_and_can_be_regenerated(api: Api, model: FakeChatModel) -> None:
    from app.errors import ProviderUnavailableError

    pid = _kb(api)
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]["id"]
    model.enqueue(ProviderUnavailableError("the model server is down", provider="fake"), "Recovered.")
    failed = api.run(SEND, s=sid, c="penguins?")["sendMessage"]
    assert (failed["status"], failed["error"]) == ("FAILED", "the model server is down")
    again = api.run(
        "mutation($m: ID!) { regenerateMessage(messageId: $m) { __typename ... on ChatMessage { id status content error } } }",
        m=failed["id"],
    )["regenerateMessage"]
    assert again == {
        "__typename": "ChatMessage",
        "id": failed["id"],
        "status": "COMPLETE",
        "content": "Recovered.",
        "error": None,
    }


def test_send_message_errors(api: Api, fake_container: Container) -> None:
    missing = api.run(SEND, s="404", c="hi")["sendMessage"]
    assert missing["__typename"] == "NotFoundError"
    pid = _kb(api)
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]["id"]
    empty = api.run(SEND, s=sid, c="  ")["sendMessage"]
    assert empty["__typename"] == "ValidationError" and empty["fields"][0]["field"] == "content"
    fake_container.settings.chat.max_message_chars = 5
    long = api.run(SEND, s=sid, c="123456")["sendMessage"]
    assert "limit is 5" in long["fields"][0]["message"]
    assert _count(fake_container, "chat_messages") == 0


def test_search_and_retrieval_preview(api: Api) -> None:
    pid = _kb(api)
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "topK": 1, "threshold": 0.0})[
        "createChatSession"
    ]["id"]
    query = 'query($p: ID!) { search(projectId: $p, query: "penguins winter", topK: 1, threshold: 0, mode: VECTOR) { __typename ... on SearchResults { effectiveMode fusion kept { documentName score fate } hits { ... on SearchHitConnection { totalCount edges { node { fate } } } } } } }'
    found = api.run(query, p=pid)["search"]
    assert found["kept"][0]["documentName"] == "penguins.md" and found["effectiveMode"] == "VECTOR"
    assert found["fusion"] is None  # one ranking: nothing fused
    assert nodes(found["hits"])[0]["fate"] == "KEPT" and found["hits"]["totalCount"] >= 1
    preview = 'query($s: ID!, $t: Float) { retrievalPreview(sessionId: $s, message: "penguins winter", threshold: $t) { ... on SearchResults { threshold kept { documentName score } } ... on ValidationError { fields { field } } } }'
    loose = api.run(preview, s=sid, t=0.0)["retrievalPreview"]
    strict = api.run(preview, s=sid, t=0.99)["retrievalPreview"]
    assert len(loose["kept"]) == 1 and strict["kept"] == [] and strict["threshold"] == 0.99
    bad = api.run(preview, s=sid, t=2.0)["retrievalPreview"]
    assert bad["fields"] == [{"field": "threshold"}]


def test_a_search_says_which_hit_passed_on_its_words(api: Api) -> None:
    # The test embedder scores "How do I install it?" 0.26 against the only text holding "install":
    # under the threshold, so it is kept on its words, and the hit says so.
    project = api.run(CREATE_PROJECT, name="tool")["createProject"]["id"]
    api.run(ADD_DOC, p=project, name="install.md", text="Getting started. Install via pip: pip install frobnicate")
    api.run(ADD_DOC, p=project, name="options.md", text="Options: the n flag skips summary statistics.")
    query = 'query($p: ID!) { search(projectId: $p, query: "How do I install it?", topK: 5, threshold: 0.3) { ... on SearchResults { kept { documentName score passedOnWords } hits { ... on SearchHitConnection { edges { node { documentName passedOnWords } } } } } } }'
    found = api.run(query, p=project)["search"]
    (kept,) = found["kept"]
    assert kept["documentName"] == "install.md" and kept["passedOnWords"] is True and kept["score"] < 0.3
    assert [n["passedOnWords"] for n in nodes(found["hits"]) if n["documentName"] == "options.md"] == [False]


def test_delete_document_and_session(api: Api, fake_container: Container) -> None:
    pid = _kb(api)
    docs = nodes(
        api.run(
            "query($id: ID!) { project(id: $id) { ... on Project { documents { ... on DocumentConnection { edges { node { id } } } } } } }",
            id=pid,
        )["project"]["documents"]
    )
    gone = api.run(
        "mutation($id: ID!) { deleteDocument(id: $id) { __typename ... on DocumentDeleted { id projectId } } }",
        id=docs[0]["id"],
    )
    assert gone["deleteDocument"] == {"__typename": "DocumentDeleted", "id": docs[0]["id"], "projectId": pid}
    assert _count(fake_container, "documents") == 1
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]["id"]
    api.run(SEND, s=sid, c="penguins?")
    ended = api.run(
        "mutation($id: ID!) { deleteChatSession(id: $id) { __typename ... on ChatSessionDeleted { id projectId } } }",
        id=sid,
    )
    assert ended["deleteChatSession"] == {"__typename": "ChatSessionDeleted", "id": sid, "projectId": pid}
    assert _count(fake_container, "chat_messages") == 0
    again = api.run(
        "mutation($id: ID!) { deleteChatSession(id: $id) { __typename ... on NotFoundError { kind id } } }", id=sid
    )
    assert again["deleteChatSession"] == {"__typename": "NotFoundError", "kind": "chat session", "id": sid}


def test_providers_query(api: Api) -> None:
    providers = api.run("{ providers { provider available models defaultModel } }")["providers"]
    assert providers == [{"provider": "fake", "available": True, "models": ["scripted"], "defaultModel": "scripted"}]


def test_unexpected_errors_are_masked_with_a_request_id(api: Api, fake_container: Container) -> None:
    with fake_container.store.write() as db:  # the same on both backends (DROP would need CASCADE on PostgreSQL)
        db.execute(text("ALTER TABLE chat_messages RENAME TO chat_messages_gone"))
    lists = "{ chatSessions { ... on ChatSessionConnection { totalCount } } projects { ... on ProjectConnection { totalCount } } }"
    body = api.raw(lists).json()
    assert "errors" not in body and body["data"]["projects"]["totalCount"] >= 0
    broken = api.raw('{ message(id: "1") { __typename } }').json()
    assert broken["errors"][0]["message"].startswith("Unexpected error (request ")
    assert "chat_messages" not in str(broken)


def test_session_defaults_upload_limits_and_all_validation_errors_at_once(api: Api, fake_container: Container) -> None:
    data = api.run(
        "{ sessionDefaults { enableRag topK threshold includeCitations provider model mode } uploadLimits { maxBytes extensions } }"
    )
    rag = fake_container.settings.rag
    assert data["sessionDefaults"]["topK"] == rag.top_k and data["sessionDefaults"]["threshold"] == rag.threshold
    assert data["sessionDefaults"]["mode"] == "HYBRID"
    assert ".md" in data["uploadLimits"]["extensions"] and ".pdf" in data["uploadLimits"]["extensions"]
    assert data["uploadLimits"]["maxBytes"] == fake_container.settings.api.max_upload_bytes
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    bad = api.run(
        CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "topK": 0, "threshold": 3.0, "title": ""}
    )
    fields = [f["field"] for f in bad["createChatSession"]["fields"]]
    assert fields == ["title", "topK", "threshold"]
