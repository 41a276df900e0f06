"""Parser bombs (issue 11, item 7): small files that take long to parse or expand into huge text fail
with the reason, in bounded time, and the ingestion goes on with the next file."""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from app.container import Container
from app.db.models import Document
from app.errors import IngestError
from app.rag.ingest.parsing import parse
from app.rag.ingest.pipeline import Ingestor, IngestSummary, Source
from app.services import projects
from app.settings import IngestSettings
from tests.fakes import FakeEmbedder
from tests.rag.ingest.bombs import pdf, text_operators

# 4.9 KB: one page whose content stream draws a million characters; pypdf needs ~30 s for it.
SLOW_PDF = pdf([text_operators(1_000_000)], [0])


def _ingest(container: Container, *sources: tuple[str, bytes]) -> IngestSummary:
    pid = projects.create(container.store, "kb").id
    ingestor = Ingestor(container.store, FakeEmbedder(), container.settings.ingest)
    return ingestor.ingest(pid, [Source.from_bytes(name, data) for name, data in sources])


def _stored(container: Container, name: str) -> Document:
    with container.store.read() as db:
        doc = db.query(Document).filter_by(name=name).one()
        db.expunge(doc)
    return doc


def test_a_pdf_that_takes_too_long_fails_after_the_timeout_and_the_next_file_is_read(container: Container) -> None:
    container.settings.ingest.parse_timeout = 2
    started = time.monotonic()
    summary = _ingest(container, ("bomb.pdf", SLOW_PDF), ("note.txt", b"an ordinary note"))
    elapsed = time.monotonic() - started
    bomb, note = summary.files
    assert bomb.status == "failed" and bomb.error is not None
    assert bomb.error.startswith("parsing took longer than 2 s"), bomb.error
    assert note.status == "added"  # a new worker took over after the old one was killed
    assert elapsed < 10
    stored = _stored(container, "bomb.pdf")
    assert (stored.status, stored.error) == ("failed", bomb.error)
    assert multiprocessing.active_children() == []  # the worker ends with the ingestion


def test_pages_sharing_one_stream_are_bounded_per_page(container: Container) -> None:
    container.settings.ingest.max_chars_per_page = 3_000
    shared = pdf([text_operators(5_000)], [0, 0, 0, 0])  # four pages drawing the same 5,000 characters
    (result,) = _ingest(container, ("shared.pdf", shared)).files
    assert result.status == "failed"
    assert result.error == "page 1 has 4,999 characters of text; the limit per page is 3,000"


def test_pages_sharing_one_stream_are_bounded_per_file(container: Container) -> None:
    container.settings.ingest.max_chars_per_file = 12_000
    shared = pdf([text_operators(5_000)], [0, 0, 0, 0])
    (result,) = _ingest(container, ("shared.pdf", shared)).files
    assert result.status == "failed"
    assert result.error == "the file has more than 12,000 characters of text; the limit per file is 12,000"


def test_too_many_pages_fail_before_any_is_read(container: Container) -> None:
    container.settings.ingest.max_pages = 20
    (result,) = _ingest(container, ("long.pdf", pdf([text_operators(10)], [0] * 30))).files
    assert (result.status, result.error) == ("failed", "the PDF has 30 pages; the limit is 20")


def test_deeply_nested_html_is_stopped_by_the_timeout(container: Container) -> None:
    # lexbor's tree building is quadratic in nesting depth: 100,000 nested divs (500 KB) take ~10 s.
    container.settings.ingest.parse_timeout = 1
    (result,) = _ingest(container, ("deep.html", b"<div>" * 100_000 + b"x")).files
    assert result.status == "failed" and result.error is not None
    assert result.error.startswith("parsing took longer than 1 s")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("page.html", b"<p>" + b"word " * 5_000 + b"</p>"),
        ("notes.txt", b"word " * 5_000),
        ("notes.md", b"# Notes\n\n" + b"word " * 5_000),
        # One long line, but not minified (minified text is skipped: tests/rag/ingest/test_intake.py).
        ("one-line.py", b"x = 1 " * 4_200),
    ],
)
def test_text_beyond_the_limit_per_file_fails(container: Container, name: str, data: bytes) -> None:
    container.settings.ingest.max_chars_per_file = 20_000
    (result,) = _ingest(container, (name, data)).files
    assert result.status == "failed"
    assert result.error == "the file has more than 20,000 characters of text; the limit per file is 20,000"


def test_the_limits_default_to_the_settings_defaults() -> None:
    from app.rag.ingest.parsing import ParseLimits

    defaults = IngestSettings()
    assert ParseLimits() == ParseLimits(defaults.max_pages, defaults.max_chars_per_page, defaults.max_chars_per_file)


# These two guard against quadratic blow-ups that cost seconds to minutes. They bound this process's
# CPU time, not wall time: on a machine shared by other work the wall clock says nothing (a parse
# waiting for a core is not slow code), while the regressions they catch cost 4x to 180x the bound.


def test_many_nested_articles_are_read_in_linear_time() -> None:
    # Finding the outermost articles walked each article's ancestors: 20,000 articles 2,000 deep took 8 s.
    data = b"<div>" * 2_000 + b"<article><p>text</p></article>" * 20_000
    started = time.process_time()
    doc = parse(data, "a.html")
    assert doc.text.startswith("text") and time.process_time() - started < 2


def test_a_heading_line_of_alternating_blanks_parses_in_linear_time() -> None:
    # The ATX pattern backtracked quadratically: 200 KB of " \t" took over six minutes.
    started = time.process_time()
    doc = parse(b"# a" + b" \t" * 100_000 + b"#x\n\ntext", "a.md")
    assert doc.headings and time.process_time() - started < 2


def test_archives_are_not_accepted() -> None:
    # Nothing is unpacked: zip-based formats other than Office's have no parser, a zip without an
    # extension is binary, and a zip of 10 MB of "x" named .docx is refused before any library reads it.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("big.txt", "x" * 10_000_000)
    data = buffer.getvalue()
    with pytest.raises(IngestError, match="looks like a zip bomb"):
        parse(data, "report.docx")
    for name in ("bomb.zip", "report.odt", "book.epub", "data.gz", "site.tar"):
        with pytest.raises(IngestError, match="not supported"):
            parse(data, name)
    with pytest.raises(IngestError, match="binary"):
        parse(data, "README-without-extension")


def test_a_worker_killed_for_taking_too_long_is_replaced() -> None:
    from app.rag.ingest.parse_worker import ParseWorker
    from app.rag.ingest.parsing import ParseLimits

    with ParseWorker(ParseLimits(), timeout=1) as worker:
        assert worker.parse(b"hello", "a.txt").text == "hello"
        with pytest.raises(IngestError, match="parsing took longer than 1 s"):
            worker.parse(b"<div>" * 100_000, "deep.html")
        assert worker.parse(b"again", "b.txt").text == "again"
    assert multiprocessing.active_children() == []


def test_bad_files_fail_in_the_worker_as_they_do_inline() -> None:
    from app.rag.ingest.parse_worker import ParseWorker
    from app.rag.ingest.parsing import ParseLimits

    with ParseWorker(ParseLimits(), timeout=10) as worker, pytest.raises(IngestError, match="the file is empty"):
        worker.parse(b"  \n", "a.txt")


def test_a_parser_bug_is_raised_as_inline_with_the_workers_traceback() -> None:
    from app.rag.ingest.parse_worker import ParseWorker, RemoteParseError

    with ParseWorker("not limits", timeout=10) as worker, pytest.raises(AttributeError) as raised:  # type: ignore[arg-type]
        worker.parse(b"text", "a.txt")
    assert isinstance(raised.value.__cause__, RemoteParseError)
    assert "max_chars_per_file" in str(raised.value.__cause__)


def test_a_main_run_with_dash_m_is_imported_once_for_every_worker(tmp_path: Path) -> None:
    """``python -m NAME`` (the benchmarks): the forkserver preloads NAME, so a new worker does not
    import what NAME imports all over again (~650 ms per ingestion with the benchmarks' mains)."""
    log = tmp_path / "imports.log"
    (tmp_path / "dependency.py").write_text(f"open({str(log)!r}, 'a').write('imported\\n')\n")
    (tmp_path / "runner.py").write_text(
        "import dependency\n"
        "from app.rag.ingest.parse_worker import ParseWorker\n"
        "from app.rag.ingest.parsing import ParseLimits\n"
        "if __name__ == '__main__':\n"
        "    for _ in range(3):\n"
        "        with ParseWorker(ParseLimits(), 30.0) as worker:\n"
        "            assert worker.parse(b'# T\\n\\nSome text.', 'a.md').text\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    subprocess.run([sys.executable, "-m", "runner"], cwd=tmp_path, env=env, check=True, timeout=120)
    # This process and the forkserver; not each of the three workers.
    assert log.read_text().count("imported") == 2
