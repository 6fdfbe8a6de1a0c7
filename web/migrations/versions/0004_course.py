"""running a course: assignments, extensions, submission timings, saved workspaces, similarity; users' groups

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("group_name", sa.String(length=64), server_default="", nullable=False))
    op.create_table("assignments",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("name", sa.String(length=128), nullable=False),
    sa.Column("opens_at", sa.DateTime(), nullable=False),
    sa.Column("due_at", sa.DateTime(), nullable=False),
    sa.Column("late_until", sa.DateTime(), nullable=True),
    sa.Column("created_by", sa.String(length=64), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("updated_at", sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("name"))
    op.create_table("assignment_items",
    sa.Column("assignment_id", sa.Integer(), nullable=False),
    sa.Column("exercise", sa.String(length=128), nullable=False),
    sa.Column("position", sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("assignment_id", "exercise"))
    op.create_table("extensions",
    sa.Column("assignment_id", sa.Integer(), nullable=False),
    sa.Column("user_id", sa.Integer(), nullable=False),
    sa.Column("due_at", sa.DateTime(), nullable=False),
    sa.Column("granted_by", sa.String(length=64), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("assignment_id", "user_id"))
    op.create_table("submission_timings",
    sa.Column("submission_id", sa.Integer(), nullable=False),
    sa.Column("assignment_id", sa.Integer(), nullable=False),
    sa.Column("timing", sa.String(length=16), nullable=False),
    sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
    sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("submission_id", "assignment_id"))
    with op.batch_alter_table("submission_timings", schema=None) as batch_op:
        batch_op.create_index("ix_submission_timings_assignment", ["assignment_id"], unique=False)
    op.create_table("workspaces",
    sa.Column("user_id", sa.Integer(), nullable=False),
    sa.Column("exercise", sa.String(length=128), nullable=False),
    sa.Column("code", sa.Text(), nullable=False),
    sa.Column("saved_at", sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("user_id", "exercise"))
    op.create_table("similarity_pairs",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("exercise", sa.String(length=128), nullable=False),
    sa.Column("submission_id", sa.Integer(), nullable=False),
    sa.Column("other_id", sa.Integer(), nullable=True),
    sa.Column("score", sa.Float(), nullable=False),
    sa.Column("computed_at", sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(["other_id"], ["submissions.id"], ondelete="CASCADE"),
    sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"))
    with op.batch_alter_table("similarity_pairs", schema=None) as batch_op:
        batch_op.create_index("ix_similarity_pairs_exercise_score", ["exercise", "score"], unique=False)
        batch_op.create_index("ix_similarity_pairs_submission_id", ["submission_id"], unique=False)
    op.create_table("similarity_marks",
    sa.Column("submission_id", sa.Integer(), nullable=False),
    sa.Column("computed_at", sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("submission_id"))


def downgrade() -> None:
    op.drop_table("similarity_marks")
    with op.batch_alter_table("similarity_pairs", schema=None) as batch_op:
        batch_op.drop_index("ix_similarity_pairs_submission_id")
        batch_op.drop_index("ix_similarity_pairs_exercise_score")
    op.drop_table("similarity_pairs")
    op.drop_table("workspaces")
    with op.batch_alter_table("submission_timings", schema=None) as batch_op:
        batch_op.drop_index("ix_submission_timings_assignment")
    op.drop_table("submission_timings")
    op.drop_table("extensions")
    op.drop_table("assignment_items")
    op.drop_table("assignments")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("group_name")
