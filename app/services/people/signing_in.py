"""Signing in and out: with a password, as the first administrator, or by changing one's password.

Every way in starts a new browser session (a new token, never one the browser brought). Failed
attempts count per account and per client address (throttle.py); a wrong email and a wrong
password get the same answer after the same work. Logged: the outcome, the person's id and the
client address, never a password or a token.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from app.db.database import Database
from app.db.models import User
from app.errors import ForbiddenError, TooManyAttemptsError, ValidationError
from app.services.people import passwords, sessions, users
from app.services.people.access import Caller, CallerKind
from app.services.people.throttle import SignInLimits

log = logging.getLogger("ragchat.people")

WRONG = "the email or the password is wrong"


@dataclass(frozen=True)
class SignedIn:
    """The person now signed in, and their new session's token (for the cookie, shown once)."""

    person: User
    token: str


def _throttled(limits: SignInLimits, account: str, address: str) -> None:
    wait = limits.retry_after(account, address)
    if wait:
        log.warning("sign-in refused: too many failed attempts (address %s)", address)
        raise TooManyAttemptsError(f"too many failed sign-ins: try again in {wait} seconds", retry_after=wait)


def sign_in(store: Database, limits: SignInLimits, email: str, password: str, address: str) -> SignedIn:
    """A new session for the person with this email and password (not disabled)."""
    account = email.strip().lower()[:320]
    _throttled(limits, account, address)
    with store.read() as db:
        found = users.by_email(db, account)
    # Checked outside any transaction: argon2 takes tens of milliseconds, no lock is held meanwhile.
    ok = passwords.verify(found.password_hash if found is not None else None, password)
    if found is None or not ok or found.disabled:
        limits.failed(account, address)
        log.warning("sign-in failed (person %s, address %s)", found.id if found is not None else "-", address)
        raise ValidationError("password", WRONG)
    with store.write() as db:
        user = users.require(db, found.id)
        if user.password_hash is not None and passwords.needs_rehash(user.password_hash):
            user.password_hash = passwords.hash_password(password)
        token = sessions.start(db, user)
    limits.succeeded(account)
    log.info("signed in (person %d, address %s)", user.id, address)
    return SignedIn(user, token)


def sign_out(store: Database, token: str) -> None:
    """End this browser's session (a token that names none: nothing to do)."""
    if token:
        with store.write() as db:
            sessions.end(db, token)


def first_run_available(store: Database, *, from_loopback: bool) -> bool:
    if not from_loopback:
        return False
    with store.read() as db:
        return users.count(db) == 0


def set_up_first_administrator(store: Database, new: users.NewPerson, *, from_loopback: bool) -> SignedIn:
    """The server's first person, an administrator, signed in: only while it has no people, and
    only from this machine (whoever reaches a fresh server first would otherwise own it)."""
    if not from_loopback:
        raise ForbiddenError(
            "the first administrator is set up from the server's own machine (loopback), or with "
            "`ragchat users create --admin`"
        )
    with store.write() as db:
        if users.count(db) > 0:
            raise ForbiddenError("this server has people already: sign in")
        user = users.create(db, users.NewPerson(new.email, new.name, new.password, is_admin=True))
        token = sessions.start(db, user)
    log.info("first administrator set up (person %d)", user.id)
    return SignedIn(user, token)


def change_password(
    store: Database, limits: SignInLimits, caller: Caller, current: str, new: str, address: str
) -> SignedIn:
    """A signed-in person's new password: every other browser of theirs is signed out, this one
    gets a new session. Only from a browser session (a key cannot take over its person's account)."""
    if caller.kind != CallerKind.PERSON or caller.user_id is None or caller.key is not None:
        raise ForbiddenError("sign in with your password to change it (not with a key)")
    with store.read() as db:
        found = users.require(db, caller.user_id)
    account = found.email
    _throttled(limits, account, address)
    if not passwords.verify(found.password_hash, current):
        limits.failed(account, address)
        log.warning("password change refused: wrong current password (person %d, address %s)", found.id, address)
        raise ValidationError("currentPassword", "wrong password")
    passwords.check_new(new, field="newPassword")
    with store.write() as db:
        user = users.require(db, found.id)
        users.set_password(db, user, new)
        token = sessions.start(db, user)
    limits.succeeded(account)
    log.info("password changed (person %d, address %s)", user.id, address)
    return SignedIn(user, token)
