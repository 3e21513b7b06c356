"""Alembic environment: the engine comes from accelbench.catalog.db, never from an ini file."""

from alembic import context

from accelbench.catalog.models import Base

engine = context.config.attributes["engine"]
with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    context.run_migrations()
