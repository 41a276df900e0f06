"""Knowledge bases (projects): create, update (rename, describe), delete, list, look up."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import locks
from app.db.database import Database
from app.db.enums import MemberRole, SpaceStatus
from app.db.models import Chunk, Document, EmbeddingSpace, Membership, Project
from app.errors import ConflictError, ForbiddenError, ValidationError
from app.rag.index import spaces
from app.services.pages import Order, Page, PageRequest, page
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller, CallerKind

NAME_MAX = 200
DESCRIPTION_MAX = 2000


@dataclass(frozen=True)
class ProjectStats:
    documents: int
    chunks: int
    embedding_space: str | None


def clean_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise ValidationError("name", "must not be empty")
    if len(cleaned) > NAME_MAX:
        raise ValidationError("name", f"must be at most {NAME_MAX} characters (got {len(cleaned)})")
    return cleaned


def _check_description(description: str) -> str:
    if len(description) > DESCRIPTION_MAX:
        raise ValidationError("description", f"must be at most {DESCRIPTION_MAX} characters")
    return description


def _unique(db: Session, name: str, except_id: int | None = None) -> None:
    # Names are compared case-insensitively, which no plain unique constraint says: writers of
    # names take turns (PostgreSQL; app/db/locks.py), so two servers cannot both create "KB" and "kb".
    locks.take_turns(db, "project names")
    # Both sides lowered by SQLite: Python's lower() folds non-ASCII letters that SQLite's does not,
    # so "Æ" passed this check as "æ" and then hit the UNIQUE constraint as an internal error.
    clash = db.scalar(select(Project.id).where(func.lower(Project.name) == func.lower(name)))
    if clash is not None and clash != except_id:
        raise ConflictError(f"a knowledge base named {name!r} already exists")


def _by_name(db: Session, name: str) -> Project | None:
    return db.scalar(select(Project).where(func.lower(Project.name) == func.lower(" ".join(name.split()))))


def get(store: Database, project_id: int, *, caller: Caller = THE_SERVER) -> Project:
    with store.read() as db:
        return access.require_project(db, caller, project_id)


def require_role(store: Database, project_id: int, need: MemberRole, *, caller: Caller) -> Project:
    """The knowledge base, when the caller has at least ``need`` in it (asked before slow work)."""
    with store.read() as db:
        return access.require_project(db, caller, project_id, need)


def find(store: Database, name: str) -> Project | None:
    """The project named ``name`` (compared case-insensitively, spaces collapsed), if any."""
    with store.read() as db:
        return _by_name(db, name)


def create(store: Database, name: str, description: str = "", *, caller: Caller = THE_SERVER) -> Project:
    """A new knowledge base; a person who creates one is its owner. Any signed-in person may; a
    read-only key may not."""
    require_may_create(caller)
    name, description = clean_name(name), _check_description(description)
    with store.write() as db:
        _unique(db, name)
        return add(db, name, description, caller=caller)


def require_may_create(caller: Caller) -> None:
    """Any signed-in person may create a knowledge base; a read-only key, or one limited to some
    knowledge bases, may not."""
    access.require_signed_in(caller)
    if caller.key is not None and caller.key.read_only:
        raise ForbiddenError("this key is read-only")
    if caller.key is not None and caller.key.projects is not None:
        raise ForbiddenError("this key is limited to some knowledge bases: it cannot create one")


def add(db: Session, name: str, description: str, *, caller: Caller) -> Project:
    """A new knowledge base in ``db``'s transaction (its name checked by the caller); a person who
    creates one is its owner."""
    project = Project(name=name, description=description)
    db.add(project)
    db.flush()
    if caller.kind == CallerKind.PERSON and caller.user_id is not None:
        db.add(Membership(user_id=caller.user_id, project_id=project.id, role=MemberRole.OWNER))
        db.flush()
    return project


def get_or_create(store: Database, name: str) -> tuple[Project, bool]:
    found = find(store, name)
    return (found, False) if found is not None else (create(store, name), True)


def update(
    store: Database,
    project_id: int,
    *,
    name: str | None = None,
    description: str | None = None,
    caller: Caller = THE_SERVER,
) -> Project:
    """Rename a knowledge base and/or change its description (None leaves a field as it is); the
    same rules as :func:`create`. Both are checked before anything is written."""
    problems: list[tuple[str, str]] = []
    for field, check, value in (("name", clean_name, name), ("description", _check_description, description)):
        if value is not None:
            try:
                check(value)
            except ValidationError as exc:
                problems.append((field, exc.reason))
    if problems:
        (field, message), *more = problems
        raise ValidationError(field, message, more=more)
    with store.write() as db:
        project = access.require_project(db, caller, project_id, MemberRole.OWNER)
        if name is not None:
            name = clean_name(name)
            _unique(db, name, except_id=project_id)
            project.name = name
        if description is not None:
            project.description = description
        db.flush()
        return project


def delete(store: Database, project_id: int, *, caller: Caller = THE_SERVER) -> Project:
    """Delete a knowledge base with its documents, chunks, vectors and chat sessions (its owners
    only). Returns the row as it was."""
    with store.write() as db:
        project = access.require_project(db, caller, project_id, MemberRole.OWNER)
        spaces.drop_project_spaces(db, project_id)
        db.delete(project)
        return project


# By name (as SQLite compares it), then id.
ORDER = Order((Project.name, Project.id))


def visible(store: Database, *, caller: Caller = THE_SERVER, limit: int = 1000) -> list[Project]:
    """The knowledge bases the caller sees, by name (at most ``limit``)."""
    query = select(Project).order_by(Project.name, Project.id).limit(limit)
    with store.read() as db:
        ids = access.visible_projects(db, caller)
        if ids is not None:
            query = query.where(Project.id.in_(sorted(ids)))
        return list(db.scalars(query))


def list_page(store: Database, request: PageRequest, *, caller: Caller = THE_SERVER) -> Page[Project]:
    """A page of the knowledge bases the caller sees, by name."""
    with store.read() as db:
        visible = access.visible_projects(db, caller)
        where = [Project.id.in_(visible)] if visible is not None else []
        return page(db, Project, ORDER, request, where)


def stats(store: Database, project_ids: list[int]) -> dict[int, ProjectStats]:
    """Document and chunk counts and the active embedding space, for many projects in 3 queries."""
    with store.read() as db:
        docs = dict(
            db.execute(
                select(Document.project_id, func.count())
                .where(Document.project_id.in_(project_ids))
                .group_by(Document.project_id)
            ).all()
        )
        chunks = dict(
            db.execute(
                select(Chunk.project_id, func.count())
                .where(Chunk.project_id.in_(project_ids))
                .group_by(Chunk.project_id)
            ).all()
        )
        active = db.scalars(
            select(EmbeddingSpace).where(
                EmbeddingSpace.project_id.in_(project_ids), EmbeddingSpace.status == SpaceStatus.ACTIVE
            )
        ).all()
        labels = {space.project_id: space.label for space in active}
    return {pid: ProjectStats(docs.get(pid, 0), chunks.get(pid, 0), labels.get(pid)) for pid in project_ids}
