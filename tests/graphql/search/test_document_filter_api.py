"""Document filters through the real HTTP endpoint: tags set on documents, a search narrowed by
them, a chat session that keeps a filter in its settings (its turns search only those documents,
and the trace says so), and the specific refusals of a bad filter. (Uploads keep a file's base name:
folder paths come from `ragchat ingest`, so the path prefix here is a name prefix.)"""

from __future__ import annotations

from typing import Any

from app.services.ingestion import jobs
from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT

TAGS = """mutation($id: ID!, $tags: [String!]!) { setDocumentTags(id: $id, tags: $tags) {
  __typename ... on Document { name tags modifiedAt } ... on ValidationError { fields { field message } } } }"""
SEARCH = """query($p: ID!, $q: String!, $f: DocumentFilterInput) { search(projectId: $p, query: $q, topK: 5,
  threshold: 0, filter: $f) { __typename
  ... on SearchResults { documentFilter { tagsAny tagsAll pathPrefix kinds dateFrom dateTo } kept { documentName } }
  ... on ValidationError { fields { field message } } } }"""
SESSION = """mutation($p: ID!, $input: CreateChatSessionInput) { createChatSession(projectId: $p, input: $input) {
  __typename ... on ChatSession { id documentFilter { tagsAny pathPrefix } }
  ... on ValidationError { fields { field message } } } }"""
UPDATE = """mutation($id: ID!, $input: UpdateChatSessionInput!) { updateChatSession(id: $id, input: $input) {
  __typename ... on ChatSession { documentFilter { tagsAny pathPrefix } } } }"""
SEND = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) { __typename
  ... on ChatMessage { trace { search { documentFilter { tagsAny pathPrefix } } candidates { documentName } } } } }"""
PREVIEW = """query($s: ID!, $m: String!, $f: DocumentFilterInput) { retrievalPreview(sessionId: $s, message: $m,
  filter: $f) { __typename ... on SearchResults { documentFilter { pathPrefix } kept { documentName } } } }"""

DOCS = {
    "runbook-billing.md": "restart the billing service with the runbook",
    "runbook-search.md": "restart the search service with the runbook",
    "policy-billing.md": "the billing service restart policy",
}


def _kb(api: Api) -> tuple[str, dict[str, str]]:
    pid = str(api.run(CREATE_PROJECT, name="kb")["createProject"]["id"])
    ids = {}
    for name, text in DOCS.items():
        report = api.run(ADD_DOC, p=pid, name=name, text=text)["addDocument"]
        ids[name] = str(report["files"][0]["document"]["id"])
    return pid, ids


def _kept(found: dict[str, Any]) -> set[str]:
    return {hit["documentName"] for hit in found["kept"]}


def test_tags_then_a_search_narrowed_by_them_and_by_folder(api: Api) -> None:
    pid, ids = _kb(api)
    tagged = api.run(TAGS, id=ids["runbook-billing.md"], tags=["billing", "ops"])["setDocumentTags"]
    assert tagged == {
        "__typename": "Document",
        "name": "runbook-billing.md",
        "tags": ["billing", "ops"],
        "modifiedAt": None,
    }
    api.run(TAGS, id=ids["policy-billing.md"], tags=["billing"])

    everything = api.run(SEARCH, p=pid, q="restart the billing service", f=None)["search"]
    assert _kept(everything) == set(DOCS) and everything["documentFilter"] is None

    by_tags = api.run(SEARCH, p=pid, q="restart the billing service", f={"tagsAll": ["ops", "billing"]})["search"]
    assert _kept(by_tags) == {"runbook-billing.md"}
    assert by_tags["documentFilter"]["tagsAll"] == ["billing", "ops"]

    by_folder = api.run(SEARCH, p=pid, q="restart", f={"pathPrefix": "runbook-", "kinds": ["markdown"]})["search"]
    assert _kept(by_folder) == {"runbook-billing.md", "runbook-search.md"}


def test_a_bad_filter_is_refused_field_by_field(api: Api) -> None:
    pid, ids = _kb(api)
    bad = {
        "kinds": ["spreadsheet"],
        "dateFrom": "2026-06-01T00:00:00+00:00",
        "dateTo": "2026-01-01T00:00:00+00:00",
        "tagsAny": ["x" * 65],
    }
    refused = api.run(SEARCH, p=pid, q="restart", f=bad)["search"]
    assert refused["__typename"] == "ValidationError"
    fields = {f["field"]: f["message"] for f in refused["fields"]}
    assert set(fields) == {"filter.tagsAny", "filter.kinds", "filter.dateTo"}
    assert "unknown file type 'spreadsheet'" in fields["filter.kinds"]
    assert "ends before it starts" in fields["filter.dateTo"]
    assert "at most 64 characters" in fields["filter.tagsAny"]

    too_long = api.run(TAGS, id=ids["runbook-billing.md"], tags=["ok", " padded"])["setDocumentTags"]
    assert too_long["__typename"] == "ValidationError"
    assert too_long["fields"][0]["field"] == "tags"

    session = api.run(SESSION, p=pid, input={"provider": "fake", "model": "scripted", "documentFilter": bad})
    assert {f["field"] for f in session["createChatSession"]["fields"]} == {
        "documentFilter.tagsAny",
        "documentFilter.kinds",
        "documentFilter.dateTo",
    }


def test_a_session_keeps_its_filter_and_its_turns_search_only_those_documents(api: Api, model: FakeChatModel) -> None:
    pid, _ = _kb(api)
    base = {"provider": "fake", "model": "scripted", "threshold": 0.0, "answerMode": "EXTRACTIVE"}
    created = api.run(SESSION, p=pid, input={**base, "documentFilter": {"pathPrefix": "policy-"}})
    session = created["createChatSession"]
    assert session["documentFilter"] == {"tagsAny": [], "pathPrefix": "policy-"}

    trace = api.run(SEND, s=session["id"], c="restart the billing service")["sendMessage"]["trace"]
    assert trace["search"]["documentFilter"] == {"tagsAny": [], "pathPrefix": "policy-"}
    assert {c["documentName"] for c in trace["candidates"]} == {"policy-billing.md"}

    preview = api.run(PREVIEW, s=session["id"], m="restart the billing service", f=None)["retrievalPreview"]
    assert _kept(preview) == {"policy-billing.md"}  # the session's filter
    tried = api.run(PREVIEW, s=session["id"], m="restart", f={"pathPrefix": "runbook-"})["retrievalPreview"]
    assert _kept(tried) == {"runbook-billing.md", "runbook-search.md"}
    assert tried["documentFilter"] == {"pathPrefix": "runbook-"}

    cleared = api.run(UPDATE, id=session["id"], input={"documentFilter": {}})["updateChatSession"]
    assert cleared["documentFilter"] is None
    trace = api.run(SEND, s=session["id"], c="restart the billing service")["sendMessage"]["trace"]
    assert trace["search"]["documentFilter"] is None
    assert {c["documentName"] for c in trace["candidates"]} == set(DOCS)


ADD_TAGGED = """mutation($p: ID!, $n: String!, $t: String!, $tags: [String!], $m: DateTime) {
  addDocument(projectId: $p, name: $n, text: $t, tags: $tags, modifiedAt: $m) { __typename
  ... on UploadReport { files { document { tags modifiedAt } } } ... on ValidationError { fields { field } } } }"""


def test_tags_and_a_date_given_at_upload(api: Api) -> None:
    pid, _ = _kb(api)
    added = api.run(ADD_TAGGED, p=pid, n="old.md", t="an old billing note", tags=["archive"], m="2020-05-01T00:00:00Z")
    document = added["addDocument"]["files"][0]["document"]
    assert document["tags"] == ["archive"] and document["modifiedAt"].startswith("2020-05-01T00:00:00")
    old = api.run(SEARCH, p=pid, q="billing", f={"dateTo": "2021-01-01T00:00:00Z"})["search"]
    assert _kept(old) == {"old.md"}
    refused = api.run(ADD_TAGGED, p=pid, n="x.md", t="x", tags=[""], m=None)["addDocument"]
    assert refused == {"__typename": "ValidationError", "fields": [{"field": "tags"}]}


UPLOAD_TAGGED = """mutation($p: ID!, $files: [Upload!]!, $tags: [String!]) {
  uploadDocuments(projectId: $p, files: $files, tags: $tags, wait: true) { __typename
  ... on IngestionJob { items { state document { name tags } } }
  ... on ValidationError { fields { field message } } } }"""
JOBS = """query($p: ID!) { project(id: $p) { ... on Project { ingestionJobs(first: 10) { ... on IngestionJobConnection { totalCount } } } } }"""


def _upload(api: Api, pid: str, files: dict[str, bytes], tags: list[str] | None) -> dict[str, Any]:
    parts = {f"variables.files.{i}": (name, data) for i, (name, data) in enumerate(files.items())}
    body = api.upload(UPLOAD_TAGGED, parts, {"p": pid, "tags": tags})
    assert "errors" not in body, body
    return dict(body["data"]["uploadDocuments"])


def test_uploaded_files_get_the_uploads_tags_and_a_bad_tag_stores_nothing(api: Api, fake_container: Any) -> None:
    pid, _ = _kb(api)
    files = {"handbook-a.md": b"the on-call handbook says restart", "handbook-b.md": b"the handbook restart steps"}
    job = _upload(api, pid, files, ["handbook", "ops"])
    assert job["__typename"] == "IngestionJob"
    assert [(i["state"], i["document"]) for i in job["items"]] == [
        ("READY", {"name": "handbook-a.md", "tags": ["handbook", "ops"]}),
        ("READY", {"name": "handbook-b.md", "tags": ["handbook", "ops"]}),
    ]
    found = api.run(SEARCH, p=pid, q="restart", f={"tagsAny": ["handbook"]})["search"]
    assert _kept(found) == set(files)

    # The same file again without tags keeps them; with an empty list clears them.
    again = _upload(api, pid, {"handbook-a.md": b"the on-call handbook says restart, now twice"}, None)
    assert again["items"][0]["document"]["tags"] == ["handbook", "ops"]
    cleared = _upload(api, pid, {"handbook-b.md": b"the handbook restart steps"}, [])
    assert cleared["items"][0]["document"]["tags"] == []

    jobs_before = api.run(JOBS, p=pid)["project"]["ingestionJobs"]["totalCount"]
    spooled = jobs.spool_dir(fake_container.settings)
    files_before = sorted(spooled.rglob("*"))
    refused = _upload(api, pid, {"new.md": b"never stored"}, ["fine", " padded", "x" * 65])
    assert refused["__typename"] == "ValidationError"
    assert [f["field"] for f in refused["fields"]] == ["tags", "tags"]
    assert "spaces" in refused["fields"][0]["message"] and "at most 64" in refused["fields"][1]["message"]
    assert api.run(JOBS, p=pid)["project"]["ingestionJobs"]["totalCount"] == jobs_before
    assert sorted(spooled.rglob("*")) == files_before
    listed = api.run(SEARCH, p=pid, q="never stored", f=None)["search"]
    assert "new.md" not in _kept(listed)


KB_TAGS = """query($p: ID!) { project(id: $p) { ... on Project { documentTags { tag documents } } } }"""


def test_a_knowledge_base_lists_its_documents_tags_with_counts(api: Api) -> None:
    pid, ids = _kb(api)
    assert api.run(KB_TAGS, p=pid)["project"]["documentTags"] == []
    api.run(TAGS, id=ids["runbook-billing.md"], tags=["billing", "ops"])
    api.run(TAGS, id=ids["policy-billing.md"], tags=["billing"])
    other = str(api.run(CREATE_PROJECT, name="other")["createProject"]["id"])
    added = api.run(ADD_TAGGED, p=other, n="o.md", t="another base", tags=["elsewhere"], m=None)
    assert added["addDocument"]["files"][0]["document"]["tags"] == ["elsewhere"]
    assert api.run(KB_TAGS, p=pid)["project"]["documentTags"] == [
        {"tag": "billing", "documents": 2},
        {"tag": "ops", "documents": 1},
    ]
