"""People: created by an administrator (or the first one by the CLI or the first-run screen),
signing in with an email and a password, disabled rather than deleted so their traces keep a name."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db.models import BrowserSession, ChatSession, User, utcnow
from app.errors import ConflictError, NotFoundError, ValidationError
from app.services.people import passwords

# Not RFC 5322: a sign-in name that looks like an address, one "@", no spaces, a dot in the domain.
_EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+")


def normalise_email(email: str) -> str:
    email = email.strip().lower()
    if len(email) > 320 or not _EMAIL.fullmatch(email):
        raise ValidationError("email", "not an email address (name@example.org)")
    return email


@dataclass(frozen=True)
class NewPerson:
    email: str
    name: str = ""
    password: str | None = None  # None: signs in through single sign-on only
    is_admin: bool = False


def count(db: Session) -> int:
    return int(db.scalar(select(func.count()).select_from(User)) or 0)


def require(db: Session, user_id: int) -> User:
    user = db.get(User, user_id)
    if user is None:
        raise NotFoundError("person", user_id)
    return user


def by_email(db: Session, email: str) -> User | None:
    return db.scalar(select(User).where(User.email == email.strip().lower()))


def create(db: Session, new: NewPerson) -> User:
    """A new person (their email is their sign-in name, unique ignoring case)."""
    email = normalise_email(new.email)
    if new.password is not None:
        passwords.check_new(new.password)
    if len(new.name) > 200:
        raise ValidationError("name", "at most 200 characters")
    if by_email(db, email) is not None:
        raise ConflictError(f"a person with email {email} already exists")
    user = User(
        email=email,
        name=new.name.strip(),
        password_hash=passwords.hash_password(new.password) if new.password is not None else None,
        is_admin=new.is_admin,
    )
    db.add(user)
    db.flush()
    return user


def authenticate(db: Session, email: str, password: str) -> User | None:
    """The person whose email and password these are, unless disabled; None otherwise (the same
    answer, at the same cost, whichever part was wrong)."""
    user = by_email(db, email)
    ok = passwords.verify(user.password_hash if user is not None else None, password)
    if user is None or not ok or user.disabled:
        return None
    if user.password_hash is not None and passwords.needs_rehash(user.password_hash):
        user.password_hash = passwords.hash_password(password)
    return user


def set_password(db: Session, user: User, password: str) -> None:
    """A new password; every browser signed in before it is signed out (personal keys stay: they
    are revoked one by one, or all at once by disabling the person)."""
    passwords.check_new(password)
    user.password_hash = passwords.hash_password(password)
    sign_out_everywhere(db, user)


def sign_out_everywhere(db: Session, user: User) -> None:
    """Revoke every browser session of the person."""
    now = utcnow()
    user.credentials_since = now
    db.execute(
        update(BrowserSession)
        .where(BrowserSession.user_id == user.id, BrowserSession.revoked_at.is_(None))
        .values(revoked_at=now)
    )


def set_disabled(db: Session, user: User, disabled: bool) -> None:
    """A disabled person cannot sign in; their browsers are signed out and their keys stop working
    at once (a key is checked against its person on every use)."""
    user.disabled = disabled
    if disabled:
        sign_out_everywhere(db, user)


def unowned_chats(db: Session) -> int:
    """Chats no person owns (made before people existed): the administrators'."""
    return int(db.scalar(select(func.count()).select_from(ChatSession).where(ChatSession.owner_id.is_(None))) or 0)
