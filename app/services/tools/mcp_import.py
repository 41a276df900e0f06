"""Importing an MCP server's tools: ask whether the caller may and the definition is sound
(app/services/tools/catalog.py), list the server's tools through the MCP client
(app/services/tools/mcp.py), and store one MCP tool per tool, all or none.

A tool the server marks read-only (``annotations.readOnlyHint``) is stored without side effects;
any other with them — previewed and run only once approved — since MCP's default for an
unannotated tool is that it may change the world."""

from __future__ import annotations

from collections.abc import Mapping

import anyio.to_thread

from app.db.database import Database
from app.db.enums import ToolKind
from app.db.models import Tool
from app.errors import ValidationError
from app.services.people.access import THE_SERVER, Caller
from app.services.tools import catalog
from app.services.tools import mcp as tool_mcp
from app.services.tools.catalog import EmbedderFactory
from app.services.tools.definitions import DEFAULT_TIMEOUT, DESCRIPTION_MAX, NAME
from app.services.tools.schema import check_schema
from app.settings import ToolSettings


async def import_mcp(
    store: Database,
    settings: ToolSettings,
    embedder: EmbedderFactory,
    *,
    url: str,
    headers: Mapping[str, str],
    group: str,
    prefix: str = "",
    timeout_seconds: float | None = None,
    project_id: int | None = None,
    caller: Caller = THE_SERVER,
) -> list[Tool]:
    """List the MCP server's tools and store one MCP tool per tool (named ``prefix`` + its name),
    the server's or (``project_id``) a knowledge base's; importing the same server again refreshes
    them (catalog.store_mcp_tools). Tools the server no longer lists are left as they are."""
    timeout = DEFAULT_TIMEOUT if timeout_seconds is None else timeout_seconds
    await anyio.to_thread.run_sync(
        lambda: catalog.check_mcp_import(
            store,
            settings,
            url=url,
            headers=headers,
            group=group,
            prefix=prefix,
            timeout_seconds=timeout,
            project_id=project_id,
            caller=caller,
        )
    )
    listed = await tool_mcp.list_tools(url, headers, settings, timeout)
    if not listed:
        raise ValidationError("url", "the MCP server lists no tools")
    tools: list[Tool] = []
    for remote in listed:
        name = prefix + remote.name
        if not NAME.fullmatch(name):
            raise ValidationError(
                "prefix", f"the server's tool {remote.name[:64]!r} does not make a tool name here ({name[:80]!r})"
            )
        if problems := check_schema(remote.input_schema):
            raise ValidationError(
                "url", f"the server's tool {remote.name!r} has an input schema ragchat cannot use: {problems[0][1]}"
            )
        tools.append(Tool(
            name=name, description=remote.description[:DESCRIPTION_MAX] or name, input_schema=remote.input_schema,
            examples=[], tool_group=group, core=False, kind=ToolKind.MCP, url_template=url,
            header_secrets=dict(headers), timeout_seconds=timeout, side_effects=not remote.read_only,
            remote_name=remote.name, project_id=project_id,
        ))  # fmt: skip
    return await anyio.to_thread.run_sync(lambda: catalog.store_mcp_tools(store, embedder, tools, caller))
