// Questions an empty chat offers: drawn from the knowledge base's headings, so each is one its
// documents can answer. Deterministic (no model): the first distinct section headings in document
// order, preferring sections over the documents' titles.

/** Up to `count` questions from heading paths ("Guide > Install > Linux"), in the order given. */
export function suggestedQuestions(headingPaths: readonly string[], count = 3): string[] {
  const sections: string[] = [];
  const titles: string[] = [];
  const seen = new Set<string>();
  for (const path of headingPaths) {
    const parts = path.split(/\s*>\s*/).filter(Boolean);
    const heading = parts.at(-1)?.replace(/[#*_`]/g, "").trim();
    if (!heading || heading.length > 60 || seen.has(heading.toLowerCase())) continue;
    seen.add(heading.toLowerCase());
    (parts.length > 1 ? sections : titles).push(heading);
  }
  return [...sections, ...titles].slice(0, count).map((heading) => `What do the documents say about “${heading}”?`);
}
