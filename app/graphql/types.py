"""GraphQL output types."""

from __future__ import annotations

import strawberry


@strawberry.type(description="Is the server up, migrated, and which versions are running.")
class Health:
    ok: bool = strawberry.field(description="True when the database is migrated to the latest revision.")
    version: str
    sqlite_version: str
    sqlite_vec_version: str
    migration_revision: str | None
    head_revision: str
