"""Until every resolver asks the access service per resource, the API beyond the people surface is
open only to callers with every right: the server and administrators. Anonymous callers and members
are refused before any resolver runs, over HTTP and the websocket alike; the people surface works
for them. Through the real HTTP app, with people created through the services."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from pydantic import SecretStr

from app.services.people import keys, users
from app.settings import ApiSettings
from tests.graphql.people.conftest import ME, gql, signed_in

PROJECTS = "{ projects { ... on ProjectConnection { totalCount } } }"
FRAGMENT = "query { ...Root } fragment Root on Query { projects { __typename } serverAccess { peopleExist } }"


def _errors(client: httpx.Client, query: str) -> list[dict[str, Any]]:
    response = client.post("/graphql", json={"query": query})
    body = response.json()
    # Anonymous callers are told to authenticate as before people existed; members are not.
    anonymous = "sign in first" in str(body.get("errors"))
    assert response.status_code == (401 if anonymous else 200), response.status_code
    return list(body.get("errors") or [])


def test_only_full_rights_reach_knowledge_bases_and_chats(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org", admin=True)
        server.person("bob@example.org")
        server.project("kb")
        anonymous = server.client()
        (refused,) = _errors(anonymous, PROJECTS)
        assert refused["message"].startswith("sign in first") and refused["extensions"]["code"] == "forbidden"
        assert "projects" in refused["message"]
        # A fragment at the root does not hide a field; the public part of the people surface answers.
        assert "projects" in _errors(anonymous, FRAGMENT)[0]["message"]
        assert gql(anonymous, "{ serverAccess { peopleExist } }")["serverAccess"]["peopleExist"] is True
        assert gql(anonymous, "{ __schema { queryType { name } } }")["__schema"]["queryType"]["name"] == "Query"

        bob = signed_in(server, "bob@example.org")
        assert gql(bob, ME)["me"]["email"] == "bob@example.org"  # the people surface works for a member
        (member,) = _errors(bob, PROJECTS)
        assert "administrators only" in member["message"]
        create = 'mutation { createProject(input: {name: "mine"}) { __typename } }'
        assert "administrators only" in _errors(bob, create)[0]["message"]

        ada = signed_in(server, "ada@example.org")
        assert gql(ada, PROJECTS)["projects"]["totalCount"] == 1

        with server.container.store.write() as db:
            admin = users.by_email(db, "ada@example.org")
            assert admin is not None
            _, full = keys.create(db, admin, keys.NewKey("full"))
            _, read_only = keys.create(db, admin, keys.NewKey("read-only", read_only=True))
        assert gql(server.client({"Authorization": f"Bearer {full}"}), PROJECTS)["projects"]["totalCount"] == 1
        # A limited key cannot be held to its limits yet: refused, not given everything.
        limited = server.client({"Authorization": f"Bearer {read_only}"})
        assert "administrators only" in _errors(limited, PROJECTS)[0]["message"]


def test_a_server_key_still_has_every_right_when_people_exist(people_server: Callable[..., Any]) -> None:
    with people_server(api=ApiSettings(api_keys=[SecretStr("server-key")])) as server:
        server.person("ada@example.org", admin=True)
        keyed = server.client({"Authorization": "Bearer server-key"})
        assert gql(keyed, PROJECTS)["projects"]["totalCount"] == 0
        assert "sign in first" in _errors(server.client(), PROJECTS)[0]["message"]
