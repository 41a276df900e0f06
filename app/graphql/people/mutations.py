"""Changes about people: signing in and out (the session cookie is set and cleared here, on the
HTTP response), the first administrator, invitations and password resets, disabling, members of a
knowledge base, API keys. Thin: app/services/people/ decides."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any

import strawberry
from starlette.requests import Request

from app.errors import ForbiddenError, RagchatError
from app.graphql.context import Info, caller_of
from app.graphql.errors import parse_id, to_graphql
from app.graphql.people.types import (
    ApiKey,
    ChangePasswordResult,
    CreateApiKeyInput,
    CreateApiKeyResult,
    CreatedApiKey,
    Invitation,
    InvitePersonResult,
    Member,
    MemberRemoved,
    MemberResult,
    MemberRole,
    Person,
    PersonResult,
    RemoveMemberResult,
    RevokeApiKeyResult,
    SignInResult,
)
from app.graphql.results import call
from app.security import (
    clear_session_cookie,
    client_address,
    cookie_secure,
    from_loopback,
    session_cookie,
    set_session_cookie,
)
from app.services.people import api_keys, directory, invitations, keys, members, passwords, signing_in, users

_KB = strawberry.argument(description="The knowledge base.")
_PERSON = strawberry.argument(description="The person.")
_PASSWORD = strawberry.argument(description=f"At least {passwords.MIN_LENGTH} characters.")


def _http(info: Info) -> Request:
    """The HTTP request this operation came in; a websocket cannot set a cookie, so signing in over
    one is refused (inside the service call, so the refusal is a union member)."""
    request = info.context.request
    if not isinstance(request, Request) or info.context.response is None:
        raise ForbiddenError("sign in with an HTTP POST to /graphql: a websocket cannot set the session cookie")
    return request


async def _signing_in(info: Info, work: Callable[[Request], signing_in.SignedIn]) -> Any:
    """Run ``work`` (a way of signing in); on success the browser's previous session ends and the
    response carries the new session's cookie."""
    try:
        request = _http(info)
    except RagchatError as exc:
        return to_graphql(exc)
    c = info.context.container
    done = await call(lambda: work(request))
    if not isinstance(done, signing_in.SignedIn):
        return done  # an error, as a union member
    previous = session_cookie(request.headers.get("cookie"))
    if previous:
        await call(lambda: signing_in.sign_out(c.store, previous))
    people = c.settings.people
    assert info.context.response is not None
    set_session_cookie(
        info.context.response,
        done.token,
        secure=cookie_secure(people.cookie_secure, request.url.scheme),
        max_age=int(timedelta(hours=people.session_absolute_hours).total_seconds()),
    )
    if done.person.is_admin:
        c.identifier.saw_people()
    return Person.of(done.person)


@strawberry.type
class PeopleMutation:
    @strawberry.mutation(
        description="Sign in with an email and a password: the response sets the session cookie (HttpOnly, "
        "SameSite=Lax), always a new one. Over HTTP only. Failed attempts are limited per account and per address."
    )
    async def sign_in(
        self,
        info: Info,
        email: Annotated[str, strawberry.argument(description="The email the person signs in with.")],
        password: Annotated[str, strawberry.argument(description="Their password.")],
    ) -> SignInResult:
        c = info.context.container
        return await _signing_in(
            info,
            lambda request: signing_in.sign_in(
                c.store, c.sign_in_limits, email, password, client_address(request.scope)
            ),
        )

    @strawberry.mutation(
        description="Sign this browser out: its session is revoked on the server and its cookie cleared. False "
        "when the request carried no session cookie."
    )
    async def sign_out(self, info: Info) -> bool:
        c = info.context.container
        request = info.context.request
        if not isinstance(request, Request) or info.context.response is None:
            return False
        token = session_cookie(request.headers.get("cookie"))
        if token:
            await call(lambda: signing_in.sign_out(c.store, token))
        clear_session_cookie(
            info.context.response, secure=cookie_secure(c.settings.people.cookie_secure, request.url.scheme)
        )
        return bool(token)

    @strawberry.mutation(
        description="Create the server's first person, an administrator, and sign them in: only while the server "
        "has no people, and only from its own machine (loopback); ForbiddenError otherwise."
    )
    async def set_up_first_administrator(
        self,
        info: Info,
        email: Annotated[str, strawberry.argument(description="Their email, the sign-in name.")],
        name: Annotated[str, strawberry.argument(description="Their name as shown.")],
        password: Annotated[str, _PASSWORD],
    ) -> SignInResult:
        store = info.context.container.store
        new = users.NewPerson(email, name, password, is_admin=True)
        return await _signing_in(
            info,
            lambda request: signing_in.set_up_first_administrator(
                store, new, from_loopback=from_loopback(request.scope)
            ),
        )

    @strawberry.mutation(
        description="Set your password with a one-time link's token (an invitation, or a reset) and sign in. "
        "A used, expired or replaced link is a ValidationError."
    )
    async def accept_invitation(
        self,
        info: Info,
        token: Annotated[str, strawberry.argument(description="The token at the end of the link (/invite/<token>).")],
        password: Annotated[str, _PASSWORD],
    ) -> SignInResult:
        store = info.context.container.store
        return await _signing_in(info, lambda request: invitations.accept(store, token, password))

    @strawberry.mutation(
        description="Change your password (from a signed-in browser, not with a key): every other browser of "
        "yours is signed out, this one gets a new cookie."
    )
    async def change_password(
        self,
        info: Info,
        current_password: Annotated[str, strawberry.argument(description="Your password now.")],
        new_password: Annotated[str, _PASSWORD],
    ) -> ChangePasswordResult:
        c, caller = info.context.container, caller_of(info)
        return await _signing_in(
            info,
            lambda request: signing_in.change_password(
                c.store, c.sign_in_limits, caller, current_password, new_password, client_address(request.scope)
            ),
        )

    @strawberry.mutation(
        description="Create a person without a password and a one-time link (valid seven days) with which they "
        "set one. For administrators and keys allowed to manage people."
    )
    async def invite_person(
        self,
        info: Info,
        email: Annotated[str, strawberry.argument(description="Their email, the sign-in name.")],
        name: Annotated[str, strawberry.argument(description="Their name as shown.")],
        is_admin: Annotated[bool, strawberry.argument(description="Make them an administrator.")] = False,
    ) -> InvitePersonResult:
        store, caller = info.context.container.store, caller_of(info)
        new = users.NewPerson(email, name, None, is_admin=is_admin)
        return await call(lambda: Invitation.of(invitations.invite(store, caller, new)))

    @strawberry.mutation(
        description="Disable a person (they are signed out and their keys stop at once) or enable them again. "
        "Nobody disables themselves or the last administrator."
    )
    async def set_person_disabled(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _PERSON],
        disabled: Annotated[bool, strawberry.argument(description="True: disable; false: enable.")],
    ) -> PersonResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(lambda: Person.of(directory.set_disabled(store, caller, parse_id(id, "id"), disabled)))

    @strawberry.mutation(
        description="Void a person's password, sign them out everywhere, and make a new one-time link with which "
        "they set another (earlier links stop working)."
    )
    async def reset_password(self, info: Info, id: Annotated[strawberry.ID, _PERSON]) -> InvitePersonResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(lambda: Invitation.of(invitations.reset(store, caller, parse_id(id, "id"))))

    @strawberry.mutation(description="Give a person a role in a knowledge base (its owners and administrators).")
    async def add_member(
        self,
        info: Info,
        knowledge_base_id: Annotated[strawberry.ID, _KB],
        email: Annotated[str, strawberry.argument(description="The person's email.")],
        role: Annotated[MemberRole, strawberry.argument(description="Their role there.")],
    ) -> MemberResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(
            lambda: Member.of(members.add(store, caller, parse_id(knowledge_base_id, "knowledgeBaseId"), email, role))
        )

    @strawberry.mutation(
        description="Change a member's role (its owners and administrators); the last owner keeps the role."
    )
    async def set_member_role(
        self,
        info: Info,
        knowledge_base_id: Annotated[strawberry.ID, _KB],
        person_id: Annotated[strawberry.ID, _PERSON],
        role: Annotated[MemberRole, strawberry.argument(description="Their new role.")],
    ) -> MemberResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(
            lambda: Member.of(
                members.set_role(
                    store,
                    caller,
                    parse_id(knowledge_base_id, "knowledgeBaseId"),
                    parse_id(person_id, "personId"),
                    role,
                )
            )
        )

    @strawberry.mutation(description="Remove a member (its owners and administrators); never its last owner.")
    async def remove_member(
        self, info: Info, knowledge_base_id: Annotated[strawberry.ID, _KB], person_id: Annotated[strawberry.ID, _PERSON]
    ) -> RemoveMemberResult:
        store, caller = info.context.container.store, caller_of(info)

        def run() -> MemberRemoved:
            kb, person = parse_id(knowledge_base_id, "knowledgeBaseId"), parse_id(person_id, "personId")
            members.remove(store, caller, kb, person)
            return MemberRemoved(person_id=strawberry.ID(str(person)), knowledge_base_id=strawberry.ID(str(kb)))

        return await call(run)

    @strawberry.mutation(
        description="Create an API key for yourself; its secret is in the answer, this once. It never does more "
        "than you may, nor (made with a key) more than that key."
    )
    async def create_api_key(
        self, info: Info, input: Annotated[CreateApiKeyInput, strawberry.argument(description="The key.")]
    ) -> CreateApiKeyResult:
        store, caller = info.context.container.store, caller_of(info)

        def run() -> CreatedApiKey:
            ids = input.knowledge_base_ids
            new = keys.NewKey(
                name=input.name,
                projects=[parse_id(i, "knowledgeBaseIds") for i in ids] if ids is not None else None,
                read_only=input.read_only,
                manage_users=input.manage_users,
                expires_at=input.expires_at,
            )
            return CreatedApiKey.of(api_keys.create(store, caller, new))

        return await call(run)

    @strawberry.mutation(description="Revoke one of your API keys: it stops working at once.")
    async def revoke_api_key(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The key.")]
    ) -> RevokeApiKeyResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(lambda: ApiKey.of(api_keys.revoke(store, caller, parse_id(id, "id"))))
