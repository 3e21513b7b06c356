"""regression_decisions: an owner's answer to a version's regressions

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04 17:00:00

The version campaign's approval step (the standard provider's human-in-the-loop operator) records here
whether the owner accepted the regressions the gate found as known, with why, or rejected the version;
the next campaigns of that version and the report read it.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "regression_decisions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("runtime", sa.String(length=32), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("regressions", sa.JSON(), nullable=False),
        sa.Column("decided_by", sa.String(length=255), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dag_run_id", sa.String(length=255), nullable=False),
        sa.CheckConstraint(
            "decision IN ('accepted', 'rejected')", name=op.f("ck_regression_decisions_decision")
        ),
        sa.CheckConstraint("length(reason) > 0", name=op.f("ck_regression_decisions_reason_not_empty")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regression_decisions")),
    )


def downgrade() -> None:
    op.drop_table("regression_decisions")
