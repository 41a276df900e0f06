"""Who belongs to a knowledge base, and with which role. Its members see the list; its owners (and
administrators) change it. A knowledge base that has owners always keeps one."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.database import Database
from app.db.enums import MemberRole
from app.db.models import Membership, User
from app.errors import ConflictError, NotFoundError
from app.services.people import users
from app.services.people.access import Caller, require_project

log = logging.getLogger("ragchat.people")


@dataclass(frozen=True)
class Member:
    person: User
    role: MemberRole
    project_id: int


def members(store: Database, caller: Caller, project_id: int) -> list[Member]:
    """The knowledge base's members, by email."""
    with store.read() as db:
        require_project(db, caller, project_id)
        rows = db.execute(
            select(User, Membership.role)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.project_id == project_id)
            .order_by(User.email)
        ).all()
    return [Member(user, role, project_id) for user, role in rows]


def add(store: Database, caller: Caller, project_id: int, email: str, role: MemberRole) -> Member:
    with store.write() as db:
        require_project(db, caller, project_id, MemberRole.OWNER)
        user = users.by_email(db, email)
        if user is None:
            raise NotFoundError("person", email.strip()[:320])
        if _membership(db, project_id, user.id) is not None:
            raise ConflictError(f"{user.email} is a member already: change their role instead")
        db.add(Membership(user_id=user.id, project_id=project_id, role=role))
    _log("added as " + role.value, project_id, user.id, caller)
    return Member(user, role, project_id)


def set_role(store: Database, caller: Caller, project_id: int, user_id: int, role: MemberRole) -> Member:
    with store.write() as db:
        require_project(db, caller, project_id, MemberRole.OWNER)
        row = _require_membership(db, project_id, user_id)
        if role != MemberRole.OWNER:
            _keep_an_owner(db, row)
        row.role = role
        user = users.require(db, user_id)
    _log("role set to " + role.value, project_id, user_id, caller)
    return Member(user, role, project_id)


def remove(store: Database, caller: Caller, project_id: int, user_id: int) -> Member:
    with store.write() as db:
        require_project(db, caller, project_id, MemberRole.OWNER)
        row = _require_membership(db, project_id, user_id)
        _keep_an_owner(db, row)
        removed = Member(users.require(db, user_id), row.role, project_id)
        db.delete(row)
    _log("removed", project_id, user_id, caller)
    return removed


def _membership(db: Session, project_id: int, user_id: int) -> Membership | None:
    return db.scalar(select(Membership).where(Membership.project_id == project_id, Membership.user_id == user_id))


def _require_membership(db: Session, project_id: int, user_id: int) -> Membership:
    row = _membership(db, project_id, user_id)
    if row is None:
        raise NotFoundError("member", user_id)
    return row


def _keep_an_owner(db: Session, row: Membership) -> None:
    """Refuse to take the owner role from the knowledge base's last owner."""
    if row.role != MemberRole.OWNER:
        return
    owners = db.scalar(
        select(func.count())
        .select_from(Membership)
        .where(Membership.project_id == row.project_id, Membership.role == MemberRole.OWNER)
    )
    if (owners or 0) <= 1:
        raise ConflictError("a knowledge base keeps at least one owner: make another member its owner first")


def _log(what: str, project_id: int, user_id: int, caller: Caller) -> None:
    by = f"person {caller.user_id}" if caller.user_id is not None else caller.kind.value
    log.info("member %s: person %d in knowledge base %d (by %s)", what, user_id, project_id, by)
