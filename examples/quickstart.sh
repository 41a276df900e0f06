#!/usr/bin/env bash
# ragchat with curl: create a knowledge base, add a document, create a tuned chat session,
# ask a question, print the answer and its citations.
#   RAGCHAT_URL=http://127.0.0.1:8000/graphql RAGCHAT_API_KEY=... examples/quickstart.sh
# Needs curl and python3 (for JSON); the upload uses the GraphQL multipart request spec.
set -euo pipefail
URL=${RAGCHAT_URL:-http://127.0.0.1:8000/graphql}
AUTH=()
if [[ -n "${RAGCHAT_API_KEY:-}" ]]; then AUTH=(-H "Authorization: Bearer ${RAGCHAT_API_KEY}"); fi
DOC=${1:-"$(dirname "$0")/../docs/demo/rag-settings.md"}

gql() {  # gql QUERY VARIABLES_JSON -> response JSON
  python3 -c 'import json,sys; print(json.dumps({"query": sys.argv[1], "variables": json.loads(sys.argv[2])}))' "$1" "$2" |
    curl -sS --fail-with-body "${AUTH[@]}" -H 'Content-Type: application/json' --data @- "$URL"
}
field() {  # field JSON PYTHON_EXPR -> value, failing loudly on an error result
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); v=eval(sys.argv[2], {"d": d}); print(v)' "$1" "$2"
}

name="curl-$RANDOM$RANDOM"
out=$(gql 'mutation($n: String!) { createProject(input: {name: $n}) { __typename ... on Project { id } ... on Error { message } } }' "{\"n\": \"$name\"}")
project=$(field "$out" 'd["data"]["createProject"]["id"]')
echo "knowledge base $name (id $project)"

ops=$(python3 -c 'import json,sys; print(json.dumps({"query": "mutation($p: ID!, $f: [Upload!]!) { uploadDocuments(projectId: $p, files: $f, wait: true) { __typename ... on IngestionJob { id progress { ready failed } } ... on Error { message } } }", "variables": {"p": sys.argv[1], "f": [None]}}))' "$project")
out=$(curl -sS --fail-with-body "${AUTH[@]}" -H 'Apollo-Require-Preflight: true' \
  -F "operations=$ops" -F 'map={"0": ["variables.f.0"]}' -F "0=@$DOC" "$URL")
echo "upload: $(field "$out" 'd["data"]["uploadDocuments"]')"

out=$(gql 'mutation($p: ID!) { createChatSession(projectId: $p, input: {title: "curl", topK: 3, threshold: 0.2}) { __typename ... on ChatSession { id } ... on Error { message } } }' "{\"p\": \"$project\"}")
session=$(field "$out" 'd["data"]["createChatSession"]["id"]')

question=${QUESTION:-"What does the threshold of a chat session do?"}
vars=$(python3 -c 'import json,sys; print(json.dumps({"s": sys.argv[1], "c": sys.argv[2]}))' "$session" "$question")
out=$(gql 'mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) { __typename ... on ChatMessage { status content error citations { marker documentName score } } ... on Error { message } } }' "$vars")
echo "Q: $question"
echo "A: $(field "$out" 'd["data"]["sendMessage"]["content"]')"
field "$out" '"\n".join("  [%s] %s %s" % (c["marker"], c["documentName"], "no score" if c["score"] is None else "score=%.3f" % c["score"]) for c in d["data"]["sendMessage"]["citations"])'
status=$(field "$out" 'd["data"]["sendMessage"]["status"]')
[[ "$status" == "COMPLETE" ]] || { echo "answer failed: $(field "$out" 'd["data"]["sendMessage"]["error"]')" >&2; exit 1; }
