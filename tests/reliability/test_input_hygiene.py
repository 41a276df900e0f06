"""Input hygiene from outside (issue 11, item 9 without the websocket parts): ids parse strictly,
document names lose control and bidi characters on every way in, and clients' mistakes are
logged without tracebacks while unexpected errors keep theirs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.cli.ingest import ingest_paths
from app.container import Container
from app.services import documents
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION, UPLOAD

FIELDS = "__typename ... on Document { id name } ... on ValidationError { message fields { field message } }"
DOCUMENT = "query($id: ID!) { document(id: $id) { " + FIELDS + " } }"
HOSTILE_NAME = "re\x00port\x1b[31m\x7f\u202egnp.exe\u200b.txt"  # NUL, ESC, DEL, right-to-left override, zero width
CLEAN_NAME = "report[31mgnp.exe.txt"


def _names(container: Container) -> list[str]:
    with container.store.read() as db:
        return [row[0] for row in db.connection().exec_driver_sql("SELECT name FROM documents ORDER BY id")]


@pytest.mark.parametrize(
    "bad", [" 1 ", "\u0661", "+1", "01", "1_0", "1.0", "0", "-1", "1\n", "\uff19", "", "99999999999999999999"]
)
def test_ids_are_ascii_digits_only(api: Api, bad: str) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="a.txt", text="alpha beta")
    assert api.run(DOCUMENT, id="1")["document"]["__typename"] == "Document"
    result = api.run(DOCUMENT, id=bad)["document"]
    assert result["__typename"] == "ValidationError", (bad, result)
    assert result["fields"][0] == {"field": "id", "message": f"{bad!r} is not an id"}


def test_added_document_names_lose_control_and_bidi_characters(api: Api, rig: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    report = api.run(ADD_DOC, p=pid, name=HOSTILE_NAME, text="alpha beta")["addDocument"]
    assert report["files"][0]["name"] == CLEAN_NAME
    assert _names(rig) == [CLEAN_NAME]


def test_uploaded_file_names_lose_control_and_bidi_characters(api: Api, rig: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    name = "notes\x7f\u202etxt.md\u2066.txt"  # what a multipart filename can carry
    result = api.upload(UPLOAD, {"variables.files.0": (name, b"alpha beta")}, {"p": pid})
    assert result["data"]["uploadDocuments"]["items"][0]["name"] == "notestxt.md.txt", result
    assert _names(rig) == ["notestxt.md.txt"]


def test_a_name_of_nothing_but_control_characters_is_refused(api: Api, rig: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    result = api.run(ADD_DOC, p=pid, name="\x00\x1b\u202e", text="alpha")["addDocument"]
    assert result["__typename"] == "ValidationError"
    assert _names(rig) == []


def test_cli_ingested_names_lose_control_and_bidi_characters(rig: Container, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    (folder / "sub\x1bdir").mkdir(parents=True)
    (folder / "sub\x1bdir" / "a\u202etxt.md").write_text("# A\n\nalpha beta\n", encoding="utf-8")
    summary = ingest_paths(rig, "kb", [folder])
    assert [f.name for f in summary.files] == ["subdir/atxt.md"]
    assert _names(rig) == ["subdir/atxt.md"]


def test_clean_names_keep_ordinary_text() -> None:
    for name in ("notes.md", "Überblick \u2013 2024.pdf", "日本語.txt", "a  b.txt", "données (1).html"):
        assert documents.clean_upload_name(name, "files[0]") == name
    assert documents.clean_upload_name("two\nlines\t.txt", "files[0]") == "two lines .txt"


def test_client_errors_are_logged_without_tracebacks(
    api: Api, rig: Container, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        api.raw("{ projects { id ")  # syntax
        api.raw("{ nope }")  # validation
        api.raw('{ project(id: "x") { __typename } }')  # a ValidationError raised by a resolver
        api.raw(DOCUMENT, {"id": " 1 "})  # a ValidationError result
    client = [r for r in caplog.records if r.name.startswith(("strawberry", "ragchat"))]
    assert client, "client errors are still worth a line in the log"
    for record in client:
        assert record.levelno < logging.ERROR and record.exc_info is None and not record.stack_info, record


def test_unexpected_errors_keep_their_traceback_once(
    api: Api, rig: Container, caplog: pytest.LogCaptureFixture
) -> None:
    with rig.store.write() as db:
        db.connection().exec_driver_sql("ALTER TABLE chat_messages RENAME TO chat_messages_gone")  # both backends
    with caplog.at_level(logging.INFO):
        body = api.raw('{ message(id: "1") { __typename } }').json()
    assert body["errors"][0]["message"].startswith("Unexpected error (request ")
    tracebacks = [r for r in caplog.records if r.exc_info is not None]
    assert len(tracebacks) == 1 and tracebacks[0].levelno == logging.ERROR
    assert "chat_messages" in caplog.text  # the log says what the client is not told


def test_a_nul_character_in_a_stored_text_is_a_validation_error_on_both_backends(api: Api, rig: Container) -> None:
    """PostgreSQL's text cannot hold U+0000 (a project name holding one failed there as an unexpected
    error; SQLite stored it). Both now refuse it as a ValidationError and write nothing."""
    fields = [{"field": "input", "message": "must not contain a NUL character (U+0000): the database cannot store one"}]
    assert api.run(CREATE_PROJECT, name="k\x00b")["createProject"]["fields"] == fields
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    session = {"provider": "fake", "model": "scripted", "systemPrompt": "be\x00brief"}
    assert api.run(CREATE_SESSION, p=pid, input=session)["createChatSession"]["fields"] == fields
    lists = "{ projects { ... on ProjectConnection { totalCount } } chatSessions { ... on ChatSessionConnection { totalCount } } }"
    assert api.run(lists) == {"projects": {"totalCount": 1}, "chatSessions": {"totalCount": 0}}
