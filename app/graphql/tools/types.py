"""Tools in the schema: definitions (never a secret's value), their inputs, and a selection preview."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from app.graphql.enums import expose
from app.graphql.errors import (
    ConflictError,
    FetchFailedError,
    ForbiddenError,
    NotFoundError,
    StorageError,
    TooLargeError,
    UrlRefusedError,
    ValidationError,
)
from app.services.records import HttpMethod, ToolKind
from app.services.records import Tool as ToolRow
from app.services.tools.definitions import DESCRIPTION_MAX, EXAMPLE_MAX, EXAMPLES_MAX, TIMEOUT_MAX, DryRun, ToolChanges
from app.services.tools.selection import Reason, Selection

expose(
    ToolKind,
    "Where a tool runs.",
    {
        ToolKind.BUILTIN: "Inside ragchat, over the chat's own knowledge base; comes with the server.",
        ToolKind.HTTP: "An operator's endpoint: the arguments fill its URL template (and body).",
        ToolKind.MCP: "A tool of an MCP server (Streamable HTTP), imported from its listing (importMcpTools).",
    },
)
expose(HttpMethod, "An HTTP tool's request method.", {m: f"HTTP {m.value}." for m in HttpMethod})
expose(
    Reason,
    "Why a tool is offered for a message.",
    {
        Reason.RANKED: "Among the topK most similar to the message (and at least minScore).",
        Reason.CORE: "A core tool of an allowed group: always offered.",
        Reason.ALL: "Selection degraded (the embedder failed): every allowed tool is offered.",
    },
    name="ToolSelectionReason",
)

_GROUP = "Its group (1-64 lower-case letters, digits, '_' or '-'); sessions allow tools by group."
_CORE = "Always offered to a session that allows its group, whatever the message."
_SCHEMA = (
    'JSON Schema (Draft 2020-12) of its arguments: an object ("type": "object"). Models are told it; calls are '
    "validated against it."
)
_EXAMPLES = (
    f"Requests it serves, as a user would put them (at most {EXAMPLES_MAX}, each at most {EXAMPLE_MAX} "
    "characters): embedded with the description for selection."
)
_URL = "http(s) URL; {name} placeholders (properties of inputSchema) only in the path and query, never the host."
_HEADERS = (
    "Headers to send, each naming a secret of the server's settings (RAGCHAT_TOOLS__SECRETS__<NAME>); the value "
    "is never stored or shown."
)


@strawberry.type(description="A header an HTTP tool sends, by reference to a server secret.")
class HeaderSecret:
    header: str = strawberry.field(description="The header's name.")
    secret: str = strawberry.field(
        description="The name of the secret whose value it carries (the value is never shown)."
    )


@strawberry.type(description="The request that shows what a side-effecting call would do, without doing it.")
class DryRunRequest:
    method: HttpMethod = strawberry.field(description="Its method.")
    url_template: str = strawberry.field(description="Its URL template, with the tool's placeholders.")


@strawberry.type(description="A tool a chat model may be offered.")
class Tool:
    id: strawberry.ID = strawberry.field(description="Its id (never reused).")
    name: str = strawberry.field(description="Its name, as the model calls it (unique).")
    description: str = strawberry.field(description="What it does, for the model and for selection.")
    input_schema: JSON = strawberry.field(description=_SCHEMA)
    examples: list[str] = strawberry.field(description=_EXAMPLES)
    group: str = strawberry.field(description=_GROUP)
    core: bool = strawberry.field(description=_CORE)
    kind: ToolKind = strawberry.field(description="BUILTIN, HTTP or MCP.")
    method: HttpMethod | None = strawberry.field(description="An HTTP tool's method; null for the others.")
    url_template: str | None = strawberry.field(
        description="An HTTP tool's URL template; an MCP tool's server URL; null for a built-in one."
    )
    remote_name: str | None = strawberry.field(
        description="An MCP tool's name on its server (name may add a prefix); null for the others."
    )
    headers: list[HeaderSecret] = strawberry.field(description="Headers an HTTP or MCP tool sends, by secret name.")
    timeout_seconds: float = strawberry.field(description="How long one call may take.")
    side_effects: bool = strawberry.field(description="It changes the world: never run without the user's approval.")
    dry_run: DryRunRequest | None = strawberry.field(description="Its preview request, if it has one.")
    knowledge_base_id: strawberry.ID | None = strawberry.field(
        description="The knowledge base it belongs to (its editors define it, only its chats may call it); null: "
        "the server's (administrators define it, any chat that allows its group may call it)."
    )
    created_at: datetime = strawberry.field(description="When it was registered.")
    updated_at: datetime = strawberry.field(description="When it last changed.")

    @classmethod
    def of(cls, row: ToolRow) -> Tool:
        dry = row.dry_run
        return cls(
            id=strawberry.ID(str(row.id)),
            name=row.name,
            description=row.description,
            input_schema=JSON(row.input_schema),
            examples=list(row.examples),
            group=row.tool_group,
            core=row.core,
            kind=row.kind,
            method=row.http_method,
            url_template=row.url_template,
            remote_name=row.remote_name,
            headers=[HeaderSecret(header=h, secret=s) for h, s in sorted(row.header_secrets.items())],
            timeout_seconds=row.timeout_seconds,
            side_effects=row.side_effects,
            dry_run=DryRunRequest(method=HttpMethod(dry["method"]), url_template=dry["url_template"]) if dry else None,
            knowledge_base_id=strawberry.ID(str(row.project_id)) if row.project_id is not None else None,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )


@strawberry.input(description="A header an HTTP tool sends: the name of a server secret, never its value.")
class HeaderSecretInput:
    header: str = strawberry.field(description="The header's name (not Host, Content-Length, Connection, ...).")
    secret: str = strawberry.field(description="A secret's name in the server's settings (RAGCHAT_TOOLS__SECRETS).")


@strawberry.input(description="The request that previews a side-effecting call.")
class DryRunInput:
    method: HttpMethod = strawberry.field(description="Its method.")
    url_template: str = strawberry.field(description="Its URL template (same rules as the tool's).")


@strawberry.input
class _ToolFields:
    description: str | None = strawberry.field(
        default=None, description=f"What it does, 1-{DESCRIPTION_MAX} characters."
    )
    examples: list[str] | None = strawberry.field(default=None, description=_EXAMPLES)
    group: str | None = strawberry.field(default=None, description=_GROUP + ' Omitted on create: "default".')
    core: bool | None = strawberry.field(default=None, description=_CORE + " Omitted on create: false.")
    input_schema: JSON | None = strawberry.field(default=None, description=_SCHEMA)
    method: HttpMethod | None = strawberry.field(default=None, description="The HTTP method.")
    url_template: str | None = strawberry.field(default=None, description=_URL)
    headers: list[HeaderSecretInput] | None = strawberry.field(default=None, description=_HEADERS)
    timeout_seconds: float | None = strawberry.field(
        default=None,
        description=f"Seconds one call may take, above 0 and at most {TIMEOUT_MAX:g}. Omitted on create: 10.",
    )
    side_effects: bool | None = strawberry.field(
        default=None, description="It changes the world (previewed, run only once approved). Omitted on create: false."
    )
    dry_run: DryRunInput | None = strawberry.field(
        default=None, description="Its preview request (side-effecting tools only)."
    )

    def changes(self, name: str | None) -> ToolChanges:
        return ToolChanges(
            name=name,
            description=self.description,
            input_schema=self.input_schema,
            examples=self.examples,
            group=self.group,
            core=self.core,
            method=self.method.value if self.method is not None else None,
            url_template=self.url_template,
            headers={h.header: h.secret for h in self.headers} if self.headers is not None else None,
            timeout_seconds=self.timeout_seconds,
            side_effects=self.side_effects,
            dry_run=DryRun(self.dry_run.method.value, self.dry_run.url_template) if self.dry_run else None,
        )


@strawberry.input(
    description="A new HTTP tool (built-in tools come with the server). name, description, inputSchema, method "
    "and urlTemplate are required."
)
class CreateToolInput(_ToolFields):
    name: str = strawberry.field(
        description="Its name: 1-64 letters, digits, '_' or '-', starting with a letter; unique on the server."
    )
    knowledge_base_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="Make it this knowledge base's (you must be its editor; its headers may name only the secrets "
        "the server lends to knowledge bases' tools); omitted or null: the server's (administrators and operator "
        "keys).",
    )


@strawberry.input(
    description="Changes to a tool; an omitted (or null) field stays as it is. A built-in tool's name, kind, "
    "schema and HTTP fields are fixed."
)
class UpdateToolInput(_ToolFields):
    name: str | None = strawberry.field(default=None, description="A new name (HTTP tools only).")


@strawberry.input(
    description="An MCP server (Streamable HTTP) whose tools to import: one MCP tool per tool it lists, read-only "
    "ones (annotations.readOnlyHint) without side effects, the others previewed and run only once approved. "
    "Importing the same server again refreshes them."
)
class ImportMcpToolsInput:
    url: str = strawberry.field(description="The server's MCP endpoint, an http(s) URL (e.g. https://host/mcp).")
    group: str = strawberry.field(description=_GROUP)
    headers: list[HeaderSecretInput] | None = strawberry.field(
        default=None, description=_HEADERS + " Sent with every request to the server."
    )
    prefix: str | None = strawberry.field(
        default=None, description="Put before each tool's name here (names are unique on this server)."
    )
    timeout_seconds: float | None = strawberry.field(
        default=None,
        description=f"Seconds the listing and each call may take, above 0 and at most {TIMEOUT_MAX:g}. Omitted: 10.",
    )
    knowledge_base_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="Make them this knowledge base's (you must be its editor; headers may name only the secrets "
        "the server lends to knowledge bases' tools); omitted or null: the server's (administrators).",
    )


@strawberry.type(description="The tools imported from an MCP server, as stored.")
class McpToolImport:
    tools: list[Tool] = strawberry.field(description="One per tool the server lists, by name.")


@strawberry.type(description="The tool was deleted, with its vector.")
class ToolDeleted:
    id: strawberry.ID = strawberry.field(description="The deleted Tool's id.")


@strawberry.type(description="An allowed tool and how similar it is to the message.")
class ToolCandidate:
    tool: Tool = strawberry.field(description="The tool.")
    score: float | None = strawberry.field(
        description="Cosine similarity to the message, 0-1 (higher is closer); null when selection degraded."
    )


@strawberry.type(description="A tool the model would be offered, and why.")
class SelectedTool:
    tool: Tool = strawberry.field(description="The tool.")
    score: float | None = strawberry.field(
        description="Its cosine similarity to the message; null when selection degraded."
    )
    reason: Reason = strawberry.field(description="RANKED, CORE or ALL.")


@strawberry.type(
    description="Which tools a chat session would offer its model for a message, stage by stage (no model is called)."
)
class ToolSelection:
    groups: list[str] = strawberry.field(description="Stage 1: the session's allowed tool groups (none: no tools).")
    candidates: list[ToolCandidate] = strawberry.field(description="Stage 2: every allowed tool, most similar first.")
    selected: list[SelectedTool] = strawberry.field(
        description="What the model is offered: the ranked ones (stage 2), then core ones (stage 3)."
    )
    top_k: int = strawberry.field(description="How many ranked tools are kept at most (RAGCHAT_TOOLS__TOP_K).")
    min_score: float | None = strawberry.field(
        description="The similarity a ranked tool needs (RAGCHAT_TOOLS__MIN_SCORE); null: none."
    )
    degraded: str | None = strawberry.field(
        description="Why every allowed tool is offered instead (the embedder failed); null when selection ran."
    )

    @classmethod
    def of(cls, selection: Selection) -> ToolSelection:
        return cls(
            groups=list(selection.groups),
            candidates=[ToolCandidate(tool=Tool.of(c.tool), score=_rounded(c.score)) for c in selection.candidates],
            selected=[
                SelectedTool(tool=Tool.of(c.tool), score=_rounded(c.score), reason=c.reason) for c in selection.chosen
            ],
            top_k=selection.top_k,
            min_score=selection.min_score,
            degraded=selection.degraded,
        )


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(max(score, 0.0), 6)


@strawberry.type(description="A chat session's allowed tool groups, as stored.")
class SessionToolGroups:
    session_id: strawberry.ID = strawberry.field(description="The chat session.")
    groups: list[str] = strawberry.field(description="Its allowed tool groups, sorted.")


ToolResult = Annotated[
    Tool | NotFoundError | ForbiddenError | ValidationError,
    strawberry.union("ToolResult", description="A tool, or why not."),
]
ToolMutationResult = Annotated[
    Tool | NotFoundError | ValidationError | ConflictError | ForbiddenError | StorageError,
    strawberry.union("ToolMutationResult", description="The tool as created or changed, or why nothing was written."),
]
ImportMcpToolsResult = Annotated[
    McpToolImport
    | NotFoundError
    | ValidationError
    | ConflictError
    | ForbiddenError
    | FetchFailedError
    | UrlRefusedError
    | TooLargeError
    | StorageError,
    strawberry.union(
        "ImportMcpToolsResult", description="The imported tools, or why none were (nothing is stored then)."
    ),
]
DeleteToolResult = Annotated[
    ToolDeleted | NotFoundError | ValidationError | ForbiddenError | StorageError,
    strawberry.union("DeleteToolResult", description="What was deleted, or why nothing was."),
]
ToolSelectionResult = Annotated[
    ToolSelection | NotFoundError | ForbiddenError | ValidationError,
    strawberry.union("ToolSelectionResult", description="The selection for a message, or why it could not run."),
]
SessionToolGroupsResult = Annotated[
    SessionToolGroups | NotFoundError | ForbiddenError | ValidationError | StorageError,
    strawberry.union(
        "SessionToolGroupsResult", description="The session's tool groups as set, or why nothing was written."
    ),
]
