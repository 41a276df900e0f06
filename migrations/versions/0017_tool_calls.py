"""tool calls: every call a model made while writing an answer, and the user's decision on previews

``tool_calls`` keeps, per answer (``message_id``) and in the order the model called them
(``position``): the model's call id, the tool (``tool_id``, NULL once the tool is deleted) and the
name it was called by, the arguments as the model wrote them, the status (executed / failed during
the turn; preview -> running -> approved, or preview -> rejected, for a side-effecting tool), the
result (capped) and its full size, the error, the time it took, the preview text shown to the user,
when it was decided and finished, and the message that told the conversation how it ended.

Ids are never reused (AUTOINCREMENT): an approval names one call forever. Only a new table, so
nothing existing changes; the downgrade drops it (and with it the record of the calls: answers,
their citations and the outcome messages stay, as ordinary messages).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATUSES = ("executed", "failed", "preview", "running", "approved", "rejected")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("message_id", sa.Integer(), sa.ForeignKey("chat_messages.id", ondelete="CASCADE"), nullable=False),
        sa.Column("session_id", sa.Integer(), sa.ForeignKey("chat_sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(200), nullable=False),
        sa.Column("tool_id", sa.Integer(), sa.ForeignKey("tools.id", ondelete="SET NULL"), nullable=True),
        sa.Column("tool_name", sa.String(200), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("result_chars", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("ms", sa.Float(), nullable=True),
        sa.Column("preview", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("decided_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column(
            "outcome_message_id",
            sa.Integer(),
            sa.ForeignKey("chat_messages.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.CheckConstraint(_one_of("status", STATUSES), name="ck_tool_calls_status"),
        sa.CheckConstraint("result_chars >= 0 AND position >= 0", name="ck_tool_calls_counts"),
        sa.UniqueConstraint("message_id", "position", name="uq_tool_calls_message_position"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_tool_calls_session_id", "tool_calls", ["session_id"])
    op.create_index("ix_tool_calls_status", "tool_calls", ["status"])


def downgrade() -> None:
    op.drop_index("ix_tool_calls_status", table_name="tool_calls")
    op.drop_index("ix_tool_calls_session_id", table_name="tool_calls")
    op.drop_table("tool_calls")
