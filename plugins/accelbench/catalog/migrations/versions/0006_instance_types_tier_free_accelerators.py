"""instance_types: accelerators all or none, whatever the tier

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05 10:00:00

The catalog sits below the tier registry (accelbench.tiers), so its constraints cannot name a tier: the two
that named 'cpu' (a CPU type has no accelerator; any other type has some) become one that holds for every
tier: a type's accelerator count and accelerator memory are both zero or both positive. Whether a tier is
accelerated is the registry's rule, checked when the seed file is read (Tier.seed_problem).
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The text as of this revision (models.ACCELERATORS_ALL_OR_NONE may change later; a migration does not).
ALL_OR_NONE = (
    "(accelerator_count = 0 AND accelerator_memory_gib = 0)"
    " OR (accelerator_count > 0 AND accelerator_memory_gib > 0)"
)


def upgrade() -> None:
    # batch mode: SQLite cannot drop a CHECK constraint in place, so the table is copied (data kept).
    with op.batch_alter_table("instance_types", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_instance_types_cpu_has_no_accelerator"), type_="check")
        batch.drop_constraint(op.f("ck_instance_types_accelerated_has_count"), type_="check")
        batch.create_check_constraint(op.f("ck_instance_types_accelerator_all_or_none"), ALL_OR_NONE)


def downgrade() -> None:
    with op.batch_alter_table("instance_types", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_instance_types_accelerator_all_or_none"), type_="check")
        batch.create_check_constraint(
            op.f("ck_instance_types_cpu_has_no_accelerator"),
            "accelerator_type <> 'cpu' OR (accelerator_count = 0 AND accelerator_memory_gib = 0)",
        )
        batch.create_check_constraint(
            op.f("ck_instance_types_accelerated_has_count"),
            "accelerator_type = 'cpu' OR accelerator_count > 0",
        )
