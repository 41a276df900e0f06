"""Search reads: a knowledge base searched directly, and a chat turn's retrieval previewed."""

from __future__ import annotations

from typing import Annotated

import strawberry

from app.graphql.context import Info, caller_of
from app.graphql.enums import RetrievalMode
from app.graphql.errors import parse_id
from app.graphql.results import (
    UNREADABLE,
    SearchResult,
    call,
    settle,
)
from app.graphql.search.document_filter import DocumentFilterInput
from app.graphql.search.types import SearchResults, search_results
from app.rag.session_settings import THRESHOLD_RANGE, TOP_K_RANGE
from app.services import search

_PROJECT_ID = strawberry.argument(description="The knowledge base.")
_FILTER = strawberry.argument(description="Which of its documents to search; null: every one.")
TOP_K = "How many hits to keep at most, {}-{}.".format(*TOP_K_RANGE)
THRESHOLD = "The cosine similarity a hit needs to be kept, {:g}-{:g}; null: the server's default.".format(
    *THRESHOLD_RANGE
)


@strawberry.type
class SearchQuery:
    @strawberry.field(description="Search a knowledge base directly. threshold defaults to the server's.")
    async def search(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID, _PROJECT_ID],
        query: Annotated[str, strawberry.argument(description="What to look for, in words.")],
        top_k: Annotated[int, strawberry.argument(description=TOP_K)] = 5,
        threshold: Annotated[float | None, strawberry.argument(description=THRESHOLD)] = None,
        mode: Annotated[
            RetrievalMode, strawberry.argument(description="How to rank the chunks.")
        ] = RetrievalMode.HYBRID,
        filter: Annotated[DocumentFilterInput | None, _FILTER] = None,
    ) -> SearchResult:
        container, caller = info.context.container, caller_of(info)
        return await call(
            lambda: search_results(
                search.search(
                    container.store,
                    container.embedder,
                    container.settings,
                    parse_id(project_id, "projectId"),
                    query,
                    top_k=top_k,
                    threshold=threshold,
                    mode=mode,
                    only=filter.to_filter() if filter is not None else None,
                    caller=caller,
                )
            ),
            raising=UNREADABLE,
        )

    @strawberry.field(
        description="What a chat session's next turn would retrieve for a message right now: the same search, "
        "after the session's recent user turns (history-aware), with its rewrite and passes in `search`. The "
        "chat model is called only when that turn would call it (rewrite, expansion, judgement), and then the "
        "preview takes a generation slot as the turn would (BusyError when none comes free in time). Pass "
        "topK/threshold to try values before saving them to the session."
    )
    async def retrieval_preview(
        self,
        info: Info,
        session_id: Annotated[strawberry.ID, strawberry.argument(description="The chat session.")],
        message: Annotated[str, strawberry.argument(description="A question, as it would be sent.")],
        top_k: Annotated[int | None, strawberry.argument(description=TOP_K + " Null: the session's.")] = None,
        threshold: Annotated[
            float | None, strawberry.argument(description=THRESHOLD.replace("the server's", "the session's"))
        ] = None,
        filter: Annotated[
            DocumentFilterInput | None,
            strawberry.argument(description="Which documents to search; null: the session's document filter."),
        ] = None,
    ) -> SearchResult:
        container, caller = info.context.container, caller_of(info)

        async def preview() -> SearchResults:
            found = await search.preview(
                container.store,
                lambda: container.embedder,  # built (on first use) in the search's worker thread
                container.settings,
                container.chat_models,
                container.reranker,
                parse_id(session_id, "sessionId"),
                message,
                top_k=top_k,
                threshold=threshold,
                only=filter.to_filter() if filter is not None else None,
                slots=container.chat.slots,
                caller=caller,
            )
            return search_results(found.result, found.search, found.ranking)

        return await settle(preview(), raising=UNREADABLE)
