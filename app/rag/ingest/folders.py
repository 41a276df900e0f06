"""The files a folder holds for ingestion: walked once, judged by name with an
:class:`app.rag.ingest.intake.Selector`, every file left out recorded with its reason.

A folder that is skipped as a whole (``node_modules/``, ``.git/``) is one entry, not one per file
inside it. Files named directly are always taken (their content is still judged at ingestion).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from app.rag.ingest.intake import IGNORE_FILE, Selector, Skipped, SkipReason


@dataclass
class Collected:
    files: list[tuple[str, Path]] = field(default_factory=list)  # (document name, path)
    skipped: list[Skipped] = field(default_factory=list)


def collect(
    paths: Iterable[Path], include: Iterable[str] = (), exclude: Iterable[str] = (), *, defaults: bool = True
) -> Collected:
    """Files named in ``paths`` and those found in its folders; a folder's files are named by their
    path inside it (``guide/intro.md``), a file named directly by its name."""
    include, exclude = list(include), list(exclude)
    found = Collected()
    for path in paths:
        if path.is_dir():
            _walk(path, Selector.for_folder(path, include, exclude, defaults=defaults), found)
        else:
            found.files.append((path.name, path))
    return found


def _walk(folder: Path, selector: Selector, found: Collected) -> None:
    for root, dirs, files in os.walk(folder):
        here = Path(root).relative_to(folder)
        kept = []
        for name in sorted(dirs):
            skipped = selector.skip((here / name).as_posix(), is_dir=True)
            if skipped is None:
                kept.append(name)
            else:
                found.skipped.append(skipped)
        dirs[:] = kept  # os.walk descends only into these
        for name in sorted(files):
            relative = (here / name).as_posix()
            if relative == IGNORE_FILE:
                continue  # the rules themselves
            path = Path(root) / name
            skipped = selector.skip(relative)
            if skipped is None and not path.is_file():
                skipped = Skipped(
                    relative, SkipReason.BINARY, "not a regular file (a pipe, socket, device or broken link)"
                )
            if skipped is None:
                found.files.append((relative, path))
            else:
                found.skipped.append(skipped)
