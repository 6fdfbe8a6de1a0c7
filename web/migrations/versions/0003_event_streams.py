"""event_streams: the open /events streams, counted against the per-user and site-wide caps

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("event_streams",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("user_id", sa.Integer(), nullable=False),
    sa.Column("submission_id", sa.Integer(), nullable=False),
    sa.Column("opened_at", sa.DateTime(), nullable=False),
    sa.Column("seen_at", sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"))
    with op.batch_alter_table("event_streams", schema=None) as batch_op:
        batch_op.create_index("ix_event_streams_user_seen", ["user_id", "seen_at"], unique=False)
        batch_op.create_index("ix_event_streams_seen", ["seen_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("event_streams", schema=None) as batch_op:
        batch_op.drop_index("ix_event_streams_seen")
        batch_op.drop_index("ix_event_streams_user_seen")
    op.drop_table("event_streams")
