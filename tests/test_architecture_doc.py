"""docs/ARCHITECTURE.md's layer diagram is the import graph of app/ as it is (see tests/architecture_diagram.py)."""

from __future__ import annotations

from tests import architecture_diagram as graph


def test_the_documented_diagram_is_the_generated_one() -> None:
    documented = graph.block_in(graph.DOC.read_text(encoding="utf-8"))
    assert documented is not None, f"{graph.DOC} has no import-graph block"
    assert documented == graph.diagram(), (
        "docs/ARCHITECTURE.md's diagram differs from the imports in app/: "
        "run `python -m tests.architecture_diagram --write` and read what changed"
    )


def test_every_module_lands_in_a_drawn_box() -> None:
    assert graph.package_of("app.cli.chat") == graph.package_of("app.__main__") == "cli"
    assert graph.package_of("app.services.chat.service") == "services"
    assert graph.package_of("app.errors") == "foundations"
    assert {p for edge in graph.package_edges() for p in edge} <= set(graph.ORDER)
