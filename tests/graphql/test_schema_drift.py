"""schema.graphql is the contract the frontend is generated from: it must equal what the code exports."""

from __future__ import annotations

from pathlib import Path

from app.graphql.schema import export_sdl

COMMITTED = Path(__file__).resolve().parents[2] / "schema.graphql"


def test_committed_schema_matches_the_code() -> None:
    assert COMMITTED.read_text() == export_sdl(), "schema.graphql is stale: run `make schema`"
