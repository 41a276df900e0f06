"""One-time links with which a person sets their password: an invitation to a new person, or a
reset of an existing one's password by whoever manages people. The token (256 random bits) is
shown once, stored as its SHA-256, works once and for :data:`LIFETIME`. Managing people is for
administrators (through a key only if it may manage people) and the server itself."""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.database import Database
from app.db.models import Invitation, User, utcnow
from app.errors import ForbiddenError, ValidationError
from app.services.people import sessions, users
from app.services.people.access import Caller
from app.services.people.signing_in import SignedIn

log = logging.getLogger("ragchat.people")

LIFETIME = timedelta(days=7)
PATH = "/invite/"
INVALID = "this link is not valid: it was used, it expired, or it was replaced by a newer one"


@dataclass(frozen=True)
class Issued:
    """A link for ``person``: ``path`` (``/invite/<token>`` on this server) is shown this once."""

    person: User
    path: str
    expires_at: datetime


def require_manager(caller: Caller) -> None:
    if not caller.manages_people:
        raise ForbiddenError("managing people is for administrators (and keys allowed to manage people)")


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _issue(db: Session, user: User) -> Issued:
    """A new link for ``user``; the links issued before it stop working."""
    now = utcnow()
    db.execute(
        update(Invitation).where(Invitation.user_id == user.id, Invitation.used_at.is_(None)).values(used_at=now)
    )
    token = secrets.token_urlsafe(32)
    row = Invitation(token_hash=_token_hash(token), user_id=user.id, expires_at=now + LIFETIME)
    db.add(row)
    db.flush()
    return Issued(user, PATH + token, row.expires_at)


def invite(store: Database, caller: Caller, new: users.NewPerson) -> Issued:
    """A new person without a password, and the link with which they set one."""
    require_manager(caller)
    with store.write() as db:
        if users.count(db) == 0:
            raise ForbiddenError(
                "set up the first administrator first (the first-run screen or `ragchat users create`)"
            )
        user = users.create(db, users.NewPerson(new.email, new.name, None, is_admin=new.is_admin))
        issued = _issue(db, user)
    log.info("person %d invited (administrator: %s, by %s)", user.id, user.is_admin, _who(caller))
    return issued


def reset(store: Database, caller: Caller, user_id: int) -> Issued:
    """Void the person's password and sign them out everywhere; the link sets a new password."""
    require_manager(caller)
    with store.write() as db:
        user = users.require(db, user_id)
        user.password_hash = None
        users.sign_out_everywhere(db, user)
        issued = _issue(db, user)
    log.info("password of person %d reset (by %s)", user_id, _who(caller))
    return issued


def accept(store: Database, token: str, password: str) -> SignedIn:
    """Set the password a link was issued for, once; the person is signed in."""
    with store.write() as db:
        row = db.scalar(select(Invitation).where(Invitation.token_hash == _token_hash(token))) if token else None
        user = db.get(User, row.user_id) if row is not None else None
        if row is None or user is None or row.used_at is not None or row.expires_at <= utcnow() or user.disabled:
            raise ValidationError("token", INVALID)
        users.set_password(db, user, password)
        row.used_at = utcnow()
        session = sessions.start(db, user)
    log.info("invitation accepted (person %d)", user.id)
    return SignedIn(user, session)


def _who(caller: Caller) -> str:
    return f"person {caller.user_id}" if caller.user_id is not None else caller.kind.value
