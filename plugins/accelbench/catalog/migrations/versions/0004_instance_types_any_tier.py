"""instance_types.accelerator_type: any registered tier, not a fixed list

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 09:00:00

The tiers are a registry in the library (accelbench.tiers): a new tier is one module there, and the seed
file's rows are checked against the registry before they are written. A CHECK constraint listing the tiers
would be a second list that every new tier had to migrate.
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite cannot drop a CHECK constraint in place, so the table is copied (data kept).
    with op.batch_alter_table("instance_types", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_instance_types_accelerator_type"), type_="check")


def downgrade() -> None:
    with op.batch_alter_table("instance_types", recreate="auto") as batch:
        batch.create_check_constraint(
            op.f("ck_instance_types_accelerator_type"), "accelerator_type IN ('gpu', 'neuron', 'cpu')"
        )
