"""A knowledge base downloaded by its owner (GET /api/knowledge-bases/{id}/export) and brought back
with importKnowledgeBase: the same documents, chats, answers and citations under a new name, through
a live server; a broken archive is refused with nothing written."""

from __future__ import annotations

from typing import Any

from app.container import Container
from tests.fakes import FakeChatModel
from tests.graphql.client import Api, live_api

CREATE = 'mutation { createProject(input: {name: "Handbook", description: "How we work"}) { ... on Project { id } } }'
ADD = """mutation($p: ID!) { addDocument(projectId: $p, name: "leave.md",
  text: "# Leave\\n\\nRequests for leave go to your manager three business days ahead.") { ... on UploadReport { added } } }"""
SESSION = """mutation($p: ID!) { createChatSession(projectId: $p,
  input: {provider: "fake", model: "scripted", threshold: 0.1, answerMode: GENERATIVE}) { ... on ChatSession { id } } }"""
ASK = """mutation($s: ID!) { sendMessage(sessionId: $s, content: "How early do I ask for leave?") {
  ... on ChatMessage { id status } } }"""
IMPORT = """mutation($file: Upload!, $name: String) { importKnowledgeBase(file: $file, name: $name) {
  __typename ... on Project { id name description documents { ... on DocumentConnection { edges { node { name } } } } }
  ... on Error { message } } }"""
CHATS = """query($p: ID!) { chatSessions(projectId: $p, first: 5) { ... on ChatSessionConnection { edges { node { title
  messages(first: 10) { ... on ChatMessageConnection { edges { node { role content citations { marker documentName snippet } } } } }
  } } } } }"""


def _chats(api: Api, project_id: str) -> list[dict[str, Any]]:
    chats = api.run(CHATS, p=project_id)["chatSessions"]["edges"]
    return [
        {"title": c["node"]["title"], "messages": [m["node"] for m in c["node"]["messages"]["edges"]]} for c in chats
    ]


def test_an_owner_downloads_a_knowledge_base_and_imports_it_again(
    fake_container: Container, model: FakeChatModel
) -> None:
    with live_api(fake_container) as api:
        pid = api.run(CREATE)["createProject"]["id"]
        assert api.run(ADD, p=pid)["addDocument"]["added"] == 1
        sid = api.run(SESSION, p=pid)["createChatSession"]["id"]
        model.enqueue("Three business days ahead [1].")
        assert api.run(ASK, s=sid)["sendMessage"]["status"] == "COMPLETE"

        download = api.http.get(f"/api/knowledge-bases/{pid}/export")
        assert download.status_code == 200, download.text
        assert 'filename="Handbook.ragchat.tar.gz"' in download.headers["content-disposition"]

        made = api.upload(IMPORT, {"variables.file": ("Handbook.ragchat.tar.gz", download.content)}, {"name": "Copy"})
        assert "errors" not in made, made
        copy = made["data"]["importKnowledgeBase"]
        assert copy["__typename"] == "Project", copy
        assert copy["id"] != pid and copy["name"] == "Copy" and copy["description"] == "How we work"
        assert [d["node"]["name"] for d in copy["documents"]["edges"]] == ["leave.md"]
        before, after = _chats(api, pid), _chats(api, copy["id"])
        assert after == before
        assert before[0]["messages"][1]["citations"][0]["documentName"] == "leave.md"

        # Again under the same name: refused, and nothing is written.
        again = api.upload(IMPORT, {"variables.file": ("h.tar.gz", download.content)}, {"name": "Copy"})
        assert again["data"]["importKnowledgeBase"]["__typename"] == "ConflictError"
        broken = api.upload(IMPORT, {"variables.file": ("h.tar.gz", download.content[:500])}, {"name": "Broken"})
        assert broken["data"]["importKnowledgeBase"]["__typename"] == "ValidationError"
        names = [
            p["node"]["name"]
            for p in api.run("{ projects { ... on ProjectConnection { edges { node { name } } } } }")["projects"][
                "edges"
            ]
        ]
        assert sorted(names) == ["Copy", "Handbook"]

        assert api.http.get("/api/knowledge-bases/999999/export").status_code == 404
        assert api.http.get("/api/knowledge-bases/x/export").status_code == 404
