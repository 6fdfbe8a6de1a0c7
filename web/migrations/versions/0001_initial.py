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

_TYPES = {"int": sa.Integer, "bool": sa.Boolean, "time": sa.DateTime, "text": sa.Text}


def _columns(spec: str) -> list[sa.Column]:
    """Columns from "name type, ...": int, bool, time, text or strN (a String of length N); a trailing ? is
    nullable."""
    cols = []
    for item in spec.split(","):
        name, kind = item.split()
        nullable = kind.endswith("?")
        kind = kind.rstrip("?")
        type_ = sa.String(length=int(kind[3:])) if kind.startswith("str") else _TYPES[kind]()
        cols.append(sa.Column(name, type_, nullable=nullable))
    return cols


def upgrade() -> None:
    op.create_table("runners",
    *_columns("id int, name str64, token_hash str64, disabled bool, created_at time, last_seen_at time?, "
              "modes str64, gpu str128?, version str64"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("name"),
    sa.UniqueConstraint("token_hash")
    )
    op.create_table("settings",
    *_columns("key str64, value text"),
    sa.PrimaryKeyConstraint("key")
    )
    op.create_table("users",
    *_columns("id int, username str64, password_hash str256?, is_staff bool, disabled bool, session_epoch int, "
              "created_at time"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("username")
    )
    op.create_table("api_tokens",
    *_columns("id int, user_id int, name str64, token_hash str64, prefix str16, created_at time, "
              "last_used_at time?, revoked_at time?"),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("token_hash")
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_user_id"), ["user_id"], unique=False)

    op.create_table("invites",
    *_columns("id int, token_hash str64, kind str16, user_id int?, is_staff bool, created_by str64, "
              "created_at time, expires_at time, used_at time?"),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("token_hash")
    )
    op.create_table("submissions",
    *_columns("id int, user_id int, exercise str128, mode str8, run_only bool, code text, state str16, "
              "attempts int, lease_id str32?, lease_expires_at time?, runner_id int?, result str32?, "
              "verdict text?, judged_on text?, created_at time, claimed_at time?, heartbeat_at time?, "
              "finished_at time?, updated_at time"),
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
