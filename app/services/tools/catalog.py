"""Tool definitions: list, create, update, delete, each with its embedded text kept in the store; and
the tool groups a chat session may use.

A tool's vector is built when the tool is created or changed (:func:`tool_vectors`), in the
embedder's space, and stored beside it (``tool_vectors``), so selection never embeds every tool at
start. When the embedder fails then, the tool is stored anyway, without a vector (``indexed`` false):
the next selection builds it (app/services/tools/selection.py). The embedding runs before the write
transaction, so no write lock is held while a model works.

Built-in tools (migration 0011) run inside ragchat: their name, schema and kind are the executors'
contract (app/services/tools/builtins.py), so only their description, examples, group and ``core``
flag change, and they are never deleted (leave their group out of a session instead).

MCP tools are imported from an MCP server's listing (app/services/tools/mcp_import.py): their name on the server,
schema and server URL are the server's (import again to refresh them); their description, examples,
group, ``core``, headers, timeout and side effects an owner may change like an HTTP tool's.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.database import Database
from app.db.enums import HttpMethod, ToolKind
from app.db.models import SessionToolGroup, Tool, ToolVector
from app.errors import ConflictError, ValidationError
from app.llm.base import ChatModels, Embedder
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller
from app.services.tools.definitions import (
    DEFAULT_TIMEOUT,
    NAME,
    DryRun,
    ToolChanges,
    check_common,
    check_http,
    check_mcp,
    schema_properties,
)
from app.services.tools.schema import check_schema
from app.settings import ToolSettings

log = logging.getLogger("ragchat.tools")
MAX_SESSION_GROUPS = 20
BUILTIN_GROUP = "knowledge_base"  # the built-in tools' group (migration 0011), reserved even when they leave it
EmbedderFactory = Callable[[], Embedder]


def tool_parts(tool: Tool) -> list[str]:
    """What is embedded for a tool: ``{name} — {description}``, then each example request."""
    return [f"{tool.name} — {tool.description}", *tool.examples]


def tool_text(tool: Tool) -> str:
    """A tool's text, ``{name} — {description} | {example} | {example} ...``: its hash says which
    version of the tool a stored vector was built from."""
    return " | ".join(tool_parts(tool))


def tool_vectors(model: Embedder, tools: Sequence[Tool], *, prefix: Sequence[str] = ()) -> list[np.ndarray]:
    """Each tool's vector: its parts (:func:`tool_parts`) embedded one by one and averaged, then
    L2-normalised, in one ``embed`` call that also embeds ``prefix`` (returned first, as they are).

    Averaging the parts beat embedding the joined text on the tool-selection benchmark (recall@6
    0.987 against 0.947, MRR 0.836 against 0.809; docs/BENCHMARKS.md): a short model such as
    MiniLM reads one example as clearly as a whole request, where a long joined text blurs them."""
    parts = [tool_parts(t) for t in tools]
    embedded = model.embed([*prefix, *(p for group in parts for p in group)])
    out = [np.asarray(v, dtype=np.float32) for v in embedded[: len(prefix)]]
    start = len(prefix)
    for group in parts:
        mean = np.asarray(embedded[start : start + len(group)], dtype=np.float32).mean(axis=0)
        start += len(group)
        norm = float(np.linalg.norm(mean))
        out.append((mean / norm if norm else mean).astype(np.float32))
    return out


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _raise(problems: list[tuple[str, str]]) -> None:
    if problems:
        (field, message), *more = problems
        raise ValidationError(field, message, more=more)


def list_tools(store: Database, group: str | None = None, *, caller: Caller = THE_SERVER) -> list[Tool]:
    """The tools the caller sees (of one group, if given): the server's and those of the knowledge
    bases they see, by group then name."""
    query = select(Tool).order_by(Tool.tool_group, Tool.name)
    if group is not None:
        query = query.where(Tool.tool_group == group)
    with store.read() as db:
        access.require_signed_in(caller)
        visible = access.tool_filter(db, caller)
        if visible is not None:
            query = query.where(visible)  # type: ignore[arg-type]
        return list(db.scalars(query))


def get(store: Database, tool_id: int, *, caller: Caller = THE_SERVER) -> Tool:
    with store.read() as db:
        return access.require_tool(db, caller, tool_id)


def indexed(store: Database, tool_ids: Sequence[int]) -> set[int]:
    """Which of the tools have a vector for their current text (in whatever space)."""
    with store.read() as db:
        rows = db.execute(select(Tool, ToolVector.text_hash).join(ToolVector).where(Tool.id.in_(tool_ids))).all()
    return {tool.id for tool, stored in rows if stored == text_hash(tool_text(tool))}


def create(
    store: Database,
    settings: ToolSettings,
    embedder: EmbedderFactory,
    changes: ToolChanges,
    *,
    project_id: int | None = None,
    caller: Caller = THE_SERVER,
) -> Tool:
    """Register an HTTP tool, the server's or (``project_id``) a knowledge base's; built-in tools
    come with the server."""
    with store.read() as db:  # asked first: a refused caller learns nothing from validation
        access.require_tool_owner(db, caller, project_id)
    missing = [(f, "is required") for f in ("name", "description", "input_schema", "method", "url_template")]
    _raise([(_camel(f), m) for f, m in missing if getattr(changes, f) is None])
    problems = check_common(changes) + check_schema(changes.input_schema)
    assert changes.name is not None and changes.description is not None
    tool = Tool(
        name=changes.name,
        description=changes.description.strip(),
        input_schema=changes.input_schema,
        examples=[e.strip() for e in changes.examples or []],
        tool_group=changes.group or "default",
        core=bool(changes.core),
        kind=ToolKind.HTTP,
        http_method=_method(changes.method),
        url_template=changes.url_template,
        header_secrets=dict(changes.headers or {}),
        timeout_seconds=DEFAULT_TIMEOUT if changes.timeout_seconds is None else changes.timeout_seconds,
        side_effects=bool(changes.side_effects),
        dry_run=_dry_run(changes),
        project_id=project_id,
    )
    _raise(problems + _http_problems(tool, settings))  # every problem at once
    vector = _embed(embedder, tool)
    with store.write() as db:
        access.require_tool_owner(db, caller, project_id)  # again, in the transaction that writes
        if db.scalar(select(Tool.id).where(Tool.name == tool.name)) is not None:
            raise ConflictError(f"a tool named {tool.name!r} already exists")
        _add_new(db, tool, vector)
        return tool


def _add_new(db: Session, tool: Tool, vector: tuple[str, str, bytes] | None) -> None:
    """Insert a tool whose name was free when looked up, with its vector."""
    _check_group(db, tool)
    db.add(tool)
    try:
        db.flush()
    except IntegrityError as exc:  # another writer took the name in between
        raise ConflictError(f"a tool named {tool.name!r} already exists") from exc
    _store_vector(db, tool, vector)


def update(
    store: Database,
    settings: ToolSettings,
    embedder: EmbedderFactory,
    tool_id: int,
    changes: ToolChanges,
    *,
    caller: Caller = THE_SERVER,
) -> Tool:
    """Change a tool; only the given fields. Its vector is rebuilt when its text changed."""
    with store.read() as db:
        current = access.require_tool(db, caller, tool_id, change=True)
    problems = check_common(changes)
    if changes.input_schema is not None:
        problems += check_schema(changes.input_schema)
    changed = _apply(current, changes)
    if changes.headers is None and _destination(changed) != _destination(current):
        # Secrets were granted for where the tool went: a new destination must be granted anew.
        changed.header_secrets = {}
    if current.kind == ToolKind.BUILTIN:
        fixed = {"name": changes.name, **changes.http_fields()}
        problems += [(_camel(f), "a built-in tool's is fixed") for f, v in fixed.items() if v is not None]
    elif current.kind == ToolKind.MCP:
        # What the server says (its schema, where it is) comes from its listing: import again to change it.
        fixed = {
            f: v for f, v in changes.http_fields().items() if f in ("method", "url_template", "dry_run", "input_schema")
        }
        problems += [(_camel(f), "an MCP tool's comes from its server: import it again") for f in fixed]
        problems += _mcp_problems(changed, settings)
    else:
        problems += _http_problems(changed, settings)
    _raise(problems)
    text_changed = tool_text(changed) != tool_text(current)
    vector = _embed(embedder, changed) if text_changed else None
    with store.write() as db:
        row = access.require_tool(db, caller, tool_id, change=True)
        if changed.name != row.name and db.scalar(select(Tool.id).where(Tool.name == changed.name)) is not None:
            raise ConflictError(f"a tool named {changed.name!r} already exists")
        _check_group(db, changed)
        for column in _COLUMNS:
            setattr(row, column, getattr(changed, column))
        db.flush()
        if text_changed:
            db.execute(delete(ToolVector).where(ToolVector.tool_id == row.id))
            _store_vector(db, row, vector)
        return row


def delete_tool(store: Database, tool_id: int, *, caller: Caller = THE_SERVER) -> Tool:
    """Delete an HTTP tool (with its vector). Returns the row as it was."""
    with store.write() as db:
        row = access.require_tool(db, caller, tool_id, change=True)
        if row.kind == ToolKind.BUILTIN:
            raise ValidationError("id", "built-in tools cannot be deleted: leave their group out of sessions instead")
        db.delete(row)
        return row


_COLUMNS = (
    "name", "description", "input_schema", "examples", "tool_group", "core", "http_method", "url_template",
    "header_secrets", "timeout_seconds", "side_effects", "dry_run", "remote_name",
)  # fmt: skip


def _check_group(db: Session, tool: Tool) -> None:
    """Built-in tools' groups are theirs alone: a session that allows them is offered exactly those
    (an HTTP tool planted there would read its questions). Checked in the write transaction."""
    others = select(Tool.kind).where(Tool.tool_group == tool.tool_group)
    kinds = set(db.scalars(others if tool.id is None else others.where(Tool.id != tool.id)))
    if tool.kind is not ToolKind.BUILTIN and (tool.tool_group == BUILTIN_GROUP or ToolKind.BUILTIN in kinds):
        raise ValidationError("group", f"{tool.tool_group!r} is reserved for built-in tools: choose another group")
    if tool.kind is ToolKind.BUILTIN and kinds - {ToolKind.BUILTIN}:
        raise ValidationError("group", f"{tool.tool_group!r} holds HTTP tools: a built-in tool joins none of those")


def _destination(tool: Tool) -> tuple[object, ...]:
    """Where a tool's requests go, and how: what its secret headers were granted for."""
    return (tool.http_method, tool.url_template, tool.dry_run)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _method(method: str | None) -> HttpMethod | None:
    """The method as stored, or None for one that is not (check_http then names it)."""
    return HttpMethod(method) if method is not None and method in HttpMethod.__members__ else None


def _dry_run(changes: ToolChanges) -> dict[str, str] | None:
    if changes.dry_run is None:
        return None
    return {"method": changes.dry_run.method, "url_template": changes.dry_run.url_template}


def _apply(current: Tool, changes: ToolChanges) -> Tool:
    """A detached copy of ``current`` with ``changes`` applied (nothing written)."""
    values = {column: getattr(current, column) for column in _COLUMNS}
    given = {
        "name": changes.name,
        "description": changes.description.strip() if changes.description is not None else None,
        "input_schema": changes.input_schema,
        "examples": [e.strip() for e in changes.examples] if changes.examples is not None else None,
        "tool_group": changes.group,
        "core": changes.core,
        "http_method": _method(changes.method) or changes.method,
        "url_template": changes.url_template,
        "header_secrets": dict(changes.headers) if changes.headers is not None else None,
        "timeout_seconds": changes.timeout_seconds,
        "side_effects": changes.side_effects,
        "dry_run": _dry_run(changes),
    }
    values |= {column: value for column, value in given.items() if value is not None}
    return Tool(id=current.id, kind=current.kind, project_id=current.project_id, **values)


def tool_problems(tool: Tool, settings: ToolSettings) -> list[tuple[str, str]]:
    """What is wrong with a tool's request on this server (an HTTP tool's URL, method and headers; an
    MCP tool's server URL and headers; the secrets either names and their origins), as (field,
    message) pairs."""
    return _mcp_problems(tool, settings) if tool.kind == ToolKind.MCP else _http_problems(tool, settings)


def _mcp_problems(tool: Tool, settings: ToolSettings) -> list[tuple[str, str]]:
    """An MCP tool's server URL (no placeholders), secret headers and timeout."""
    problems = check_mcp(
        url=tool.url_template or "",
        headers=tool.header_secrets,
        timeout_seconds=tool.timeout_seconds,
        settings=settings,
    )
    return problems + _secret_problems(tool, settings)


def _http_problems(tool: Tool, settings: ToolSettings) -> list[tuple[str, str]]:
    dry = tool.dry_run
    return check_http(
        method=str(tool.http_method) if tool.http_method is not None else "",
        url_template=tool.url_template or "",
        headers=tool.header_secrets,
        timeout_seconds=tool.timeout_seconds,
        side_effects=tool.side_effects,
        dry_run=DryRun(dry["method"], dry["url_template"]) if dry else None,
        properties=schema_properties(tool.input_schema),
        settings=settings,
    ) + _secret_problems(tool, settings)


def _secret_problems(tool: Tool, settings: ToolSettings) -> list[tuple[str, str]]:
    """A knowledge base's tool may send only the secrets the operator lent to knowledge bases'
    tools: its editors are not the server's operators, and a secret is the server's credential."""
    if tool.project_id is None:
        return []
    lent = set(settings.knowledge_base_secrets)
    return [
        (
            "headers",
            f"the secret {name!r} is not lent to knowledge bases' tools (RAGCHAT_TOOLS__KNOWLEDGE_BASE_SECRETS)",
        )
        for name in sorted(set(tool.header_secrets.values()) - lent)
    ]


def _embed(embedder: EmbedderFactory, tool: Tool) -> tuple[str, str, bytes] | None:
    """``(space, text hash, float32 bytes)`` of the tool's text, or None when the embedder fails
    (logged; the next selection builds it)."""
    text = tool_text(tool)
    try:
        model = embedder()
        [vector] = tool_vectors(model, [tool])
    except Exception:  # any failure of the model: the definition is still worth storing
        log.warning("tool %r stored without a vector: the embedder failed", tool.name, exc_info=True)
        return None
    return model.space.label, text_hash(text), vector.tobytes()


def _store_vector(db: Session, tool: Tool, vector: tuple[str, str, bytes] | None) -> None:
    if vector is not None:
        space, digest, data = vector
        db.add(ToolVector(tool_id=tool.id, space=space, text_hash=digest, vector=data))


# --- a chat session's tool groups ---------------------------------------------------------------


def session_groups(store: Database, session_ids: Sequence[int]) -> dict[int, list[str]]:
    """The allowed tool groups of each session (sorted; a session without any maps to [])."""
    with store.read() as db:
        return groups_in(db, session_ids)


def groups_in(db: Session, session_ids: Sequence[int]) -> dict[int, list[str]]:
    """``session_groups`` in the caller's transaction."""
    rows = db.execute(
        select(SessionToolGroup.session_id, SessionToolGroup.tool_group)
        .where(SessionToolGroup.session_id.in_(session_ids))
        .order_by(SessionToolGroup.tool_group)
    ).all()
    found: dict[int, list[str]] = {sid: [] for sid in session_ids}
    for sid, group in rows:
        found[sid].append(group)
    return found


def set_session_groups(
    store: Database, models: ChatModels, session_id: int, groups: Sequence[str], *, caller: Caller = THE_SERVER
) -> list[str]:
    """Replace the session's allowed groups (its owner may). Each must hold a tool the chat can be
    offered, and a non-empty list needs a chat model that can call tools."""
    wanted = sorted(set(groups))
    if len(wanted) > MAX_SESSION_GROUPS:
        raise ValidationError("groups", f"at most {MAX_SESSION_GROUPS} groups")
    with store.write() as db:
        chat = access.require_chat(db, caller, session_id, change=True)
        if wanted:
            require_tool_calling(models, chat.provider, chat.model, "groups")
            # Groups this chat could be offered: the server's tools and its own knowledge base's
            # (another knowledge base's group neither counts nor is named as existing).
            reachable = Tool.project_id.is_(None) | (Tool.project_id == chat.project_id)
            known = set(db.scalars(select(Tool.tool_group).where(Tool.tool_group.in_(wanted), reachable)))
            _raise([("groups", f"no tool is in group {g!r}") for g in wanted if g not in known])
        db.execute(delete(SessionToolGroup).where(SessionToolGroup.session_id == session_id))
        db.add_all(SessionToolGroup(session_id=session_id, tool_group=g) for g in wanted)
        return wanted


def require_tool_calling(models: ChatModels, provider: str, model: str, field: str) -> None:
    """ValidationError unless the chat model's provider declares tool calling."""
    if not models.capabilities(provider, model).tool_calling:
        raise ValidationError(
            field,
            f"the chat model {provider}/{model} cannot call tools: choose a model whose provider declares tool "
            "calling (openai, ollama) before allowing tool groups",
        )


def check_model_change(db: Session, models: ChatModels, session_id: int, provider: str, model: str) -> None:
    """A session with tool groups keeps a tool-capable model (called by a session update that changes it)."""
    if db.scalar(select(SessionToolGroup.tool_group).where(SessionToolGroup.session_id == session_id).limit(1)):
        require_tool_calling(models, provider, model, "model")


# --- tools from MCP servers (listed by app/services/tools/mcp_import.py) ------------------------


def check_mcp_import(
    store: Database,
    settings: ToolSettings,
    *,
    url: str,
    headers: Mapping[str, str],
    group: str,
    prefix: str,
    timeout_seconds: float,
    project_id: int | None,
    caller: Caller,
) -> None:
    """Whether the caller may import an MCP server's tools there, and whether the server's URL,
    headers, group, prefix and timeout are ones an MCP tool may have (every problem at once). Asked
    before anything is sent to the server."""
    with store.read() as db:  # asked first: a refused caller learns nothing from validation
        access.require_tool_owner(db, caller, project_id)
    probe = Tool(
        name="x", description="x", input_schema={}, examples=[], tool_group=group, core=False, kind=ToolKind.MCP,
        url_template=url, header_secrets=dict(headers), timeout_seconds=timeout_seconds, side_effects=False,
        remote_name="x", project_id=project_id,
    )  # fmt: skip
    problems = check_common(ToolChanges(group=group)) + _mcp_problems(probe, settings)
    if prefix and not NAME.fullmatch(prefix + "x"):
        problems.append(("prefix", "letters, digits, '_' or '-', starting with a letter"))
    _raise(problems)


def store_mcp_tools(store: Database, embedder: EmbedderFactory, tools: list[Tool], caller: Caller) -> list[Tool]:
    """Store the MCP tools of one import (all or none): a new name is a new tool; one imported
    before from the same server for the same owner is refreshed (its description, schema, group,
    headers, timeout; side effects only ever added, so an owner's marking stays); any other tool of
    that name is a ConflictError."""
    vectors = {tool.name: _embed(embedder, tool) for tool in tools}
    stored: list[Tool] = []
    with store.write() as db:
        for tool in tools:
            access.require_tool_owner(db, caller, tool.project_id)  # again, in the transaction that writes
            row = db.scalar(select(Tool).where(Tool.name == tool.name))
            if row is None:
                _add_new(db, tool, vectors[tool.name])
                stored.append(tool)
                continue
            if (
                row.kind is not ToolKind.MCP
                or row.url_template != tool.url_template
                or row.project_id != tool.project_id
            ):
                raise ConflictError(f"a tool named {tool.name!r} already exists: import with another prefix")
            text_changed = tool_text(row) != tool_text(tool)
            for column in (
                "description",
                "input_schema",
                "tool_group",
                "header_secrets",
                "timeout_seconds",
                "remote_name",
            ):
                setattr(row, column, getattr(tool, column))
            row.side_effects = row.side_effects or tool.side_effects
            _check_group(db, row)
            db.flush()
            if text_changed:
                db.execute(delete(ToolVector).where(ToolVector.tool_id == row.id))
                _store_vector(db, row, vectors[tool.name])
            stored.append(row)
        return stored
