"""Once a server has people, an anonymous caller may only sign in: anything else is refused before
any resolver runs, a 401 over HTTP; whoever is named is judged per resource by the services (the
permission matrix, tests/graphql/test_permission_matrix.py, holds every field to its rules).
Through the real HTTP app, with people created through the services."""

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
    # Anonymous callers are told to authenticate as before people existed.
    anonymous = "sign in first" in str(body.get("errors"))
    assert response.status_code == (401 if anonymous else 200), response.status_code
    return list(body.get("errors") or [])


def test_anonymous_callers_may_only_sign_in_and_members_see_their_own(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org", admin=True)
        server.person("bob@example.org")
        server.project("kb")
        anonymous = server.client()
        (refused,) = _errors(anonymous, PROJECTS)
        assert refused["message"].startswith("sign in first") and refused["extensions"]["code"] == "forbidden"
        assert "projects" in refused["message"]
        # A fragment at the root does not hide a field; the sign-in surface answers.
        assert "projects" in _errors(anonymous, FRAGMENT)[0]["message"]
        assert gql(anonymous, ME)["me"] is None
        assert gql(anonymous, "{ serverAccess { peopleExist } }")["serverAccess"]["peopleExist"] is True
        assert gql(anonymous, "{ __schema { queryType { name } } }")["__schema"]["queryType"]["name"] == "Query"

        bob = signed_in(server, "bob@example.org")
        assert gql(bob, ME)["me"]["email"] == "bob@example.org"
        assert gql(bob, PROJECTS)["projects"]["totalCount"] == 0  # not a member of "kb": not there for him
        created = gql(bob, 'mutation { createProject(input: {name: "mine"}) { ... on Project { id } } }')
        assert gql(bob, PROJECTS)["projects"]["totalCount"] == 1 and created["createProject"]["id"]

        ada = signed_in(server, "ada@example.org")
        assert gql(ada, PROJECTS)["projects"]["totalCount"] == 2  # an administrator sees every one

        with server.container.store.write() as db:
            admin = users.by_email(db, "ada@example.org")
            assert admin is not None
            _, read_only = keys.create(db, admin, keys.NewKey("read-only", read_only=True))
        limited = server.client({"Authorization": f"Bearer {read_only}"})
        assert gql(limited, PROJECTS)["projects"]["totalCount"] == 2
        denied = gql(limited, 'mutation { createProject(input: {name: "no"}) { __typename } }')
        assert denied["createProject"]["__typename"] == "ForbiddenError"


def test_a_server_key_still_has_every_right_when_people_exist(people_server: Callable[..., Any]) -> None:
    with people_server(api=ApiSettings(api_keys=[SecretStr("server-key")])) as server:
        server.person("ada@example.org", admin=True)
        keyed = server.client({"Authorization": "Bearer server-key"})
        assert gql(keyed, PROJECTS)["projects"]["totalCount"] == 0
        assert "sign in first" in _errors(server.client(), PROJECTS)[0]["message"]
