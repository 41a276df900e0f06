"""Tool queries and mutations: thin resolvers over app/services/tools/ (catalog.py, selection.py).
Query and Mutation (app/graphql/queries.py, mutations.py) inherit these fields."""

from __future__ import annotations

from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from app.errors import RagchatError, StorageError
from app.graphql.context import Info, caller_of
from app.graphql.errors import parse_id, to_graphql
from app.graphql.results import call
from app.graphql.tools.call_types import ToolCall, ToolCallDecisionResult, ToolTest, ToolTestResult
from app.graphql.tools.types import (
    CreateToolInput,
    DeleteToolResult,
    ImportMcpToolsInput,
    ImportMcpToolsResult,
    McpToolImport,
    SessionToolGroups,
    SessionToolGroupsResult,
    Tool,
    ToolDeleted,
    ToolMutationResult,
    ToolResult,
    ToolSelection,
    ToolSelectionResult,
    UpdateToolInput,
)
from app.services.tools import approval as tool_approval
from app.services.tools import catalog as tools
from app.services.tools import mcp_import
from app.services.tools import selection as tool_selection

# Their unions have no StorageError: an unreadable database is a GraphQL error there, not a member.
UNREADABLE = (StorageError,)
_TOOL_ID = strawberry.argument(description="The tool.")
_SESSION_ID = strawberry.argument(description="The chat session.")
_CALL_ID = strawberry.argument(description="The stored tool call (ToolCall.id, ChatToolPreview.toolCallId).")


@strawberry.type
class ToolQuery:
    @strawberry.field(
        description="The tools you see: the server's and those of your knowledge bases (of one group, if given), "
        "by group then name."
    )
    async def tools(
        self,
        info: Info,
        group: Annotated[str | None, strawberry.argument(description="Only this group's tools.")] = None,
    ) -> list[Tool]:
        store, caller = info.context.container.store, caller_of(info)
        rows = await call(lambda: tools.list_tools(store, group, caller=caller), raising=UNREADABLE)
        return [Tool.of(row) for row in rows]

    @strawberry.field(description="One tool (one of a knowledge base you are not in does not exist for you).")
    async def tool(self, info: Info, id: Annotated[strawberry.ID, _TOOL_ID]) -> ToolResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(lambda: Tool.of(tools.get(store, parse_id(id, "id"), caller=caller)), raising=UNREADABLE)

    @strawberry.field(
        description="Which tools a chat session would offer its model for a message, stage by stage: its allowed "
        "groups, every allowed tool by similarity, and what is offered (top K, then core tools). Calls no model."
    )
    async def tool_selection(
        self,
        info: Info,
        session_id: Annotated[strawberry.ID, _SESSION_ID],
        message: Annotated[str, strawberry.argument(description="The message, as a user would send it.")],
    ) -> ToolSelectionResult:
        c, caller = info.context.container, caller_of(info)
        return await call(
            lambda: ToolSelection.of(
                tool_selection.preview(
                    c.store, lambda: c.embedder, c.settings, parse_id(session_id, "sessionId"), message, caller=caller
                )
            ),
            raising=UNREADABLE,
        )


@strawberry.type
class ToolMutation:
    @strawberry.mutation(
        description="Register an HTTP tool: every bad field is named in a ValidationError, a taken name is a "
        "ConflictError. Its text is embedded for selection now (if the embedder fails, at the next selection)."
    )
    async def create_tool(
        self, info: Info, input: Annotated[CreateToolInput, strawberry.argument(description="The tool.")]
    ) -> ToolMutationResult:
        c, caller = info.context.container, caller_of(info)
        changes = input.changes(input.name)
        kb = input.knowledge_base_id

        def create() -> Tool:
            project = parse_id(kb, "knowledgeBaseId") if kb is not None else None  # a bad id: a union member
            return Tool.of(
                tools.create(c.store, c.settings.tools, lambda: c.embedder, changes, project_id=project, caller=caller)
            )

        return await call(create)

    @strawberry.mutation(
        description="Import the tools of an MCP server (Streamable HTTP): lists them (within the timeout, from an "
        "address this server may reach, like an HTTP tool's) and stores one MCP tool per tool, or refreshes those "
        "imported before. Tools the server does not mark read-only are side-effecting (previewed, run once approved)."
    )
    async def import_mcp_tools(
        self, info: Info, input: Annotated[ImportMcpToolsInput, strawberry.argument(description="The server.")]
    ) -> ImportMcpToolsResult:
        c, caller = info.context.container, caller_of(info)
        try:
            project = parse_id(input.knowledge_base_id, "knowledgeBaseId") if input.knowledge_base_id else None
            stored = await mcp_import.import_mcp(
                c.store,
                c.settings.tools,
                lambda: c.embedder,
                url=input.url,
                headers={h.header: h.secret for h in input.headers or []},
                group=input.group,
                prefix=input.prefix or "",
                timeout_seconds=input.timeout_seconds,
                project_id=project,
                caller=caller,
            )
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return McpToolImport(tools=[Tool.of(row) for row in stored])

    @strawberry.mutation(description="Change a tool; its vector is rebuilt when its text changes.")
    async def update_tool(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _TOOL_ID],
        input: Annotated[UpdateToolInput, strawberry.argument(description="The fields to change.")],
    ) -> ToolMutationResult:
        c, caller = info.context.container, caller_of(info)
        changes = input.changes(input.name)
        return await call(
            lambda: Tool.of(
                tools.update(c.store, c.settings.tools, lambda: c.embedder, parse_id(id, "id"), changes, caller=caller)
            )
        )

    @strawberry.mutation(description="Delete an HTTP tool (built-in ones stay: leave their group out of sessions).")
    async def delete_tool(self, info: Info, id: Annotated[strawberry.ID, _TOOL_ID]) -> DeleteToolResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(
            lambda: ToolDeleted(id=strawberry.ID(str(tools.delete_tool(store, parse_id(id, "id"), caller=caller).id)))
        )

    @strawberry.mutation(
        description="Set the tool groups a chat session may use (replacing its list; [] turns tools off). Each group "
        "must hold a tool, and a non-empty list needs a chat model that can call tools (a ValidationError says so)."
    )
    async def set_chat_session_tool_groups(
        self,
        info: Info,
        session_id: Annotated[strawberry.ID, _SESSION_ID],
        groups: Annotated[list[str], strawberry.argument(description='The groups, e.g. ["knowledge_base"].')],
    ) -> SessionToolGroupsResult:
        c, caller = info.context.container, caller_of(info)

        def run() -> SessionToolGroups:
            sid = parse_id(session_id, "sessionId")
            kept = tools.set_session_groups(c.store, c.chat_models, sid, groups, caller=caller)
            return SessionToolGroups(session_id=strawberry.ID(str(sid)), groups=kept)

        return await call(run)

    @strawberry.mutation(
        description="Approve a previewed tool call (status PREVIEW): it runs now, once, and its outcome is recorded "
        "and appended to the conversation as an assistant message (`outcomeMessageId`). Approving it again, or "
        "twice at once, runs nothing more: each returns the recorded outcome. A rejected call is a ConflictError; "
        "one that needed no approval a ValidationError."
    )
    async def approve_tool_call(self, info: Info, id: Annotated[strawberry.ID, _CALL_ID]) -> ToolCallDecisionResult:
        c, caller = info.context.container, caller_of(info)
        return await _decided(
            lambda: tool_approval.approve(c.store, lambda: c.embedder, c.settings, parse_id(id, "id"), caller=caller)
        )

    @strawberry.mutation(
        description="Reject a previewed tool call: it never runs. Rejecting it again returns it; an approved call "
        "is a ConflictError."
    )
    async def reject_tool_call(self, info: Info, id: Annotated[strawberry.ID, _CALL_ID]) -> ToolCallDecisionResult:
        store, caller = info.context.container.store, caller_of(info)
        return await _decided(lambda: tool_approval.reject(store, parse_id(id, "id"), caller=caller))

    @strawberry.mutation(
        description="Run a tool once with these arguments and show what a model would read (for the tools page). "
        "A tool with side effects runs only its preview (its dry-run request, or none). Nothing is stored."
    )
    async def test_tool(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _TOOL_ID],
        arguments: Annotated[
            JSON, strawberry.argument(description="The arguments: an object valid against its inputSchema.")
        ],
        project_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(description="The knowledge base a built-in tool runs over (required for those)."),
        ] = None,
    ) -> ToolTestResult:
        c = info.context.container
        try:
            project = parse_id(project_id, "projectId") if project_id is not None else None
            tested = await tool_approval.test(
                c.store, lambda: c.embedder, c.settings, parse_id(id, "id"), arguments, project, caller=caller_of(info)
            )
        except RagchatError as exc:
            error: Any = to_graphql(exc)  # NotFoundError or ValidationError: a run's failure is in ToolTest
            return error
        return ToolTest(
            tool_id=strawberry.ID(str(tested.tool_id)),
            dry_run=tested.dry_run,
            ok=tested.ok,
            output=tested.output,
            error=tested.error,
            size=tested.size,
            truncated=tested.truncated,
            ms=tested.ms,
        )


async def _decided(run: Any) -> Any:
    try:
        return ToolCall.of(await run())
    except RagchatError as exc:
        return to_graphql(exc)
