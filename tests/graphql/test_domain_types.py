"""GraphQL exposes the domain's own value types and enums as they are (strawberry registers them in
place): registering must leave them what the rest of the code relies on."""

from __future__ import annotations

import dataclasses

import pytest

from app.graphql.schema import export_sdl
from app.rag.retrieval import Location


def test_location_stays_a_frozen_dataclass_built_by_position_once_graphql_has_it() -> None:
    assert "type Location {" in export_sdl()  # the schema is built: Location is registered
    where = Location(10, 90, 2, 4)  # retrieval builds them by position
    assert (where.page, where.heading_path) == (None, "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        where.page = 3  # type: ignore[misc]
    assert dataclasses.replace(where, page=3) == Location(10, 90, 2, 4, 3, "")
    assert Location.from_json(dataclasses.asdict(where)) == where  # how citations store it
