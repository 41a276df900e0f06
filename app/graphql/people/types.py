"""The people surface's types: a person, their role in a knowledge base, their API keys, the
one-time links that let them in, and what the sign-in page needs to know about the server."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from app.graphql.enums import expose
from app.graphql.errors import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
    StorageError,
    TooManyAttemptsError,
    ValidationError,
)
from app.services import records
from app.services.people import api_keys, invitations, members

expose(
    records.MemberRole,
    "What a person may do in one knowledge base; each role includes the ones before it.",
    {
        records.MemberRole.VIEWER: "Search it and chat over it.",
        records.MemberRole.EDITOR: "And change its documents and tools.",
        records.MemberRole.OWNER: "And its settings and members, and delete it.",
    },
)
MemberRole = records.MemberRole


@strawberry.type(description="A person who signs in to this server.")
class Person:
    id: strawberry.ID = strawberry.field(description="The person's id.")
    email: str = strawberry.field(description="Their sign-in name, lower case.")
    name: str = strawberry.field(description="Their name as shown (may be empty).")
    is_admin: bool = strawberry.field(
        description="Whether they administer the server: every knowledge base, and people."
    )
    disabled: bool = strawberry.field(description="Disabled: cannot sign in; their sessions and keys stopped working.")
    created_at: datetime = strawberry.field(description="When they were created.")

    @classmethod
    def of(cls, row: records.User) -> Person:
        return cls(
            id=strawberry.ID(str(row.id)),
            email=row.email,
            name=row.name,
            is_admin=row.is_admin,
            disabled=row.disabled,
            created_at=row.created_at,
        )


@strawberry.type(description="A person's role in one knowledge base.")
class Member:
    person: Person = strawberry.field(description="The member.")
    role: MemberRole = strawberry.field(description="What they may do there.")
    knowledge_base_id: strawberry.ID = strawberry.field(description="The knowledge base.")

    @classmethod
    def of(cls, member: members.Member) -> Member:
        return cls(
            person=Person.of(member.person),
            role=member.role,
            knowledge_base_id=strawberry.ID(str(member.project_id)),
        )


@strawberry.type(description="One of your API keys (its secret was shown once, when it was created).")
class ApiKey:
    id: strawberry.ID = strawberry.field(description="The key's id.")
    name: str = strawberry.field(description="What it is for, as named at creation.")
    prefix: str = strawberry.field(description="Its first characters (rck_ and six more), to tell keys apart.")
    knowledge_base_ids: list[strawberry.ID] | None = strawberry.field(
        description="The knowledge bases it reaches (of yours); null: all of yours, now and later."
    )
    read_only: bool = strawberry.field(description="Whether it may only read (search, chat, list).")
    manage_users: bool = strawberry.field(description="Whether it may manage people (an administrator's key only).")
    created_at: datetime = strawberry.field(description="When it was created.")
    expires_at: datetime | None = strawberry.field(description="When it stops working; null: never.")
    last_used_at: datetime | None = strawberry.field(description="When it was last used (to the minute); null: never.")
    revoked_at: datetime | None = strawberry.field(description="When it was revoked; null: it was not.")

    @classmethod
    def of(cls, row: records.PersonKey) -> ApiKey:
        return cls(
            id=strawberry.ID(str(row.id)),
            name=row.name,
            prefix=row.prefix,
            knowledge_base_ids=[strawberry.ID(str(p)) for p in row.projects] if row.projects is not None else None,
            read_only=row.read_only,
            manage_users=row.manage_users,
            created_at=row.created_at,
            expires_at=row.expires_at,
            last_used_at=row.last_used_at,
            revoked_at=row.revoked_at,
        )


@strawberry.type(description="A new API key, with its secret: shown this once, stored only as a hash.")
class CreatedApiKey:
    api_key: ApiKey = strawberry.field(description="The key as listed from now on.")
    secret: str = strawberry.field(description="The key to send as 'Authorization: Bearer <secret>'.")

    @classmethod
    def of(cls, created: api_keys.CreatedKey) -> CreatedApiKey:
        return cls(api_key=ApiKey.of(created.key), secret=created.secret)


@strawberry.type(description="A one-time link with which a person sets their password and signs in.")
class Invitation:
    person: Person = strawberry.field(description="Whom it is for.")
    link: str = strawberry.field(
        description="The path on this server (/invite/<token>) to hand to them: it works once, until expiresAt."
    )
    expires_at: datetime = strawberry.field(description="When it stops working (seven days after it was made).")

    @classmethod
    def of(cls, issued: invitations.Issued) -> Invitation:
        return cls(person=Person.of(issued.person), link=issued.path, expires_at=issued.expires_at)


@strawberry.type(description="How one gets in to this server, and who is asking: what a sign-in page needs.")
class ServerAccess:
    people_exist: bool = strawberry.field(
        description="Whether the server has people: if so and `me` is null, the caller should sign in."
    )
    first_run_available: bool = strawberry.field(
        description="Whether setUpFirstAdministrator would work now: no people yet, and asked from the server's "
        "own machine (loopback)."
    )
    password_sign_in: bool = strawberry.field(description="Whether signIn with an email and a password is offered.")
    single_sign_on_url: str | None = strawberry.field(
        description="Where the browser goes to sign in with single sign-on; null when it is not configured."
    )
    me: Person | None = strawberry.field(description="The signed-in person; null for anyone else.")


@strawberry.input(description="A new API key for yourself. It never does more than you may.")
class CreateApiKeyInput:
    name: str = strawberry.field(description="What it is for, 1-100 characters.")
    knowledge_base_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Only these knowledge bases (of yours); omitted or null: all of yours."
    )
    read_only: bool = strawberry.field(default=False, description="Only read: search, chat and lists.")
    manage_users: bool = strawberry.field(
        default=False, description="May manage people (only an administrator's key may)."
    )
    expires_at: datetime | None = strawberry.field(
        default=None, description="When it stops working; omitted or null: never."
    )


@strawberry.type(description="A knowledge base's members (a union cannot hold a list, so this holds it).")
class MemberList:
    knowledge_base_id: strawberry.ID = strawberry.field(description="The knowledge base.")
    members: list[Member] = strawberry.field(description="Its members, by email.")


@strawberry.type(description="The member was removed from the knowledge base.")
class MemberRemoved:
    person_id: strawberry.ID = strawberry.field(description="The person removed.")
    knowledge_base_id: strawberry.ID = strawberry.field(description="The knowledge base.")


SignInResult = Annotated[
    Person | ValidationError | TooManyAttemptsError | ForbiddenError,
    strawberry.union(
        "SignInResult",
        description="The person now signed in (the response sets the session cookie), or why not. A wrong email "
        "and a wrong password are the same ValidationError.",
    ),
]
ChangePasswordResult = Annotated[
    Person | ValidationError | TooManyAttemptsError | ForbiddenError,
    strawberry.union(
        "ChangePasswordResult",
        description="The person with the new password (this browser stays signed in with a new cookie; every "
        "other is signed out), or why not.",
    ),
]
InvitePersonResult = Annotated[
    Invitation | NotFoundError | ValidationError | ConflictError | ForbiddenError,
    strawberry.union("InvitePersonResult", description="The one-time link to hand to the person, or why not."),
]
PersonResult = Annotated[
    Person | NotFoundError | ValidationError | ConflictError | ForbiddenError,
    strawberry.union("PersonResult", description="The person as changed, or why nothing changed."),
]
MembersResult = Annotated[
    MemberList | NotFoundError | ValidationError,
    strawberry.union("MembersResult", description="The knowledge base's members, or why not."),
]
MemberResult = Annotated[
    Member | NotFoundError | ValidationError | ConflictError | ForbiddenError | StorageError,
    strawberry.union("MemberResult", description="The membership as it is now, or why nothing changed."),
]
RemoveMemberResult = Annotated[
    MemberRemoved | NotFoundError | ValidationError | ConflictError | ForbiddenError | StorageError,
    strawberry.union("RemoveMemberResult", description="Who was removed, or why nothing was."),
]
CreateApiKeyResult = Annotated[
    CreatedApiKey | ValidationError | ForbiddenError,
    strawberry.union("CreateApiKeyResult", description="The new key with its secret (shown once), or why not."),
]
RevokeApiKeyResult = Annotated[
    ApiKey | NotFoundError | ValidationError | ForbiddenError,
    strawberry.union("RevokeApiKeyResult", description="The key, revoked, or why not."),
]
