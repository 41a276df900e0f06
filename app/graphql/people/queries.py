"""Reads about people: how one gets in (serverAccess), who is asking, everyone (for whoever manages
people), a knowledge base's members, and one's own API keys. Thin: app/services/people/ decides."""

from __future__ import annotations

from typing import Annotated

import strawberry
from starlette.requests import HTTPConnection

from app.auth.oidc import LOGIN_PATH
from app.errors import ForbiddenError
from app.graphql.context import Info, caller_of
from app.graphql.errors import parse_id
from app.graphql.people.types import ApiKey, Member, MemberList, MembersResult, Person, ServerAccess
from app.graphql.results import UNREADABLE, call
from app.security import from_loopback
from app.services.people import api_keys, directory, members, signing_in


def request_of(info: Info) -> HTTPConnection | None:
    request = info.context.request
    return request if isinstance(request, HTTPConnection) else None


@strawberry.type
class PeopleQuery:
    @strawberry.field(description="How one gets in to this server, and who is asking. Anyone may ask.")
    async def server_access(self, info: Info) -> ServerAccess:
        c = info.context.container
        caller = caller_of(info)
        request = request_of(info)
        local = request is not None and from_loopback(request.scope)

        def read() -> ServerAccess:
            person = directory.me(c.store, caller)
            return ServerAccess(
                people_exist=c.identifier.people_exist(),
                first_run_available=signing_in.first_run_available(c.store, from_loopback=local),
                password_sign_in=True,
                single_sign_on_url=LOGIN_PATH if c.settings.oidc.enabled else None,
                me=Person.of(person) if person is not None else None,
            )

        return await call(read, raising=UNREADABLE)

    @strawberry.field(description="The signed-in person (by cookie or by their key); null for anyone else.")
    async def me(self, info: Info) -> Person | None:
        store, caller = info.context.container.store, caller_of(info)
        person = await call(lambda: directory.me(store, caller), raising=UNREADABLE)
        return Person.of(person) if person is not None else None

    @strawberry.field(
        description="Everyone who may sign in here, by email: for administrators (and keys allowed to manage "
        "people); anyone else gets a FORBIDDEN error."
    )
    async def people(self, info: Info) -> list[Person]:
        store, caller = info.context.container.store, caller_of(info)
        rows = await call(lambda: directory.people(store, caller), raising=(ForbiddenError, *UNREADABLE))
        return [Person.of(row) for row in rows]

    @strawberry.field(
        description="A knowledge base's members, for its members (and administrators); NotFoundError for "
        "anyone else, as for a knowledge base that does not exist."
    )
    async def members(
        self,
        info: Info,
        knowledge_base_id: Annotated[strawberry.ID, strawberry.argument(description="The knowledge base.")],
    ) -> MembersResult:
        store, caller = info.context.container.store, caller_of(info)

        def read() -> MemberList:
            project_id = parse_id(knowledge_base_id, "knowledgeBaseId")
            found = members.members(store, caller, project_id)
            return MemberList(
                knowledge_base_id=strawberry.ID(str(project_id)), members=[Member.of(member) for member in found]
            )

        return await call(read, raising=UNREADABLE)

    @strawberry.field(description="Your own API keys, revoked and expired ones included (none for a server key).")
    async def api_keys(self, info: Info) -> list[ApiKey]:
        store, caller = info.context.container.store, caller_of(info)
        rows = await call(lambda: api_keys.own(store, caller), raising=UNREADABLE)
        return [ApiKey.of(row) for row in rows]
