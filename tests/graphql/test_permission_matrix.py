"""The permission matrix of docs/SECURITY.md, run: every field of Query, Mutation and Subscription
as every kind of caller against a live server, allowed or denied as the table says. The fields are
read from the schema, so a new field without a row in the table fails here, naming it.

A call is *denied* when it is refused (401), answered "sign in first", or its result is a
ForbiddenError or NotFoundError; any other answer (the thing, or a ValidationError or ConflictError
that only a caller let through can reach) is *allowed*. A list is *hidden* when it answers without
the target of knowledge base A.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import GraphQLObjectType
from websockets.sync.client import connect

from app.container import Container
from app.db.enums import MemberRole
from app.graphql.schema import build_schema
from tests.graphql import matrix_world
from tests.graphql.client import Api, live_api
from tests.graphql.matrix_world import COLUMNS, World

SECURITY = Path(__file__).resolve().parents[2] / "docs" / "SECURITY.md"
DENIED_TYPES = {"ForbiddenError", "NotFoundError"}
R = "__typename ... on Error { message }"


def table() -> dict[str, dict[str, str]]:
    """docs/SECURITY.md's matrix: field -> column -> allowed/denied/hidden."""
    lines = SECURITY.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| field |"))
    columns = [c.strip() for c in lines[header].strip("|").split("|")][1:]
    assert tuple(columns) == COLUMNS, columns
    rows: dict[str, dict[str, str]] = {}
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        name, *cells = [c.strip() for c in line.strip("|").split("|")]
        rows[name.strip("`")] = dict(zip(columns, cells, strict=True))
    return rows


def schema_fields() -> list[str]:
    schema = build_schema()._schema
    roots = [schema.query_type, schema.mutation_type, schema.subscription_type]
    return [f"{root.name}.{name}" for root in roots if isinstance(root, GraphQLObjectType) for name in root.fields]


@dataclass(frozen=True)
class Call:
    document: str
    variables: Callable[[World], dict[str, Any]] = lambda w: {}
    kind: str = "http"  # http, upload (multipart files), archive (one multipart file), subscription (websocket)
    target: Callable[[World], str] | None = None  # a list field: the id of A's thing it shows or hides


def ids(value: Any) -> set[str]:
    return set(re.findall(r'"id": "(\d+)"', json.dumps(value)))


CONNECTION = "__typename ... on {kind}Connection {{ edges {{ node {{ id }} }} }}"
CALLS: dict[str, Call] = {
    "Query.tools": Call("{ tools { id } }"),
    "Query.tool": Call("query($id: ID!) { tool(id: $id) { " + R + " } }", lambda w: {"id": w.builtin_tool}),
    "Query.toolSelection": Call(
        'query($s: ID!) { toolSelection(sessionId: $s, message: "hi") { ' + R + " } }", lambda w: {"s": w.chat}
    ),
    "Query.sessionDefaults": Call("{ sessionDefaults { model } }"),
    "Query.uploadLimits": Call("{ uploadLimits { maxBytes } }"),
    "Query.health": Call("{ health { __typename } }"),
    "Query.providers": Call("{ providers { provider } }"),
    "Query.projects": Call("{ projects { " + CONNECTION.format(kind="Project") + " } }", target=lambda w: str(w.kb)),
    "Query.project": Call("query($id: ID!) { project(id: $id) { " + R + " } }", lambda w: {"id": w.kb}),
    "Query.document": Call("query($id: ID!) { document(id: $id) { " + R + " } }", lambda w: {"id": w.document}),
    "Query.ingestionJob": Call("query($id: ID!) { ingestionJob(id: $id) { " + R + " } }", lambda w: {"id": w.job}),
    "Query.chatSessions": Call(
        "{ chatSessions(first: 100) { " + CONNECTION.format(kind="ChatSession") + " } }", target=lambda w: str(w.chat)
    ),
    "Query.chatSession": Call("query($id: ID!) { chatSession(id: $id) { " + R + " } }", lambda w: {"id": w.chat}),
    "Query.message": Call("query($id: ID!) { message(id: $id) { " + R + " } }", lambda w: {"id": w.answer}),
    "Query.search": Call(
        'query($p: ID!) { search(projectId: $p, query: "answer") { ' + R + " } }", lambda w: {"p": w.kb}
    ),
    "Query.retrievalPreview": Call(
        'query($s: ID!) { retrievalPreview(sessionId: $s, message: "answer") { ' + R + " } }",
        lambda w: {"s": w.chat},
    ),
    "Mutation.createTool": Call(
        "mutation($n: String!) { createTool(input: {name: $n}) { " + R + " } }",
        lambda w: {"n": f"new_{next(w.counter)}"},
    ),
    "Mutation.importMcpTools": Call(  # the address is refused to whoever gets that far: nothing is reached
        'mutation { importMcpTools(input: {url: "http://127.0.0.1:9/mcp", group: "g"}) { ' + R + " } }",
        lambda w: {},
    ),
    "Mutation.updateTool": Call(
        'mutation($id: ID!) { updateTool(id: $id, input: {description: "Changed."}) { ' + R + " } }",
        lambda w: {"id": w.fresh_tool()},
    ),
    "Mutation.deleteTool": Call(
        "mutation($id: ID!) { deleteTool(id: $id) { " + R + " } }", lambda w: {"id": w.fresh_tool()}
    ),
    "Mutation.setChatSessionToolGroups": Call(
        "mutation($s: ID!) { setChatSessionToolGroups(sessionId: $s, groups: []) { " + R + " } }",
        lambda w: {"s": w.fresh_chat()},
    ),
    "Mutation.approveToolCall": Call(
        "mutation($id: ID!) { approveToolCall(id: $id) { " + R + " } }", lambda w: {"id": w.tool_call}
    ),
    "Mutation.rejectToolCall": Call(
        "mutation($id: ID!) { rejectToolCall(id: $id) { " + R + " } }", lambda w: {"id": w.tool_call}
    ),
    "Mutation.testTool": Call(
        "mutation($id: ID!, $p: ID) { testTool(id: $id, arguments: {}, projectId: $p) { " + R + " } }",
        lambda w: {"id": w.builtin_tool, "p": w.kb},
    ),
    "Mutation.createProject": Call(
        "mutation($n: String!) { createProject(input: {name: $n}) { " + R + " } }",
        lambda w: {"n": f"new {next(w.counter)}"},
    ),
    "Mutation.importKnowledgeBase": Call(
        "mutation($file: Upload!) { importKnowledgeBase(file: $file) { " + R + " } }", kind="archive"
    ),
    "Mutation.updateProject": Call(
        'mutation($id: ID!) { updateProject(id: $id, input: {description: "ours"}) { ' + R + " } }",
        lambda w: {"id": w.kb},
    ),
    "Mutation.deleteProject": Call(
        "mutation($id: ID!) { deleteProject(id: $id) { " + R + " } }", lambda w: {"id": w.fresh_kb()}
    ),
    "Mutation.uploadDocuments": Call(
        "mutation($p: ID!, $files: [Upload!]!) { uploadDocuments(projectId: $p, files: $files) { " + R + " } }",
        lambda w: {"p": w.kb},
        kind="upload",
    ),
    "Mutation.cancelIngestionJob": Call(
        "mutation($id: ID!) { cancelIngestionJob(id: $id) { " + R + " } }", lambda w: {"id": w.job}
    ),
    "Mutation.retryIngestionJob": Call(
        "mutation($id: ID!) { retryIngestionJob(id: $id) { " + R + " } }", lambda w: {"id": w.job}
    ),
    "Mutation.addDocument": Call(
        'mutation($p: ID!, $n: String!) { addDocument(projectId: $p, name: $n, text: "Text.") { ' + R + " } }",
        lambda w: {"p": w.kb, "n": f"added-{next(w.counter)}.md"},
    ),
    "Mutation.addDocumentFromUrl": Call(
        # A loopback URL: refused (UrlRefusedError) once the caller is let through, so nothing is fetched.
        'mutation($p: ID!) { addDocumentFromUrl(projectId: $p, url: "http://127.0.0.1:9/x.md") { ' + R + " } }",
        lambda w: {"p": w.kb},
    ),
    "Mutation.setDocumentTags": Call(
        'mutation($id: ID!) { setDocumentTags(id: $id, tags: ["ops"]) { ' + R + " } }",
        lambda w: {"id": w.fresh_document()},
    ),
    "Mutation.deleteDocument": Call(
        "mutation($id: ID!) { deleteDocument(id: $id) { " + R + " } }", lambda w: {"id": w.fresh_document()}
    ),
    "Mutation.createChatSession": Call(
        'mutation($p: ID!) { createChatSession(projectId: $p, input: {provider: "fake", model: "scripted"}) { '
        + R
        + " } }",
        lambda w: {"p": w.kb},
    ),
    "Mutation.updateChatSession": Call(
        'mutation($id: ID!) { updateChatSession(id: $id, input: {title: "Renamed"}) { ' + R + " } }",
        lambda w: {"id": w.fresh_chat()},
    ),
    "Mutation.shareChatSession": Call(
        "mutation($id: ID!) { shareChatSession(id: $id, shared: true) { " + R + " } }",
        lambda w: {"id": w.fresh_chat()},
    ),
    "Mutation.deleteChatSession": Call(
        "mutation($id: ID!) { deleteChatSession(id: $id) { " + R + " } }", lambda w: {"id": w.fresh_chat()}
    ),
    "Mutation.sendMessage": Call(
        'mutation($s: ID!) { sendMessage(sessionId: $s, content: "Again?") { ' + R + " } }",
        lambda w: {"s": w.chat},
    ),
    "Mutation.regenerateMessage": Call(
        "mutation($m: ID!) { regenerateMessage(messageId: $m) { " + R + " } }", lambda w: {"m": w.answer}
    ),
    # The people surface.
    "Query.serverAccess": Call("{ serverAccess { peopleExist } }"),
    "Query.me": Call("{ me { id } }"),
    "Query.people": Call("{ people { id } }"),
    "Query.members": Call("query($k: ID!) { members(knowledgeBaseId: $k) { " + R + " } }", lambda w: {"k": w.kb}),
    "Query.apiKeys": Call("{ apiKeys { id } }"),
    "Mutation.signIn": Call(
        'mutation($e: String!) { signIn(email: $e, password: "not the password") { ' + R + " } }",
        lambda w: {"e": f"nobody{next(w.counter)}@example.org"},
    ),
    "Mutation.signOut": Call("mutation { signOut }"),
    "Mutation.setUpFirstAdministrator": Call(
        'mutation { setUpFirstAdministrator(email: "first@example.org", name: "F", password: "long enough 1") { '
        + R
        + " } }"
    ),
    "Mutation.acceptInvitation": Call(
        'mutation { acceptInvitation(token: "not-a-token", password: "long enough 1") { ' + R + " } }"
    ),
    "Mutation.changePassword": Call(
        'mutation { changePassword(currentPassword: "wrong one", newPassword: "long enough 1") { ' + R + " } }"
    ),
    "Mutation.invitePerson": Call(
        'mutation($e: String!) { invitePerson(email: $e, name: "N") { ' + R + " } }",
        lambda w: {"e": f"invited{next(w.counter)}@example.org"},
    ),
    "Mutation.setPersonDisabled": Call(
        "mutation($id: ID!) { setPersonDisabled(id: $id, disabled: true) { " + R + " } }",
        lambda w: {"id": w.fresh_person()},
    ),
    "Mutation.resetPassword": Call(
        "mutation($id: ID!) { resetPassword(id: $id) { " + R + " } }", lambda w: {"id": w.fresh_person()}
    ),
    "Mutation.addMember": Call(
        "mutation($k: ID!, $e: String!) { addMember(knowledgeBaseId: $k, email: $e, role: VIEWER) { " + R + " } }",
        lambda w: {"k": w.kb, "e": w.fresh_person_email()},
    ),
    "Mutation.setMemberRole": Call(
        "mutation($k: ID!, $p: ID!) { setMemberRole(knowledgeBaseId: $k, personId: $p, role: EDITOR) { " + R + " } }",
        lambda w: {"k": w.kb, "p": w.fresh_person(MemberRole.VIEWER)},
    ),
    "Mutation.removeMember": Call(
        "mutation($k: ID!, $p: ID!) { removeMember(knowledgeBaseId: $k, personId: $p) { " + R + " } }",
        lambda w: {"k": w.kb, "p": w.fresh_person(MemberRole.VIEWER)},
    ),
    "Mutation.createApiKey": Call('mutation { createApiKey(input: {name: "another", readOnly: true}) { ' + R + " } }"),
    "Mutation.revokeApiKey": Call(
        "mutation($id: ID!) { revokeApiKey(id: $id) { " + R + " } }", lambda w: {"id": w.fresh_owner_key()}
    ),
    "Subscription.chat": Call(
        'subscription($s: ID!) { chat(sessionId: $s, content: "Once more?") { __typename '
        "... on ChatError { code message } } }",
        lambda w: {"s": w.chat},
        kind="subscription",
    ),
    "Subscription.regenerate": Call(
        "subscription($m: ID!) { regenerate(messageId: $m) { __typename ... on ChatError { code message } } }",
        lambda w: {"m": w.answer},
        kind="subscription",
    ),
    "Subscription.ingestionProgress": Call(
        "subscription($j: ID) { ingestionProgress(jobId: $j) { " + R + " } }",
        lambda w: {"j": w.job},
        kind="subscription",
    ),
}


def _from_body(body: dict[str, Any], field: str, target: str | None) -> str:
    if body.get("errors"):
        if all(
            "sign in first" in error["message"] or (error.get("extensions") or {}).get("code") == "forbidden"
            for error in body["errors"]
        ):
            return "denied"
        raise AssertionError(f"{field}: an error the matrix does not expect: {body}")
    value = body["data"][field]
    if isinstance(value, dict) and value.get("__typename") in DENIED_TYPES:
        return "denied"
    if isinstance(value, dict) and value.get("__typename") == "ChatError":
        return "denied" if value["code"] in ("FORBIDDEN", "NOT_FOUND") else f"failed: {value}"
    if target is not None:
        return "allowed" if target in ids(value) else "hidden"
    return "allowed"


def _http(api: Api, call: Call, world: World, field: str, headers: dict[str, str]) -> str:
    variables = call.variables(world)
    if call.kind in ("upload", "archive"):
        # A file, or (archive) a broken knowledge base archive: a caller let through learns it is broken.
        one = call.kind == "archive"
        mapping = {"0": ["variables.file" if one else "variables.files.0"]}
        operations = {"query": call.document, "variables": variables | ({"file": None} if one else {"files": [None]})}
        sent = (
            ("kb.ragchat.tar.gz", b"not an archive", "application/gzip")
            if one
            else ("up.md", b"# Up\n\nUploaded.", "application/octet-stream")
        )
        response = api.http.post(
            "/graphql",
            data={"operations": json.dumps(operations), "map": json.dumps(mapping)},
            files={"0": sent},
            headers=headers | {"Apollo-Require-Preflight": "true"},
        )
    else:
        response = api.http.post("/graphql", json={"query": call.document, "variables": variables}, headers=headers)
    if response.status_code == httpx.codes.UNAUTHORIZED:
        return "denied"
    return _from_body(response.json(), field, call.target(world) if call.target else None)


def _subscription(api: Api, call: Call, world: World, field: str, headers: dict[str, str]) -> str:
    url = api.base.replace("http://", "ws://") + "/graphql"
    params = {"authorization": headers["Authorization"]} if headers else {}
    with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
        ws.send(json.dumps({"type": "connection_init", "payload": params}))
        try:
            ack = json.loads(ws.recv(timeout=10))
        except Exception:
            return "denied"
        if ack["type"] != "connection_ack":
            return "denied"
        payload = {"query": call.document, "variables": call.variables(world)}
        ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        for _ in range(200):  # a chat streams a few events; the first that decides is enough
            message = json.loads(ws.recv(timeout=30))
            if message["type"] == "error":
                return _from_body({"errors": message["payload"]}, field, None)
            if message["type"] == "complete":
                return "allowed"
            if message["type"] == "next":
                outcome = _from_body(message["payload"], field, None)
                if outcome != "allowed" or message["payload"]["data"][field]["__typename"] not in (
                    "ChatQueued",
                    "ChatSearchProgress",
                ):
                    ws.send(json.dumps({"id": "1", "type": "complete"}))
                    return outcome
    raise AssertionError(f"{field}: no deciding event")


@pytest.fixture
def world(fake_container: Container) -> Iterator[tuple[Api, World]]:
    built = matrix_world.build(fake_container)
    with live_api(fake_container) as api:
        asked = api.http.post(
            "/graphql",
            json={
                "query": 'mutation($s: ID!) { sendMessage(sessionId: $s, content: "What is the answer?") '
                "{ __typename ... on ChatMessage { id } } }",
                "variables": {"s": built.chat},
            },
            headers=built.headers["owner"],
        ).json()
        matrix_world.answered(built, int(asked["data"]["sendMessage"]["id"]))
        yield api, built


def test_every_field_of_the_schema_has_a_row_in_the_security_table() -> None:
    rows = table()
    missing = [name for name in schema_fields() if name not in rows]
    assert not missing, (
        "docs/SECURITY.md's permission matrix has no row for: "
        + ", ".join(missing)
        + " (add one per field: allowed/denied/hidden for each caller)"
    )
    stale = [name for name in rows if name not in schema_fields()]
    assert not stale, f"docs/SECURITY.md has rows for fields the schema does not have: {stale}"


def test_each_field_as_each_caller_is_allowed_or_denied_as_the_table_says(world: tuple[Api, World]) -> None:
    api, built = world
    rows = table()
    untested = [name for name in schema_fields() if name in rows and name not in CALLS]
    assert not untested, f"the matrix test has no call for: {untested}"
    wrong: list[str] = []
    for name, call in CALLS.items():
        if name not in rows:
            continue  # the test above names it
        field = name.split(".", 1)[1]
        for column in COLUMNS:
            run = _subscription if call.kind == "subscription" else _http
            got = run(api, call, built, field, built.headers[column])
            if got != rows[name][column]:
                wrong.append(f"{name} as {column}: table says {rows[name][column]}, got {got}")
    assert not wrong, "\n".join(wrong)


# The archive download (app/archive_api/) is not a GraphQL field: its row, in docs/SECURITY.md's words.
EXPORT_EXPECTED = {
    "anonymous": 401,
    "member of another KB": 404,
    "viewer": 403,
    "editor": 403,
    "owner": 200,
    "administrator": 200,
    "read-only key": 403,  # a read-only key reads as a viewer
    "key scoped to another KB": 404,
    "expired key": 401,
    "disabled person's key": 401,
}


def test_the_archive_download_is_for_the_knowledge_base_s_owners(world: tuple[Api, World]) -> None:
    api, built = world
    assert set(EXPORT_EXPECTED) == set(COLUMNS)
    got = {}
    for column in COLUMNS:
        response = api.http.get(f"/api/knowledge-bases/{built.kb}/export", headers=built.headers[column])
        got[column] = response.status_code
        if response.status_code == 200:
            assert response.headers["content-type"] == "application/gzip"
            assert response.content[:2] == b"\x1f\x8b"  # gzip
    assert got == EXPORT_EXPECTED
    assert "GET /api/knowledge-bases/{id}/export" in SECURITY.read_text()
