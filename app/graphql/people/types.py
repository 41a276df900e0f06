"""The people types of the schema."""

from __future__ import annotations

from datetime import datetime

import strawberry


@strawberry.type(description="A person who signs in to this server.")
class Person:
    id: strawberry.ID = strawberry.field(description="The person's id.")
    email: str = strawberry.field(description="Their email address, their sign-in name (lower-case).")
    name: str = strawberry.field(description="Their name, as shown to others.")
    is_admin: bool = strawberry.field(description="An administrator: every knowledge base, and the people.")
    disabled: bool = strawberry.field(description="Disabled: cannot sign in, and their keys do nothing.")
    created_at: datetime = strawberry.field(description="When they were added.")
