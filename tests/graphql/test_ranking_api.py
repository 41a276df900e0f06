"""Ranking settings and trace through the real HTTP endpoint: rerank and expansion, their defaults,
validation, and what a turn with the judge and expansion reports."""

from __future__ import annotations

from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT

SESSION = """mutation($p: ID!, $input: CreateChatSessionInput) { createChatSession(projectId: $p, input: $input) {
  __typename ... on ChatSession { id rerank expansion } } }"""
UPDATE = """mutation($id: ID!, $input: UpdateChatSessionInput!) { updateChatSession(id: $id, input: $input) {
  __typename ... on ChatSession { rerank expansion answerMode } } }"""
SEND = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) { __typename
  ... on ChatMessage { content trace { degraded { reason }
    ranking { expansions expansionFailed reranker reranked rerankFailed }
    candidates { documentName rerankScore fusedRank } timings { stage } } } } }"""


def _session(api: Api, **input_: object) -> str:
    pid = str(api.run(CREATE_PROJECT, name="kb")["createProject"]["id"])
    for name, text in {"a.md": "penguins huddle in winter", "b.md": "owls hunt mice", "c.md": "tea leaves"}.items():
        api.run(ADD_DOC, p=pid, name=name, text=text)
    base = {"provider": "fake", "model": "scripted", "threshold": 0.0, "answerMode": "GENERATIVE"}
    return str(api.run(SESSION, p=pid, input={**base, **input_})["createChatSession"]["id"])


def test_defaults_switching_and_refusal(api: Api) -> None:
    defaults = api.run("{ sessionDefaults { rerank expansion } }")["sessionDefaults"]
    assert defaults == {"rerank": "AUTO", "expansion": "OFF"}
    sid = _session(api)
    switched = api.run(UPDATE, id=sid, input={"rerank": "JUDGE", "expansion": "ON"})["updateChatSession"]
    assert switched == {"__typename": "ChatSession", "rerank": "JUDGE", "expansion": "ON", "answerMode": "GENERATIVE"}
    bad = api.raw(UPDATE, {"id": sid, "input": {"rerank": "ALWAYS"}}).json()
    assert "ALWAYS" in bad["errors"][0]["message"]


def test_a_turn_shows_expansions_and_rerank_scores(api: Api, model: FakeChatModel) -> None:
    sid = _session(api, rerank="JUDGE", expansion="ON", topK=2)
    model.enqueue("penguin colonies in the cold", "[1] 1\n[2] 0\n[3] 3", "Penguins huddle [1].")
    sent = api.run(SEND, s=sid, c="penguins winter")["sendMessage"]
    trace = sent["trace"]
    assert trace["ranking"] == {
        "expansions": ["penguin colonies in the cold"],
        "expansionFailed": None,
        "reranker": "judge:fake/scripted",
        "reranked": 3,
        "rerankFailed": None,
    }
    first = trace["candidates"][0]
    assert first["rerankScore"] == 3.0 and first["fusedRank"] == 3  # the judge moved the third to the top
    assert {"EXPANSION", "RERANK"} <= {t["stage"] for t in trace["timings"]}


def test_a_judge_that_rates_nothing_keeps_the_fused_order(api: Api, model: FakeChatModel) -> None:
    sid = _session(api, rerank="JUDGE")
    model.enqueue("All of them look fine.", "Penguins huddle [1].")
    trace = api.run(SEND, s=sid, c="penguins winter")["sendMessage"]["trace"]
    assert trace["ranking"]["rerankFailed"].startswith("judge:fake/scripted rated no passage")
    assert [c["fusedRank"] for c in trace["candidates"]] == sorted(c["fusedRank"] for c in trace["candidates"])
    assert {"reason": "RERANK_FAILED"} in trace["degraded"]


PREVIEW = """query($s: ID!, $m: String!) { retrievalPreview(sessionId: $s, message: $m) { __typename
  ... on SearchResults { fusion ranking { expansions expansionFailed reranker reranked rerankFailed }
    hits { ... on SearchHitConnection { edges { node { documentName rerankScore fusedRank } } } } } } }"""


def test_the_preview_runs_the_same_ranking_stages_as_the_turn(api: Api, model: FakeChatModel) -> None:
    """retrievalPreview is what the next turn would retrieve, so it expands and reranks too (and
    says so): the same phrasing and ratings give the same order the turn above got."""
    sid = _session(api, rerank="JUDGE", expansion="ON", topK=2)
    model.enqueue("penguin colonies in the cold", "[1] 1\n[2] 0\n[3] 3")
    found = api.run(PREVIEW, s=sid, m="penguins winter")["retrievalPreview"]
    assert found["ranking"] == {
        "expansions": ["penguin colonies in the cold"],
        "expansionFailed": None,
        "reranker": "judge:fake/scripted",
        "reranked": 3,
        "rerankFailed": None,
    }
    assert found["fusion"] == "RRF"  # several phrasings are fused by rank
    first = found["hits"]["edges"][0]["node"]
    assert first["rerankScore"] == 3.0 and first["fusedRank"] == 3
    api.run(UPDATE, id=sid, input={"rerank": "AUTO", "expansion": "OFF"})  # no stage runs (no rerank endpoint)
    quiet = api.run(PREVIEW, s=sid, m="penguins winter")["retrievalPreview"]  # no ranking; fused by score
    assert quiet["ranking"] is None and quiet["fusion"] == "CONVEX"
