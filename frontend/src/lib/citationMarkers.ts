// Turns the `[n]` (and `[1, 2]`) markers of an answer into citation buttons. A rehype plugin that
// runs *after* rehype-sanitize, so the buttons it adds are the only <button>s in rendered Markdown
// (the sanitize schema allows none) and untrusted text cannot forge one.

export const MARKER = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;

interface HastNode {
  type: string;
  tagName?: string;
  value?: string;
  properties?: Record<string, unknown>;
  children?: HastNode[];
}

// Markers inside code, links or headings' anchors stay text.
const SKIP = new Set(["code", "pre", "a", "button", "kbd"]);

export interface CitationMarkerOptions {
  /** Source numbers that exist; other markers stay plain text. */
  numbers: ReadonlySet<number>;
}

export function rehypeCitationMarkers({ numbers }: CitationMarkerOptions) {
  return (tree: HastNode) => walk(tree, numbers);
}

function walk(node: HastNode, numbers: ReadonlySet<number>): void {
  if (!node.children) return;
  const out: HastNode[] = [];
  for (const child of node.children) {
    if (child.type === "text" && child.value) {
      out.push(...split(child.value, numbers));
    } else {
      if (!(child.type === "element" && SKIP.has(child.tagName ?? ""))) walk(child, numbers);
      out.push(child);
    }
  }
  node.children = out;
}

function split(text: string, numbers: ReadonlySet<number>): HastNode[] {
  const out: HastNode[] = [];
  let last = 0;
  for (const match of text.matchAll(MARKER)) {
    const cited = match[1]!.split(",").map((n) => Number(n.trim()));
    if (!cited.every((n) => numbers.has(n))) continue;
    if (match.index > last) out.push({ type: "text", value: text.slice(last, match.index) });
    for (const n of cited) out.push(marker(n));
    last = match.index + match[0].length;
  }
  if (last === 0) return [{ type: "text", value: text }];
  if (last < text.length) out.push({ type: "text", value: text.slice(last) });
  return out;
}

function marker(n: number): HastNode {
  return {
    type: "element",
    tagName: "button",
    properties: { type: "button", dataCitation: String(n) },
    children: [{ type: "text", value: String(n) }],
  };
}

/** Source numbers an answer's text cites, in order of first use. */
export function citedNumbers(text: string): number[] {
  const seen: number[] = [];
  for (const match of text.matchAll(MARKER)) {
    for (const n of match[1]!.split(",").map((v) => Number(v.trim()))) if (!seen.includes(n)) seen.push(n);
  }
  return seen;
}
