"""A person's own API keys, as the API and the CLI manage them: listed, created (never worth more
than the person, nor than the key that asks), revoked. Creations and revocations are logged (the
key's id and prefix, never its secret)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.db.database import Database
from app.db.models import PersonKey
from app.errors import ForbiddenError, ValidationError
from app.services.people import keys, users
from app.services.people.access import Caller, CallerKind, visible_projects

log = logging.getLogger("ragchat.people")


@dataclass(frozen=True)
class CreatedKey:
    key: PersonKey
    secret: str  # shown this once


def _person(caller: Caller, action: str) -> int:
    if caller.kind != CallerKind.PERSON or caller.user_id is None:
        raise ForbiddenError(f"{action} is for a signed-in person (a server key has no keys of its own)")
    return caller.user_id


def own(store: Database, caller: Caller) -> list[PersonKey]:
    """The caller's keys, revoked and expired ones included (none for a caller who is no person)."""
    if caller.kind != CallerKind.PERSON or caller.user_id is None:
        return []
    with store.read() as db:
        return keys.of(db, caller.user_id)


def create(store: Database, caller: Caller, new: keys.NewKey) -> CreatedKey:
    user_id = _person(caller, "creating a key")
    with store.write() as db:
        _within_caller(db, caller, new)
        row, secret = keys.create(db, users.require(db, user_id), new)
    log.info("API key %d (%s) created for person %d", row.id, row.prefix, user_id)
    return CreatedKey(row, secret)


def _within_caller(db: Session, caller: Caller, new: keys.NewKey) -> None:
    """Refuse ``new`` where it would reach further than the caller: knowledge bases it does not
    see (named as keys.create names a missing one), and, when the caller is a key itself, anything
    that key may not do."""
    seen = visible_projects(db, caller)
    hidden = [p for p in new.projects or () if seen is not None and p not in seen]
    if hidden:
        raise ValidationError("knowledgeBaseIds", f"no knowledge base {hidden[0]}")
    scope = caller.key
    if scope is None:
        return
    if scope.projects is not None and (new.projects is None or not set(new.projects) <= scope.projects):
        raise ValidationError("knowledgeBaseIds", "a key scoped to some knowledge bases can only create keys for them")
    if scope.read_only and not new.read_only:
        raise ValidationError("readOnly", "a read-only key can only create read-only keys")
    if new.manage_users and not scope.manage_users:
        raise ValidationError("manageUsers", "this key may not manage people, so neither may the keys it creates")
    parent = db.get(PersonKey, scope.key_id)
    limit = parent.expires_at if parent is not None else None
    if limit is not None and (new.expires_at is None or new.expires_at > limit):
        raise ValidationError("expiresAt", "a key cannot outlive the key that creates it")


def revoke(store: Database, caller: Caller, key_id: int) -> PersonKey:
    user_id = _person(caller, "revoking a key")
    if caller.key is not None and caller.key.read_only:
        raise ForbiddenError("this key is read-only")
    with store.write() as db:
        row = keys.revoke(db, user_id, key_id)
    log.info("API key %d (%s) of person %d revoked", row.id, row.prefix, user_id)
    return row
