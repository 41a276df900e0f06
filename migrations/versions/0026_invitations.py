"""Invitations: one-time links with which a person sets their password

An administrator invites a person (or resets their password) and hands them a link; the link's
token is stored only as its SHA-256, expires after seven days and works once (``used_at``).

Downgrading drops the table (unused links stop working; people and their passwords stay).

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "invitations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_invitations_user_id", "invitations", ["user_id"])


def downgrade() -> None:
    op.drop_table("invitations")
