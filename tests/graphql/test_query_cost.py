"""The query cost limit: operations are estimated before they run (page sizes x nesting x aliases,
fragments expanded) and refused above RAGCHAT_API__MAX_QUERY_NODES, over HTTP and the websocket;
connections under a list page at most RAGCHAT_API__MAX_NESTED_PAGE_SIZE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from graphql import DocumentNode, OperationDefinitionNode, parse
from websockets.sync.client import connect

from app.container import Container
from app.graphql.connections import DEFAULT_PAGE_SIZE
from app.graphql.cost import PageSizes, estimate
from app.graphql.schema import build_schema
from app.settings import ApiSettings
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT

FRONTEND = Path(__file__).resolve().parents[2] / "frontend" / "src"
LIMIT_NAME = "RAGCHAT_API__MAX_QUERY_NODES"

# The attack's shape: 30 aliases (the alias limit), each a knowledge base's documents with each
# document's chunks, a page of 100 at each level; within the depth, alias and token limits.
ALIAS = (
    "a{n}: project(id: $p) {{ ... on Project {{ documents(first: 100) {{ ... on DocumentConnection {{ edges {{ node {{ "
    "chunks(first: 100) {{ ... on ChunkConnection {{ edges {{ node {{ id text }} }} }} }} }} }} }} }} }} }}"
)
ATTACK = "query Attack($p: ID!) { " + " ".join(ALIAS.format(n=n) for n in range(30)) + " }"
PAGED = """query Paged($n: Int) { projects(first: $n) { ... on ProjectConnection { edges { node {
  documents(first: $n) { ... on DocumentConnection { edges { node { name } } } } } } } } }"""


def _project(api: Api) -> str:
    pid = str(api.run(CREATE_PROJECT, name="kb")["createProject"]["id"])
    for n in range(3):
        api.run(ADD_DOC, p=pid, name=f"d{n}.md", text=f"# Doc {n}\n\nPenguins huddle in the winter, part {n}.")
    return pid


def _refused(body: dict[str, Any], limit: int) -> None:
    assert body.get("data") is None, body
    (error,) = body["errors"]
    assert f"above the limit of {limit:,}" in error["message"] and LIMIT_NAME in error["message"]
    assert error["extensions"]["code"] == "query_too_costly" and error["extensions"]["estimate"] > limit


def test_nested_connections_times_aliases_are_refused_over_http(api: Api) -> None:
    pid = _project(api)
    assert len(ATTACK) < 6000
    _refused(api.raw(ATTACK, {"p": pid}).json(), ApiSettings().max_query_nodes)
    # One alias with small pages is an ordinary request and runs.
    small = ALIAS.format(n=0).replace("first: 100", "first: 5")
    data = api.run("query One($p: ID!) { " + small + " }", p=pid)
    assert len(data["a0"]["documents"]["edges"]) == 3


def test_the_limit_is_configurable_and_named(fake_container: Container) -> None:
    fake_container.settings.api.max_query_nodes = 500
    with live_api(fake_container) as api:
        # The same document: its variables decide the estimate.
        _refused(api.raw(PAGED, {"n": 100}).json(), 500)
        assert "errors" not in api.raw(PAGED, {"n": 10}).json()


def test_the_attack_is_refused_over_the_websocket(api: Api) -> None:
    pid = _project(api)
    url = api.base.replace("http://", "ws://") + "/graphql"
    with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
        ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"
        ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": ATTACK, "variables": {"p": pid}}}))
        message = json.loads(ws.recv(timeout=30))
        assert (message["id"], message["type"]) == ("1", "error"), str(message)[:300]
        assert LIMIT_NAME in message["payload"][0]["message"]
        # The socket stays usable.
        ws.send(json.dumps({"id": "2", "type": "subscribe", "payload": {"query": "{ health { ok } }"}}))
        assert json.loads(ws.recv(timeout=10))["payload"]["data"]["health"]["ok"] is True


def test_a_connection_under_a_list_pages_at_most_the_nested_cap(api: Api) -> None:
    pid = _project(api)
    nested = api.run(
        "{ projects { ... on ProjectConnection { edges { node { documents(first: 50) { "
        "... on ValidationError { fields { field message } } } } } } } }"
    )
    (edge,) = nested["projects"]["edges"]
    assert edge["node"]["documents"]["fields"] == [{"field": "first", "message": "must be between 0 and 20 (got 50)"}]
    # The same page of one knowledge base, not under a list, is allowed up to the page-size cap.
    alone = api.run(
        "query($p: ID!) { project(id: $p) { ... on Project { documents(first: 50) { "
        "... on DocumentConnection { totalCount } } } } }",
        p=pid,
    )
    assert alone["project"]["documents"]["totalCount"] == 3


def _frontend_operations() -> tuple[DocumentNode, list[str]]:
    definitions = [d for path in sorted(FRONTEND.rglob("*.graphql")) for d in parse(path.read_text()).definitions]
    names = [d.name.value for d in definitions if isinstance(d, OperationDefinitionNode) and d.name]
    return DocumentNode(definitions=tuple(definitions)), names


def test_every_frontend_operation_is_under_the_limit_at_default_settings() -> None:
    document, names = _frontend_operations()
    assert len(names) > 20  # the documents were found
    api = ApiSettings()
    schema = build_schema(api)._schema
    costs = {name: estimate(schema, document, name, {}, PageSizes.of(api, DEFAULT_PAGE_SIZE)) for name in names}
    # Each counted something (fragments from other files were expanded), and all are under the limit.
    # SignOut selects one Boolean: no objects, so nothing to count.
    assert costs["SignOut"] == 0
    assert all(cost > 0 for name, cost in costs.items() if name != "SignOut"), costs
    assert max(costs.values()) <= api.max_query_nodes, costs


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        # A connection: itself, pageInfo, and first x (edge + node).
        ("{ projects(first: 10) { ... on ProjectConnection { pageInfo { hasNextPage } edges { node { id } } } } }", 22),
        # Aliases count each; a fragment counts where it is spread.
        ("query { a: health { ok } b: health { ok } }", 2),
        ("fragment H on Health { ok } query { a: health { ...H } b: health { ...H } }", 2),
        # No first: the default page; under a list, the nested cap.
        (
            "{ projects { ... on ProjectConnection { edges { node { documents { ... on DocumentConnection { "
            "edges { node { id } } } } } } } } }",
            1 + 50 * (2 + 1 + 20 * 2),
        ),
    ],
)
def test_the_estimate_counts_objects(document: str, expected: int) -> None:
    api = ApiSettings()
    assert (
        estimate(build_schema(api)._schema, parse(document), None, {}, PageSizes.of(api, DEFAULT_PAGE_SIZE)) == expected
    )
