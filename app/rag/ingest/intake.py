"""What gets ingested, and why a file is not: the decision made before parsing.

Two checks, each answering with a :class:`Skipped` (the file's name, a :class:`SkipReason` and
words saying exactly what matched) or None:

- :class:`Selector` judges a path inside a folder by name: hidden files and folders, include
  patterns (when given, a file must match one), exclude patterns, the folder's ``.ragchatignore``
  (gitignore syntax, ``!`` re-includes) and :data:`DEFAULT_EXCLUDES` — build output that drowns a
  knowledge base in noise: lock files, source maps, minified bundles, documentation search indexes
  (a rustdoc folder was 4,154 of its 5,452 chunks ``searchindex-*.js``, CSS and minified JS).
- :func:`inspect` judges a file by content: compressed or binary bytes, minified text (long lines
  with little whitespace) and files that say they are generated. Text with an extension no parser
  knows (``copyright``, ``README.Debian``) is not skipped: it is read as text (app/rag/ingest/parsing.py).

Ingestion reports every skipped file with its reason; nothing is dropped without a word.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

import pathspec

from app.rag.ingest.parsers import ocr
from app.rag.ingest.parsers.text import looks_like_text
from app.rag.ingest.parsing import BINARY_KINDS, NOT_TEXT_EXTENSIONS, kind_by_name
from app.rag.ingest.types import DocumentKind

IGNORE_FILE = ".ragchatignore"

# gitignore syntax; a folder's .ragchatignore or --include can re-include any of them with "!pattern".
DEFAULT_EXCLUDES: tuple[str, ...] = (
    # lock files: generated, and every line a hash
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "*.lock", "go.sum",
    # minified and bundled assets, source maps
    "*.min.js", "*.min.mjs", "*.min.css", "*.bundle.js", "*.chunk.js", "*.map",
    # documentation generators' search indexes and asset folders (Sphinx, rustdoc, mkdocs, Docusaurus)
    "searchindex*.js", "search-index*.js", "search_index.json", "search.desc/", "search.index/", "sidebar-items*.js",
    "src-files*.js", "crates*.js", "implementors/**/*.js", "static.files/", "_static/",
    # dependency and build folders
    "node_modules/", "__pycache__/", "target/debug/", "target/release/",
)  # fmt: skip


class SkipReason(StrEnum):
    """Why a file was not ingested."""

    HIDDEN = "hidden"  # a dot-file or inside a dot-folder
    EXCLUDED = "excluded"  # matched an exclude pattern, the folder's .ragchatignore or a default one
    NOT_INCLUDED = "not_included"  # include patterns were given and none matched
    UNSUPPORTED = "unsupported"  # a type no parser reads: images, fonts, archives, office documents, media
    COMPRESSED = "compressed"  # gzip, zip, xz...: nothing is unpacked
    BINARY = "binary"  # not text (NUL bytes, or bytes that are not UTF-8)
    MINIFIED = "minified"  # text, but machine-packed: very long lines, almost no whitespace
    GENERATED = "generated"  # says so itself (@generated, "Code generated ... DO NOT EDIT")
    EMPTY = "empty"  # no bytes, or only whitespace: nothing to read, and nothing a retry could change


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: SkipReason
    detail: str  # what matched, in words: "matches the default pattern *.min.js"


class Selector:
    """Judges paths relative to one folder by name (see the module docstring)."""

    def __init__(
        self,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        ignore_lines: Iterable[str] = (),
        *,
        defaults: bool = True,
    ) -> None:
        self.include = list(include)
        self._include = pathspec.GitIgnoreSpec.from_lines(self.include) if self.include else None
        self._layers = [
            ("the default pattern {}", list(DEFAULT_EXCLUDES) if defaults else []),
            (f"the {IGNORE_FILE} pattern {{}}", [line for line in ignore_lines]),
            ("the --exclude pattern {}", list(exclude)),
        ]
        # One spec over all layers, in order, so a later "!pattern" re-includes what an earlier excluded:
        # --include re-includes defaults and .ragchatignore entries; --exclude has the last word.
        defaults_, ignore_, exclude_ = (layer for _, layer in self._layers)
        lines = [*defaults_, *ignore_, *(f"!{p}" for p in self.include), *exclude_]
        self._exclude = pathspec.GitIgnoreSpec.from_lines(lines)

    @classmethod
    def for_folder(
        cls, folder: Path, include: Iterable[str] = (), exclude: Iterable[str] = (), *, defaults: bool = True
    ) -> Selector:
        ignore = folder / IGNORE_FILE
        lines = ignore.read_text("utf-8", errors="replace").splitlines() if ignore.is_file() else []
        return cls(include, exclude, lines, defaults=defaults)

    def skip(self, relative: str, *, is_dir: bool = False) -> Skipped | None:
        """Why the file (or the whole folder) at ``relative`` (posix, inside the folder) is skipped."""
        parts = PurePosixPath(relative).parts
        shown = relative + ("/" if is_dir else "")
        if any(part.startswith(".") for part in parts):
            return Skipped(shown, SkipReason.HIDDEN, "hidden (its name starts with a dot)")
        if self._exclude.match_file(shown):
            return Skipped(shown, SkipReason.EXCLUDED, f"matches {self._which(shown)}")
        if not is_dir and self._include is not None and not self._include.match_file(relative):
            return Skipped(shown, SkipReason.NOT_INCLUDED, "matches no --include pattern")
        return None

    def _which(self, path: str) -> str:
        for template, layer in reversed(self._layers):
            for line in reversed(layer):
                pattern = line.strip()
                if pattern and not pattern.startswith(("#", "!")) and _matches(pattern, path):
                    return template.format(pattern)
        return "an exclude pattern"


def _matches(pattern: str, path: str) -> bool:
    return bool(pathspec.GitIgnoreSpec.from_lines([pattern]).match_file(path))


# -- content ----------------------------------------------------------------------------------

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"PK\x03\x04", "zip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!\x1a\x07", "rar"),
)
_SNIFF = 8192
_SAMPLE = 256 * 1024
# Minified: most of the text sits on lines longer than this...
LONG_LINE = 1000
# ...and whitespace is under this share of its ASCII bytes. Measured on rustdoc and mdBook output:
# prose and ordinary code 15-35%; minified JS and CSS 0.5-5.3%, an mdBook search index 8.1%.
MIN_WHITESPACE = 0.10
# Whatever the line lengths, 1,000 bytes and more with under 1% whitespace are machine-written
# (rustdoc's search.index/*.js: 0%).
NO_WHITESPACE = 0.01
_GENERATED = re.compile(
    rb"@generated\b|^// Code generated .* DO NOT EDIT\.$|^# This file is automatically @?generated", re.M
)
_TEXT_KINDS = frozenset({DocumentKind.TEXT, DocumentKind.MARKDOWN, DocumentKind.CODE, DocumentKind.UNKNOWN})
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def inspect(name: str, data: bytes) -> Skipped | None:
    """Why ``data`` is not worth ingesting as ``name``, judged by content; None when it is.
    PDF and HTML go to their parsers, which judge them (extracted text is never minified)."""
    kind = kind_by_name(name)
    if kind is DocumentKind.IMAGE and not ocr.available():
        suffix = PurePosixPath(name).suffix.lower()
        return Skipped(name, SkipReason.UNSUPPORTED, f"no parser reads {suffix} files without OCR (ragchat[ocr])")
    if kind in BINARY_KINDS:
        return None  # binary by design (an Office zip, an image): its parser checks and reads it
    head = data[:_SNIFF]
    if not head.strip() and not data.strip():
        return Skipped(name, SkipReason.EMPTY, "the file is empty: nothing to read")
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return Skipped(name, SkipReason.COMPRESSED, f"{what}-compressed data; archives are not unpacked")
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in NOT_TEXT_EXTENSIONS:
        return Skipped(name, SkipReason.UNSUPPORTED, f"no parser reads {suffix} files (images, fonts, archives...)")
    if kind not in _TEXT_KINDS or (kind is DocumentKind.UNKNOWN and _sniffs_as_document(head)):
        return None
    if head.startswith(_BOMS):
        return None  # a declared text encoding: the parser decodes it
    if b"\x00" in head:
        return Skipped(name, SkipReason.BINARY, "binary data (it contains NUL bytes), not text")
    if not looks_like_text(head):
        return Skipped(name, SkipReason.BINARY, "not text (not UTF-8, or mostly control characters)")
    sample = data[:_SAMPLE]
    if _GENERATED.search(sample[:2048]):
        return Skipped(name, SkipReason.GENERATED, "it says it is generated (@generated / DO NOT EDIT)")
    return _minified(name, sample)


def _sniffs_as_document(head: bytes) -> bool:
    start = head.lstrip().lower()
    return start.startswith((b"%pdf-", b"<!doctype html", b"<html"))


def _minified(name: str, sample: bytes) -> Skipped | None:
    if len(sample) < LONG_LINE:
        return None
    lines = sample.split(b"\n")
    in_long = sum(len(line) for line in lines if len(line) > LONG_LINE)
    # Of the ASCII bytes only: prose in scripts without spaces between words (Chinese, Japanese) is
    # not packed, and its ASCII is mostly punctuation and line breaks.
    ascii_bytes = len(sample) - sum(1 for byte in sample if byte >= 0x80)
    whitespace = sum(sample.count(c) for c in (b" ", b"\t", b"\n", b"\r")) / max(ascii_bytes, 1)
    packed = in_long >= len(sample) / 2 and whitespace < MIN_WHITESPACE
    if not packed and whitespace >= NO_WHITESPACE:
        return None  # long lines of prose (a paragraph per line) are not minified
    longest = max(len(line) for line in lines)
    return Skipped(
        name,
        SkipReason.MINIFIED,
        f"minified or machine-written text (longest line {longest:,} characters, {whitespace:.0%} whitespace)",
    )
