"""One knowledge base as a file: `ragchat export-project` and `ragchat import-project`.

An archive (a gzipped tar) holds the knowledge base's name and description, its documents (with
their tags and dates) and their chunks (text, exact locations, headings), the vectors of its active
embedding space and which model made them, its chat sessions with their settings, messages, traces,
citations and tool calls, its own tools (a header's secret by *name*, never a value), and which tool
groups each chat allows. Rows are written as the database holds them, one JSON object per line, so
an archive is readable and diffable; the vectors are one float32 ``.npy`` matrix.

What does not travel, on purpose:
- people and members: they are the server's, not the knowledge base's. A chat's owner is kept when
  the target has a person with the same email, otherwise the chat becomes the administrators'
  (as chats made before people existed); members are added again on the target;
- the server's own tools: a call of one keeps its name, not its id;
- anything in flight: an answer still streaming is imported as failed, and a tool call waiting for
  approval (or running) as failed, because an approval given on one server must not run a request
  on another;
- the original files: the server keeps what it parsed (chunks with their locations), not the
  uploads, so an archive is the knowledge base as searched and cited, not the files it came from.

Importing writes everything in one transaction (a failure leaves the target as it was) under fresh
ids, mapped through every reference (chunks to documents, citations to messages, chunks and
documents, tool calls to messages and tools). The vectors are inserted as they are when the target's
embedder makes the same space; otherwise every chunk is embedded with the target's embedder first,
before the transaction. An archive from another ragchat version imports when its columns are a
subset of this version's (new columns take their defaults); a column this version does not have is
refused by name rather than dropped.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
from sqlalchemy import ColumnElement, LargeBinary, Table, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db import migrate
from app.db.database import Database
from app.db.enums import MemberRole, MessageStatus, SpaceStatus, ToolCallStatus, ToolKind
from app.db.models import (
    ChatMessage,
    ChatSession,
    Chunk,
    Citation,
    Document,
    DocumentTag,
    Project,
    SessionToolGroup,
    StoredToolCall,
    Tool,
    User,
    UTCDateTime,
)
from app.errors import ConflictError, NotFoundError, ValidationError
from app.llm.base import Embedder, SpaceId
from app.rag.index import spaces, vector_store
from app.services import projects
from app.services.database_copy import read_vectors
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller
from app.services.tools.catalog import tool_problems
from app.services.tools.schema import check_schema
from app.settings import ToolSettings

FORMAT = "ragchat-project"
VERSION = 1
EMBED_BATCH = 256
# An archive names exactly these members; anything else is refused before it is read.
MANIFEST, VECTORS, VECTOR_IDS = "manifest.json", "vectors.npy", "vector_ids.json"
# Parents before children: each table's references point at tables earlier in the list.
TABLES: tuple[Table, ...] = tuple(
    model.__table__  # type: ignore[misc]
    for model in (
        Document,
        DocumentTag,
        Chunk,
        Tool,
        ChatSession,
        SessionToolGroup,
        ChatMessage,
        Citation,
        StoredToolCall,
    )
)
MEMBERS = {MANIFEST, VECTORS, VECTOR_IDS} | {f"rows/{t.name}.jsonl" for t in TABLES}
REQUIRED = {MANIFEST, VECTORS, VECTOR_IDS, "rows/documents.jsonl", "rows/chunks.jsonl"}
MAX_LINE = 64 * 1024 * 1024  # one row's JSON: a message's trace is the largest


@dataclass
class ArchiveReport:
    """What an export wrote or an import made: the knowledge base, rows per table, vectors."""

    project_id: int
    name: str
    rows: dict[str, int] = field(default_factory=dict)
    vectors: int = 0
    space: str | None = None
    re_embedded: bool = False


# ---- export ----------------------------------------------------------------------------------


def export_project(store: Database, which: str | int, target: Path, *, caller: Caller = THE_SERVER) -> ArchiveReport:
    """Write the knowledge base ``which`` (its name or id) to ``target`` (written beside it, renamed
    when complete). Its owners may, as for anything that takes all of it away."""
    with store.read() as db:  # one snapshot: the rows and vectors agree
        if isinstance(which, int):
            project = access.require_project(db, caller, which, MemberRole.OWNER)
        else:
            found = db.scalar(select(Project).where(Project.name == which))
            if found is None:
                raise NotFoundError("knowledge base", repr(which))
            project = access.require_project(db, caller, found.id, MemberRole.OWNER)
        report = ArchiveReport(project.id, project.name)
        space = spaces.active_space(db, project.id)
        partial = target.with_name(f".{target.name}.partial")
        try:
            with tarfile.open(partial, "w:gz") as archive:
                for table in TABLES:
                    lines = [
                        json.dumps(_row_out(table, row), ensure_ascii=False)
                        for row in _rows_of(db, table, project.id, caller)
                    ]
                    report.rows[table.name] = len(lines)
                    _add(archive, f"rows/{table.name}.jsonl", "".join(line + "\n" for line in lines).encode())
                ids: list[int] = []
                matrix = np.zeros((0, space.dimensions if space else 0), dtype=np.float32)
                if space is not None:
                    batches = list(read_vectors(db.connection(), space.table))
                    ids = [i for batch_ids, _ in batches for i in batch_ids]
                    if batches:
                        matrix = np.concatenate([vectors for _, vectors in batches]).astype(np.float32)
                buffer = io.BytesIO()
                np.save(buffer, matrix, allow_pickle=False)
                _add(archive, VECTORS, buffer.getvalue())
                _add(archive, VECTOR_IDS, json.dumps(ids).encode())
                report.vectors, report.space = len(ids), space.label if space else None
                manifest = {
                    "format": FORMAT,
                    "version": VERSION,
                    "exported_at": datetime.now(UTC).isoformat(),
                    "revision": migrate.head_revision(),
                    "project": {"name": project.name, "description": project.description},
                    "space": None
                    if space is None
                    else {"provider": space.provider, "model": space.model, "dimensions": space.dimensions},
                    "rows": report.rows,
                    "vectors": report.vectors,
                    "owners": _owner_emails(db, project.id, caller),
                }
                _add(archive, MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False).encode())
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    return report


def _rows_of(db: Session, table: Table, project_id: int, caller: Caller = THE_SERVER) -> Iterator[Any]:
    # The chats the caller may read (an owner's export holds their own and the shared ones, never
    # another member's private chats; the operator's holds every chat).
    sessions = select(ChatSession.id).where(ChatSession.project_id == project_id)
    if (readable := access.chat_filter(caller)) is not None:
        sessions = sessions.where(readable)  # type: ignore[arg-type]
    messages = select(ChatMessage.id).where(ChatMessage.session_id.in_(sessions))
    # Which rows are the knowledge base's: its own, or those of its chats and their messages.
    documents = select(Document.id).where(Document.project_id == project_id)
    scope = {
        "document_tags": ("document_id", documents),
        "chat_sessions": ("id", sessions),
        "chat_session_tool_groups": ("session_id", sessions),
        "chat_messages": ("session_id", sessions),
        "citations": ("message_id", messages),
        "tool_calls": ("session_id", sessions),
    }
    where = (
        table.c[scope[table.name][0]].in_(scope[table.name][1])
        if table.name in scope
        else table.c["project_id"] == project_id
    )
    order = list(table.primary_key.columns)
    yield from (
        db.connection()
        .execution_options(stream_results=True)
        .execute(select(table).where(where).order_by(*order))
        .mappings()
    )


def _owner_emails(db: Session, project_id: int, caller: Caller) -> dict[str, str]:
    """Each exported chat's owner's email by their id in this database, so the target can find the
    same person."""
    owners = select(ChatSession.owner_id).where(ChatSession.project_id == project_id)
    if (readable := access.chat_filter(caller)) is not None:
        owners = owners.where(readable)  # type: ignore[arg-type]
    return {
        str(user_id): email for user_id, email in db.execute(select(User.id, User.email).where(User.id.in_(owners)))
    }


def _row_out(table: Table, row: Any) -> dict[str, Any]:
    return {name: _value_out(table.c[name], value) for name, value in row.items()}


def _value_out(column: ColumnElement[Any], value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value  # StrEnum members are str; JSON columns are already JSON values


def _add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
    archive.addfile(info, io.BytesIO(data))


# ---- import ----------------------------------------------------------------------------------


@dataclass
class _Archive:
    manifest: dict[str, Any]
    rows: dict[str, list[dict[str, Any]]]
    vector_ids: list[int]
    vectors: np.ndarray


def read_archive(source: Path | IO[bytes], *, max_bytes: int) -> _Archive:
    """The archive at ``source`` (a path or an open file), checked: only its known members, read
    within ``max_bytes`` in all (a small file that expands stops there), a manifest of this format."""
    found: dict[str, bytes] = {}
    total = 0
    label = source.name if isinstance(source, Path) else "the archive"
    path = Path(label)
    try:
        with _open(source) as archive:
            for member in archive:
                if member.name not in MEMBERS or not member.isfile() or member.name in found:
                    raise ValidationError(
                        "archive", f"{path.name} is not a ragchat project archive (unexpected member {member.name!r})"
                    )
                total += member.size
                if total > max_bytes:
                    raise ValidationError("archive", f"{path.name} expands to more than {max_bytes} bytes")
                stream = archive.extractfile(member)
                assert stream is not None  # a regular file
                found[member.name] = stream.read(member.size)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        if isinstance(exc, FileNotFoundError):
            raise NotFoundError("archive", str(source)) from exc
        raise ValidationError("archive", f"{path.name} is not a readable gzipped tar: {exc}") from exc
    # A table newer than the exporting version (its rows file absent) has no rows to bring.
    missing = sorted(REQUIRED - found.keys())
    if missing:
        raise ValidationError("archive", f"{path.name} lacks {', '.join(missing)}")
    manifest = _json(found[MANIFEST], MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValidationError("archive", f"{path.name} is not a ragchat project archive")
    if manifest.get("version") != VERSION:
        raise ValidationError(
            "archive", f"{path.name} is format version {manifest.get('version')}; this ragchat reads {VERSION}"
        )
    rows = {
        t.name: [_json(line, t.name) for line in found.get(f"rows/{t.name}.jsonl", b"").splitlines() if line.strip()]
        for t in TABLES
    }
    try:
        vectors = np.load(io.BytesIO(found[VECTORS]), allow_pickle=False)
    except ValueError as exc:
        raise ValidationError("archive", f"{VECTORS} is not a float32 matrix: {exc}") from exc
    ids = _json(found[VECTOR_IDS], VECTOR_IDS)
    if vectors.ndim != 2 or vectors.dtype != np.float32 or not isinstance(ids, list) or len(ids) != len(vectors):
        raise ValidationError("archive", f"{VECTORS} and {VECTOR_IDS} do not agree")
    return _Archive(manifest, rows, [int(i) for i in ids], vectors)


def _open(source: Path | IO[bytes]) -> tarfile.TarFile:
    if isinstance(source, Path):
        return tarfile.open(source, "r:gz")
    return tarfile.open(fileobj=source, mode="r:gz")


def _json(data: bytes, what: str) -> Any:
    if len(data) > MAX_LINE and what != MANIFEST:
        raise ValidationError("archive", f"a row of {what} is longer than {MAX_LINE} bytes")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ValidationError("archive", f"{what} holds something that is not JSON: {exc}") from exc


def import_project(
    store: Database,
    source: Path | IO[bytes],
    embedder: Embedder,
    tool_settings: ToolSettings,
    *,
    name: str | None = None,
    max_bytes: int = 8 * 1024**3,
    caller: Caller = THE_SERVER,
    progress: Callable[[int], None] = lambda n: None,
) -> ArchiveReport:
    """Make a new knowledge base from the archive ``source`` (named ``name``, or as exported); a
    person who imports one is its owner. Its tools are held to the rules for a knowledge base's tools
    on this server (the secrets lent to them, each bound to its origins): an archive is written by
    whoever exported it, not by this server's operator."""
    projects.require_may_create(caller)  # asked first: a refused caller's archive is not read
    found = read_archive(source, max_bytes=max_bytes)
    for table in TABLES:
        _check_columns(table, found.rows[table.name])
    _check_tools(found.rows["tools"], tool_settings)
    wanted = projects.clean_name(name or str(found.manifest["project"]["name"]))
    if projects.find(store, wanted) is not None:
        raise ConflictError(f"a knowledge base named {wanted!r} exists here: import it under another name (--name)")
    tool_names = [str(r["name"]) for r in found.rows["tools"]]
    with store.read() as db:
        taken = list(db.scalars(select(Tool.name).where(Tool.name.in_(tool_names)))) if tool_names else []
    if taken:
        raise ConflictError(
            f"tools named {', '.join(sorted(taken))} exist here; tool names are unique on a server: "
            "rename or delete them first"
        )
    chunk_ids, vectors, re_embedded = _vectors_for(found, embedder, progress)
    report = ArchiveReport(0, wanted, space=embedder.space.label if len(chunk_ids) else None, re_embedded=re_embedded)
    try:
        with store.write() as db:
            description = str(found.manifest["project"].get("description", ""))
            project = projects.add(db, wanted, description, caller=caller)
            report.project_id = project.id
            owners = _owners_here(db, found.manifest.get("owners", {}))
            maps: dict[str, dict[int, int]] = {}
            for table in TABLES:
                rows = [_row_in(table, row, project.id, maps, owners) for row in found.rows[table.name]]
                report.rows[table.name] = len(rows)
                _insert(db, table, rows, found.rows[table.name], maps)
            if chunk_ids:
                space = spaces.create_space(db, project.id, embedder.space, status=SpaceStatus.ACTIVE)
                new_ids = [maps["chunks"][i] for i in chunk_ids]
                for start in range(0, len(new_ids), EMBED_BATCH * 8):
                    vector_store.put(
                        db,
                        space.table,
                        new_ids[start : start + EMBED_BATCH * 8],
                        vectors[start : start + EMBED_BATCH * 8],
                    )
                report.vectors = len(new_ids)
    except IntegrityError as exc:
        raise ConflictError(f"the archive does not fit this database: {exc.orig}") from exc
    return report


def _check_tools(rows: list[dict[str, Any]], settings: ToolSettings) -> None:
    table: Table = Tool.__table__  # type: ignore[assignment]
    problems: list[str] = []
    for row in rows:
        tool = Tool(**{k: _value_in(table.c[k], v) for k, v in row.items() if k != "id"})
        tool.project_id = -1  # a knowledge base's tool, whatever the archive says
        # An MCP tool's schema is its server's, taken as listed; an HTTP tool's is checked as when made.
        schema = [] if tool.kind == ToolKind.MCP else check_schema(tool.input_schema)
        found = schema + tool_problems(tool, settings)
        problems += [f"tool {tool.name!r}: {field}: {message}" for field, message in found]
    if problems:
        raise ValidationError("archive", "its tools are not allowed here: " + "; ".join(problems))


def _check_columns(table: Table, rows: list[dict[str, Any]]) -> None:
    unknown = sorted({key for row in rows for key in row} - set(table.c.keys()))
    if unknown:
        raise ValidationError(
            "archive",
            f"{table.name} has columns this ragchat does not know ({', '.join(unknown)}): "
            "import it with a ragchat at least as new as the one that exported it",
        )


def _vectors_for(
    found: _Archive, embedder: Embedder, progress: Callable[[int], None]
) -> tuple[list[int], np.ndarray, bool]:
    """The chunks' vectors in the target's space: the archive's when the same model made them,
    else every chunk embedded here (before any write, so the import stays one transaction)."""
    chunks = found.rows["chunks"]
    space = found.manifest.get("space")
    same = (
        space is not None
        and SpaceId(str(space["provider"]), str(space["model"]), int(space["dimensions"])) == embedder.space
    )
    known = {int(c["id"]) for c in chunks}
    if same and set(found.vector_ids) == known:
        return found.vector_ids, found.vectors, False
    if same and not set(found.vector_ids) <= known:
        raise ValidationError("archive", "its vectors name chunks it does not hold")
    ids = [int(c["id"]) for c in chunks]
    texts = [str(c["text"]) for c in chunks]
    parts = []
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(embedder.embed(texts[start : start + EMBED_BATCH]))
        progress(min(EMBED_BATCH, len(texts) - start))
    vectors = np.concatenate(parts) if parts else np.zeros((0, embedder.space.dimensions), dtype=np.float32)
    return ids, vectors, True


def _owners_here(db: Session, owners: dict[str, str]) -> dict[int, int]:
    emails = {int(old): str(email).lower() for old, email in owners.items()}
    here = (
        {
            str(e): int(i)
            for e, i in db.execute(select(User.email, User.id).where(User.email.in_(list(emails.values()))))
        }
        if emails
        else {}
    )
    return {old: here[email] for old, email in emails.items() if email in here}


# Where each table's references point, by column: the map of the table they name.
_REFERENCES: dict[str, dict[str, str]] = {
    "document_tags": {"document_id": "documents"},
    "chunks": {"document_id": "documents"},
    "chat_session_tool_groups": {"session_id": "chat_sessions"},
    "chat_messages": {"session_id": "chat_sessions"},
    "citations": {"message_id": "chat_messages", "chunk_id": "chunks", "document_id": "documents"},
    "tool_calls": {
        "message_id": "chat_messages",
        "session_id": "chat_sessions",
        "tool_id": "tools",
        "outcome_message_id": "chat_messages",
    },
}
# References that may be left empty when their row did not travel (a server tool, a deleted chunk).
_OPTIONAL = {
    ("citations", "chunk_id"),
    ("citations", "document_id"),
    ("tool_calls", "tool_id"),
    ("tool_calls", "outcome_message_id"),
}
CUT_OFF = "cut off when the knowledge base was exported: it did not finish on the server it came from"


def _row_in(
    table: Table, row: dict[str, Any], project_id: int, maps: dict[str, dict[int, int]], owners: dict[int, int]
) -> dict[str, Any]:
    out = {name: _value_in(table.c[name], value) for name, value in row.items() if name != "id"}
    if "project_id" in table.c:
        out["project_id"] = project_id
    for column, target in _REFERENCES.get(table.name, {}).items():
        old = row.get(column)
        if old is None:
            continue
        new = maps.get(target, {}).get(int(old))
        if new is None and (table.name, column) not in _OPTIONAL:
            raise ValidationError(
                "archive", f"a row of {table.name} names {target} {old}, which the archive does not hold"
            )
        out[column] = new
    if table.name == "chat_sessions":
        out["owner_id"] = owners.get(int(row["owner_id"])) if row.get("owner_id") is not None else None
    if table.name == "chat_messages":
        out["owner"], out["followed_until"] = None, None
        if out.get("status") == MessageStatus.STREAMING:
            out["status"], out["error"] = MessageStatus.FAILED.value, CUT_OFF
    if table.name == "tool_calls":
        out["owner"] = None
        if out.get("status") in (ToolCallStatus.PREVIEW, ToolCallStatus.RUNNING):
            out["status"], out["error"] = ToolCallStatus.FAILED.value, CUT_OFF
    return out


def _value_in(column: ColumnElement[Any], value: Any) -> Any:
    if value is None:
        return None
    if isinstance(column.type, UTCDateTime):
        return datetime.fromisoformat(value)
    if isinstance(column.type, LargeBinary):
        return base64.b64decode(value)
    return value


def _insert(
    db: Session,
    table: Table,
    rows: list[dict[str, Any]],
    originals: Sequence[dict[str, Any]],
    maps: dict[str, dict[int, int]],
) -> None:
    if not rows:
        maps[table.name] = {}
        return
    if "id" not in table.c:
        db.execute(insert(table), rows)
        return
    # One statement per batch of rows, the new ids returned in the rows' order.
    new_ids = db.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True), rows).scalars().all()
    maps[table.name] = {int(o["id"]): int(n) for o, n in zip(originals, new_ids, strict=True)}
