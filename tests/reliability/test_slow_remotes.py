"""Hostile slow remotes through the real HTTP endpoint: a loopback server that sends its response
headers one byte at a time (tests/net/trickle.py) stands for an internet host that answers as
slowly as it likes. Documents by URL and HTTP tools must give up at their deadline and close the
connection, leave no thread behind, and never keep the server from answering anything else."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.container import Container
from app.settings import Settings
from tests.graphql.client import Api, live_api
from tests.graphql.ops import CREATE_PROJECT
from tests.net.trickle import Trickle, trickling
from tests.reliability.helpers import fake_container
from tests.threads import working
from tests.waiting import wait_until

ADD_URL = """mutation($p: ID!, $url: String!) { addDocumentFromUrl(projectId: $p, url: $url) {
  __typename ... on Error { message } } }"""
CREATE_TOOL = """mutation($input: CreateToolInput!) { createTool(input: $input) { __typename ... on Tool { id }
  ... on Error { message } } }"""
TEST_TOOL = """mutation($id: ID!, $a: JSON!) { testTool(id: $id, arguments: $a) { __typename
  ... on ToolTest { ok error } ... on Error { message } } }"""
PROJECTS = "{ projects { ... on ProjectConnection { totalCount } } }"
MAX_CONCURRENT = 4


@pytest.fixture
def slow_rig(migrated: Settings) -> Iterator[Container]:
    settings = Settings(
        database_url=migrated.database_url,
        ingest={"url_allowed_networks": ["127.0.0.0/8"], "url_timeout": 1.0},
        tools={"allowed_networks": ["127.0.0.0/8"]},
        outbound={"max_concurrent": MAX_CONCURRENT, "wait_seconds": 1.0},
    )
    built = fake_container(settings)
    yield built
    built.close()


@pytest.fixture
def slow_api(slow_rig: Container) -> Iterator[Api]:
    with live_api(slow_rig) as client:
        yield client


@pytest.fixture
def slow() -> Iterator[Trickle]:
    with trickling("127.0.0.2") as server:  # another loopback address stands for an internet host
        yield server


def _all(base: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send the GraphQL requests at once (one event loop, no thread each); their ``data``."""

    async def send() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            answers = await asyncio.gather(*(client.post("/graphql", json=body) for body in bodies))
        return [a.json()["data"] for a in answers]

    return asyncio.run(send())


def _settled(slow: Trickle, threads: list[str]) -> None:
    """Every connection to the slow server was closed for it early, and no thread was left behind."""
    wait_until(lambda: slow.open == 0, 10, "ragchat to close its connections to the slow server")
    assert max(slow.sent_when_closed) < len(slow.head) // 2
    wait_until(lambda: len(working()) <= len(threads), 10, "ragchat's threads to come back to their baseline")


def test_a_document_from_a_trickling_server_is_cut_off_at_the_url_timeout(slow_api: Api, slow: Trickle) -> None:
    threads = working()
    pid = slow_api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    added = slow_api.run(ADD_URL, p=pid, url=f"http://127.0.0.2:{slow.port}/notes.md")["addDocumentFromUrl"]
    assert added == {"__typename": "FetchFailedError", "message": "no complete answer within 1 s"}
    _settled(slow, threads)


def test_tool_calls_to_a_trickling_server_leave_no_thread_reading(slow_api: Api, slow: Trickle) -> None:
    tool = {
        "name": "slow_lookup",
        "description": "Look something up on a slow host",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        "group": "ops",
        "method": "GET",
        "urlTemplate": f"http://127.0.0.2:{slow.port}/lookup/{{q}}",
        "timeoutSeconds": 1,
    }
    made = slow_api.run(CREATE_TOOL, input=tool)["createTool"]
    assert made["__typename"] == "Tool", made
    threads = working()
    calls = 12  # more than the gate's slots: the rest wait, then are refused or run
    tested = _all(slow_api.base, [{"query": TEST_TOOL, "variables": {"id": made["id"], "a": {"q": "x"}}}] * calls)
    outcomes = [t["testTool"] for t in tested]
    assert all(o["__typename"] == "ToolTest" and o["ok"] is False for o in outcomes), outcomes
    assert all("within 1 s" in o["error"] or "outbound requests open" in o["error"] for o in outcomes), outcomes
    assert slow.accepted >= MAX_CONCURRENT
    _settled(slow, threads)


def test_health_and_queries_are_answered_while_slow_fetches_hold_every_outbound_slot(
    slow_api: Api, slow: Trickle
) -> None:
    # More slow fetches than the default thread pool has threads (40): before, each held one, and
    # /healthz (a thread of that pool) and every resolver waited for the remote to finish.
    threads = working()
    pid = slow_api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    url = f"http://127.0.0.2:{slow.port}/notes.md"
    fetches = 44

    async def scenario() -> tuple[list[dict[str, Any]], httpx.Response, httpx.Response, int]:
        async with httpx.AsyncClient(base_url=slow_api.base, timeout=30) as client:
            adding = [
                asyncio.ensure_future(
                    client.post("/graphql", json={"query": ADD_URL, "variables": {"p": pid, "url": url}})
                )
                for _ in range(fetches)
            ]
            for _ in range(500):  # bounded: until every outbound slot holds a slow connection
                if slow.open >= MAX_CONCURRENT:
                    break
                await asyncio.sleep(0.01)
            health = await client.get("/healthz", timeout=10)
            listed = await client.post("/graphql", json={"query": PROJECTS}, timeout=10)
            in_flight = slow.open
            added = [(await a).json()["data"]["addDocumentFromUrl"] for a in adding]
        return added, health, listed, in_flight

    added, health, listed, in_flight = asyncio.run(scenario())
    assert health.status_code == 200 and health.json()["ok"] is True
    assert listed.json()["data"]["projects"]["totalCount"] == 1
    assert in_flight > 0  # they were answered while slow fetches were still open
    assert {a["__typename"] for a in added} == {"FetchFailedError"}
    timed_out = [a for a in added if a["message"] == "no complete answer within 1 s"]
    refused = [a for a in added if "RAGCHAT_OUTBOUND__MAX_CONCURRENT" in a["message"]]
    assert len(timed_out) + len(refused) == fetches and timed_out and refused
    _settled(slow, threads)
