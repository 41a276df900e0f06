"""The wheel's build step: ragchat's run-time files that live outside app/ in the repository.

pyproject.toml holds the metadata; this only puts into a wheel what ``app.resources`` looks for
inside the package: the Alembic migrations (``migrations/``, which stays at the top of the repository
for alembic.ini and developers), the demo knowledge base (``docs/demo/``) and the built frontend
(``frontend/dist/``, when ``make frontend`` ran before the build; without it the wheel serves the API
only). An editable install reads them from the checkout, so nothing is copied for one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# (folder in the repository, folder inside the package, required)
BUNDLED = [
    ("migrations", "migrations", True),
    ("docs/demo", "demo", True),
    ("frontend/dist", "static", False),
]


class BuildWithResources(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for source, target, required in BUNDLED:
            src, dst = ROOT / source, Path(self.build_lib) / "app" / target
            shutil.rmtree(dst, ignore_errors=True)  # build/ outlives a build: never ship a stale copy
            if not src.is_dir() or (target == "static" and not (src / "index.html").is_file()):
                if required:
                    raise FileNotFoundError(f"{src} is missing: a ragchat wheel needs it")
                print(f"ragchat: {source} not built, the wheel serves the API only (run `make frontend` first)")
                continue
            # Source maps are two thirds of the frontend's build and only help someone debugging it.
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.map"))


setup(cmdclass={"build_py": BuildWithResources})
