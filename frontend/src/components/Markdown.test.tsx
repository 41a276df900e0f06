import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Markdown } from "./Markdown";

function html(markdown: string): HTMLElement {
  return render(<Markdown>{markdown}</Markdown>).container;
}

describe("Markdown", () => {
  it("renders GitHub-flavoured markdown", () => {
    const root = html("# Title\n\n**bold** and `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done");
    expect(root.querySelector("h1")).toHaveTextContent("Title");
    expect(root.querySelector("strong")).toHaveTextContent("bold");
    expect(root.querySelector("code")).toHaveTextContent("code");
    expect(root.querySelectorAll("td")).toHaveLength(2);
    expect(root.querySelector("input[type=checkbox]")).toBeChecked();
  });

  it("never creates a <script>, inline or block", () => {
    const root = html('Hi <script>window.pwned = true</script>\n\n<script src="https://evil.example/x.js"></script>');
    expect(root.querySelector("script")).toBeNull();
    expect(root.innerHTML).not.toContain("<script");
    expect((window as { pwned?: boolean }).pwned).toBeUndefined();
  });

  it("drops raw HTML elements and their event handlers", () => {
    const root = html('<img src="x" onerror="window.pwned = true"> <iframe src="https://evil.example"></iframe> <a href="#" onclick="x()">a</a>');
    expect(root.querySelector("img, iframe, [onerror], [onclick]")).toBeNull();
  });

  it.each([
    ["javascript:alert(1)"],
    ["JaVaScRiPt:alert(1)"],
    ["vbscript:msgbox(1)"],
    ["data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="],
  ])("neutralises a %s link", (url) => {
    const root = html(`[click me](${url}) and <${url}>`);
    for (const link of root.querySelectorAll("a")) {
      expect(link.getAttribute("href") ?? "").not.toMatch(/^\s*(javascript|vbscript|data):/i);
    }
    expect(root).toHaveTextContent("click me");
  });

  it("neutralises javascript: in images and reference links", () => {
    const root = html("![x](javascript:alert(1))\n\n[ref][1]\n\n[1]: javascript:alert(1)");
    for (const el of root.querySelectorAll("[src], [href]")) {
      expect(el.getAttribute("src") ?? el.getAttribute("href")).not.toMatch(/javascript:/i);
    }
  });

  it("opens web links in a new tab without an opener", () => {
    const link = html("[docs](https://example.org/docs)").querySelector("a");
    expect(link).toHaveAttribute("href", "https://example.org/docs");
    expect(link).toHaveAttribute("target", "_blank");
    expect(link?.getAttribute("rel")).toContain("noopener");
  });
});
