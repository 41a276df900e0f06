"""`ragchat bench ...`: benchmarks through the real code paths."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.bench import beir
from app.bench import retrieval as retrieval_bench
from app.container import Container
from app.rag.retrieval import Mode

bench = typer.Typer(help="Benchmarks (see docs/BENCHMARKS.md).", no_args_is_help=True)
console = Console(stderr=True)


def register(cli: typer.Typer, settings_or_exit: object) -> None:
    cli.add_typer(bench, name="bench")

    @bench.command("retrieval")
    def retrieval(
        dataset: Path = typer.Option(..., exists=True, file_okay=False, help="A BEIR-format folder."),
        split: str = typer.Option("test", help="qrels/<split>.tsv to evaluate on."),
        mode: list[str] = typer.Option(["hybrid"], help="vector, keyword or hybrid; repeat for several."),
        max_docs: int | None = typer.Option(None, help="Use a subset of the corpus (judged docs kept)."),
        max_queries: int | None = typer.Option(None, help="Use the first N judged queries."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    ) -> None:
        """nDCG@10 and Recall@100 (trec_eval semantics, via ir-measures) on a BEIR dataset."""
        modes: list[Mode] = []
        for m in mode:
            if m not in ("vector", "keyword", "hybrid"):
                raise typer.BadParameter(f"--mode must be vector, keyword or hybrid (got {m!r})")
            modes.append(m)  # type: ignore[arg-type]
        settings = settings_or_exit()  # type: ignore[operator]
        data = beir.load(dataset, split, max_docs=max_docs, max_queries=max_queries)
        embedder = Container.build(settings).embedder
        columns = (TextColumn("[bold]ingesting corpus"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as bar:
            task = bar.add_task("documents", total=len(data.corpus))
            result = retrieval_bench.run(data, embedder, settings, modes, progress=lambda _: bar.advance(task))
        if as_json:
            sys.stdout.write(json.dumps(result.as_json(), indent=2) + "\n")
            return
        table = Table(
            title=f"{dataset.name} / {split}: {result.docs} docs, {result.chunks} chunks, {result.queries} queries"
        )
        for column in ("mode", "nDCG@10", "Recall@100", "search s"):
            table.add_column(column, justify="right")
        for m, values in result.metrics.items():
            table.add_row(
                m, f"{values['ndcg@10']:.4f}", f"{values['recall@100']:.4f}", f"{result.timings[f'search_{m}']:.1f}"
            )
        Console().print(table)
        console.print({k: round(v, 2) for k, v in result.timings.items()})
        if result.calibration:
            console.print({k: round(v, 4) for k, v in result.calibration.items()})
