import { type ComponentPropsWithoutRef, useMemo } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import rehypeSanitize, { defaultSchema } from "rehype-sanitize";
import remarkGfm from "remark-gfm";
import { rehypeCitationMarkers } from "../lib/citationMarkers";
import { cx } from "../lib/cx";
import styles from "./Markdown.module.css";

// Model output and document text are untrusted. Three layers keep them inert:
// raw HTML in the markdown is never parsed into elements (no rehype-raw), rehype-sanitize's
// GitHub schema filters whatever the markdown itself produces, and react-markdown's default
// urlTransform empties javascript:, vbscript: and data: URLs.
const schema = {
  ...defaultSchema,
  // GitHub prefixes ids with "user-content-" to stop clobbering; keep that, and nothing else.
  clobberPrefix: "user-content-",
};

function Link({ node: _node, ...props }: ComponentPropsWithoutRef<"a"> & { node?: unknown }) {
  const external = typeof props.href === "string" && /^https?:/i.test(props.href);
  return external ? <a {...props} target="_blank" rel="noopener noreferrer nofollow" /> : <a {...props} />;
}

export interface MarkdownCitations {
  /** Source numbers that exist: their `[n]` markers become buttons. */
  numbers: readonly number[];
  onCite: (n: number) => void;
  /** Accessible name of marker n, e.g. "Source 2: handbook.md". */
  label?: (n: number) => string;
  /** The marker currently highlighted (its source is in view). */
  active?: number | null;
}

export interface MarkdownProps {
  children: string;
  className?: string;
  citations?: MarkdownCitations;
  testId?: string;
}

/** Renders untrusted Markdown (GitHub flavoured) safely; optionally links `[n]` citation markers. */
export function Markdown({ children, className, citations, testId }: MarkdownProps) {
  const numbersKey = citations?.numbers.join(",") ?? "";
  const rehypePlugins = useMemo(() => {
    const numbers = new Set(numbersKey ? numbersKey.split(",").map(Number) : []);
    return numbers.size > 0
      ? [[rehypeSanitize, schema] as const, [rehypeCitationMarkers, { numbers }] as const]
      : [[rehypeSanitize, schema] as const];
  }, [numbersKey]);

  const components = useMemo<Components>(
    () => ({
      a: Link,
      // Only rehypeCitationMarkers makes buttons (sanitize drops any other), and only with a number.
      button: ({ node }) => {
        const n = Number((node?.properties as Record<string, unknown> | undefined)?.dataCitation);
        if (!citations || !Number.isInteger(n)) return null;
        return (
          <button
            type="button"
            className={styles.citation}
            data-citation={n}
            data-active={citations.active === n || undefined}
            aria-label={citations.label?.(n) ?? `Source ${n}`}
            onClick={() => citations.onCite(n)}
          >
            {n}
          </button>
        );
      },
    }),
    [citations],
  );

  return (
    <div className={cx(styles.markdown, className)} data-testid={testId}>
      <ReactMarkdown remarkPlugins={[remarkGfm]} rehypePlugins={rehypePlugins as never} components={components}>
        {children}
      </ReactMarkdown>
    </div>
  );
}
