"""Turn an uploaded file into a :class:`ParsedDocument`: plain text plus the structure that chunking
and citations need (headings, page starts).

Offsets in the result point into ``ParsedDocument.text``. For text, Markdown and code that text is
the file itself with line endings normalised to ``\\n`` and NULs dropped, so what a citation shows
is what the file says. HTML and PDF text is extracted, so offsets point into the extracted text.

Every failure is an :class:`app.errors.IngestError` whose message says what is wrong with the file,
without its name (callers show the name next to it). :class:`ParseLimits` bound what one file may
yield (pages, characters); the time a parse may take is bounded by running it in
:class:`app.rag.ingest.parse_worker.ParseWorker`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from app.errors import IngestError
from app.rag.ingest.parsers import ocr
from app.rag.ingest.parsers.code import code_headings
from app.rag.ingest.parsers.html import parse_html
from app.rag.ingest.parsers.markdown import parse_markdown
from app.rag.ingest.parsers.office import ZipLimits, parse_docx, parse_pptx, parse_xlsx
from app.rag.ingest.parsers.pdf import parse_pdf
from app.rag.ingest.parsers.text import decode_text, looks_like_text, normalise, too_much_text
from app.rag.ingest.types import DocumentKind, Heading, ParsedDocument

__all__ = [
    "BINARY_KINDS",
    "CODE_EXTENSIONS",
    "KINDS_BY_EXTENSION",
    "NOT_TEXT_EXTENSIONS",
    "OFFICE_KINDS",
    "ParseLimits",
    "detect_kind",
    "kind_by_name",
    "parse",
    "stored_kind",
]


@dataclass(frozen=True)
class ParseLimits:
    """How much text one file may yield; beyond it the file fails. The defaults are
    :class:`app.settings.IngestSettings`'s (``RAGCHAT_INGEST__MAX_PAGES`` and so on)."""

    max_pages: int = 2_000
    max_chars_per_page: int = 200_000
    max_chars_per_file: int = 5_000_000
    zip: ZipLimits = field(default_factory=ZipLimits)  # what an Office file's zip container may unpack to
    # Characters of a PDF's pages its table finding may read in all (~0.05 ms a character, ~0.1 s a
    # ruled page here; 150,000 is ~80 dense pages, ~8 s on a loaded machine); later pages keep
    # pypdf's text, so a long ruled document still parses within the default 30 s parse timeout.
    # Characters, not seconds: the same file always parses to the same text.
    table_chars: int = 150_000


TEXT_EXTENSIONS = frozenset({".txt", ".text", ".rst", ".log", ".csv", ".tsv", ".adoc", ".org", ".tex", ".srt"})
MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdown", ".mkd"})
HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})
CODE_EXTENSIONS = frozenset(
    {".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".c", ".h", ".cpp"}
    | {".cc", ".hpp", ".cs", ".rb", ".php", ".sh", ".bash", ".sql", ".yaml", ".yml", ".toml", ".json", ".ini"}
    | {".cfg", ".css", ".scss", ".kt", ".swift", ".scala", ".lua", ".xml", ".graphql", ".proto", ".r", ".dart"}
)
KINDS_BY_EXTENSION: dict[str, DocumentKind] = {
    **dict.fromkeys(TEXT_EXTENSIONS, DocumentKind.TEXT),
    **dict.fromkeys(MARKDOWN_EXTENSIONS, DocumentKind.MARKDOWN),
    **dict.fromkeys(HTML_EXTENSIONS, DocumentKind.HTML),
    **dict.fromkeys(CODE_EXTENSIONS, DocumentKind.CODE),
    ".pdf": DocumentKind.PDF,
    ".docx": DocumentKind.DOCX,
    ".pptx": DocumentKind.PPTX,
    ".xlsx": DocumentKind.XLSX,
    ".png": DocumentKind.IMAGE,
    ".jpg": DocumentKind.IMAGE,
    ".jpeg": DocumentKind.IMAGE,
}
OFFICE_KINDS = frozenset({DocumentKind.DOCX, DocumentKind.PPTX, DocumentKind.XLSX})
# Kinds whose bytes are binary by design: intake leaves judging them to their parsers.
BINARY_KINDS = OFFICE_KINDS | {DocumentKind.IMAGE}
# Types that are never text, whatever their first bytes: images, fonts, archives, office documents,
# media, binaries. Any other extension no parser knows is read as text when its bytes are text.
NOT_TEXT_EXTENSIONS = frozenset(
    {".gif", ".bmp", ".ico", ".webp", ".tif", ".tiff", ".svg", ".psd", ".heic"}
    | {".woff", ".woff2", ".ttf", ".otf", ".eot"}
    | {".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar", ".whl", ".deb", ".rpm"}
    | {".doc", ".xls", ".ppt", ".odt", ".ods", ".odp", ".epub", ".rtf"}
    | {".mp3", ".mp4", ".wav", ".ogg", ".flac", ".webm", ".mov", ".avi", ".mkv"}
    | {".exe", ".dll", ".so", ".dylib", ".bin", ".o", ".a", ".class", ".pyc", ".wasm", ".sqlite", ".db", ".inv"}
)
# Well-known files that carry no extension.
_KINDS_BY_NAME = {
    "makefile": DocumentKind.CODE,
    "dockerfile": DocumentKind.CODE,
    "readme": DocumentKind.TEXT,
    "license": DocumentKind.TEXT,
    "copying": DocumentKind.TEXT,
    "changelog": DocumentKind.TEXT,
    "authors": DocumentKind.TEXT,
    "notice": DocumentKind.TEXT,
}


def kind_by_name(filename: str) -> DocumentKind:
    """The kind a file's name says (its extension, or a well-known name); UNKNOWN when it says none."""
    path = PurePosixPath(filename.replace("\\", "/"))
    return KINDS_BY_EXTENSION.get(path.suffix.lower()) or _KINDS_BY_NAME.get(path.name.lower()) or DocumentKind.UNKNOWN


def stored_kind(value: str) -> DocumentKind:
    """A ``documents.kind`` as stored. Documents that failed before kinds were an enum kept their
    file's extension there ("md", "docx"), or "unknown"; those read as the kind it names."""
    try:
        return DocumentKind(value)
    except ValueError:
        return KINDS_BY_EXTENSION.get(f".{value}".lower(), DocumentKind.UNKNOWN)


def detect_kind(filename: str, data: bytes) -> DocumentKind:
    """The document's kind, from the extension (case-insensitive).

    A file without an extension is sniffed: a PDF header, an HTML document, else text. A file whose
    extension no parser knows is read as text when its first bytes are text (``README.Debian``).
    Raises :class:`IngestError` for such an extension on a file that is not text.
    """
    kind = kind_by_name(filename)
    if kind is not DocumentKind.UNKNOWN:
        return kind
    suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
    if not suffix:
        head = data[:1024].lstrip().lower()
        if head.startswith(b"%pdf-"):
            return DocumentKind.PDF
        if head.startswith((b"<!doctype html", b"<html")):
            return DocumentKind.HTML
        return DocumentKind.TEXT
    if suffix not in NOT_TEXT_EXTENSIONS and looks_like_text(data):
        return DocumentKind.TEXT  # an extension no parser knows, on a text file: README.Debian, app.conf
    # The full list is KINDS_BY_EXTENSION, for a UI to show; the message stays readable.
    raise IngestError(
        f"files of type {suffix} are not supported;"
        " upload text, Markdown, HTML, PDF, Word, PowerPoint, Excel, images or source code"
    )


def parse(data: bytes, filename: str, limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse an uploaded file by its kind (see :func:`detect_kind`).

    Raises :class:`IngestError` for an empty file, an unsupported type, a binary file posing as
    text, undecodable bytes, a PDF that is damaged, password-protected or has no text, or a file
    beyond ``limits`` (the defaults when not given).
    """
    limits = limits or ParseLimits()
    kind = detect_kind(filename, data)
    if not data.strip():
        raise IngestError("the file is empty")
    if kind is DocumentKind.PDF:
        return parse_pdf(
            data,
            max_pages=limits.max_pages,
            max_chars_per_page=limits.max_chars_per_page,
            max_chars=limits.max_chars_per_file,
            table_chars=limits.table_chars,
        )
    if kind is DocumentKind.DOCX:
        return parse_docx(data, max_chars=limits.max_chars_per_file, zip_limits=limits.zip)
    if kind is DocumentKind.PPTX:
        return parse_pptx(data, max_pages=limits.max_pages, max_chars=limits.max_chars_per_file, zip_limits=limits.zip)
    if kind is DocumentKind.XLSX:
        return parse_xlsx(data, max_chars=limits.max_chars_per_file, zip_limits=limits.zip)
    if kind is DocumentKind.IMAGE:
        return _parse_image(data, limits.max_chars_per_file)
    if kind is DocumentKind.HTML:
        return parse_html(data, max_chars=limits.max_chars_per_file)
    text = decode_text(data)
    if len(text) > limits.max_chars_per_file:
        raise IngestError(too_much_text(limits.max_chars_per_file))
    if kind is DocumentKind.MARKDOWN:
        return parse_markdown(text)
    if kind is DocumentKind.CODE:
        return ParsedDocument(
            text=text, kind=DocumentKind.CODE, headings=code_headings(text, PurePosixPath(filename).suffix)
        )
    return ParsedDocument(text=text, kind=DocumentKind.TEXT)


def _parse_image(data: bytes, max_chars: int) -> ParsedDocument:
    """An image's text by OCR, under one heading that says so (citations show it)."""
    if not ocr.available():
        raise IngestError("images are read by OCR, which is not installed (pip install ragchat[ocr])")
    text = normalise(ocr.ocr_image(data)).strip()
    if not text:
        raise IngestError("OCR found no text in the image")
    if len(text) > max_chars:
        raise IngestError(too_much_text(max_chars))
    heading = f"# Image {ocr.OCR_MARK}"
    return ParsedDocument(
        text=f"{heading}\n\n{text}", kind=DocumentKind.IMAGE, headings=(Heading(0, 1, f"Image {ocr.OCR_MARK}"),)
    )
