"""Signing in through the real HTTP app: the cookie and its flags, what it opens (requests and
websockets), signing out, throttling per account and per address, the first administrator, and the
CSRF rule for cookie requests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from websockets.sync.client import connect

from app.security import CSRF_REFUSED, SESSION_COOKIE
from tests.graphql.people.conftest import ME, PASSWORD, SIGN_IN, gql, signed_in

FIRST_RUN = """mutation($email: String!, $password: String!) {
  setUpFirstAdministrator(email: $email, name: "Ada", password: $password) {
    __typename ... on Person { id email isAdmin } ... on Error { message } } }"""
ACCESS = "{ serverAccess { peopleExist firstRunAvailable passwordSignIn me { email } } }"


def _set_cookie(response: httpx.Response) -> str:
    [header] = [v for k, v in response.headers.multi_items() if k == "set-cookie"]
    return header


def test_sign_in_sets_a_new_httponly_lax_cookie_that_opens_requests_until_sign_out(
    people_server: Callable[..., Any],
) -> None:
    with people_server() as server:
        server.person("ada@example.org")
        client = server.client()
        assert gql(client, ACCESS)["serverAccess"] == {
            "peopleExist": True, "firstRunAvailable": False, "passwordSignIn": True, "me": None,
        }  # fmt: skip
        assert gql(client, ME)["me"] is None  # anonymous

        response = client.post(
            "/graphql", json={"query": SIGN_IN, "variables": {"email": "ADA@example.org", "password": PASSWORD}}
        )
        assert response.json()["data"]["signIn"]["email"] == "ada@example.org"
        header = _set_cookie(response)
        attributes = {part.strip().split("=")[0].lower(): part for part in header.split(";")}
        assert header.startswith(f"{SESSION_COOKIE}=")
        assert {"httponly", "path", "samesite", "max-age"} <= set(attributes)
        assert attributes["path"].strip() == "Path=/" and attributes["samesite"].strip().lower() == "samesite=lax"
        assert attributes["max-age"].strip() == f"Max-Age={7 * 24 * 3600}"
        assert "secure" not in attributes  # "auto" on plain http
        first = client.cookies[SESSION_COOKIE]
        assert gql(client, ACCESS)["serverAccess"]["me"] == {"email": "ada@example.org"}

        # Signing in again makes a new token and ends the one the browser brought.
        gql(client, SIGN_IN, email="ada@example.org", password=PASSWORD)
        second = client.cookies[SESSION_COOKIE]
        assert second != first
        stale = server.client({"Cookie": f"{SESSION_COOKIE}={first}"})
        assert gql(stale, ME)["me"] is None

        assert gql(client, "mutation { signOut }")["signOut"] is True
        assert SESSION_COOKIE not in client.cookies
        replayed = server.client({"Cookie": f"{SESSION_COOKIE}={second}"})
        assert gql(replayed, ME)["me"] is None  # revoked on the server, not only forgotten by the browser


def test_the_cookie_is_secure_when_the_settings_say_always(people_server: Callable[..., Any]) -> None:
    with people_server({"cookie_secure": "always"}) as server:
        server.person("ada@example.org")
        response = server.client().post(
            "/graphql", json={"query": SIGN_IN, "variables": {"email": "ada@example.org", "password": PASSWORD}}
        )
        assert "secure" in [p.strip().lower() for p in _set_cookie(response).split(";")]


def test_the_cookie_names_the_person_on_a_websocket_and_sign_in_is_refused_there(
    people_server: Callable[..., Any],
) -> None:
    with people_server() as server:
        server.person("ada@example.org")
        client = signed_in(server, "ada@example.org")
        url = server.base.replace("http://", "ws://") + "/graphql"
        cookie = f"{SESSION_COOKIE}={client.cookies[SESSION_COOKIE]}"
        with connect(
            url, subprotocols=["graphql-transport-ws"], additional_headers={"Cookie": cookie}, open_timeout=10
        ) as ws:  # type: ignore[list-item]
            ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"
            for op, query in (("1", ME), ("2", SIGN_IN)):
                variables = {"email": "ada@example.org", "password": PASSWORD}
                ws.send(
                    json.dumps({"id": op, "type": "subscribe", "payload": {"query": query, "variables": variables}})
                )
                message = json.loads(ws.recv(timeout=10))
                assert message["type"] == "next", message
                data = message["payload"]["data"]
                if op == "1":
                    assert data["me"]["email"] == "ada@example.org"
                else:
                    assert data["signIn"]["__typename"] == "ForbiddenError"
                    assert "websocket" in data["signIn"]["message"]
                assert json.loads(ws.recv(timeout=10))["type"] == "complete"


def test_a_wrong_password_and_an_unknown_email_get_the_same_answer(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org")
        client = server.client()
        wrong = gql(client, SIGN_IN, email="ada@example.org", password="not the password")["signIn"]
        unknown = gql(client, SIGN_IN, email="nobody@example.org", password=PASSWORD)["signIn"]
        assert wrong == unknown and wrong["__typename"] == "ValidationError"
        assert SESSION_COOKIE not in client.cookies


def test_sign_in_is_throttled_per_account(people_server: Callable[..., Any]) -> None:
    with people_server({"sign_in_attempts_per_account": 2}) as server:
        server.person("ada@example.org")
        server.person("bob@example.org")
        for address in ("198.51.100.1", "198.51.100.2"):  # each try from elsewhere: the account counts them
            tried = server.client({"X-Forwarded-For": address})
            assert (
                gql(tried, SIGN_IN, email="ada@example.org", password="wrong guess!")["signIn"]["__typename"]
                == "ValidationError"
            )
        late = server.client({"X-Forwarded-For": "198.51.100.3"})
        refused = gql(late, SIGN_IN, email="ada@example.org", password=PASSWORD)["signIn"]
        assert refused["__typename"] == "TooManyAttemptsError" and refused["retryAfterSeconds"] >= 1
        assert SESSION_COOKIE not in late.cookies  # the right password, not even checked
        assert gql(late, SIGN_IN, email="bob@example.org", password=PASSWORD)["signIn"]["__typename"] == "Person"


def test_sign_in_is_throttled_per_address(people_server: Callable[..., Any]) -> None:
    with people_server({"sign_in_attempts_per_address": 3}) as server:
        server.person("ada@example.org")
        guesser = server.client({"X-Forwarded-For": "203.0.113.7"})
        for n in range(3):
            gql(guesser, SIGN_IN, email=f"person{n}@example.org", password="wrong guess!")
        assert (
            gql(guesser, SIGN_IN, email="ada@example.org", password=PASSWORD)["signIn"]["__typename"]
            == "TooManyAttemptsError"
        )
        other = server.client({"X-Forwarded-For": "203.0.113.8"})
        assert gql(other, SIGN_IN, email="ada@example.org", password=PASSWORD)["signIn"]["__typename"] == "Person"


def test_the_first_administrator_only_from_loopback_and_only_once(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        # The socket is loopback, but a proxy relayed it from elsewhere (uvicorn takes the forwarded
        # address from a loopback proxy; the header alone also refuses).
        relayed = server.client({"X-Forwarded-For": "203.0.113.9"})
        assert gql(relayed, ACCESS)["serverAccess"]["firstRunAvailable"] is False
        refused = gql(relayed, FIRST_RUN, email="eve@example.org", password=PASSWORD)["setUpFirstAdministrator"]
        assert refused["__typename"] == "ForbiddenError"

        local = server.client()
        assert gql(local, ACCESS)["serverAccess"] == {
            "peopleExist": False, "firstRunAvailable": True, "passwordSignIn": True, "me": None,
        }  # fmt: skip
        made = gql(local, FIRST_RUN, email="ada@example.org", password=PASSWORD)["setUpFirstAdministrator"]
        assert made["__typename"] == "Person" and made["isAdmin"] is True
        assert gql(local, ME)["me"]["email"] == "ada@example.org"  # signed in by the cookie

        again = server.client()
        assert gql(again, ACCESS)["serverAccess"]["firstRunAvailable"] is False
        second = gql(again, FIRST_RUN, email="eve@example.org", password=PASSWORD)["setUpFirstAdministrator"]
        assert second["__typename"] == "ForbiddenError"
        assert gql(again, ME)["me"] is None  # and the server is no longer open to the anonymous


def test_a_cross_site_form_post_carrying_the_cookie_is_refused(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org")
        client = signed_in(server, "ada@example.org")
        form = {"query": "mutation { signOut }"}
        refused = client.post("/graphql", data=form)  # an HTML form: x-www-form-urlencoded, the cookie sent
        assert refused.status_code == 400 and refused.json()["errors"][0]["message"] == CSRF_REFUSED
        elsewhere = client.post("/graphql", data=form, headers={"Origin": "https://evil.example"})
        assert elsewhere.status_code == 403
        assert gql(client, ME)["me"]["email"] == "ada@example.org"  # still signed in: nothing ran
