"""tool_calls.request_fingerprint: what a previewed call would send, so approval sends exactly that

A side-effecting call is previewed (its method, URL, body and header names are shown) and runs only
once approved. The tool is read again at approval; without a record of the previewed request an
edit made in between (another method, another host, other secret headers) would run instead of what
the user saw. The preview now stores a SHA-256 of that request (names only, never a secret's value)
and approval refuses a call whose request, rebuilt from the tool as it is now, differs
(app/services/tools/request.py). A new nullable column, ADD COLUMN (no rebuild): previews stored before
it have none and can no longer be approved (they are to be asked again); downgrading drops it.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("tool_calls", sa.Column("request_fingerprint", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE tool_calls DROP COLUMN request_fingerprint")
