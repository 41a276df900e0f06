"""addDocumentFromUrl through the HTTP endpoint, fetching from a real loopback server that this
server's operator allowed (127.0.0.1/32 only): every other non-public address stays refused."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from app.container import Container
from app.settings import Settings
from tests.graphql.client import Api
from tests.graphql.ops import CREATE_PROJECT
from tests.net.server import serving
from tests.waiting import wait_until

ADD_URL = """
mutation($p: ID!, $url: String!, $wait: Boolean! = true) {
  addDocumentFromUrl(projectId: $p, url: $url, wait: $wait) {
    __typename
    ... on IngestionJob { origin finished items { name state outcome error document { name kind sourceUrl chunkCount } } }
    ... on UrlRefusedError { message reason }
    ... on FetchFailedError { message status }
    ... on TooLargeError { message limitBytes }
    ... on UnsupportedTypeError { message contentType }
    ... on NotFoundError { kind id }
    ... on ValidationError { fields { field message } }
  }
}
"""
DOCS = "query($id: ID!) { project(id: $id) { ... on Project { documentCount documents { ... on DocumentConnection { edges { node { name sourceUrl } } } } } } }"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        ingest={"url_allowed_networks": ["127.0.0.1/32"], "url_max_bytes": 4096, "url_max_redirects": 2},  # type: ignore[arg-type]
    )


@pytest.fixture
def web() -> Iterator[ThreadingHTTPServer]:
    with serving() as running:
        yield running


def _base(web: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{web.server_address[1]}"


def _add(api: Api, project: str, url: str, *, wait: bool = True) -> dict[str, Any]:
    result: dict[str, Any] = api.run(ADD_URL, p=project, url=url, wait=wait)["addDocumentFromUrl"]
    return result


def test_a_document_is_fetched_parsed_and_remembers_its_url(api: Api, web: ThreadingHTTPServer) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    url = f"{_base(web)}/redirect?to=/notes.md"
    added = _add(api, pid, url)  # fetched in the request, ingested by the worker as a job (issue 17 item 4)
    assert (added["__typename"], added["origin"], added["finished"]) == ("IngestionJob", "URL", True)
    (item,) = added["items"]
    final = f"{_base(web)}/notes.md"
    assert (item["state"], item["outcome"]) == ("READY", "ADDED")
    assert item["document"] == {"name": "notes.md", "kind": "MARKDOWN", "sourceUrl": final, "chunkCount": 1}
    named = _add(api, pid, f"{_base(web)}/download", wait=False)  # Content-Disposition: "../../etc/tides.txt"
    assert named["__typename"] == "IngestionJob" and named["items"][0]["name"] == "tides.txt"
    again = _add(api, pid, final)
    assert again["items"][0]["outcome"] == "UNCHANGED"
    wait_until(lambda: api.run(DOCS, id=pid)["project"]["documentCount"] == 2, 30, "the queued URL to be ingested")
    listed = api.run(DOCS, id=pid)["project"]
    assert listed["documentCount"] == 2
    assert {e["node"]["name"]: e["node"]["sourceUrl"] for e in listed["documents"]["edges"]} == {
        "notes.md": final,
        "tides.txt": f"{_base(web)}/download",
    }


@pytest.mark.parametrize(
    ("path_or_url", "reason"),
    [
        ("http://127.0.0.2/", "LOOPBACK"),  # loopback, not the allowed 127.0.0.1/32
        ("http://[::1]/", "LOOPBACK"),
        ("http://10.1.2.3/", "PRIVATE"),
        ("http://169.254.169.254/latest/meta-data/", "LINK_LOCAL"),
        ("/redirect?to=http://169.254.169.254/latest/meta-data/", "LINK_LOCAL"),
        ("/redirect?to=http://10.0.0.1/", "PRIVATE"),
        ("file:///etc/passwd", "SCHEME"),
    ],
)
def test_urls_into_non_public_networks_are_refused_and_nothing_is_written(
    api: Api, fake_container: Container, web: ThreadingHTTPServer, path_or_url: str, reason: str
) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    url = _base(web) + path_or_url if path_or_url.startswith("/") else path_or_url
    refused = _add(api, pid, url)
    assert refused["__typename"] == "UrlRefusedError" and refused["reason"] == reason
    assert api.run(DOCS, id=pid)["project"]["documentCount"] == 0


def test_fetch_failures_are_typed(api: Api, web: ThreadingHTTPServer) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    big = _add(api, pid, f"{_base(web)}/big-unannounced?n=5000")
    assert big["__typename"] == "TooLargeError" and big["limitBytes"] == 4096
    bomb = _add(api, pid, f"{_base(web)}/gzip?bomb=1")
    assert bomb["__typename"] == "TooLargeError"
    image = _add(api, pid, f"{_base(web)}/image.png")
    assert image["__typename"] == "UnsupportedTypeError" and image["contentType"] == "image/png"
    missing = _add(api, pid, f"{_base(web)}/gone")
    assert missing["__typename"] == "FetchFailedError" and missing["status"] == 404
    looping = _add(api, pid, f"{_base(web)}/loop")
    assert looping["__typename"] == "FetchFailedError" and "more than 2 redirects" in looping["message"]
    assert api.run(DOCS, id=pid)["project"]["documentCount"] == 0


def test_bad_input_is_refused_before_anything_is_fetched(api: Api, web: ThreadingHTTPServer) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    assert _add(api, "999", f"{_base(web)}/notes.md") == {"__typename": "NotFoundError", "kind": "project", "id": "999"}
    empty = _add(api, pid, "   ")
    assert empty["__typename"] == "ValidationError" and empty["fields"][0]["field"] == "url"
    assert web.seen == []  # type: ignore[attr-defined]
