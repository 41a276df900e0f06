"""Protection: depth, alias, token and page-size limits; optional API keys on HTTP and websockets."""

from __future__ import annotations

import logging

import httpx
import pytest
from pydantic import SecretStr
from websockets.exceptions import ConnectionClosed

from app.container import Container
from tests.graphql.client import Api, live_api


def test_query_depth_alias_and_token_limits(api: Api) -> None:
    # Deep but cheap: small pages (the default pages, 50 x 20 x 20, are over the cost limit).
    deep = (
        "{ chatSessions(first: 5) { ... on ChatSessionConnection { edges { node { project { documents(first: 5) { "
        "... on DocumentConnection { edges { node { chunks(first: 5) { ... on ChunkConnection { edges { node { "
        "location { page } } } } } } } } } } } } } } }"
    )
    assert "errors" not in api.raw(deep).json()
    api_limits = api.raw("{ " + " ".join(f"a{i}: health {{ ok }}" for i in range(40)) + " }").json()
    assert "aliases" in api_limits["errors"][0]["message"].lower()
    big = "{ " + " ".join("health { ok version }" for _ in range(600)) + " }"
    assert "token" in api.raw(big).json()["errors"][0]["message"].lower()


def test_depth_limit(fake_container: Container) -> None:
    fake_container.settings.api.max_query_depth = 3
    with live_api(fake_container) as api:
        deep = "{ chatSessions { ... on ChatSessionConnection { edges { node { project { documents { __typename } } } } } } }"
        body = api.raw(deep).json()
    assert "exceeds maximum operation depth" in body["errors"][0]["message"]


def test_page_size_is_capped(api: Api) -> None:
    body = api.run("{ chatSessions(first: 5000) { ... on ValidationError { message fields { field message } } } }")
    assert body["chatSessions"]["fields"] == [{"field": "first", "message": "must be between 0 and 100 (got 5000)"}]


@pytest.fixture
def keyed(fake_container: Container, caplog: pytest.LogCaptureFixture):  # type: ignore[no-untyped-def]
    fake_container.settings.api.api_keys = [SecretStr("s3cret-key-1"), SecretStr("other-key")]
    with caplog.at_level(logging.DEBUG), live_api(fake_container) as api:
        yield api
    assert "s3cret-key-1" not in caplog.text


def test_http_requires_a_key_when_keys_are_configured(keyed: Api) -> None:
    query = {"query": "{ health { ok } }"}
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "s3cret-key-1"}):
        response = httpx.post(f"{keyed.base}/graphql", json=query, headers=headers)
        assert response.status_code == 401 and "API key is required" in response.text
        assert "s3cret" not in response.text
    assert httpx.get(f"{keyed.base}/healthz").status_code == 401
    ok = httpx.post(f"{keyed.base}/graphql", json=query, headers={"authorization": "Bearer other-key"})
    assert ok.status_code == 200 and ok.json()["data"]["health"]["ok"] is True


def test_websocket_requires_a_key_when_keys_are_configured(keyed: Api) -> None:
    with pytest.raises((ConnectionClosed, AssertionError)) as refused, keyed.websocket():
        pass
    assert "4403" in str(refused.value) or "Forbidden" in str(refused.value)
    with keyed.websocket({"authorization": "Bearer s3cret-key-1"}) as ws:
        (event,) = list(ws.subscribe('subscription { chat(sessionId: "9", content: "x") { __typename } }'))
    assert event["data"]["chat"]["__typename"] == "ChatError"
