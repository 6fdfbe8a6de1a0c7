"""initial schema: users, tokens, invites, runners, submissions (the queue), settings

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("runners",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("name", sa.String(length=64), nullable=False),
    sa.Column("token_hash", sa.String(length=64), nullable=False),
    sa.Column("disabled", sa.Boolean(), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("last_seen_at", sa.DateTime(), nullable=True),
    sa.Column("modes", sa.String(length=64), nullable=False),
    sa.Column("gpu", sa.String(length=128), nullable=True),
    sa.Column("version", sa.String(length=64), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("name"),
    sa.UniqueConstraint("token_hash")
    )
    op.create_table("settings",
    sa.Column("key", sa.String(length=64), nullable=False),
    sa.Column("value", sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint("key")
    )
    op.create_table("users",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("username", sa.String(length=64), nullable=False),
    sa.Column("password_hash", sa.String(length=256), nullable=True),
    sa.Column("is_staff", sa.Boolean(), nullable=False),
    sa.Column("disabled", sa.Boolean(), nullable=False),
    sa.Column("session_epoch", sa.Integer(), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("username")
    )
    op.create_table("api_tokens",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("user_id", sa.Integer(), nullable=False),
    sa.Column("name", sa.String(length=64), nullable=False),
    sa.Column("token_hash", sa.String(length=64), nullable=False),
    sa.Column("prefix", sa.String(length=16), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("last_used_at", sa.DateTime(), nullable=True),
    sa.Column("revoked_at", sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("token_hash")
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_user_id"), ["user_id"], unique=False)

    op.create_table("invites",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("token_hash", sa.String(length=64), nullable=False),
    sa.Column("kind", sa.String(length=16), nullable=False),
    sa.Column("user_id", sa.Integer(), nullable=True),
    sa.Column("is_staff", sa.Boolean(), nullable=False),
    sa.Column("created_by", sa.String(length=64), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("expires_at", sa.DateTime(), nullable=False),
    sa.Column("used_at", sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("token_hash")
    )
    op.create_table("submissions",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("user_id", sa.Integer(), nullable=False),
    sa.Column("exercise", sa.String(length=128), nullable=False),
    sa.Column("mode", sa.String(length=8), nullable=False),
    sa.Column("run_only", sa.Boolean(), nullable=False),
    sa.Column("code", sa.Text(), nullable=False),
    sa.Column("state", sa.String(length=16), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("lease_id", sa.String(length=32), nullable=True),
    sa.Column("lease_expires_at", sa.DateTime(), nullable=True),
    sa.Column("runner_id", sa.Integer(), nullable=True),
    sa.Column("result", sa.String(length=32), nullable=True),
    sa.Column("verdict", sa.Text(), nullable=True),
    sa.Column("judged_on", sa.Text(), nullable=True),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("claimed_at", sa.DateTime(), nullable=True),
    sa.Column("heartbeat_at", sa.DateTime(), nullable=True),
    sa.Column("finished_at", sa.DateTime(), nullable=True),
    sa.Column("updated_at", sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(["runner_id"], ["runners.id"], ondelete="SET NULL"),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.create_index("ix_submissions_state_id", ["state", "id"], unique=False)
        batch_op.create_index("ix_submissions_updated", ["updated_at"], unique=False)
        batch_op.create_index("ix_submissions_user_created", ["user_id", "created_at"], unique=False)



def downgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_user_created")
        batch_op.drop_index("ix_submissions_updated")
        batch_op.drop_index("ix_submissions_state_id")

    op.drop_table("submissions")
    op.drop_table("invites")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_user_id"))

    op.drop_table("api_tokens")
    op.drop_table("users")
    op.drop_table("settings")
    op.drop_table("runners")
