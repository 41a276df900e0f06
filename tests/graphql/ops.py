"""GraphQL documents the tests send (the frontend keeps its own in frontend/src/graphql/)."""

from typing import Any


def nodes(connection: dict[str, Any]) -> list[Any]:
    """The nodes of a connection a test asked for as ``{ edges { node { ... } } }``."""
    assert "edges" in connection, connection  # a ValidationError instead of the page
    return [edge["node"] for edge in connection["edges"]]


CREATE_PROJECT = """mutation($name: String!) { createProject(input: {name: $name}) {
  __typename ... on Project { id name } ... on Error { message } ... on ValidationError { fields { field message } } } }"""

ADD_DOC = """mutation($p: ID!, $name: String!, $text: String!) { addDocument(projectId: $p, name: $name, text: $text) {
  __typename ... on UploadReport { added updated unchanged failed files { name status chunks error document { id } } }
  ... on Error { message } } }"""

JOB_FIELDS = """id projectId origin finished
  progress { total unfinished ready failed cancelled skipped chunksDone chunksTotal }
  items { id name state outcome error chunksDone chunksTotal attempts document { id name kind status chunkCount } }"""

# Waits for the job to end (wait: true), so a test can read what it did in the response.
UPLOAD = f"""mutation($p: ID!, $files: [Upload!]!, $wait: Boolean! = true) {{
  uploadDocuments(projectId: $p, files: $files, wait: $wait) {{
  __typename ... on IngestionJob {{ {JOB_FIELDS} }}
  ... on Error {{ message }} ... on ValidationError {{ fields {{ field message }} }}
  ... on LimitExceededError {{ what limit queued requested }} }} }}"""

JOB = f"""query($id: ID!) {{ ingestionJob(id: $id) {{ __typename ... on IngestionJob {{ {JOB_FIELDS} }}
  ... on Error {{ message }} }} }}"""

CANCEL_JOB = f"""mutation($id: ID!, $items: [ID!]) {{ cancelIngestionJob(id: $id, itemIds: $items) {{
  __typename ... on IngestionJob {{ {JOB_FIELDS} }} ... on Error {{ message }} }} }}"""

RETRY_JOB = f"""mutation($id: ID!, $items: [ID!]) {{ retryIngestionJob(id: $id, itemIds: $items) {{
  __typename ... on IngestionJob {{ {JOB_FIELDS} }} ... on Error {{ message }} }} }}"""

PROGRESS = """subscription($p: ID, $j: ID) { ingestionProgress(projectId: $p, jobId: $j) {
  __typename ... on IngestionItem { id jobId name state outcome error chunksDone chunksTotal }
  ... on Error { message } } }"""

CREATE_SESSION = """mutation($p: ID!, $input: CreateChatSessionInput) { createChatSession(projectId: $p, input: $input) {
  __typename ... on ChatSession { id title provider model enableRag topK threshold includeCitations }
  ... on Error { message } ... on ValidationError { fields { field message } } } }"""

UPDATE_SESSION = """mutation($id: ID!, $input: UpdateChatSessionInput!) { updateChatSession(id: $id, input: $input) {
  __typename ... on ChatSession { id topK threshold } ... on ValidationError { message fields { field message } } } }"""

MESSAGE_FIELDS = """id role content status error noContext degraded { reason message }
  citations { marker kind score rank documentName snippet location { lineStart lineEnd headingPath } }
  usage { prompt completion context }
  trace { query settings { topK threshold mode } candidates { documentName score fate fusedRank vectorRank keywordRank }
          timings { stage ms } tokens { prompt contextWindow exact } budget { historyDropped } }"""

SEND = (
    """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) {
  __typename ... on ChatMessage { """
    + MESSAGE_FIELDS
    + """ } ... on Error { message } ... on ValidationError { fields { field message } } } }"""
)

CHAT = (
    """subscription($s: ID!, $c: String!) { chat(sessionId: $s, content: $c) {
  __typename
  ... on ChatQueued { position }
  ... on ChatSearchProgress { messageId number budget query rewritten kept bestScore decision }
  ... on ChatRetrieval { messageId noContext degraded { reason message } sources { number documentName score text location { lineStart } } }
  ... on ChatToken { text }
  ... on ChatDone { answer { """
    + MESSAGE_FIELDS
    + """ } }
  ... on ChatError { code message partial failedMessageId } } }"""
)
