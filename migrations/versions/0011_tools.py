"""tools: definitions a chat model may be offered, their embedded text, and each session's tool groups

``tools`` holds a tool's name, description, JSON Schema of its input, example requests, group,
``core`` flag and kind: ``builtin`` (runs inside ragchat) or ``http`` (an operator's endpoint: method,
URL template, timeout, whether it has side effects and an optional dry-run request). No secret is
stored: ``header_secrets`` maps a header to the *name* of a secret in the server's settings. Ids are
never reused (AUTOINCREMENT), so a recorded call never points at a newer tool.

``tool_vectors`` keeps each tool's embedded text in the space that made it (built when a tool is
created or changed, not at every start). ``chat_session_tool_groups`` lists the groups a session may
use: none for every existing session, so tools stay opt-in.

The three built-in tools over ragchat itself are inserted here, in group ``knowledge_base`` (their
executors live in app/services/tools/builtins.py, which a test keeps equal to these rows). Only new tables,
so nothing existing changes; the downgrade drops them.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GROUP = "knowledge_base"
BUILTINS = [
    {
        "name": "search_knowledge_base",
        "description": "Search this chat's knowledge base for passages relevant to a query; returns the best "
        "matching chunks with their document, location and text.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "What to look for."},
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "description": "How many passages (default 5).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "examples": [
            "find what the documents say about the refund policy",
            "search the notes for the deployment steps",
        ],
        "core": True,
    },
    {
        "name": "read_document",
        "description": "Read a document of this knowledge base around a location: its chunks from one position to "
        "another (chunk ordinals, at most 20 at once).",
        "input_schema": {
            "type": "object",
            "properties": {
                "document_id": {"type": "integer", "minimum": 1, "description": "The document's id."},
                "from": {"type": "integer", "minimum": 0, "description": "First chunk ordinal (default 0)."},
                "to": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Last chunk ordinal, inclusive (default from + 4).",
                },
            },
            "required": ["document_id"],
            "additionalProperties": False,
        },
        "examples": ["open the document that hit came from and read the next section", "read the rest of that file"],
        "core": False,
    },
    {
        "name": "list_documents",
        "description": "List the documents in this knowledge base: id, name, kind and number of chunks.",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        "examples": ["which documents do you have?", "list the files in the knowledge base"],
        "core": False,
    },
]


def upgrade() -> None:
    tools = op.create_table(
        "tools",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("input_schema", sa.JSON(), nullable=False),
        sa.Column("examples", sa.JSON(), nullable=False),
        sa.Column("tool_group", sa.String(64), nullable=False),
        sa.Column("core", sa.Boolean(), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("http_method", sa.String(20), nullable=True),
        sa.Column("url_template", sa.Text(), nullable=True),
        sa.Column("header_secrets", sa.JSON(), nullable=False),
        sa.Column("timeout_seconds", sa.Float(), nullable=False),
        sa.Column("side_effects", sa.Boolean(), nullable=False),
        sa.Column("dry_run", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("name"),
        sa.CheckConstraint("kind IN ('builtin', 'http')", name="ck_tools_kind"),
        sa.CheckConstraint(
            "http_method IS NULL OR http_method IN ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')",
            name="ck_tools_http_method",
        ),
        sa.CheckConstraint(
            "(kind = 'http' AND http_method IS NOT NULL AND url_template IS NOT NULL) OR "
            "(kind = 'builtin' AND http_method IS NULL AND url_template IS NULL)",
            name="ck_tools_http_fields",
        ),
        sa.CheckConstraint("timeout_seconds > 0 AND timeout_seconds <= 120", name="ck_tools_timeout"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_tools_tool_group", "tools", ["tool_group"])
    op.create_table(
        "tool_vectors",
        sa.Column("tool_id", sa.Integer(), sa.ForeignKey("tools.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("space", sa.String(300), nullable=False),
        sa.Column("text_hash", sa.String(64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "chat_session_tool_groups",
        sa.Column("session_id", sa.Integer(), sa.ForeignKey("chat_sessions.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("tool_group", sa.String(64), primary_key=True),
    )
    now = datetime.now(UTC).replace(tzinfo=None)  # stored naive, in UTC, as the ORM stores them
    fixed = {"tool_group": GROUP, "kind": "builtin", "header_secrets": {}, "timeout_seconds": 30.0}
    rows = [{**tool, **fixed, "side_effects": False, "created_at": now, "updated_at": now} for tool in BUILTINS]
    op.bulk_insert(tools, rows)


def downgrade() -> None:
    op.drop_table("chat_session_tool_groups")
    op.drop_table("tool_vectors")
    op.drop_index("ix_tools_tool_group", table_name="tools")
    op.drop_table("tools")
