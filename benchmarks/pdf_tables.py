"""What keeping PDF tables as tables costs: pages per second of the PDF parser with table finding
(pdfplumber on pages that draw rules) ÷ without it (pypdf's text alone, the parser before tables),
in paired rounds on a real PDF: by default the ReportLab user guide in benchmarks/answers-office
(134 pages, 73 of them drawing enough rules to be searched for tables). Table finding runs to the
end here; in the parser it stops after ``ParseLimits.table_chars`` characters per file.

    python -m benchmarks.pdf_tables [--rounds 5] [--file some.pdf]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from app.rag.ingest.parsers.pdf import parse_pdf
from app.rag.ingest.types import ParsedDocument
from benchmarks import common

DEFAULT_FILE = Path(__file__).resolve().parent / "answers-office" / "documents" / "reportlab-userguide.pdf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    args = parser.parse_args()
    data = args.file.read_bytes()

    def parsed(tables: bool) -> ParsedDocument:
        return parse_pdf(
            data,
            max_pages=10_000,
            max_chars_per_page=10**6,
            max_chars=10**8,
            find_tables=tables,
            table_chars=10**9,  # the whole cost, not cut short by the parser's budget
        )

    doc = parsed(True)  # warm: imports, pdfminer's font tables
    pages = len(doc.page_starts)
    bounds = [*doc.page_starts, len(doc.text)]
    with_tables = sum(1 for a, b in itertools.pairwise(bounds) if "\n|---" in doc.text[a:b])
    times = common.rounds(
        args.rounds,
        {
            "pypdf text only": lambda r: common.timed(lambda: parsed(False))[0],
            "with tables": lambda r: common.timed(lambda: parsed(True))[0],
        },
    )
    rows = [
        (name, f"{pages / common.summary(values, 1.0)['median']:.1f}", f"{common.summary(values)['median']:.0f}")
        for name, values in times.items()
    ]
    print(f"{args.file.name}: {pages} pages, {with_tables} with a table kept as a table, {args.rounds} rounds")
    print(common.table("PDF parse", ("variant", "pages/s", "median ms"), rows))
    ratio = common.ratio(times["with tables"], times["pypdf text only"])
    print(f"time with tables ÷ without, per round: median {ratio['median']:.2f}x, p95 {ratio['p95']:.2f}x")


if __name__ == "__main__":
    main()
