"""The layers, checked on every import under app/: graphql -> services -> rag / llm / db.

Which module may import which:

- **Entry points** wire the rest together and may import anything: ``app.main`` (the FastAPI app),
  ``app.__main__`` and ``app.cli.*`` (the commands), ``app.serving`` (runs the app in one
  process or several workers), ``app.container`` (builds the store, the
  providers and the chat service once per process) and ``app.bench.*`` (the ``ragchat bench``
  commands, which drive services and rag directly the way the CLI does).
- **app.graphql** is the API edge. Its request ``Context`` wraps the container, so it may import
  ``app.container``; it never touches the database (``app.db``: ORM models, engine, ``Database``) —
  reading and writing rows is the services' job.
- **Below the entry points** — ``app.services``, ``app.rag``, ``app.llm``, ``app.db`` and the shared
  foundations (``FOUNDATIONS`` below: settings, errors, resources, security, web, body_limit, logs,
  request_log) — nothing imports ``app.container``, and only the entry points import ``app.main``.
- **app.rag, app.llm, app.db** (and the foundations) never import ``app.services`` or ``app.graphql``.

Every import counts: at the top, inside a function (a lazy import hides a cycle, it does not
remove it) and under ``TYPE_CHECKING`` (the dependency is still there for the reader and mypy).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"

ENTRY_POINTS = ("app.main", "app.__main__", "app.cli", "app.serving", "app.container", "app.bench")
LOWEST = ("app.rag", "app.llm", "app.db", "app.net")
# The shared foundations every layer may use (tests/architecture_diagram.py draws them as one box).
FOUNDATIONS = (
    "app",
    "app.settings",
    "app.errors",
    "app.resources",
    "app.security",
    "app.web",
    "app.body_limit",
    "app.logs",
    "app.request_log",
)

# Edges that break a rule today, each with the change that removes it. The check fails on any edge
# not listed here AND on a listed edge that no longer exists, so this list only ever shrinks.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


def _within(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def is_entry_point(module: str) -> bool:
    return _within(module, *ENTRY_POINTS)


def broken_rule(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target``, or None when it may."""
    if is_entry_point(source):
        return None
    edge = ("app.graphql", "app.auth", "app.openai_api", "app.mcp_api", "app.archive_api")
    if _within(source, *edge) and _within(target, "app.db"):
        return "the API edge (GraphQL, OIDC, the OpenAI and MCP doors, archives) never touches the database: call a service"
    if _within(target, "app.main"):
        return "only the entry points import app.main"
    if _within(target, "app.container") and not _within(source, "app.graphql"):
        return "nothing below the entry points imports the container: take the dependencies you use"
    below_services = _within(source, *LOWEST) or source in FOUNDATIONS
    if below_services and _within(target, "app.services", "app.graphql"):
        return "rag, llm, db and the foundations never import services or graphql"
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = APP.parent.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(source: str, text: str, *, is_package: bool = False) -> list[Edge]:
    """Every app module ``source`` imports, wherever the import statement stands."""
    edges: list[Edge] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            edges += [Edge(source, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                package = source.split(".")[: len(source.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*package, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                # `from app.db import models` imports the module app.db.models, not just app.db
                name = f"{base}.{alias.name}"
                edges.append(Edge(source, name if _is_module(name) else base, node.lineno))
    return list(dict.fromkeys(e for e in edges if _within(e.target, "app")))


def all_edges() -> list[Edge]:
    edges: list[Edge] = []
    for path in sorted(APP.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        edges += imports_of(module_name(path), text, is_package=path.name == "__init__.py")
    return edges


def violations() -> dict[tuple[str, str], list[Edge]]:
    found: dict[tuple[str, str], list[Edge]] = {}
    for edge in all_edges():
        if broken_rule(edge.source, edge.target):
            found.setdefault((edge.source, edge.target), []).append(edge)
    return found


def test_no_import_breaks_a_layer_rule() -> None:
    new = {key: edges for key, edges in violations().items() if key not in KNOWN_VIOLATIONS}
    report = [
        f"{e.source} (line {e.line}) imports {e.target}: {broken_rule(e.source, e.target)}"
        for edges in new.values()
        for e in edges
    ]
    assert not report, "imports against the layering (see tests/test_architecture.py):\n" + "\n".join(report)


def test_every_allowed_violation_still_exists() -> None:
    gone = sorted(set(KNOWN_VIOLATIONS) - set(violations()))
    assert not gone, f"these edges are gone: delete them from KNOWN_VIOLATIONS so they cannot come back: {gone}"


@pytest.mark.parametrize(
    ("source", "text", "expected"),
    [
        ("app.graphql.loaders", "from app.db.models import Project", {"app.db.models"}),
        ("app.graphql.loaders", "from app.db import models", {"app.db.models"}),
        ("app.graphql.context", "import app.db.engine", {"app.db.engine"}),
        ("app.services.sessions", "def f():\n    from app.container import Container", {"app.container"}),
        (
            "app.services.sessions",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.main import create_app",
            {"app.main"},
        ),
        ("app.rag.ingest.pipeline", "from app.services import documents", {"app.services.documents"}),
        ("app.llm.base", "from app.graphql.errors import parse_id", {"app.graphql.errors"}),
        ("app.db.models", "from ..services import sessions", {"app.services.sessions"}),
        ("app.body_limit", "from app.services import sessions", {"app.services.sessions"}),
        ("app.graphql.context", "from app.container import Container", set()),
        ("app.cli.chat", "from app.container import Container\nfrom app.db.models import Citation", set()),
        ("app.bench.answers", "from app.main import create_app", set()),
        ("app.services.sessions", "from app.db.models import ChatSession\nfrom app.rag import spaces", set()),
    ],
)
def test_the_check_sees_each_kind_of_import(source: str, text: str, expected: set[str]) -> None:
    found = {e.target for e in imports_of(source, text) if broken_rule(e.source, e.target)}
    assert found == expected


# Modules that reach each other through their imports (every import counts, as above: a lazy or
# TYPE_CHECKING import hides a cycle, it does not remove it). Each listed cycle is there today, with
# the change that opens it; the check fails on any cycle not listed AND on a listed one that is gone.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def cycles(edges: list[Edge]) -> set[frozenset[str]]:
    """Each group of two or more modules that all reach one another through imports."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if edge.source != edge.target:
            graph.setdefault(edge.source, set()).add(edge.target)

    def reached_from(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for target in graph.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    reach = {module: reached_from(module) for module in graph}
    return {
        frozenset({module} | {other for other in reach[module] if module in reach.get(other, set())})
        for module in graph
        if module in reach[module]
    }


def test_no_import_cycle_but_the_known_ones() -> None:
    new = sorted(sorted(cycle) for cycle in cycles(all_edges()) - set(KNOWN_CYCLES))
    assert not new, "modules that import each other (see KNOWN_CYCLES in tests/test_architecture.py):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in new
    )


def test_every_known_cycle_still_exists() -> None:
    gone = sorted(sorted(cycle) for cycle in set(KNOWN_CYCLES) - cycles(all_edges()))
    assert not gone, f"these cycles are gone: delete them from KNOWN_CYCLES so they cannot come back: {gone}"


def test_the_cycle_check_sees_cycles_behind_lazy_and_type_checking_imports() -> None:
    edges = [
        *imports_of("app.rag.a", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.rag.b import B"),
        *imports_of("app.rag.b", "def f():\n    from app.rag.c import C"),
        *imports_of("app.rag.c", "from app.rag.a import A"),
        *imports_of("app.rag.d", "from app.rag.a import A"),  # reaches the cycle, is not in it
        *imports_of("app.rag.e", "from app.rag.e import E"),  # a module naming itself is no cycle
    ]
    assert cycles(edges) == {frozenset({"app.rag.a", "app.rag.b", "app.rag.c"})}
