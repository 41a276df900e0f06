"""The access rules (app/services/people/access.py) over a real database on both backends: roles
include the ones below them, a knowledge base one is not in does not exist, chats are their
owner's, a shared chat is readable and not writable, and a key never exceeds its person."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from app.db.database import Database
from app.db.enums import MemberRole
from app.db.models import ChatSession, Membership
from app.errors import ForbiddenError, NotFoundError
from app.services import projects
from app.services.people import access, keys, users
from app.services.people.access import Caller, CallerKind
from app.settings import Settings

pytestmark = pytest.mark.postgres


@dataclass
class World:
    store: Database
    kb: int
    other_kb: int
    admin: int
    owner: int
    editor: int
    viewer: int
    stranger: int
    chat: int  # the viewer's, in kb


@pytest.fixture
def world(migrated: Settings) -> Iterator[World]:
    store = Database.from_url(migrated.database_url)
    kb = projects.create(store, "kb").id
    other = projects.create(store, "other").id
    with store.write() as db:
        ids = {
            name: users.create(db, users.NewPerson(f"{name}@example.org", name, is_admin=name == "admin")).id
            for name in ("admin", "owner", "editor", "viewer", "stranger")
        }
        for name, role in (("owner", MemberRole.OWNER), ("editor", MemberRole.EDITOR), ("viewer", MemberRole.VIEWER)):
            db.add(Membership(user_id=ids[name], project_id=kb, role=role))
        db.add(Membership(user_id=ids["stranger"], project_id=other, role=MemberRole.OWNER))
        chat = ChatSession(project_id=kb, title="t", provider="fake", model="m", threshold=0.3, owner_id=ids["viewer"])
        db.add(chat)
        db.flush()
        chat_id = chat.id
    yield World(store, kb, other, chat=chat_id, **ids)
    store.dispose()


def person(user_id: int, *, admin: bool = False, key: access.KeyScope | None = None) -> Caller:
    return Caller(CallerKind.PERSON, user_id=user_id, is_admin=admin, key=key)


def test_roles_include_the_ones_below_and_a_foreign_knowledge_base_does_not_exist(world: World) -> None:
    with world.store.read() as db:
        assert access.require_project(db, person(world.owner), world.kb, MemberRole.OWNER).id == world.kb
        assert access.require_project(db, person(world.editor), world.kb, MemberRole.EDITOR).id == world.kb
        assert access.require_project(db, person(world.viewer), world.kb).id == world.kb
        with pytest.raises(ForbiddenError, match="your role is viewer; this needs editor"):
            access.require_project(db, person(world.viewer), world.kb, MemberRole.EDITOR)
        with pytest.raises(ForbiddenError):
            access.require_project(db, person(world.editor), world.kb, MemberRole.OWNER)
        # Not a member: the same error, word for word, as for a knowledge base that does not exist.
        with pytest.raises(NotFoundError) as foreign:
            access.require_project(db, person(world.stranger), world.kb)
        with pytest.raises(NotFoundError) as missing:
            access.require_project(db, person(world.stranger), 10_000)
        assert str(foreign.value) == f"project {world.kb} not found"
        assert str(missing.value) == "project 10000 not found"
        assert access.require_project(db, person(world.admin, admin=True), world.other_kb, MemberRole.OWNER)
        assert access.visible_projects(db, person(world.viewer)) == {world.kb}
        assert access.visible_projects(db, person(world.stranger)) == {world.other_kb}
        assert access.visible_projects(db, person(world.admin, admin=True)) is None
        assert access.visible_projects(db, Caller.anonymous()) == frozenset()
        for nobody in (Caller.anonymous(),):
            with pytest.raises(NotFoundError):
                access.require_project(db, nobody, world.kb)


def test_the_server_and_an_open_server_may_do_everything(world: World) -> None:
    with world.store.read() as db:
        for caller in (Caller.server(), Caller.open()):
            assert access.require_project(db, caller, world.other_kb, MemberRole.OWNER)
            assert access.require_chat(db, caller, world.chat, change=True)
            assert access.visible_projects(db, caller) is None


def test_a_chat_is_its_owners_and_a_shared_one_is_read_only_for_members(world: World) -> None:
    with world.store.read() as db:
        assert access.require_chat(db, person(world.viewer), world.chat, change=True).id == world.chat
        for other in (world.owner, world.editor, world.stranger):
            with pytest.raises(NotFoundError, match=f"chat session {world.chat} not found"):
                access.require_chat(db, person(other), world.chat)
        with pytest.raises(NotFoundError):  # an administrator does not read a person's private chat
            access.require_chat(db, person(world.admin, admin=True), world.chat)
    with world.store.write() as db:
        chat = db.get(ChatSession, world.chat)
        assert chat is not None
        chat.shared = True
    with world.store.read() as db:
        assert access.require_chat(db, person(world.editor), world.chat).id == world.chat
        with pytest.raises(ForbiddenError, match="read-only"):
            access.require_chat(db, person(world.editor), world.chat, change=True)
        with pytest.raises(NotFoundError):  # shared with the knowledge base's members, not the world
            access.require_chat(db, person(world.stranger), world.chat)


def test_chats_without_an_owner_are_the_administrators(world: World) -> None:
    with world.store.write() as db:
        chat = ChatSession(project_id=world.kb, title="old", provider="fake", model="m", threshold=0.3)
        db.add(chat)
        db.flush()
        old = chat.id
    with world.store.read() as db:
        assert access.require_chat(db, person(world.admin, admin=True), old, change=True).id == old
        with pytest.raises(NotFoundError):
            access.require_chat(db, person(world.owner), old)


def test_a_key_never_exceeds_its_person(world: World) -> None:
    with world.store.write() as db:
        owner = users.require(db, world.owner)
        _, scoped_secret = keys.create(db, owner, keys.NewKey("one kb, read-only", [world.kb], read_only=True))
        _, foreign_secret = keys.create(db, owner, keys.NewKey("another kb", [world.other_kb]))
        with pytest.raises(Exception, match="only an administrator's key may manage people"):
            keys.create(db, owner, keys.NewKey("people", manage_users=True))
    with world.store.read() as db:
        found = keys.resolve(db, scoped_secret)
        assert found is not None
        _, scope, _ = found
        caller = person(world.owner, key=scope)
        assert access.project_role(db, caller, world.kb) == MemberRole.VIEWER
        with pytest.raises(ForbiddenError):
            access.require_project(db, caller, world.kb, MemberRole.EDITOR)
        found = keys.resolve(db, foreign_secret)
        assert found is not None
        # Scoped to a knowledge base its person is not in: the key sees nothing there or anywhere.
        foreign = person(world.owner, key=found[1])
        with pytest.raises(NotFoundError):
            access.require_project(db, foreign, world.other_kb)
        with pytest.raises(NotFoundError):
            access.require_project(db, foreign, world.kb)
        assert access.visible_projects(db, foreign) == frozenset()


def test_keys_stop_with_revocation_expiry_and_a_disabled_person(world: World) -> None:
    with world.store.write() as db:
        viewer = users.require(db, world.viewer)
        row, secret = keys.create(db, viewer, keys.NewKey("laptop"))
        assert secret.startswith("rck_") and row.prefix == secret[:10] and row.key_hash != secret
    with world.store.read() as db:
        assert keys.resolve(db, secret) is not None
        assert keys.resolve(db, secret + "x") is None
        assert keys.resolve(db, "rck_" + "A" * 43) is None
    with world.store.write() as db:
        users.set_disabled(db, users.require(db, world.viewer), True)
    with world.store.read() as db:
        assert keys.resolve(db, secret) is None
    with world.store.write() as db:
        users.set_disabled(db, users.require(db, world.viewer), False)
    with world.store.read() as db:
        assert keys.resolve(db, secret) is not None
    with world.store.write() as db:
        with pytest.raises(NotFoundError):  # another person's key does not exist for them
            keys.revoke(db, world.owner, row.id)
        keys.revoke(db, world.viewer, row.id)
    with world.store.read() as db:
        assert keys.resolve(db, secret) is None
