"""GraphiQL at /graphql works offline: the page is the frontend's own build (frontend/graphiql.html)
with the example operation filled in, and everything it loads comes from this server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from app.container import Container
from app.graphql.router import EXAMPLE_OPERATION
from app.main import create_app
from app.web import BUILT_FRONTEND, GRAPHIQL_PAGE
from tests.live import serve

# A CDN's address (not the letters "cdn" in base64 data, which inlined fonts have).
CDN = re.compile(r"(?:https?:)?//[\w.-]*(?:unpkg|jsdelivr|esm\.sh|cdn)", re.IGNORECASE)
REFERENCES = re.compile(r"""\b(?:src|href)=["']([^"']+)["']""")
CONFIG = re.compile(r'<script type="application/json" id="graphiql-config">(.*?)</script>', re.DOTALL)
HTML = {"accept": "text/html"}


def test_graphiql_is_the_bundled_page_loading_only_same_origin_assets(container: Container) -> None:
    if not (BUILT_FRONTEND / GRAPHIQL_PAGE).is_file():
        pytest.skip("frontend not built: run `make frontend`")
    settings = container.settings.model_copy(update={"frontend_dir": BUILT_FRONTEND})
    with serve(create_app(settings, container)) as base, httpx.Client(base_url=base, timeout=10) as client:
        page = client.get("/graphql", headers=HTML)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert not CDN.search(page.text)
        config = CONFIG.search(page.text)
        assert config is not None and json.loads(config.group(1)) == {"defaultQuery": EXAMPLE_OPERATION}
        references = REFERENCES.findall(page.text)
        assert any(ref.endswith(".js") for ref in references), references
        for ref in references:
            assert ref.startswith("/") and not ref.startswith("//"), f"{ref} is not on this server"
            asset = client.get(ref)
            assert asset.status_code == 200, ref
            assert not CDN.search(asset.text), f"{ref} names a CDN"


def test_graphiql_without_a_build_says_how_to_build_it_instead_of_loading_a_cdn(
    container: Container, tmp_path: Path
) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>app</title>")  # an app, but no GraphiQL
    settings = container.settings.model_copy(update={"frontend_dir": tmp_path})
    with serve(create_app(settings, container)) as base:
        page = httpx.get(f"{base}/graphql", headers=HTML)
    assert page.status_code == 200
    assert "GraphiQL is not built" in page.text and "npm run build" in page.text
    assert "<script" not in page.text and not CDN.search(page.text)


def test_built_assets_are_compressed_and_cached_for_good_but_pages_and_the_api_are_not(container: Container) -> None:
    if not (BUILT_FRONTEND / "index.html").is_file():
        pytest.skip("frontend not built: run `make frontend`")
    biggest = max((BUILT_FRONTEND / "assets").glob("*.js"), key=lambda path: path.stat().st_size)
    settings = container.settings.model_copy(update={"frontend_dir": BUILT_FRONTEND})
    gzip = {"accept-encoding": "gzip"}
    with serve(create_app(settings, container)) as base, httpx.Client(base_url=base, timeout=10) as client:
        asset = client.get(f"/assets/{biggest.name}", headers=gzip)
        assert asset.status_code == 200 and asset.headers["content-encoding"] == "gzip"
        assert asset.content == biggest.read_bytes()  # httpx undid the gzip: the same bytes
        assert asset.num_bytes_downloaded < biggest.stat().st_size / 2  # what crossed the wire
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        plain = client.get(f"/assets/{biggest.name}", headers={"accept-encoding": "identity"})
        assert "content-encoding" not in plain.headers and plain.content == biggest.read_bytes()

        for route in ("/", "/projects/some-client-side-route"):
            page = client.get(route, headers=gzip)
            assert page.status_code == 200 and page.headers["cache-control"] == "no-cache", route
        assert client.get("/assets/missing.js").status_code == 404

        api = client.post("/graphql", json={"query": "{ __schema { types { name description } } }"}, headers=gzip)
        assert api.status_code == 200 and len(api.content) > 1024
        assert "content-encoding" not in api.headers  # no BREACH oracle on API responses
