"""The schema object, with its protective extensions."""

from __future__ import annotations

import strawberry
from strawberry.printer import print_schema

from app.graphql.queries import Query


def build_schema() -> strawberry.Schema:
    return strawberry.Schema(query=Query)


def export_sdl() -> str:
    return print_schema(build_schema()) + "\n"
