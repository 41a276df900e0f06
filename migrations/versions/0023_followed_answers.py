"""chat_messages.followed_until: a streaming answer that a client follows from another server process

With several server processes (``ragchat serve --workers N``, or servers sharing a database) a
client whose websocket reconnects may land on a process that is not writing its answer. That process
follows the answer through the database and, while it does, keeps pushing ``followed_until`` a few
seconds ahead; the process writing the answer, whose own listener left, cancels it only once nobody
follows it there either (app/services/chat/follow.py). A new nullable column, ADD COLUMN (no
rebuild); downgrading drops it (who was following a streaming answer is forgotten; every row stays).

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("chat_messages", sa.Column("followed_until", sa.DateTime(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE chat_messages DROP COLUMN followed_until")
