"""Single sign-on flows under way: what the callback must find to finish one

A sign-in through the OpenID Connect provider leaves this server and comes back. What it must check
on the way back (the ``state`` it sent, the browser that started it, the ``nonce`` the ID token must
carry, the PKCE verifier) is kept here, server-side, for ten minutes, and deleted when the callback
uses it: a callback replayed, or carrying a state this server never issued, finds nothing.
``state_hash`` and ``browser_hash`` are SHA-256 digests; the browser holds the random values.

Downgrading drops the table (sign-ins under way must start again).

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sign_in_flows",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("state_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("browser_hash", sa.String(64), nullable=False),
        sa.Column("nonce", sa.String(100), nullable=False),
        sa.Column("code_verifier", sa.String(200), nullable=False),
        sa.Column("redirect_uri", sa.String(2000), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_sign_in_flows_created_at", "sign_in_flows", ["created_at"])


def downgrade() -> None:
    op.drop_table("sign_in_flows")
