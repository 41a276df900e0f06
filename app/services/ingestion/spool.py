"""Uploaded files spooled to disk for the ingestion worker: checked, copied in bounded pieces, never
held whole in memory.

Each upload request gets its own folder under the spool directory (a random name, so requests never
collide and a folder can be created before its job exists); the worker removes a file once its item
is ready, and :func:`app.services.ingestion.jobs.sweep_spool` removes folders no item needs at start-up.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import BinaryIO

from app.errors import IngestError, ValidationError
from app.rag.ingest.parsing import detect_kind
from app.services.documents import clean_upload_name
from app.services.ingestion.jobs import Intake

PIECE = 1024 * 1024


def spool(root: Path, files: list[tuple[str, BinaryIO]], max_bytes: int) -> list[Intake]:
    """Copy each (name, readable file) into a new folder under ``root``. The whole request is refused
    (ValidationError naming ``files[i]``, nothing left on disk) when a file is unnamed, larger than
    ``max_bytes`` or of a type no parser reads; files whose content then fails to parse fail one
    by one, in the job."""
    if not files:
        raise ValidationError("files", "no files were sent")
    folder = root / uuid.uuid4().hex
    folder.mkdir(parents=True)
    try:
        return [_copy(folder, i, name, data, max_bytes) for i, (name, data) in enumerate(files)]
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _copy(folder: Path, index: int, name: str, data: BinaryIO, max_bytes: int) -> Intake:
    field = f"files[{index}]"
    clean = clean_upload_name(name, field)
    head = data.read(min(4096, max_bytes + 1))
    try:
        detect_kind(clean, head[:4096])
    except IngestError as exc:
        raise ValidationError(field, f"{clean}: {exc.message}") from None
    target = folder / str(index)
    size = len(head)
    with target.open("wb") as out:
        out.write(head)
        while size <= max_bytes and (piece := data.read(PIECE)):
            out.write(piece)
            size += len(piece)
    if size > max_bytes:
        raise ValidationError(field, f"{clean} is larger than the upload limit of {max_bytes} bytes")
    return Intake(clean, size, target)


def discard(intakes: list[Intake]) -> None:
    """Remove a request's spooled files (its job could not be stored)."""
    folders = {intake.path.parent for intake in intakes}
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
