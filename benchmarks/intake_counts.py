"""What a documentation folder becomes, before and after issue 17 item 7: files and chunks by file
type when every file with a known extension is taken (before) and when app/rag/ingest/intake.py decides
(after), with the skipped files by reason. Parsing and chunking only (the default settings and the
default embedder's tokenizer), no embedding: the counts are what ingestion would embed.

    python -m benchmarks.intake_counts /usr/share/doc /path/to/rustdoc/html [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path, PurePosixPath

from app.errors import IngestError
from app.llm.tokenizers import MINILM_TOKENIZER, HFTokenizer
from app.rag.ingest.chunking import chunk
from app.rag.ingest.folders import collect
from app.rag.ingest.intake import inspect
from app.rag.ingest.parse_worker import ParseWorker
from app.rag.ingest.parsing import KINDS_BY_EXTENSION, ParseLimits
from app.settings import IngestSettings


def _type(name: str) -> str:
    path = PurePosixPath(name)
    if path.name.startswith("searchindex"):
        return "searchindex*.js"
    if path.name.endswith(".min.js"):
        return ".min.js"
    return path.suffix.lower() or "(none)"


def _before(folder: Path) -> list[tuple[str, Path]]:
    """The selection before item 7 (the ingest command's `collect` then): not hidden, extension a parser knows."""
    found = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        hidden = any(p.startswith(".") for p in relative.parts)
        if path.is_file() and not hidden and path.suffix.lower() in KINDS_BY_EXTENSION:
            found.append((relative.as_posix(), path))
    return found


def _chunks(worker: ParseWorker, tokenizer: HFTokenizer, settings: IngestSettings, name: str, data: bytes) -> int:
    try:
        parsed = worker.parse(data, name)
    except IngestError:
        return -1
    specs = chunk(
        parsed,
        tokenizer,
        target_tokens=settings.chunk_tokens,
        overlap_tokens=settings.overlap_tokens,
        max_chars=settings.max_chunk_chars,
    )
    return len(specs)


def measure(folder: Path) -> dict[str, object]:
    settings = IngestSettings()
    tokenizer = HFTokenizer(MINILM_TOKENIZER)
    limits = ParseLimits(settings.max_pages, settings.max_chars_per_page, settings.max_chars_per_file)
    rows: dict[str, Counter[str]] = {}
    skipped: Counter[str] = Counter()
    failed = Counter[str]()
    cache: dict[Path, int] = {}
    with ParseWorker(limits, settings.parse_timeout) as worker:
        for side, files in (("before", _before(folder)), ("after", None)):
            if files is None:
                found = collect([folder])
                skipped.update(s.reason.value for s in found.skipped)
                files = found.files
            for name, path in files:
                data = path.read_bytes()
                if side == "after":
                    verdict = inspect(name, data)
                    if verdict is not None:
                        skipped[verdict.reason.value] += 1
                        continue
                if len(data) > settings.max_file_bytes:
                    failed[side] += 1
                    continue
                if path not in cache:
                    cache[path] = _chunks(worker, tokenizer, settings, name, data)
                count = cache[path]
                row = rows.setdefault(_type(name), Counter())
                if count < 0:
                    failed[side] += 1
                    continue
                row[f"{side}_files"] += 1
                row[f"{side}_chunks"] += count
    return {
        "folder": str(folder),
        "types": {k: dict(v) for k, v in rows.items()},
        "skipped": dict(skipped),
        "failed": dict(failed),
    }


def report(result: dict[str, object]) -> str:
    types: dict[str, dict[str, int]] = result["types"]  # type: ignore[assignment]
    lines = [
        f"## {result['folder']}",
        "",
        "| type | files before | chunks before | files after | chunks after |",
        "|---|--:|--:|--:|--:|",
    ]
    order = sorted(types, key=lambda t: -max(types[t].get("before_chunks", 0), types[t].get("after_chunks", 0)))
    totals = Counter[str]()
    for kind in order:
        row = types[kind]
        totals.update(row)
        lines.append(
            f"| `{kind}` | {row.get('before_files', 0):,} | {row.get('before_chunks', 0):,} | "
            f"{row.get('after_files', 0):,} | {row.get('after_chunks', 0):,} |"
        )
    lines.append(
        f"| **all** | {totals['before_files']:,} | {totals['before_chunks']:,} | {totals['after_files']:,} | "
        f"{totals['after_chunks']:,} |"
    )
    lines += ["", f"skipped after, by reason: {result['skipped']}; failed to parse: {result['failed']}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    for folder in args.folders:
        result = measure(folder)
        print(json.dumps(result) if args.json else report(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
