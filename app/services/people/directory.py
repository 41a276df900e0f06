"""The server's people, as whoever manages them sees them: the list, and disabling (never the
caller themselves, never the last administrator who can still sign in)."""

from __future__ import annotations

import logging

from sqlalchemy import func, select

from app.db.database import Database
from app.db.models import User
from app.errors import ConflictError
from app.services.people import users
from app.services.people.access import Caller
from app.services.people.invitations import require_manager

log = logging.getLogger("ragchat.people")


def people(store: Database, caller: Caller) -> list[User]:
    """Everyone, by email."""
    require_manager(caller)
    with store.read() as db:
        return list(db.scalars(select(User).order_by(User.email)))


def me(store: Database, caller: Caller) -> User | None:
    """The person calling (None: a server key, an open server, or nobody)."""
    if caller.user_id is None:
        return None
    with store.read() as db:
        return db.get(User, caller.user_id)


def set_disabled(store: Database, caller: Caller, user_id: int, disabled: bool) -> User:
    require_manager(caller)
    with store.write() as db:
        user = users.require(db, user_id)
        if disabled and user_id == caller.user_id:
            raise ConflictError("you cannot disable yourself: ask another administrator")
        if disabled and user.is_admin and not user.disabled:
            others = db.scalar(
                select(func.count())
                .select_from(User)
                .where(User.is_admin.is_(True), User.disabled.is_(False), User.id != user_id)
            )
            if not others:
                raise ConflictError("the last administrator cannot be disabled: make another one first")
        users.set_disabled(db, user, disabled)
    log.info(
        "person %d %s (by %s)", user_id, "disabled" if disabled else "enabled", caller.user_id or caller.kind.value
    )
    return user
