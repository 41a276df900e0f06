#!/usr/bin/env python3
"""ragchat from a script, with the `gql` client: create a knowledge base, upload documents,
create a chat session with its own RAG settings, ask a question, print the answer and citations.

    python examples/quickstart.py [--url http://127.0.0.1:8000/graphql] [--api-key KEY] FILE...

With no FILE, the demo documents in docs/demo/ are uploaded.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path

from gql import Client, FileVar, GraphQLRequest, gql
from gql.transport.requests import RequestsHTTPTransport

DEMO = Path(__file__).resolve().parents[1] / "docs" / "demo"

CREATE_PROJECT = gql("""
mutation Create($name: String!) {
  createProject(input: {name: $name}) { __typename ... on Project { id name } ... on Error { message } }
}""")
UPLOAD = gql("""
mutation Upload($projectId: ID!, $files: [Upload!]!) {
  uploadDocuments(projectId: $projectId, files: $files, wait: true) {
    __typename
    ... on IngestionJob { id items { name state outcome chunksDone error } }
    ... on Error { message }
  }
}""")
CREATE_SESSION = gql("""
mutation Session($projectId: ID!, $input: CreateChatSessionInput!) {
  createChatSession(projectId: $projectId, input: $input) {
    __typename ... on ChatSession { id title topK threshold } ... on Error { message }
  }
}""")
ASK = gql("""
mutation Ask($sessionId: ID!, $content: String!) {
  sendMessage(sessionId: $sessionId, content: $content) {
    __typename
    ... on ChatMessage {
      status content error noContext
      citations { marker kind documentName score location { lineStart lineEnd page headingPath } }
    }
    ... on Error { message }
  }
}""")


def call(client: Client, document: GraphQLRequest, upload: bool = False, **variables: object) -> dict:
    return client.execute(GraphQLRequest(document, variable_values=variables), upload_files=upload)


def expect(result: dict, field: str, typename: str) -> dict:
    value = result[field]
    if value["__typename"] != typename:
        sys.exit(f"{field} failed: {value.get('message', value)}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--url", default="http://127.0.0.1:8000/graphql")
    parser.add_argument("--api-key")
    parser.add_argument("--question", default="How do I tune top_k and the threshold of a chat session?")
    parser.add_argument("--provider")
    parser.add_argument("--model")
    args = parser.parse_args()
    # Uploads are multipart bodies, which the server takes only with this header (its CSRF guard).
    headers = {"Apollo-Require-Preflight": "true"}
    if args.api_key:
        headers["Authorization"] = f"Bearer {args.api_key}"
    transport = RequestsHTTPTransport(url=args.url, headers=headers, timeout=600)
    files = args.files or sorted(DEMO.glob("*.md"))

    with Client(transport=transport, fetch_schema_from_transport=False) as client:
        name = f"quickstart-{uuid.uuid4().hex[:6]}"
        project = expect(call(client, CREATE_PROJECT, name=name), "createProject", "Project")
        print(f"knowledge base {project['name']} (id {project['id']})")

        handles = [path.open("rb") for path in files]
        try:
            uploads = [FileVar(h, filename=p.name) for h, p in zip(handles, files, strict=True)]
            result = call(client, UPLOAD, upload=True, projectId=project["id"], files=uploads)
            # The files are ingested as a background job; wait: true returns once every file has ended
            # (without it the job comes back at once: follow it with the ingestionProgress subscription).
            report = expect(result, "uploadDocuments", "IngestionJob")
        finally:
            for handle in handles:
                handle.close()
        for f in report["items"]:
            error = "  " + f["error"] if f["error"] else ""
            status = (f["outcome"] or f["state"]).lower()
            print(f"  {status:>9}  {f['name']}  ({f['chunksDone']} chunks embedded){error}")

        settings = {"title": "Quickstart", "topK": 3, "threshold": 0.2, "includeCitations": True}
        if args.provider:
            settings["provider"] = args.provider
        if args.model:
            settings["model"] = args.model
        session = expect(
            call(client, CREATE_SESSION, projectId=project["id"], input=settings), "createChatSession", "ChatSession"
        )
        print(f"session {session['id']}: topK={session['topK']} threshold={session['threshold']}")

        answer = expect(call(client, ASK, sessionId=session["id"], content=args.question), "sendMessage", "ChatMessage")
        print(f"\nQ: {args.question}\nA: {answer['content']}")
        if answer["status"] != "COMPLETE":
            sys.exit(f"the answer failed: {answer['error']}")
        if answer["noContext"]:
            print("(no document passed the threshold: the answer is not grounded)")
        for c in answer["citations"]:
            loc = c["location"]
            where = f"page {loc['page']}" if loc["page"] else f"lines {loc['lineStart']}-{loc['lineEnd']}"
            score = "no score" if c["score"] is None else f"score={c['score']:.3f}"  # null: retrieval degraded
            print(f"  [{c['marker']}] {c['documentName']} {where} {score} ({c['kind'].lower()})")


if __name__ == "__main__":
    main()
