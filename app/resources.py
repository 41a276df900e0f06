"""Where the files ragchat reads at run time live, outside its Python modules.

A source checkout keeps them at the top of the repository, where developers, ``alembic.ini`` and
``make`` expect them: ``migrations/``, ``docs/demo/`` and the frontend build in ``frontend/dist/``; an
editable install reads them there. A wheel carries them inside the package instead (``setup.py``
copies them in when it builds one): ``app/migrations/``, ``app/demo/`` and, when the frontend was
built before the wheel, ``app/static/``. The package's copy wins when it is there. Prompts and the
tokenizer are package data in ``app/`` in both cases.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent


def located(in_package: str, in_checkout: str) -> Path:
    """The folder inside the installed package when the wheel shipped it, else the checkout's."""
    packaged = PACKAGE / in_package
    return packaged if packaged.is_dir() else CHECKOUT / in_checkout


MIGRATIONS = located("migrations", "migrations")
DEMO = located("demo", "docs/demo")
# What `make frontend` builds; served when RAGCHAT_FRONTEND_DIR does not say otherwise.
FRONTEND = located("static", "frontend/dist")
