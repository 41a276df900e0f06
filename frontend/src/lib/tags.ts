// Tags typed as one comma-separated line, checked with the server's rules for a document's tags
// (app/rag/search/document_filter.py: 1-64 characters, 50 at most) before anything is sent.

export const MAX_TAG_LENGTH = 64;
export const MAX_TAGS = 50;

/** The tags of a "a, b, c" line (trimmed, distinct, in order), or the first problem with them. */
export function parseTags(text: string): { tags: string[]; problem: string | null } {
  const tags = [...new Set(text.split(",").map((piece) => piece.trim()).filter(Boolean))];
  const long = tags.find((tag) => tag.length > MAX_TAG_LENGTH);
  if (long) return { tags, problem: `A tag has at most ${MAX_TAG_LENGTH} characters ("${long.slice(0, 20)}…" has ${long.length}).` };
  if (tags.length > MAX_TAGS) return { tags, problem: `At most ${MAX_TAGS} tags (got ${tags.length}).` };
  return { tags, problem: null };
}
