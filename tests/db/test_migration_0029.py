"""0029 on a database with tools: they come through untouched (id, vector), an MCP tool can be
stored after it and not before, and downgrading deletes only the MCP tools."""

from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

pytestmark = pytest.mark.postgres

NOW = "2026-01-01 00:00:00"
HTTP_TOOL = (
    "INSERT INTO tools(id, name, description, input_schema, examples, tool_group, core, kind, http_method, "
    "url_template, header_secrets, timeout_seconds, side_effects, created_at, updated_at) VALUES "
    "(50, 'crm_lookup', 'Looks a customer up.', '{\"type\": \"object\"}', '[]', 'crm', false, 'http', 'GET', "
    "'https://crm.example.com/c/{q}', '{}', 10, false, ?, ?)"
)
MCP_TOOL = (
    "INSERT INTO tools(name, description, input_schema, examples, tool_group, core, kind, url_template, "
    "header_secrets, timeout_seconds, side_effects, created_at, updated_at{extra}) VALUES "
    "('weather', 'Forecasts.', '{{}}', '[]', 'mcp', false, 'mcp', 'https://mcp.example.com/mcp', '{{}}', 10, false, "
    "?, ?{values})"
)


def test_0029_admits_mcp_tools_and_keeps_the_others(database_url: str) -> None:
    migrate.upgrade(database_url, "0028")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run(HTTP_TOOL, (NOW, NOW))
        run("INSERT INTO tool_vectors(tool_id, space, text_hash, vector) VALUES (50, 'fake', 'h', ?)", (b"\0" * 8,))
    with pytest.raises(IntegrityError), engine.begin() as conn:
        execute(conn, MCP_TOOL.format(extra="", values=""), (NOW, NOW))  # the old kinds refuse it
    engine.dispose()

    migrate.upgrade(database_url, "head")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        assert run("SELECT id, name, kind, remote_name FROM tools WHERE tool_group = 'crm'").all() == [
            (50, "crm_lookup", "http", None)
        ]
        assert run("SELECT count(*) FROM tool_vectors WHERE tool_id = 50").scalar_one() == 1
        run(MCP_TOOL.format(extra=", remote_name", values=", 'weather'"), (NOW, NOW))
        new_id = run("SELECT id FROM tools WHERE name = 'weather'").scalar_one()
        if conn.dialect.name == "sqlite":  # the rebuilt table kept its AUTOINCREMENT counter
            assert new_id > 50
    with pytest.raises(IntegrityError), engine.begin() as conn:  # an MCP tool names its tool on the server
        execute(conn, MCP_TOOL.format(extra="", values="").replace("'weather'", "'other'"), (NOW, NOW))
    engine.dispose()

    migrate.downgrade(database_url, "0028")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert execute(conn, "SELECT id, name FROM tools WHERE tool_group IN ('crm', 'mcp')").all() == [
            (50, "crm_lookup")
        ]
    engine.dispose()
