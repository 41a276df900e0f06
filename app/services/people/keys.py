"""Personal API keys: ``rck_`` and 256 random bits, shown once; stored as SHA-256 (a key that
random needs no slow hash), listed by name and prefix, each scoped (knowledge bases, read-only,
managing people) and never worth more than its person at the moment it is used."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.models import PersonKey, Project, User, utcnow
from app.errors import NotFoundError, ValidationError
from app.services.people.access import KeyScope

PREFIX = "rck_"
# last_used_at is written at most this often per key.
TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class NewKey:
    name: str
    projects: Sequence[int] | None = None  # None: every knowledge base of the person
    read_only: bool = False
    manage_users: bool = False
    expires_at: datetime | None = None


def key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def is_personal(secret: str) -> bool:
    return secret.startswith(PREFIX)


def create(db: Session, user: User, new: NewKey) -> tuple[PersonKey, str]:
    """A new key for ``user``: the row and the secret (returned this once, never stored)."""
    name = new.name.strip()
    if not 1 <= len(name) <= 100:
        raise ValidationError("name", "1 to 100 characters")
    if new.expires_at is not None and new.expires_at <= utcnow():
        raise ValidationError("expiresAt", "must be in the future")
    if new.manage_users and not user.is_admin:
        raise ValidationError("manageUsers", "only an administrator's key may manage people")
    projects = sorted(set(new.projects)) if new.projects is not None else None
    if projects is not None:
        known = set(db.scalars(select(Project.id).where(Project.id.in_(projects))))
        if missing := [p for p in projects if p not in known]:
            raise ValidationError("projects", f"no knowledge base {missing[0]}")
    secret = PREFIX + secrets.token_urlsafe(32)
    row = PersonKey(
        user_id=user.id,
        name=name,
        prefix=secret[: len(PREFIX) + 6],
        key_hash=key_hash(secret),
        projects=projects,
        read_only=new.read_only,
        manage_users=new.manage_users,
        expires_at=new.expires_at,
    )
    db.add(row)
    db.flush()
    return row, secret


def resolve(db: Session, secret: str, *, now: datetime | None = None) -> tuple[User, KeyScope, bool] | None:
    """The person and scope of a personal key, and whether its last use is due to be written
    (:func:`touch`); None when unknown, revoked, expired or its person is disabled. Reads only."""
    if not is_personal(secret) or len(secret) > 200:
        return None
    now = now or utcnow()
    row = db.scalar(select(PersonKey).where(PersonKey.key_hash == key_hash(secret)))
    if row is None or row.revoked_at is not None or (row.expires_at is not None and row.expires_at <= now):
        return None
    user = db.get(User, row.user_id)
    if user is None or user.disabled:
        return None
    due = row.last_used_at is None or now - row.last_used_at > TOUCH_EVERY
    scope = KeyScope(
        key_id=row.id,
        projects=frozenset(row.projects) if row.projects is not None else None,
        read_only=row.read_only,
        manage_users=row.manage_users and user.is_admin,
    )
    return user, scope, due


def touch(db: Session, key_id: int) -> None:
    db.execute(update(PersonKey).where(PersonKey.id == key_id).values(last_used_at=utcnow()))


def of(db: Session, user_id: int) -> list[PersonKey]:
    return list(db.scalars(select(PersonKey).where(PersonKey.user_id == user_id).order_by(PersonKey.id)))


def revoke(db: Session, user_id: int, key_id: int) -> PersonKey:
    """Revoke one of the person's keys (another person's key does not exist for them)."""
    row = db.get(PersonKey, key_id)
    if row is None or row.user_id != user_id:
        raise NotFoundError("API key", key_id)
    if row.revoked_at is None:
        row.revoked_at = utcnow()
    return row
