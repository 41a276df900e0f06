"""Source code: the text is kept as-is; top-level definitions become level-1 headings.

A citation can then say "parse_pdf in app/rag/ingest/parsers/pdf.py". Only definitions that start at
column 0 count, which is what "top level" means in every language listed here; methods and nested
functions stay inside their class's or function's chunk.
"""

from __future__ import annotations

import re

from app.rag.ingest.types import Heading

_NAME = r"(?P<name>[A-Za-z_$][\w$]*)"
_PY = re.compile(rf"^(?:async[ \t]+)?(?P<kw>def|class)[ \t]+{_NAME}", re.MULTILINE)
_JS = re.compile(
    rf"^(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:abstract[ \t]+)?(?:async[ \t]+)?"
    rf"(?P<kw>function\*?|class|interface|enum)[ \t]+{_NAME}"
    # const handler = (req) => ..., const f = async function ...
    rf"|^(?:export[ \t]+)?(?P<kw2>const|let|var)[ \t]+(?P<name2>[A-Za-z_$][\w$]*)[ \t]*(?::[^=\n]+)?=[ \t]*"
    r"(?:async[ \t]+)?(?:function\b|\([^)\n]*\)[ \t]*(?::[^=\n]+)?=>|[A-Za-z_$][\w$]*[ \t]*=>)",
    re.MULTILINE,
)
_GO = re.compile(rf"^(?P<kw>func|type)[ \t]+(?:\([^)\n]*\)[ \t]*)?{_NAME}", re.MULTILINE)
_RUST = re.compile(
    rf"^(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:async[ \t]+)?(?:unsafe[ \t]+)?(?P<kw>fn|struct|enum|trait|impl|mod)"
    rf"(?:<[^>\n]*>)?[ \t]+{_NAME}",
    re.MULTILINE,
)
_RUBY = re.compile(rf"^(?P<kw>def|class|module)[ \t]+(?:self\.)?{_NAME}", re.MULTILINE)
_PHP = re.compile(
    rf"^(?:(?:abstract|final|readonly)[ \t]+)*(?P<kw>function|class|interface|trait|enum)[ \t]+{_NAME}", re.MULTILINE
)
_JVM = re.compile(
    rf"^(?:(?:public|private|protected|internal|abstract|final|sealed|open|data|static|partial)[ \t]+)*"
    rf"(?P<kw>class|interface|enum|record|object|struct|fun|func|def|trait)[ \t]+{_NAME}",
    re.MULTILINE,
)
_LUA = re.compile(r"^(?:local[ \t]+)?(?P<kw>function)[ \t]+(?P<name>[\w.:]+)", re.MULTILINE)
_SHELL = re.compile(r"^(?:(?P<kw>function)[ \t]+)?(?P<name>[A-Za-z_][\w-]*)[ \t]*\(\)[ \t]*\{?", re.MULTILINE)

_DECORATOR = re.compile(r"@[A-Za-z_]|#\[")

_BY_EXTENSION: dict[str, re.Pattern[str]] = {
    ".py": _PY,
    ".pyi": _PY,
    ".js": _JS,
    ".mjs": _JS,
    ".cjs": _JS,
    ".jsx": _JS,
    ".ts": _JS,
    ".tsx": _JS,
    ".go": _GO,
    ".rs": _RUST,
    ".rb": _RUBY,
    ".php": _PHP,
    ".java": _JVM,
    ".kt": _JVM,
    ".scala": _JVM,
    ".swift": _JVM,
    ".cs": _JVM,
    ".lua": _LUA,
    ".sh": _SHELL,
}


def code_headings(text: str, extension: str) -> tuple[Heading, ...]:
    """Top-level definitions as level-1 headings titled like ``def parse`` or ``class Reader``."""
    pattern = _BY_EXTENSION.get(extension.lower())
    if pattern is None:
        return ()
    headings = []
    for match in pattern.finditer(text):
        keyword = match.groupdict().get("kw") or match.groupdict().get("kw2") or ""
        name = match.group("name") or match.groupdict().get("name2") or ""
        start = _with_decorators(text, match.start())
        headings.append(Heading(start=start, level=1, title=f"{keyword} {name}".strip()))
    return tuple(headings)


def _with_decorators(text: str, start: int) -> int:
    """Move a definition's start up over decorators/attributes (``@cache``, ``#[derive(...)]``) above it,
    so they land in the same chunk as the definition they modify."""
    while start > 0:
        line_start = text.rfind("\n", 0, start - 1) + 1
        if not _DECORATOR.match(text, line_start):
            break
        start = line_start
    return start
