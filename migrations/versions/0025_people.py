"""People: users, their roles in knowledge bases, signed-in browsers, personal API keys; chats owned

Until now whoever held a server key could read and change everything, and chats had no owner. This
adds the people a team signs in as (``users``), each person's role in a knowledge base
(``memberships``: owner, editor or viewer), browser sessions (``browser_sessions``: the SHA-256 of
the cookie's token, never the token) and personal API keys (``person_keys``: hashed, scoped).

``chat_sessions`` gains ``owner_id`` (who made the chat; only they read and change it) and
``shared`` (shared read-only with the knowledge base's members). **Chats that exist before this
revision have no owner (NULL) and belong to the server's administrators**: the first administrator
created (``ragchat users create --admin`` or the first-run screen) sees them, and so does every
administrator after. A chat whose owner is deleted returns to the administrators the same way.
Knowledge bases that exist before it have no members: administrators see every knowledge base and
add members to them.

Downgrading drops the new tables and columns (people, keys and sessions are lost; chats stay).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROLES = ("viewer", "editor", "owner")


@contextmanager
def _keeping_ids() -> Iterator[None]:
    """Around a rebuild of chat_sessions: its AUTOINCREMENT counter as it was (never lower)."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        yield
        return
    seq = conn.exec_driver_sql("SELECT seq FROM sqlite_sequence WHERE name = 'chat_sessions'").scalar()
    yield
    if seq is not None:
        conn.exec_driver_sql("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'chat_sessions'", (int(seq),))


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("email", sa.String(320), nullable=False, unique=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("password_hash", sa.String(200), nullable=True),
        sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("oidc_subject", sa.String(400), nullable=True, unique=True),
        sa.Column("credentials_since", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "memberships",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint(f"role IN ({', '.join(repr(r) for r in ROLES)})", name="ck_memberships_role"),
        sa.UniqueConstraint("user_id", "project_id", name="uq_memberships_user_project"),
    )
    op.create_index("ix_memberships_project_id", "memberships", ["project_id"])
    op.create_table(
        "browser_sessions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_browser_sessions_user_id", "browser_sessions", ["user_id"])
    op.create_table(
        "person_keys",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("prefix", sa.String(20), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("projects", sa.JSON(), nullable=True),
        sa.Column("read_only", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("manage_users", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("last_used_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_person_keys_user_id", "person_keys", ["user_id"])
    # The rebuilt table keeps AUTOINCREMENT (0008): without it ids would be reused again.
    with _keeping_ids(), op.batch_alter_table("chat_sessions", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.create_foreign_key("fk_chat_sessions_owner_id", "users", ["owner_id"], ["id"], ondelete="SET NULL")
        batch.create_index("ix_chat_sessions_owner_id", ["owner_id"])


def downgrade() -> None:
    with _keeping_ids(), op.batch_alter_table("chat_sessions", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_index("ix_chat_sessions_owner_id")
        batch.drop_constraint("fk_chat_sessions_owner_id", type_="foreignkey")
        batch.drop_column("shared")
        batch.drop_column("owner_id")
    op.drop_table("person_keys")
    op.drop_table("browser_sessions")
    op.drop_table("memberships")
    op.drop_table("users")
