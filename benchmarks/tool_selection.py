"""Tool selection quality: recall@K of the retrieval stage that picks which tools a message is offered.

benchmarks/tools/tools.json holds 36 realistic tools (name, group, description, example requests,
argument names) and benchmarks/tools/requests.jsonl 75 held-out user requests, each with the one tool
that serves it (no request repeats an example). The three built-in tools (migration 0011) join them,
so 39 tools compete and every group is allowed: the hardest case a session can make.

Everything runs through the product's code: a fresh store migrated to head, each tool registered with
``app.services.tools.catalog.create`` (its text embedded and stored as in production) and each request
ranked by ``app.services.tools.selection.select_tools`` (K = RAGCHAT_TOOLS__TOP_K's default, no minimum
score, no core tools, so only the ranking is measured). Three stores are compared in the same run,
the built-in tools changed the same way (through ``tools.update``):

- ``parts averaged`` (the product): ``{name} — {description}`` and each example embedded apart and averaged;
- ``joined text``: the one text ``{name} — {description} | {example} | {example}`` (issue 19's wording),
  made by folding the examples into the description;
- ``description only``: ``{name} — {description}``, no examples: what the examples are worth.

Usage: python -m benchmarks.tool_selection [--json]   (the offline embedder: RAGCHAT_EMBEDDER__*)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.container import Container
from app.db import migrate
from app.llm.base import Embedder
from app.services.tools import catalog as tools
from app.services.tools.definitions import ToolChanges
from app.services.tools.selection import select_tools
from app.settings import Settings, ToolSettings

DATA = Path(__file__).resolve().parent / "tools"
KS = (1, 3, 6)
SERVER_ONLY = 0  # no knowledge base: the catalogue is all server tools, as a chat of any knowledge base sees them


@dataclass(frozen=True)
class Case:
    request: str
    tool: str


@dataclass
class Result:
    variant: str
    ranks: list[int | None] = field(default_factory=list)  # 1-based rank of the expected tool, per request
    misses: list[tuple[str, str, list[str]]] = field(default_factory=list)  # request, expected, top 3 offered

    def recall(self, k: int) -> float:
        return sum(1 for r in self.ranks if r is not None and r <= k) / len(self.ranks)

    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r is not None) / len(self.ranks)

    def as_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            **{f"recall@{k}": round(self.recall(k), 4) for k in KS},
            "mrr": round(self.mrr(), 4),
            "misses@6": [{"request": r, "expected": e, "top3": t} for r, e, t in self.misses],
        }


def load(folder: Path = DATA) -> tuple[list[dict[str, Any]], list[Case]]:
    definitions = json.loads((folder / "tools.json").read_text(encoding="utf-8"))
    lines = (folder / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    cases = [Case(**json.loads(line)) for line in lines if line.strip()]
    return definitions, cases


VARIANTS = ("parts averaged", "joined text", "description only")


def text_for(variant: str, description: str, examples: list[str]) -> tuple[str, list[str]]:
    """The description and examples a tool is registered with under ``variant``."""
    if variant == "joined text":
        return " | ".join([description, *examples]), []
    if variant == "description only":
        return description, []
    return description, examples


def changes_for(definition: dict[str, Any], variant: str) -> ToolChanges:
    properties = {name: {"type": kind} for name, kind in definition["properties"].items()}
    description, examples = text_for(variant, definition["description"], definition["examples"])
    return ToolChanges(
        name=definition["name"],
        description=description,
        input_schema={"type": "object", "properties": properties},
        examples=examples,
        group=definition["group"],
        method="POST",
        url_template=f"https://tools.example.com/{definition['name']}",
    )


def run_variant(
    settings: Settings, embedder: Embedder, definitions: list[dict[str, Any]], cases: list[Case], variant: str
) -> Result:
    """One fresh store, the tools registered into it, every request selected against all of them."""
    migrate.upgrade(settings.database_url)
    container = Container.build(settings, embedder=embedder)
    try:
        for builtin in tools.list_tools(container.store):
            description, examples = text_for(variant, builtin.description, builtin.examples)
            changes = ToolChanges(description=description, examples=examples)
            tools.update(container.store, settings.tools, lambda: embedder, builtin.id, changes)
        for definition in definitions:
            tools.create(container.store, settings.tools, lambda: embedder, changes_for(definition, variant))
        groups = sorted({t.tool_group for t in tools.list_tools(container.store)})
        known = {t.name for t in tools.list_tools(container.store)}
        if unknown := sorted({c.tool for c in cases} - known):
            raise ValueError(f"requests expect tools that do not exist: {unknown}")
        ranking = ToolSettings(top_k=len(known), min_score=None)  # the whole ranking, to place each expected tool
        result = Result(variant)
        for case in cases:
            selection = select_tools(container.store, lambda: embedder, ranking, groups, case.request, SERVER_ONLY)
            order = [c.tool.name for c in selection.candidates]
            rank = order.index(case.tool) + 1 if case.tool in order else None
            result.ranks.append(rank)
            if rank is None or rank > settings.tools.top_k:
                result.misses.append((case.request, case.tool, order[:3]))
        return result
    finally:
        container.close()


def run(settings: Settings, embedder: Embedder, folder: Path = DATA) -> list[Result]:
    definitions, cases = load(folder)
    results = []
    for variant in VARIANTS:
        with tempfile.TemporaryDirectory() as tmp:
            isolated = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'tools.db'}"})
            results.append(run_variant(isolated, embedder, definitions, cases, variant))
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    settings = Settings()
    container = Container.build(settings.model_copy(update={"database_url": "sqlite:///:memory:"}))
    embedder = container.embedder
    definitions, cases = load()
    results = run(settings, embedder)
    report = {
        "embedder": embedder.space.label,
        "tools": len(definitions) + 3,
        "requests": len(cases),
        "top_k": settings.tools.top_k,
        "results": [r.as_json() for r in results],
    }
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return
    print(f"{report['tools']} tools, {report['requests']} held-out requests, embedder {report['embedder']}")
    print(f"{'variant':<18} {'recall@1':>9} {'recall@3':>9} {'recall@6':>9} {'MRR':>7}")
    for r in results:
        print(f"{r.variant:<18} {r.recall(1):>9.3f} {r.recall(3):>9.3f} {r.recall(6):>9.3f} {r.mrr():>7.3f}")
    for r in results[:1]:
        for request, expected, top3 in r.misses:
            print(f"  missed at {report['top_k']} ({r.variant}): {request!r} -> expected {expected}, top 3 {top3}")


if __name__ == "__main__":
    main()
