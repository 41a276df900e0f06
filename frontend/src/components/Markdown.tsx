import type { ComponentPropsWithoutRef } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import rehypeSanitize, { defaultSchema } from "rehype-sanitize";
import remarkGfm from "remark-gfm";

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

const components: Components = { a: Link };

export interface MarkdownProps {
  children: string;
  className?: string;
}

/** Renders untrusted Markdown (GitHub flavoured) safely. */
export function Markdown({ children, className }: MarkdownProps) {
  return (
    <div className={className ? `markdown ${className}` : "markdown"}>
      <ReactMarkdown remarkPlugins={[remarkGfm]} rehypePlugins={[[rehypeSanitize, schema]]} components={components}>
        {children}
      </ReactMarkdown>
    </div>
  );
}
