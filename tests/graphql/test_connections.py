"""Relay connections through the real HTTP endpoint: an outside client (gql) pages a long chat with
cursors, each list's order and bounds, and every mistake in a page's arguments is the field's
ValidationError (issue 14 items 1 and 3)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from gql import Client, GraphQLRequest, gql
from gql.transport.requests import RequestsHTTPTransport

from app.graphql.router import EXAMPLE_OPERATION
from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION, SEND, nodes

PAGE_INFO = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"
MESSAGES = gql(f"""
query Messages($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {{
  chatSession(id: $id) {{
    __typename
    ... on ChatSession {{
      messages(first: $first, after: $after, last: $last, before: $before) {{
        __typename
        ... on ChatMessageConnection {{ totalCount {PAGE_INFO} edges {{ cursor node {{ id role content }} }} }}
        ... on ValidationError {{ message fields {{ field message }} }}
      }}
    }}
  }}
}}""")


def _chat(api: Api, turns: int) -> str:
    """A chat of ``turns`` questions and answers (2 x turns messages), through sendMessage."""
    pid = api.run(CREATE_PROJECT, name="long")["createProject"]["id"]
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "enableRag": False})[
        "createChatSession"
    ]["id"]
    for n in range(turns):
        assert api.run(SEND, s=sid, c=f"question {n}")["sendMessage"]["status"] == "COMPLETE"
    return str(sid)


def _page(client: Client, sid: str, **args: Any) -> dict[str, Any]:
    result = client.execute(GraphQLRequest(MESSAGES, variable_values={"id": sid, **args}))
    return result["chatSession"]["messages"]


@pytest.fixture
def gql_client(api: Api) -> Client:
    return Client(
        transport=RequestsHTTPTransport(url=f"{api.base}/graphql", timeout=30), fetch_schema_from_transport=False
    )


def test_an_outside_client_pages_through_250_messages_with_cursors(
    api: Api, gql_client: Client, model: FakeChatModel
) -> None:
    sid = _chat(api, 125)
    seen: list[dict[str, Any]] = []
    cursors: list[str] = []
    pages, added, after = 0, 0, None
    while True:
        page = _page(gql_client, sid, first=40, after=after)
        assert page["__typename"] == "ChatMessageConnection" and page["totalCount"] == 250 + added
        assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
        seen += [edge["node"] for edge in page["edges"]]
        cursors += [edge["cursor"] for edge in page["edges"]]
        pages += 1
        if pages == 3:
            first_cursors = [e["cursor"] for e in _page(gql_client, sid, first=40)["edges"]]
            # A message arrives while the client is between pages 3 and 4.
            api.run(SEND, s=sid, c="a late question")
            added = 2
            assert [e["cursor"] for e in _page(gql_client, sid, first=40)["edges"]] == first_cursors
        if not page["pageInfo"]["hasNextPage"]:
            break
        assert page["pageInfo"]["endCursor"] == page["edges"][-1]["cursor"]
        after = page["pageInfo"]["endCursor"]

    ids = [int(m["id"]) for m in seen]
    assert pages == 7 and len(seen) == 252  # 6 full pages of 40 and 12; the late turn at the end
    assert ids == sorted(ids) and len(set(ids)) == len(ids)  # oldest first, no duplicates
    assert [m["content"] for m in seen[0:250:2]] == [f"question {n}" for n in range(125)]  # no gaps
    assert [m["role"] for m in seen[-2:]] == ["USER", "ASSISTANT"] and seen[-2]["content"] == "a late question"
    assert len(set(cursors)) == len(cursors)

    # Backwards, as a chat view loads older messages: the newest 100, then before startCursor.
    back: list[dict[str, Any]] = []
    before = None
    while True:
        page = _page(gql_client, sid, last=100, before=before)
        back = [edge["node"] for edge in page["edges"]] + back
        if not page["pageInfo"]["hasPreviousPage"]:
            break
        assert page["pageInfo"]["hasNextPage"] is (before is not None)
        before = page["pageInfo"]["startCursor"]
    assert back == seen


def test_without_arguments_a_chat_gives_its_newest_50_messages(api: Api, gql_client: Client) -> None:
    sid = _chat(api, 30)
    page = _page(gql_client, sid)
    assert [e["node"]["content"] for e in page["edges"][::2]] == [f"question {n}" for n in range(5, 30)]
    assert page["pageInfo"]["hasPreviousPage"] is True and page["pageInfo"]["hasNextPage"] is False
    empty = _page(gql_client, sid, first=0)  # valid in Relay: an empty page that says more exists
    assert empty["edges"] == [] and empty["pageInfo"]["hasNextPage"] is True and empty["totalCount"] == 60


def _cursor(*values: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(values)).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        ({"first": -1}, "first", "must be between 0 and 100 (got -1)"),
        ({"first": 101}, "first", "must be between 0 and 100 (got 101)"),
        ({"last": -5}, "last", "must be between 0 and 100 (got -5)"),
        ({"first": 1, "last": 1}, "last", "give first or last, not both"),
        ({"after": "not a cursor"}, "after", "'not a cursor' is not a cursor of this list"),
        ({"after": ""}, "after", "'' is not a cursor of this list"),
        ({"before": _cursor("ChatSession", "2026-01-01T00:00:00+00:00", 1)}, "before", "is not a cursor of this list"),
        ({"after": _cursor("ChatMessage", "1")}, "after", "is not a cursor of this list"),
        ({"after": _cursor("ChatMessage", -1)}, "after", "is not a cursor of this list"),
        ({"after": _cursor("ChatMessage", 1, 2)}, "after", "is not a cursor of this list"),
    ],
)
def test_page_mistakes_are_the_fields_validation_error(
    api: Api, gql_client: Client, args: dict[str, Any], field: str, message: str
) -> None:
    sid = _chat(api, 1)
    page = _page(gql_client, sid, **args)
    assert page["__typename"] == "ValidationError", page
    (problem,) = page["fields"]
    assert problem["field"] == field and message in problem["message"]


CONNECTIONS = {
    "projects": "{ r: projects(ARGS) { __typename ... on ValidationError { fields { field } } } }",
    "chatSessions": "{ r: chatSessions(ARGS) { __typename ... on ValidationError { fields { field } } } }",
    "documents": '{ project(id: "PID") { ... on Project { r: documents(ARGS) { __typename '
    "... on ValidationError { fields { field } } } } } }",
    "chunks": '{ document(id: "DID") { ... on Document { r: chunks(ARGS) { __typename '
    "... on ValidationError { fields { field } } } } } }",
    "hits": '{ search(projectId: "PID", query: "penguins") { ... on SearchResults { r: hits(ARGS) { __typename '
    "... on ValidationError { fields { field } } } } } }",
}


def _kb(api: Api) -> tuple[str, str]:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    report = api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in winter.")
    return pid, report["addDocument"]["files"][0]["document"]["id"]


def _find(data: dict[str, Any]) -> dict[str, Any]:
    while "r" not in data:
        (data,) = data.values()
    return data["r"]


def test_every_connection_answers_mistakes_in_its_union(api: Api) -> None:
    pid, did = _kb(api)
    for name, template in CONNECTIONS.items():
        query = template.replace("PID", pid).replace("DID", did)
        for args, field in [("first: -1", "first"), ("last: 1000", "last"), ('after: "x"', "after")]:
            body = api.raw(query.replace("ARGS", args)).json()
            assert "errors" not in body, (name, body)
            assert _find(body["data"]) == {"__typename": "ValidationError", "fields": [{"field": field}]}, name
        ok = api.run(query.replace("ARGS", "first: 0"))
        assert _find(ok)["__typename"].endswith("Connection"), name


def test_a_bad_id_is_the_unions_validation_error_not_a_top_level_error(api: Api) -> None:
    body = api.raw('{ project(id: "") { __typename ... on ValidationError { fields { field message } } } }').json()
    assert body == {
        "data": {
            "project": {"__typename": "ValidationError", "fields": [{"field": "id", "message": "'' is not an id"}]}
        }
    }
    sessions = api.raw('{ chatSessions(projectId: "x") { __typename ... on ValidationError { fields { field } } } }')
    assert sessions.json()["data"]["chatSessions"] == {
        "__typename": "ValidationError",
        "fields": [{"field": "projectId"}],
    }


def test_lists_are_in_their_documented_order_and_page_by_cursor(api: Api) -> None:
    for name in ["delta", "Alpha", "charlie", "bravo"]:
        pid = api.run(CREATE_PROJECT, name=name)["createProject"]["id"]
        api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "title": name})
    query = (
        "query($after: String) { projects(first: 3, after: $after) { ... on ProjectConnection { totalCount "
        + PAGE_INFO
        + " edges { node { name } } } } }"
    )
    first = api.run(query)["projects"]
    rest = api.run(query, after=first["pageInfo"]["endCursor"])["projects"]
    assert [p["name"] for p in nodes(first) + nodes(rest)] == ["Alpha", "bravo", "charlie", "delta"]  # SQLite's order
    assert first["totalCount"] == 4 and first["pageInfo"]["hasNextPage"] and not rest["pageInfo"]["hasNextPage"]

    sessions = (
        "query($after: String) { chatSessions(first: 2, after: $after) { ... on ChatSessionConnection { totalCount "
        + PAGE_INFO
        + " edges { node { title } } } } }"
    )
    top = api.run(sessions)["chatSessions"]
    more = api.run(sessions, after=top["pageInfo"]["endCursor"])["chatSessions"]
    assert [s["title"] for s in nodes(top) + nodes(more)] == ["bravo", "charlie", "Alpha", "delta"]  # newest first
    assert (more["pageInfo"]["hasNextPage"], more["pageInfo"]["hasPreviousPage"]) == (False, True)


def test_documents_chunks_and_search_hits_page_the_same_way(api: Api) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    for n in range(5):
        api.run(ADD_DOC, p=pid, name=f"doc{n}.md", text=f"# Doc {n}\n\nPenguins number {n} huddle in winter.")
    docs = 'query($after: String) { project(id: "PID") { ... on Project { documents(first: 2, after: $after) { ... on DocumentConnection { totalCount PAGE edges { node { name } } } } } } }'
    docs = docs.replace("PID", pid).replace("PAGE", PAGE_INFO)
    names, after = [], None
    while True:
        page = api.run(docs, after=after)["project"]["documents"]
        names += [d["name"] for d in nodes(page)]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert names == [f"doc{n}.md" for n in range(5)] and page["totalCount"] == 5

    hits = 'query($after: String) { search(projectId: "PID", query: "penguins huddle", topK: 5, threshold: 0) { ... on SearchResults { hits(first: 2, after: $after) { ... on SearchHitConnection { totalCount PAGE edges { node { chunkId fusedRank } } } } } } }'
    hits = hits.replace("PID", pid).replace("PAGE", PAGE_INFO)
    ranks, after = [], None
    while True:
        page = api.run(hits, after=after)["search"]["hits"]
        ranks += [h["fusedRank"] for h in nodes(page)]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert ranks == list(range(1, page["totalCount"] + 1)) and page["totalCount"] >= 5


def test_the_playgrounds_example_operation_runs_on_the_connections(api: Api) -> None:
    api.run(CREATE_PROJECT, name="kb")
    data = api.run(EXAMPLE_OPERATION)
    assert [p["name"] for p in nodes(data["projects"])] == ["kb"] and data["projects"]["totalCount"] == 1
    assert nodes(data["chatSessions"]) == []


def test_the_cursors_own_item_counts_as_lying_beyond_the_page(api: Api, gql_client: Client) -> None:
    sid = _chat(api, 2)  # 4 messages
    everything = _page(gql_client, sid, first=4)["edges"]
    last, first = everything[-1]["cursor"], everything[0]["cursor"]
    before_last = _page(gql_client, sid, last=1, before=last)
    assert [e["cursor"] for e in before_last["edges"]] == [everything[2]["cursor"]]
    assert before_last["pageInfo"]["hasNextPage"] is True  # the message the cursor names is still there
    after_first = _page(gql_client, sid, first=1, after=first)
    assert after_first["pageInfo"]["hasPreviousPage"] is True


def test_ids_and_cursors_past_the_databases_integer_range_are_refused_not_failed(api: Api) -> None:
    # INTEGER is 32 bits on PostgreSQL: a larger id used to reach the database and fail there
    # ("integer out of range", a masked internal error) instead of naming no row.
    query = '{ project(id: "ID") { __typename ... on ValidationError { fields { field message } } } }'
    largest = api.raw(query.replace("ID", str(2**31 - 1))).json()
    assert largest == {"data": {"project": {"__typename": "NotFoundError"}}}
    past = api.raw(query.replace("ID", str(2**31))).json()
    assert past["data"]["project"]["fields"] == [{"field": "id", "message": "'2147483648' is not an id"}]
    pid, _ = _kb(api)
    for value, refused in [(2**31 - 1, False), (2**31, True)]:
        raw = json.dumps(["ChatMessage", value]).encode()
        after = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]["id"]
        body = api.raw(
            '{ chatSession(id: "SID") { ... on ChatSession { messages(first: 2, after: "AFTER") '
            "{ __typename ... on ValidationError { fields { field } } } } } }".replace("SID", sid).replace(
                "AFTER", after
            )
        ).json()
        assert "errors" not in body, body
        messages = body["data"]["chatSession"]["messages"]
        assert messages["__typename"] == ("ValidationError" if refused else "ChatMessageConnection"), value
