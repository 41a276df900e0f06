"""Parsing per format, the failures a user sees, and PDF pages carried into chunks."""

from __future__ import annotations

import codecs
import io
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from app.errors import IngestError
from app.llm.tokenizers import MINILM_TOKENIZER, HFTokenizer
from app.rag.ingest.chunking import chunk
from app.rag.ingest.parsers.markdown import parse_markdown
from app.rag.ingest.parsing import detect_kind, parse

FIXTURES = Path(__file__).parent / "fixtures"


def make_pdf(pages: list[list[str]], *, fonts: bool = True) -> bytes:
    """A minimal valid PDF: one text line per string, Helvetica, a correct xref table.

    pypdf reads PDFs well but cannot lay out text, so the bytes are written by hand. Without ``fonts``
    the pages draw only a rectangle: a PDF with no extractable text, like a scan.
    """
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * n} 0 R" for n in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font = 3 + 2 * len(pages)
    for n, lines in enumerate(pages):
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1") if fonts else b"0 0 m 100 100 l S"
        resources = f"/Resources << /Font << /F1 {font} 0 R >> >> " if fonts else ""
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] {resources}/Contents {4 + 2 * n} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.writelines(b"%010d 00000 n \n" % offset for offset in offsets)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def encrypted(pdf: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


THREE_PAGES = [
    ["Chapter one", "Sourdough needs a lively starter."] + [f"Step {n}: fold the dough and wait." for n in range(12)],
    ["Chapter two", "Baking happens in a hot oven."] + [f"Minute {n}: check the crust colour." for n in range(12)],
    ["Chapter three", "Let the loaf cool before slicing."],
]


# --- kinds ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "data", "kind"),
    [
        ("notes.TXT", b"x", "text"),
        ("data.csv", b"a,b", "text"),
        ("README.md", b"x", "markdown"),
        ("page.HTM", b"x", "html"),
        ("paper.pdf", b"x", "pdf"),
        ("main.go", b"x", "code"),
        ("config.yaml", b"x", "code"),
        ("dir/Makefile", b"x", "code"),
        ("LICENSE", b"x", "text"),
        ("download", b"%PDF-1.7 ...", "pdf"),
        ("saved", b"  <!DOCTYPE html><html></html>", "html"),
        ("notes", b"just words", "text"),
    ],
)
def test_detect_kind(filename: str, data: bytes, kind: str) -> None:
    assert detect_kind(filename, data) == kind


def test_unsupported_extension_is_refused_by_name() -> None:
    with pytest.raises(
        IngestError,
        match=r"files of type \.odt are not supported; upload text, Markdown, HTML, PDF, Word, PowerPoint, Excel, images or source",
    ) as caught:
        parse(b"PK\x03\x04 zipped", "report.odt")
    assert caught.value.code == "ingest"


# --- plain text -------------------------------------------------------------------------------------


def test_text_keeps_content_and_normalises_only_line_endings() -> None:
    doc = parse(b"caf\xc3\xa9 \xf0\x9f\x99\x82\r\nsecond\rthird\n\n  indented\t", "notes.txt")
    assert (doc.kind, doc.text, doc.headings, doc.page_starts) == (
        "text",
        "café 🙂\nsecond\nthird\n\n  indented\t",
        (),
        (),
    )


@pytest.mark.parametrize("bom", [codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE])
def test_byte_order_marks_select_the_encoding_and_are_dropped(bom: bytes) -> None:
    encoding = {codecs.BOM_UTF8: "utf-8", codecs.BOM_UTF16_LE: "utf-16-le", codecs.BOM_UTF16_BE: "utf-16-be"}[bom]
    assert parse(bom + "naïve\r\n".encode(encoding), "a.txt").text == "naïve\n"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "is empty"),
        (b" \n\t\n", "is empty"),
        (codecs.BOM_UTF8 + b" \r\n", "only whitespace"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file .*NUL"),
        (bytes(range(1, 9)) * 40, "binary file .*control characters"),
        (b"caf\xe9 cr\xe8me", "not valid utf-8 text .*offset 3.*save it as UTF-8"),
        (codecs.BOM_UTF16_LE + b"\x00\xd8", "not valid utf-16-le text"),
    ],
)
def test_unreadable_text_files_fail_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(IngestError, match=reason):
        parse(data, "upload.txt")


def test_nul_bytes_far_into_a_text_file_are_dropped() -> None:
    data = b"a" * 9000 + b"\x00b"
    assert parse(data, "big.log").text == "a" * 9000 + "b"


# --- markdown ---------------------------------------------------------------------------------------


def test_markdown_text_is_unchanged_and_headings_point_into_it() -> None:
    raw = (FIXTURES / "guide.md").read_bytes()
    doc = parse(raw, "guide.md")
    assert doc.kind == "markdown"
    assert doc.text == raw.decode()
    assert doc.title == "Ragchat guide"
    assert [(h.level, h.title) for h in doc.headings] == [
        (1, "Ragchat guide"),
        (2, "Install"),
        (2, "From source"),
        (3, "Requirements"),
        (1, "Usage"),
    ]
    for heading in doc.headings:
        assert doc.text[heading.start :].lstrip("# ").startswith(heading.title)


def test_markdown_fenced_lines_and_front_matter_are_not_headings() -> None:
    doc = parse(b"---\ntitle: x\n---\n\n````md\n# inside\n```\n# still inside\n````\n\n# Outside\n", "x.md")
    assert [h.title for h in doc.headings] == ["Outside"]
    unclosed = parse(b"# Top\n\n```\n# never closed\n", "y.md")
    assert [h.title for h in unclosed.headings] == ["Top"]


def test_markdown_heading_paths_reach_the_chunks() -> None:
    doc = parse((FIXTURES / "guide.md").read_bytes(), "guide.md")
    chunks = chunk(doc, HFTokenizer(MINILM_TOKENIZER), target_tokens=20, overlap_tokens=0)
    paths = {c.heading_path for c in chunks}
    # "Install" is a setext level-2 heading, so "## From source" is its sibling.
    assert {"Ragchat guide > Install", "Ragchat guide > From source > Requirements"} <= paths
    assert chunks[-1].heading_path == "Usage"


# --- HTML -------------------------------------------------------------------------------------------


def test_html_keeps_the_article_and_drops_boilerplate() -> None:
    doc = parse((FIXTURES / "page.html").read_bytes(), "page.html")
    assert doc.kind == "html"
    assert doc.title == "Release notes & upgrade guide"
    for boilerplate in [
        "analytics",
        "color",
        "Site logo",
        "Docs",
        "sidebar",
        "Subscribe",
        "JavaScript",
        "chart",
        "footer",
    ]:
        assert boilerplate not in doc.text
    assert doc.text.startswith("Release notes\n\nVersion 2 brings faster ingestion and a new parser.\n\nUpgrading\n\n")
    assert "Back up your database first.\nThen run the migration." in doc.text
    assert "- Stop the server\n- Run ragchat migrate" in doc.text
    assert "ragchat migrate\n  --to head" in doc.text  # <pre> keeps its whitespace
    assert "Issue | Status\nSlow PDFs | Fixed" in doc.text
    assert [(h.level, h.title) for h in doc.headings] == [(1, "Release notes"), (2, "Upgrading"), (3, "Known issues")]
    for heading in doc.headings:
        assert doc.text[heading.start :].startswith(heading.title)


def test_html_without_main_reads_the_body_minus_page_chrome() -> None:
    html = b"<body><header>Menu</header><h1>Plain</h1><div>One <i>two</i></div><div>three</div><footer>f</footer>"
    doc = parse(html, "plain.html")
    assert (doc.text, doc.title) == ("Plain\n\nOne two\n\nthree", "Plain")


def test_html_declared_charset_is_honoured() -> None:
    html = '<meta charset="windows-1252"><p>Caf\xe9 \x80</p>'.encode("latin-1")
    assert parse(html, "old.html").text == "Café €"


def test_html_without_visible_text_fails() -> None:
    with pytest.raises(IngestError, match="no visible text"):
        parse(b"<html><head><script>x()</script></head><body><nav>menu</nav></body></html>", "empty.html")


# --- code -------------------------------------------------------------------------------------------


def test_python_top_level_definitions_are_headings() -> None:
    raw = (FIXTURES / "module.py").read_bytes()
    doc = parse(raw, "module.py")
    assert (doc.kind, doc.text) == ("code", raw.decode())
    assert [h.title for h in doc.headings] == ["def fetch", "class Reader", "def main"]
    assert doc.text[doc.headings[0].start :].startswith("@functools.cache\ndef fetch")  # with its decorator


@pytest.mark.parametrize(
    ("filename", "source", "titles"),
    [
        (
            "app.ts",
            "export async function load(url: string) {}\nconst handler = async (req) => {}\n"
            "export default class Store {}\nfunction* gen() {}\n  function nested() {}\n",
            ["function load", "const handler", "class Store", "function* gen"],
        ),
        ("main.go", "package main\n\nfunc (s *Server) Serve() {}\nfunc main() {}\ntype Config struct{}\n", None),
        ("lib.rs", "pub fn parse() {}\n#[derive(Debug)]\npub struct Doc;\nimpl Doc {}\n", None),
    ],
)
def test_other_languages_get_definition_headings(filename: str, source: str, titles: list[str] | None) -> None:
    doc = parse(source.encode(), filename)
    expected = (
        titles
        or {
            "main.go": ["func Serve", "func main", "type Config"],
            "lib.rs": ["fn parse", "struct Doc", "impl Doc"],
        }[filename]
    )
    assert [h.title for h in doc.headings] == expected


# --- PDF --------------------------------------------------------------------------------------------


def test_pdf_pages_are_joined_and_their_starts_recorded() -> None:
    doc = parse(make_pdf(THREE_PAGES), "bread.pdf")
    assert doc.kind == "pdf"
    assert len(doc.page_starts) == 3 and doc.page_starts[0] == 0
    for start, lines in zip(doc.page_starts, THREE_PAGES, strict=True):
        assert doc.text[start:].startswith(lines[0] + "\n" + lines[1])
    assert doc.text[doc.page_starts[1] - 2 : doc.page_starts[1]] == "\n\n"


def test_pdf_page_numbers_are_carried_into_chunks() -> None:
    doc = parse(make_pdf(THREE_PAGES), "bread.pdf")
    chunks = chunk(doc, HFTokenizer(MINILM_TOKENIZER), target_tokens=40, overlap_tokens=8)
    assert [c.page for c in chunks] == sorted(c.page for c in chunks)
    assert {c.page for c in chunks} == {1, 2, 3}
    bounds = [*doc.page_starts, len(doc.text)]
    for c in chunks:
        assert c.page is not None
        assert bounds[c.page - 1] <= c.char_start and c.char_end <= bounds[c.page]
    assert chunks[-1].text == "Chapter three\nLet the loaf cool before slicing."


def test_pdf_with_an_empty_user_password_opens() -> None:
    doc = parse(encrypted(make_pdf(THREE_PAGES[2:]), user_password=""), "locked-lightly.pdf")
    assert doc.text == "Chapter three\nLet the loaf cool before slicing."


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (make_pdf(THREE_PAGES)[:300], "damaged PDF"),
        (b"%PDF-1.4\n" + bytes(range(256)) * 4, "damaged PDF"),
        (b"<html>not a pdf</html>", "not a PDF"),
        (b"", "is empty"),
        (make_pdf([["x"], ["y"]], fonts=False), "no extractable text"),
        (encrypted(make_pdf(THREE_PAGES), user_password="secret"), "password-protected"),
    ],
)
def test_unreadable_pdfs_fail_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(IngestError, match=reason):
        parse(data, "broken.pdf")


def test_heading_titles_read_as_rendered_while_the_text_stays_byte_for_byte() -> None:
    text = (
        "# Travel **policy** {#travel}\n\nBook early.\n\n"
        '## <a id="per-diem"></a>Per diem <!-- check rates -->\n\nRates vary.\n\n'
        "## The `Result` type and [errors](errors.md)\n\nUse it.\n\n"
        "## `__init__` methods\n\nKeep them short.\n\n"
        "Setext **heading** {#setext}\n---\n\nBody.\n"
    )
    parsed = parse_markdown(text)
    assert [h.title for h in parsed.headings] == [
        "Travel policy",
        "Per diem",
        "The Result type and errors",
        "__init__ methods",
        "Setext heading",
    ]
    assert parsed.title == "Travel policy"
    assert parsed.text == text  # citations point into the stored text: it is never rewritten
