"""People management, members and API keys through the real HTTP app: one-time links, disabling
that stops cookies and keys at once, keys that never reach further than the key that made them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.graphql.people.conftest import ME, gql, signed_in

INVITE = """mutation($email: String!) { invitePerson(email: $email, name: "Bob") {
  __typename ... on Invitation { link person { id email } } ... on Error { message } } }"""
ACCEPT = """mutation($token: String!, $password: String!) { acceptInvitation(token: $token, password: $password) {
  __typename ... on Person { email } ... on Error { message } } }"""
DISABLE = """mutation($id: ID!, $disabled: Boolean!) { setPersonDisabled(id: $id, disabled: $disabled) {
  __typename ... on Person { disabled } ... on Error { message } } }"""
CREATE_KEY = """mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) {
  __typename ... on CreatedApiKey { secret apiKey { id prefix readOnly knowledgeBaseIds } }
  ... on ValidationError { message fields { field } } ... on Error { message } } }"""
ADD = """mutation($kb: ID!, $email: String!, $role: MemberRole!) { addMember(knowledgeBaseId: $kb, email: $email, role: $role) {
  __typename ... on Member { role person { email } } ... on Error { message } } }"""
REMOVE = """mutation($kb: ID!, $person: ID!) { removeMember(knowledgeBaseId: $kb, personId: $person) {
  __typename ... on Error { message } } }"""
MEMBERS = """query($kb: ID!) { members(knowledgeBaseId: $kb) { __typename
  ... on MemberList { members { role person { email } } } ... on Error { message } } }"""


def test_an_invitation_link_works_once_and_a_reset_signs_out(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org", admin=True)
        admin = signed_in(server, "ada@example.org")
        invited = gql(admin, INVITE, email="bob@example.org")["invitePerson"]
        assert invited["__typename"] == "Invitation" and invited["link"].startswith("/invite/")
        token = invited["link"].removeprefix("/invite/")

        bob = server.client()
        assert (
            gql(bob, ACCEPT, token=token, password="bob's own password")["acceptInvitation"]["email"]
            == "bob@example.org"
        )
        assert gql(bob, ME)["me"]["email"] == "bob@example.org"
        again = gql(server.client(), ACCEPT, token=token, password="another password!")["acceptInvitation"]
        assert again["__typename"] == "ValidationError"

        # Only those who manage people invite; Bob is a member.
        assert gql(bob, INVITE, email="eve@example.org")["invitePerson"]["__typename"] == "ForbiddenError"
        reset = gql(
            admin,
            "mutation($id: ID!) { resetPassword(id: $id) { ... on Invitation { link } } }",
            id=invited["person"]["id"],
        )
        assert gql(bob, ME)["me"] is None  # signed out everywhere
        assert (
            gql(
                server.client(),
                ACCEPT,
                token=reset["resetPassword"]["link"].removeprefix("/invite/"),
                password="a new password!",
            )["acceptInvitation"]["__typename"]
            == "Person"
        )


def test_a_disabled_persons_cookie_and_keys_stop_at_once(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org", admin=True)
        bob_id = server.person("bob@example.org")
        admin, bob = signed_in(server, "ada@example.org"), signed_in(server, "bob@example.org")
        secret = gql(bob, CREATE_KEY, input={"name": "laptop"})["createApiKey"]["secret"]
        keyed = server.client({"Authorization": f"Bearer {secret}"})
        assert gql(keyed, ME)["me"]["email"] == "bob@example.org"

        assert gql(admin, DISABLE, id=str(bob_id), disabled=True)["setPersonDisabled"]["disabled"] is True
        assert gql(bob, ME)["me"] is None
        assert keyed.post("/graphql", json={"query": ME}).status_code == 401
        # Nobody disables themselves, nor the last administrator.
        me_id = gql(admin, ME)["me"]["id"]
        assert gql(admin, DISABLE, id=me_id, disabled=True)["setPersonDisabled"]["__typename"] == "ConflictError"

        assert gql(admin, DISABLE, id=str(bob_id), disabled=False)["setPersonDisabled"]["disabled"] is False
        assert gql(keyed, ME)["me"]["email"] == "bob@example.org"  # a key comes back with its person
        assert gql(bob, ME)["me"] is None  # a session does not: sign in again


def test_a_read_only_or_scoped_key_cannot_create_a_broader_key(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("bob@example.org")
        server.person("ada@example.org", admin=True)
        kb, other = server.project("kb"), server.project("other")
        admin = signed_in(server, "ada@example.org")
        assert gql(admin, ADD, kb=str(kb), email="bob@example.org", role="EDITOR")["addMember"]["role"] == "EDITOR"
        bob = signed_in(server, "bob@example.org")
        hidden = gql(bob, CREATE_KEY, input={"name": "x", "knowledgeBaseIds": [str(other)]})["createApiKey"]
        assert hidden["__typename"] == "ValidationError"  # not his: the same answer as a missing one

        made = gql(bob, CREATE_KEY, input={"name": "reader", "readOnly": True, "knowledgeBaseIds": [str(kb)]})
        reader = server.client({"Authorization": f"Bearer {made['createApiKey']['secret']}"})
        broader = gql(reader, CREATE_KEY, input={"name": "writer", "knowledgeBaseIds": [str(kb)]})["createApiKey"]
        assert broader["__typename"] == "ValidationError" and broader["fields"] == [{"field": "readOnly"}]
        everywhere = gql(reader, CREATE_KEY, input={"name": "all", "readOnly": True})["createApiKey"]
        assert everywhere["__typename"] == "ValidationError"
        narrower = gql(reader, CREATE_KEY, input={"name": "r2", "readOnly": True, "knowledgeBaseIds": [str(kb)]})
        assert narrower["createApiKey"]["apiKey"]["readOnly"] is True

        listed = gql(bob, "{ apiKeys { name prefix revokedAt } }")["apiKeys"]
        assert [k["name"] for k in listed] == ["reader", "r2"]
        assert all(k["prefix"].startswith("rck_") for k in listed)
        key_id = made["createApiKey"]["apiKey"]["id"]
        assert (
            gql(reader, "mutation($id: ID!) { revokeApiKey(id: $id) { __typename } }", id=key_id)["revokeApiKey"][
                "__typename"
            ]
            == "ForbiddenError"
        )
        revoked = gql(bob, "mutation($id: ID!) { revokeApiKey(id: $id) { ... on ApiKey { revokedAt } } }", id=key_id)
        assert revoked["revokeApiKey"]["revokedAt"] is not None
        assert reader.post("/graphql", json={"query": ME}).status_code == 401


def test_members_are_seen_by_members_and_changed_by_owners_keeping_an_owner(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org", admin=True)
        bob_id = server.person("bob@example.org")
        server.person("eve@example.org")
        kb = server.project("kb")
        admin = signed_in(server, "ada@example.org")
        assert gql(admin, ADD, kb=str(kb), email="bob@example.org", role="OWNER")["addMember"]["__typename"] == "Member"
        bob, eve = signed_in(server, "bob@example.org"), signed_in(server, "eve@example.org")

        assert gql(eve, MEMBERS, kb=str(kb))["members"]["__typename"] == "NotFoundError"  # not hers: not there
        assert gql(bob, ADD, kb=str(kb), email="eve@example.org", role="VIEWER")["addMember"]["role"] == "VIEWER"
        assert [m["person"]["email"] for m in gql(eve, MEMBERS, kb=str(kb))["members"]["members"]] == [
            "bob@example.org", "eve@example.org",
        ]  # fmt: skip
        assert (
            gql(eve, ADD, kb=str(kb), email="ada@example.org", role="OWNER")["addMember"]["__typename"]
            == "ForbiddenError"
        )
        assert gql(bob, REMOVE, kb=str(kb), person=str(bob_id))["removeMember"]["__typename"] == "ConflictError"
        demote = "mutation($kb: ID!, $p: ID!) { setMemberRole(knowledgeBaseId: $kb, personId: $p, role: VIEWER) { __typename } }"
        assert gql(admin, demote, kb=str(kb), p=str(bob_id))["setMemberRole"]["__typename"] == "ConflictError"


def test_people_is_for_those_who_manage_them(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        server.person("ada@example.org", admin=True)
        server.person("bob@example.org")
        admin, bob = signed_in(server, "ada@example.org"), signed_in(server, "bob@example.org")
        assert [p["email"] for p in gql(admin, "{ people { email isAdmin } }")["people"]] == [
            "ada@example.org",
            "bob@example.org",
        ]
        denied = bob.post("/graphql", json={"query": "{ people { email } }"}).json()
        assert denied["data"] is None and "administrators" in denied["errors"][0]["message"]
