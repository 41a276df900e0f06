"""`ragchat bench ...`: benchmarks through the real code paths."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.bench import answers as answers_bench
from app.bench import beir, docs_qa
from app.bench import conversations as conversations_bench
from app.bench import retrieval as retrieval_bench
from app.cli.settings import settings_or_exit
from app.container import Container
from app.llm.base import Reranker
from app.rag.answer.mode import AnswerMode
from app.rag.search.conversation_settings import Quality
from app.rag.search.judge import ChatJudge
from app.rag.search.ranking_modes import RerankMode
from app.rag.search.retrieval_mode import RetrievalMode
from app.settings import Settings

commands = typer.Typer(help="Benchmarks (see docs/BENCHMARKS.md).", no_args_is_help=True)
console = Console(stderr=True)


@commands.command("retrieval")
def retrieval(
    dataset: Path = typer.Option(..., exists=True, file_okay=False, help="A BEIR-format folder."),
    split: str = typer.Option("test", help="qrels/<split>.tsv to evaluate on."),
    mode: list[RetrievalMode] = typer.Option([RetrievalMode.HYBRID], help="Repeat for several."),
    max_docs: int | None = typer.Option(None, help="Use a subset of the corpus (judged docs kept)."),
    max_queries: int | None = typer.Option(None, help="Use the first N judged queries."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    cache: bool = typer.Option(True, help="Reuse (or keep) the ingested corpus in the bench cache (BENCH_CACHE)."),
    rrf_k: int | None = typer.Option(None, min=1, help="RRF k (default: RAGCHAT_RAG__RRF_K's default, 60)."),
    vector_weight: float | None = typer.Option(None, min=0.0, help="RRF weight of the vector ranking."),
    keyword_weight: float | None = typer.Option(None, min=0.0, help="RRF weight of the keyword ranking."),
    feedback_docs: int | None = typer.Option(None, min=0, help="Pseudo-relevance feedback from the first N chunks."),
    fusion: str | None = typer.Option(None, help="Hybrid fusion: rrf or convex (default: RAGCHAT_RAG__FUSION)."),
    convex_alpha: float | None = typer.Option(None, min=0.0, max=1.0, help="Convex fusion's weight of cosine."),
    expand: bool = typer.Option(False, "--expansion", help="Search the chat model's alternative phrasings too."),
    rerank: RerankMode = typer.Option(RerankMode.OFF, help="Rerank with the endpoint or the chat model (judge)."),
    provider: str | None = typer.Option(
        None, help="Chat provider for expansion/judge (default: RAGCHAT_LLM__PROVIDER)."
    ),
    model: str | None = typer.Option(None, help="Chat model for expansion/judge (default: RAGCHAT_LLM__MODEL)."),
    quality: list[Quality] = typer.Option(
        [],
        help="Instead of the modes: search each query as a chat turn at this quality (evaluate and widen, the "
        "server's default session settings), scored on the sources it keeps. Repeat for several.",
    ),
) -> None:
    """nDCG@10 and Recall@100 (trec_eval semantics, via ir-measures) on a BEIR dataset."""
    settings = settings_or_exit()
    data = beir.load(dataset, split, max_docs=max_docs, max_queries=max_queries)
    embedder = Container.build(settings).embedder
    columns = (TextColumn("[bold]ingesting corpus"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("documents", total=len(data.corpus))
        if fusion not in (None, "rrf", "convex"):
            raise typer.BadParameter(f"{fusion!r} is not rrf or convex", param_hint="--fusion")
        chosen = {
            "rrf_k": rrf_k,
            "vector_weight": vector_weight,
            "keyword_weight": keyword_weight,
            "feedback_docs": feedback_docs,
            "fusion": fusion or settings.rag.fusion,
            "convex_alpha": convex_alpha if convex_alpha is not None else settings.rag.convex_alpha,
            "document_coverage": settings.rag.document_coverage,
        }
        stages = _stages(settings, expand, rerank, provider, model)
        result = retrieval_bench.run(
            data,
            embedder,
            settings,
            [] if quality else mode,
            progress=lambda _: bar.advance(task),
            cache=cache,
            params={k: v for k, v in chosen.items() if v is not None},
            stages=stages,
            qualities=quality,
        )
    if as_json:
        sys.stdout.write(json.dumps(result.as_json(), indent=2) + "\n")
        return
    table = Table(
        title=f"{dataset.name} / {split}: {result.docs} docs, {result.chunks} chunks, {result.queries} queries"
    )
    for column in ("mode", "nDCG@10", "Recall@100", "search s", "passes", "no source"):
        table.add_column(column, justify="right")
    for m, values in result.metrics.items():
        turn = "mean_passes" in values
        table.add_row(
            m,
            f"{values['ndcg@10']:.4f}",
            f"{values['recall@100']:.4f}",
            f"{result.timings[f'search_{m}']:.1f}",
            f"{values['mean_passes']:.2f}" if turn else "",
            f"{values['no_source']:.1%}" if turn else "",
        )
    Console().print(table)
    console.print({k: round(v, 2) for k, v in result.timings.items()})
    if result.calibration:
        console.print({k: round(v, 4) for k, v in result.calibration.items()})


@commands.command("conversations")
def conversations(
    variant: list[str] = typer.Option(
        list(conversations_bench.VARIANTS),
        help="raw, history, rewrite, standalone (and history_no_hygiene, balanced, thorough); repeat for several.",
    ),
    conversations_file: Path = typer.Option(
        conversations_bench.DEFAULT_SET,
        "--conversations",
        exists=True,
        dir_okay=False,
        help="A conversations.jsonl.",
    ),
    documents: Path = typer.Option(
        conversations_bench.DEFAULT_DOCUMENTS, exists=True, file_okay=False, help="The documents it asks about."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    """Follow-up recall@1/@5 of a conversational set: the raw message, the history-aware query, the
    chat model's rewrite and the standalone question (RAGCHAT_LLM__* is the model that rewrites)."""
    settings = settings_or_exit()
    unknown = sorted(set(variant) - set(conversations_bench.VARIANTS + conversations_bench.EXTRA))
    if unknown:
        raise typer.BadParameter(f"unknown variant(s) {', '.join(unknown)}", param_hint="--variant")
    follow_ups = len(conversations_bench.load(conversations_file))
    columns = (TextColumn("[bold]follow-ups"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("follow-ups", total=follow_ups)
        report = conversations_bench.run(
            settings, conversations_file, documents, variants=variant, progress=lambda: bar.advance(task)
        )
    if as_json:
        sys.stdout.write(json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n")
        return
    table = Table(
        title=f"{report.conversations} conversations, {report.follow_ups} follow-ups, {report.chunks} chunks; "
        f"rewrite by {report.model}"
    )
    for column in ("variant", "doc@1", "doc@5", "chunk@1", "chunk@5", "median ms"):
        table.add_column(column, justify="right")
    for name, values in report.recall.items():
        table.add_row(
            name, *(f"{values[m]:.3f}" for m in ("doc@1", "doc@5", "chunk@1", "chunk@5")), f"{report.ms[name]:.1f}"
        )
    Console().print(table)
    if report.rewrites:
        console.print({"rewrites": report.rewrites})


@commands.command("answers")
def answers(
    mode: list[AnswerMode] = typer.Option([AnswerMode.GENERATIVE], help="Repeat for several."),
    provider: str | None = typer.Option(None, help="Chat provider (default: RAGCHAT_LLM__PROVIDER)."),
    model: str | None = typer.Option(None, help="Chat model (default: RAGCHAT_LLM__MODEL)."),
    limit: int | None = typer.Option(None, min=1, help="Ask only the first N questions."),
    max_tokens: int = typer.Option(200, min=16, help="Longest answer, in tokens."),
    questions: Path = typer.Option(
        answers_bench.DEFAULT_QUESTIONS, exists=True, dir_okay=False, help="A questions.jsonl beside documents/."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (every answer too) instead."),
    dataset: Path | None = typer.Option(
        None,
        exists=True,
        file_okay=False,
        help="A docs-qa folder (<corpus>/docs, questions.txt, conversations.txt): ask it with the default "
        "session settings instead of --questions (--mode, --provider, --model and --max-tokens do not apply).",
    ),
    corpus: list[str] = typer.Option([], help="With --dataset: only this corpus; repeat for several."),
    out: Path | None = typer.Option(
        None,
        help="With --dataset: where to write the JSON (default, for a whole run: docs/benchmarks/docs-qa-<date>.json).",
    ),
) -> None:
    """Ask a question set with known answers; score facts, citations, loops, echoes and speed."""
    base = settings_or_exit()
    if dataset is not None:
        _docs_qa(base, dataset, corpus, limit, out, as_json)
        return
    settings = base.model_copy(update={"llm": base.llm.model_copy(update={"max_answer_tokens": max_tokens})})
    asked = answers_bench.load_questions(questions)[:limit]
    targets = [
        answers_bench.Target(m.value, provider or settings.llm.provider, model or settings.llm.model) for m in mode
    ]
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        tasks = {t: bar.add_task(f"{t.mode} {t.provider}/{t.model}", total=len(asked)) for t in targets}
        report = answers_bench.run(
            settings,
            asked,
            questions.parent / "documents",
            targets,
            progress=lambda target, _: bar.advance(tasks[target]),
        )
    if as_json:
        sys.stdout.write(json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n")
        return
    Console().print(_answers_table(report, len(asked)))
    for run in report.runs:
        s = run.summary()
        if s.generated:
            console.print(
                f"{s.mode}: the model's own text (before the answer guard) held the fact in "
                f"{s.model_contains_fact}/{s.generated}, was degenerate in {s.model_degenerate}, echoed the "
                f"prompt in {s.model_echoed}; guard decisions {s.guard_decisions}; modes used {s.modes_used}"
            )
    console.print(
        "fact: answers holding the expected fact (or saying the documents do not answer); right doc: citing its "
        "document; unsupported: sentences no cited source supports, in N answers; medians of time to first token "
        "and to the whole answer"
    )


def _docs_qa(
    settings: Settings, dataset: Path, corpus: list[str], limit: int | None, out: Path | None, as_json: bool
) -> None:
    total = docs_qa.planned(dataset, corpus, limit)
    misses: list[docs_qa.Scored] = []

    def seen(scored: docs_qa.Scored) -> None:
        bar.advance(task)
        if scored.item.answerable != (scored.fact and scored.cited_any) or (
            not scored.item.answerable and not scored.declined
        ):
            misses.append(scored)

    columns = (TextColumn("[bold]questions"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("questions", total=total)
        report = docs_qa.run(settings, dataset, only=corpus, limit=limit, progress=seen)
    data = report.as_json()
    if out is None and not corpus and limit is None:
        out = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / f"docs-qa-{datetime.now(UTC):%Y-%m-%d}.json"
    if out is not None:
        out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        console.print(f"wrote {out}")
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    for scored in misses:
        what = "follow-up" if scored.item.earlier else ("NONE" if not scored.item.answerable else "single")
        what = "topic change" if scored.item.topic_change else what
        console.print(
            f"[bold]miss[/bold] {scored.item.corpus} {what}: {scored.item.question}\n"
            f"  expected {'; '.join(scored.item.facts) or 'a refusal'} in {'/'.join(scored.item.documents) or '-'}\n"
            f"  cited {scored.cited}; answer: {' '.join(scored.answer.split())[:300]}"
        )
    Console().print(_docs_qa_table(report))


def _docs_qa_table(report: docs_qa.DatasetReport) -> Table:
    table = Table(title=f"docs-qa: {report.dataset} (default session settings)")
    heads = (
        "corpus",
        "fact",
        "doc any",
        "doc first",
        "NONE declined",
        "follow-up fact",
        "new topic first",
        "median s",
        "p95 s",
        "words",
    )
    for column in heads:
        table.add_column(column, justify="right")

    def pct(n: object, d: object) -> str:
        return f"{n}/{d} ({int(n) / int(d):.0%})" if d else "-"  # type: ignore[call-overload]

    rows = [(r.corpus, r.summary()) for r in report.runs] + [("total", report.total())]
    for name, s in rows:
        table.add_row(
            name,
            pct(s["fact"], s["answerable"]),
            pct(s["cited_any"], s["answerable"]),
            pct(s["cited_first"], s["answerable"]),
            pct(s["none_declined"], s["none_questions"]),
            pct(s["follow_up_fact"], s["follow_ups"]),
            pct(s["topic_retrieved_first"], s["topic_changes"]),
            "-" if s["median_ms"] is None else f"{float(s['median_ms']) / 1000:.2f}",  # type: ignore[arg-type]
            "-" if s["p95_ms"] is None else f"{float(s['p95_ms']) / 1000:.2f}",  # type: ignore[arg-type]
            f"{s['median_words']}/{s['p90_words']}",
        )
    return table


def _stages(
    settings: Settings, expand: bool, rerank: RerankMode, provider: str | None, model: str | None
) -> retrieval_bench.Stages:
    """The model stages a run asks for, built as the server builds them."""
    if not expand and rerank is RerankMode.OFF:
        return retrieval_bench.Stages()
    container = Container.build(settings)
    chat = container.chat_models.get(provider or settings.llm.provider, model or settings.llm.model)
    reranker: Reranker | None = None
    window = settings.rerank.candidates
    if rerank is RerankMode.JUDGE:
        cfg = settings.rerank
        reranker = ChatJudge(chat, candidates=cfg.judge_candidates, chars=cfg.judge_chars, timeout=cfg.judge_timeout)
        window = cfg.judge_candidates
    elif rerank in (RerankMode.ENDPOINT, RerankMode.AUTO):
        if container.reranker is None:
            raise typer.BadParameter("no rerank endpoint: set RAGCHAT_RERANK__URL", param_hint="--rerank")
        reranker = container.reranker
    return retrieval_bench.Stages(
        expansion=chat if expand else None,
        phrasings=settings.expansion.phrasings,
        expansion_weight=settings.expansion.weight,
        reranker=reranker,
        window=window,
        weight=settings.rerank.weight,
    )


def _answers_table(report: answers_bench.Report, asked: int) -> Table:
    table = Table(
        title=f"{asked} questions over {report.documents} documents ({report.chunks} chunks); "
        f"answers up to {report.settings['max_answer_tokens']} tokens"
    )
    columns = ("mode", "model", "fact", "right doc", "degenerate", "echo", "unsupported", "failed", "TTFT s", "total s")
    for column in columns:
        table.add_column(column, justify="right")
    for run in report.runs:
        s = run.summary()
        first, whole = s.median_first_token_ms, s.median_answer_ms
        table.add_row(
            s.mode,
            s.model,
            f"{s.contains_fact} ({s.contains_fact_rate:.0%})",
            f"{s.right_document} ({s.right_document_rate:.0%})",
            str(s.degenerate),
            str(s.echoed),
            f"{s.unsupported_sentences} in {s.answers_with_unsupported}",
            str(s.failed),
            "-" if first is None else f"{first / 1000:.2f}",
            "-" if whole is None else f"{whole / 1000:.2f}",
        )
    return table
