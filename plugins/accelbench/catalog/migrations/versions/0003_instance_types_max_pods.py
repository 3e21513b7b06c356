"""instance_types.max_pods: the ENI-limited pod count that sets an AL2023 node's kube-reserved memory

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 22:00:00

Nullable: rows seeded before this revision get their value from the next accelbench_instance_catalog run;
until then the planner refuses those types and says so.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite cannot add a CHECK constraint in place, so the table is copied (data kept).
    with op.batch_alter_table("instance_types", recreate="auto") as batch:
        batch.add_column(sa.Column("max_pods", sa.Integer(), nullable=True))
        batch.create_check_constraint(
            op.f("ck_instance_types_max_pods_positive"), "max_pods IS NULL OR max_pods >= 1"
        )


def downgrade() -> None:
    with op.batch_alter_table("instance_types", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_instance_types_max_pods_positive"), type_="check")
        batch.drop_column("max_pods")
