"""Conversational retrieval over the HTTP API (issue 15): the sessions' quality and rewrite
settings, and a retrieval preview that searches after the session's recent turns, with its passes."""

from __future__ import annotations

from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, SEND

SESSION_FIELDS = "id quality rewrite"
CREATE = f"""mutation($p: ID!, $input: CreateChatSessionInput) {{ createChatSession(projectId: $p, input: $input) {{
  __typename ... on ChatSession {{ {SESSION_FIELDS} }} ... on Error {{ message }} }} }}"""
UPDATE = f"""mutation($id: ID!, $input: UpdateChatSessionInput!) {{ updateChatSession(id: $id, input: $input) {{
  __typename ... on ChatSession {{ {SESSION_FIELDS} }} ... on Error {{ message }} }} }}"""
DEFAULTS = "{ sessionDefaults { quality rewrite } }"
PREVIEW = """query($s: ID!, $m: String!) { retrievalPreview(sessionId: $s, message: $m) {
  ... on SearchResults { query kept { documentName }
    search { quality rewriteMode searched earlier rewrite { outcome query reason }
             passes { number budget queries decision judge adequate reason cacheHit threshold candidates }
             cache { embeddingHits embeddingMisses resultHits resultMisses } } }
  ... on Error { message } } }"""
TRACE = """query($id: ID!) { message(id: $id) { ... on ChatMessage { trace { search {
  searched earlier rewrite { outcome } passes { number decision } } } } } }"""


def _project(api: Api) -> str:
    pid = api.run(CREATE_PROJECT, name="offices")["createProject"]["id"]
    for name, text in {
        "leeds.md": "# Leeds office\n\nThe Leeds office has 38 car parking spaces and 142 desks.",
        "lisbon.md": "# Lisbon office\n\nThe Lisbon office has 3 car parking spaces and 28 desks.",
    }.items():
        api.run(ADD_DOC, p=pid, name=name, text=text)
    return pid


def test_sessions_carry_quality_and_rewrite(api: Api) -> None:
    pid = _project(api)
    assert api.run(DEFAULTS)["sessionDefaults"] == {"quality": "BALANCED", "rewrite": "AUTO"}
    made = api.run(CREATE, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]
    assert (made["quality"], made["rewrite"]) == ("BALANCED", "AUTO")
    changed = api.run(UPDATE, id=made["id"], input={"quality": "THOROUGH", "rewrite": "OFF"})["updateChatSession"]
    assert (changed["quality"], changed["rewrite"]) == ("THOROUGH", "OFF")
    kept = api.run(UPDATE, id=made["id"], input={"topK": 3})["updateChatSession"]
    assert (kept["quality"], kept["rewrite"]) == ("THOROUGH", "OFF")
    bad = api.raw(UPDATE, {"id": made["id"], "input": {"quality": "PERFECT"}}).json()
    assert "PERFECT" in bad["errors"][0]["message"]


def test_the_preview_searches_after_the_sessions_recent_turns(api: Api, model: FakeChatModel) -> None:
    pid = _project(api)
    sid = api.run(
        CREATE, p=pid, input={"provider": "fake", "model": "scripted", "topK": 1, "threshold": 0.0, "quality": "QUICK"}
    )["createChatSession"]["id"]
    before = api.run(PREVIEW, s=sid, m="How many car parking spaces does it have?")["retrievalPreview"]
    assert before["search"]["earlier"] == [] and before["kept"] == [{"documentName": "lisbon.md"}]
    model.enqueue("The Leeds office has 142 desks [1].")
    sent = api.run(SEND, s=sid, c="Tell me about the Leeds office.")["sendMessage"]
    assert sent["status"] == "COMPLETE"
    after = api.run(PREVIEW, s=sid, m="How many car parking spaces does it have?")["retrievalPreview"]
    search = after["search"]
    assert after["kept"] == [{"documentName": "leeds.md"}]
    assert search["earlier"] == ["Tell me about the Leeds office."] and search["quality"] == "QUICK"
    assert search["rewrite"]["outcome"] == "SKIPPED" and search["rewriteMode"] == "AUTO"
    (one,) = search["passes"]
    assert (one["number"], one["budget"], one["decision"], one["judge"]) == (1, 1, one["decision"], "HEURISTIC")
    assert one["decision"] in ("ADEQUATE", "BUDGET") and one["queries"][0] == search["searched"]
    again = api.run(PREVIEW, s=sid, m="How many car parking spaces does it have?")["retrievalPreview"]["search"]
    assert again["cache"]["embeddingMisses"] == 0
    assert one["cacheHit"] is False and search["cache"]["resultMisses"] == 1
    assert again["passes"][0]["cacheHit"] is True
    model.enqueue("The Leeds office has 38 car parking spaces [1].")
    answer = api.run(SEND, s=sid, c="How many car parking spaces does it have?")["sendMessage"]
    traced = api.run(TRACE, id=answer["id"])["message"]["trace"]["search"]
    assert traced["earlier"] == ["Tell me about the Leeds office."] and traced["rewrite"]["outcome"] == "SKIPPED"
