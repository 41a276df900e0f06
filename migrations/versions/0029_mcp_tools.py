"""Tools from MCP servers: ``tools.kind = 'mcp'`` and ``tools.remote_name``

An MCP tool is one tool of an MCP server (Streamable HTTP), imported from its listing: its
``url_template`` holds the server's URL, ``remote_name`` the tool's name on that server (ragchat's
``name`` may carry a prefix), and it has no HTTP method. Existing tools are untouched.

Downgrading deletes the MCP tools (their calls keep their names; their vectors go with them).

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-29
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_KINDS = "kind IN ('builtin', 'http')"
_NEW_KINDS = "kind IN ('builtin', 'http', 'mcp')"
_OLD_FIELDS = (
    "(kind = 'http' AND http_method IS NOT NULL AND url_template IS NOT NULL) OR "
    "(kind = 'builtin' AND http_method IS NULL AND url_template IS NULL)"
)
_NEW_FIELDS = (
    _OLD_FIELDS + " OR (kind = 'mcp' AND http_method IS NULL AND url_template IS NOT NULL AND remote_name IS NOT NULL)"
)


@contextmanager
def _keeping_ids() -> Iterator[None]:
    """Around a rebuild of tools: its AUTOINCREMENT counter as it was (never lower)."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        yield
        return
    seq = conn.exec_driver_sql("SELECT seq FROM sqlite_sequence WHERE name = 'tools'").scalar()
    yield
    if seq is not None:
        conn.exec_driver_sql("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'tools'", (int(seq),))


def upgrade() -> None:
    with _keeping_ids(), op.batch_alter_table("tools", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("remote_name", sa.String(128), nullable=True))
        batch.drop_constraint("ck_tools_kind", type_="check")
        batch.drop_constraint("ck_tools_http_fields", type_="check")
        batch.create_check_constraint("ck_tools_kind", _NEW_KINDS)
        batch.create_check_constraint("ck_tools_http_fields", _NEW_FIELDS)


def downgrade() -> None:
    op.execute("DELETE FROM tools WHERE kind = 'mcp'")
    with _keeping_ids(), op.batch_alter_table("tools", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_constraint("ck_tools_kind", type_="check")
        batch.drop_constraint("ck_tools_http_fields", type_="check")
        batch.create_check_constraint("ck_tools_kind", _OLD_KINDS)
        batch.create_check_constraint("ck_tools_http_fields", _OLD_FIELDS)
        batch.drop_column("remote_name")
