"""runtime_versions.status 'announced': a discovered version whose campaign was requested

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 03:15:00
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

OLD = "status IN ('discovered', 'benchmarked', 'failed', 'skipped')"
NEW = "status IN ('discovered', 'announced', 'benchmarked', 'failed', 'skipped')"


def _replace_check(condition: str) -> None:
    # batch mode: SQLite cannot alter a CHECK constraint in place, so the table is copied (data kept).
    with op.batch_alter_table("runtime_versions", recreate="auto") as batch:
        batch.drop_constraint(op.f("ck_runtime_versions_status"), type_="check")
        batch.create_check_constraint(op.f("ck_runtime_versions_status"), condition)


def upgrade() -> None:
    _replace_check(NEW)


def downgrade() -> None:
    op.execute("UPDATE runtime_versions SET status = 'discovered' WHERE status = 'announced'")
    _replace_check(OLD)
