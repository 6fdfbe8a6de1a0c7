"""server-side sessions (logout, a password change and users disable end them) and the login throttle's
failures; users.session_epoch goes (the sessions table replaces it)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("sessions",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("user_id", sa.Integer(), nullable=False),
    sa.Column("key_hash", sa.String(length=64), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("expires_at", sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("key_hash")
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sessions_user_id"), ["user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_expires_at"), ["expires_at"], unique=False)

    op.create_table("login_failures",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("username", sa.String(length=64), nullable=False),
    sa.Column("address", sa.String(length=64), nullable=False),
    sa.Column("at", sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index("ix_login_failures_username_at", ["username", "at"], unique=False)
        batch_op.create_index("ix_login_failures_address_at", ["address", "at"], unique=False)

    # every session cookie made before this step named its user by id and epoch: they all end here
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("session_epoch")


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("session_epoch", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index("ix_login_failures_address_at")
        batch_op.drop_index("ix_login_failures_username_at")
    op.drop_table("login_failures")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sessions_expires_at"))
        batch_op.drop_index(batch_op.f("ix_sessions_user_id"))
    op.drop_table("sessions")
