"""ranking settings: chat sessions choose reranking (off/auto/endpoint/judge) and multi-query
expansion (off/on/auto)

Existing sessions get the defaults: ``rerank = 'auto'`` (the operator's rerank endpoint when one is
configured, else none: what they had) and ``expansion = 'off'``. Downgrading drops both columns;
nothing else depended on them. ``chat_sessions`` keeps AUTOINCREMENT through the batch rebuilds
(ids are never reused, revision 0008).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chat_sessions", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("rerank", sa.String(10), nullable=False, server_default=sa.text("'auto'")))
        batch.add_column(sa.Column("expansion", sa.String(10), nullable=False, server_default=sa.text("'off'")))
        batch.create_check_constraint("ck_chat_sessions_rerank", "rerank IN ('off', 'auto', 'endpoint', 'judge')")
        batch.create_check_constraint("ck_chat_sessions_expansion", "expansion IN ('off', 'on', 'auto')")


def downgrade() -> None:
    with op.batch_alter_table("chat_sessions", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_constraint("ck_chat_sessions_expansion", type_="check")
        batch.drop_constraint("ck_chat_sessions_rerank", type_="check")
        batch.drop_column("expansion")
        batch.drop_column("rerank")
