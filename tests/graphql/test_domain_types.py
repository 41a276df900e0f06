"""GraphQL exposes the domain's own value types and enums as they are (strawberry registers them in
place): registering must leave them what the rest of the code relies on."""

from __future__ import annotations

import dataclasses

import pytest

from app.graphql.rag_settings import RagSettingsFields, RagSettingsInput
from app.graphql.schema import export_sdl
from app.rag.answer.mode import AnswerMode
from app.rag.search.candidates import Location
from app.rag.session_settings import RagSettings, RagSettingsPatch
from app.settings import Settings


def test_location_stays_a_frozen_dataclass_built_by_position_once_graphql_has_it() -> None:
    assert "type Location {" in export_sdl()  # the schema is built: Location is registered
    where = Location(10, 90, 2, 4)  # retrieval builds them by position
    assert (where.page, where.heading_path) == (None, "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        where.page = 3  # type: ignore[misc]
    assert dataclasses.replace(where, page=3) == Location(10, 90, 2, 4, 3, "")
    assert Location.from_json(dataclasses.asdict(where)) == where  # how citations store it


def test_the_rag_settings_graphql_types_declare_exactly_ragsettings_fields_in_its_order() -> None:
    declared = list(RagSettings.model_fields)
    for graphql_type in (RagSettingsFields, RagSettingsInput):
        assert [f.name for f in dataclasses.fields(graphql_type)] == declared, graphql_type.__name__
    patch = [f.name for f in dataclasses.fields(RagSettingsPatch)]
    assert patch == declared


def test_a_patch_is_checked_against_ragsettings_bounds_and_applied_to_what_it_leaves_alone() -> None:
    assert RagSettingsPatch(top_k=0, threshold=float("nan")).problems() == [
        ("top_k", "must be between 1 and 50 (got 0)"),
        ("threshold", "must be a number between 0 and 1 (got nan)"),
    ]
    current = RagSettings(top_k=3, threshold=0.4, answer_mode=AnswerMode.EXTRACTIVE)
    assert RagSettingsPatch(top_k=7, enable_rag=False).applied_to(current) == RagSettings(
        enable_rag=False, top_k=7, threshold=0.4, answer_mode=AnswerMode.EXTRACTIVE
    )


def test_the_settings_of_the_servers_defaults_are_a_ragsettings_without_the_servers_own_fields() -> None:
    defaults = Settings(_env_file=None, rag={"top_k": 9, "mode": "keyword"}).rag
    assert RagSettings.of(defaults) == RagSettings(top_k=9)
    assert type(RagSettings.of(defaults)) is RagSettings
