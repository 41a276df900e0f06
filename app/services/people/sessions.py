"""Browser sessions: a random token in an HttpOnly cookie, its SHA-256 in ``browser_sessions``.

A session ends when it is revoked (sign-out, a password change, the person disabled), when it has
not been used for ``idle`` or when it is older than ``absolute``, whichever comes first. Signing in
always makes a new token (no fixation: a token planted before sign-in is never promoted).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.models import BrowserSession, User, utcnow

# last_seen_at is written at most this often per session: a page of parallel requests is one write.
TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class Lifetimes:
    idle: timedelta
    absolute: timedelta


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def start(db: Session, user: User) -> str:
    """A new session for ``user``; the token, shown to the browser once (as its cookie)."""
    token = secrets.token_urlsafe(32)
    db.add(BrowserSession(token_hash=token_hash(token), user_id=user.id))
    db.flush()
    return token


def person(
    db: Session, token: str, lifetimes: Lifetimes, *, now: datetime | None = None
) -> tuple[User, int | None] | None:
    """The person a session token signs in, with the session's id when its last use is due to be
    written (:func:`touch`); None when unknown, revoked, expired or the person is disabled. Reads only."""
    if not token or len(token) > 200:
        return None
    now = now or utcnow()
    row = db.scalar(select(BrowserSession).where(BrowserSession.token_hash == token_hash(token)))
    if row is None or row.revoked_at is not None:
        return None
    if now - row.last_seen_at > lifetimes.idle or now - row.created_at > lifetimes.absolute:
        return None
    user = db.get(User, row.user_id)
    if user is None or user.disabled or row.created_at < user.credentials_since:
        return None
    return user, (row.id if now - row.last_seen_at > TOUCH_EVERY else None)


def touch(db: Session, session_id: int) -> None:
    db.execute(update(BrowserSession).where(BrowserSession.id == session_id).values(last_seen_at=utcnow()))


def end(db: Session, token: str) -> None:
    """Sign out this browser: its session is revoked (the cookie is cleared by the caller)."""
    db.execute(
        update(BrowserSession)
        .where(BrowserSession.token_hash == token_hash(token), BrowserSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
