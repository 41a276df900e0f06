"""Every type, field, argument, input field and enum value of the API has a description: what a client
reads in GraphiQL's docs and in schema.graphql is the documentation. Walks the schema as
introspection shows it to clients, so nothing a client can see escapes."""

from __future__ import annotations

from typing import Any

from graphql import introspection_from_schema

from app.graphql.schema import build_schema

# GraphQL's own types describe themselves; a scalar we add (DateTime, Upload) is checked like the rest.
BUILT_IN = {"String", "Int", "Float", "Boolean", "ID"}


def undescribed(introspection: dict[str, Any]) -> list[str]:
    """Each schema coordinate (``Type``, ``Type.field``, ``Type.field(arg:)``, ``Enum.VALUE``) whose
    description is missing or blank."""
    missing: list[str] = []

    def check(coordinate: str, item: dict[str, Any]) -> None:
        if not (item.get("description") or "").strip():
            missing.append(coordinate)

    for t in introspection["__schema"]["types"]:
        name = t["name"]
        if name.startswith("__") or name in BUILT_IN:
            continue
        check(name, t)
        for field in t.get("fields") or []:
            check(f"{name}.{field['name']}", field)
            for arg in field["args"]:
                check(f"{name}.{field['name']}({arg['name']}:)", arg)
        for field in t.get("inputFields") or []:
            check(f"{name}.{field['name']}", field)
        for value in t.get("enumValues") or []:
            check(f"{name}.{value['name']}", value)
    return missing


def test_every_type_field_argument_and_enum_value_has_a_description() -> None:
    schema = build_schema()._schema
    missing = undescribed(introspection_from_schema(schema))  # type: ignore[arg-type]
    assert not missing, f"{len(missing)} without a description:\n" + "\n".join(missing)


def test_the_walk_finds_what_is_missing() -> None:
    """The check itself: a type, field, argument, input field and enum value without one are named."""
    introspection = {
        "__schema": {
            "types": [
                {
                    "name": "Thing",
                    "description": "",
                    "fields": [
                        {"name": "a", "description": "An a.", "args": [{"name": "x", "description": None}]},
                        {"name": "b", "description": "  ", "args": []},
                    ],
                },
                {"name": "Kind", "description": "K.", "enumValues": [{"name": "ONE", "description": None}]},
                {"name": "In", "description": "I.", "inputFields": [{"name": "f", "description": None}]},
                {"name": "__Type", "description": None},
                {"name": "String", "description": None},
            ]
        }
    }
    assert undescribed(introspection) == ["Thing", "Thing.a(x:)", "Thing.b", "Kind.ONE", "In.f"]
