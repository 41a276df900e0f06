"""Tool queries and mutations: thin resolvers over app/services/tools.py and tool_selection.py.
Query and Mutation (queries.py, mutations.py) inherit these fields."""

from __future__ import annotations

from typing import Annotated

import strawberry

from app.errors import StorageError
from app.graphql.context import Info
from app.graphql.errors import parse_id
from app.graphql.results import call
from app.graphql.tool_types import (
    CreateToolInput,
    DeleteToolResult,
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
from app.services import tool_selection, tools

# Their unions have no StorageError: an unreadable database is a GraphQL error there, not a member.
UNREADABLE = (StorageError,)
_TOOL_ID = strawberry.argument(description="The tool.")
_SESSION_ID = strawberry.argument(description="The chat session.")


@strawberry.type
class ToolQuery:
    @strawberry.field(description="Every tool (of one group, if given), by group then name.")
    async def tools(
        self,
        info: Info,
        group: Annotated[str | None, strawberry.argument(description="Only this group's tools.")] = None,
    ) -> list[Tool]:
        store = info.context.container.store
        rows = await call(lambda: tools.list_tools(store, group), raising=UNREADABLE)
        return [Tool.of(row) for row in rows]

    @strawberry.field(description="One tool.")
    async def tool(self, info: Info, id: Annotated[strawberry.ID, _TOOL_ID]) -> ToolResult:
        store = info.context.container.store
        return await call(lambda: Tool.of(tools.get(store, parse_id(id, "id"))), raising=UNREADABLE)

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
        c = info.context.container
        return await call(
            lambda: ToolSelection.of(
                tool_selection.preview(
                    c.store, lambda: c.embedder, c.settings, parse_id(session_id, "sessionId"), message
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
        c = info.context.container
        changes = input.changes(input.name)
        return await call(lambda: Tool.of(tools.create(c.store, c.settings.tools, lambda: c.embedder, changes)))

    @strawberry.mutation(description="Change a tool; its vector is rebuilt when its text changes.")
    async def update_tool(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _TOOL_ID],
        input: Annotated[UpdateToolInput, strawberry.argument(description="The fields to change.")],
    ) -> ToolMutationResult:
        c = info.context.container
        changes = input.changes(input.name)
        return await call(
            lambda: Tool.of(tools.update(c.store, c.settings.tools, lambda: c.embedder, parse_id(id, "id"), changes))
        )

    @strawberry.mutation(description="Delete an HTTP tool (built-in ones stay: leave their group out of sessions).")
    async def delete_tool(self, info: Info, id: Annotated[strawberry.ID, _TOOL_ID]) -> DeleteToolResult:
        store = info.context.container.store
        return await call(lambda: ToolDeleted(id=strawberry.ID(str(tools.delete_tool(store, parse_id(id, "id")).id))))

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
        c = info.context.container

        def run() -> SessionToolGroups:
            sid = parse_id(session_id, "sessionId")
            kept = tools.set_session_groups(c.store, c.chat_models, sid, groups)
            return SessionToolGroups(session_id=strawberry.ID(str(sid)), groups=kept)

        return await call(run)
