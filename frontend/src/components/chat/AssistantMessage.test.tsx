import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import type { ChatItem } from "../../lib/chatReducer";
import { AssistantMessage } from "./Messages";

const location = { page: null, lineStart: 4, lineEnd: 12, headingPath: "Guide > Install" };

function item(overrides: Partial<ChatItem> = {}): ChatItem {
  return {
    key: "m2",
    id: "2",
    role: "ASSISTANT",
    content: "Run the installer [1]. Then reboot [2]. Ignore [9] and `[1]`.",
    status: "COMPLETE",
    error: null,
    sources: [
      { number: 1, documentId: "4", chunkId: "40", documentName: "guide.md", location, score: 0.712, text: "Run the installer.", kind: "MODEL" },
      { number: 2, documentId: "5", chunkId: "50", documentName: "manual.pdf", location: { ...location, page: 7 }, score: 0.5, text: "Reboot after installing.", kind: "ATTRIBUTED" },
    ],
    cited: true,
    noContext: false,
    degraded: [],
    trace: null,
    createdAt: null,
    unsent: false,
    previous: null,
    ...overrides,
  };
}

function setup(overrides: Partial<ChatItem> = {}) {
  const props = { onRetry: vi.fn(), onOpenTrace: vi.fn(), onOpenSettings: vi.fn() };
  render(<AssistantMessage item={item(overrides)} busy={false} {...props} />);
  return { ...props, user: userEvent.setup() };
}

describe("AssistantMessage", () => {
  it("links [n] markers to their sources; unknown numbers and code stay text", () => {
    setup();
    const markers = screen.getAllByRole("button", { name: /^Source \d/ });
    expect(markers.map((m) => m.textContent)).toEqual(["1", "2"]);
    expect(markers[0]).toHaveAccessibleName("Source 1: guide.md");
    expect(screen.getByText(/Ignore \[9\] and/)).toBeInTheDocument();
    expect(document.querySelector("code")).toHaveTextContent("[1]");
  });

  it("scrolls to, focuses and highlights the source a marker points at", async () => {
    const { user } = setup();
    const scrollIntoView = vi.fn();
    const original = Element.prototype.scrollIntoView;
    Element.prototype.scrollIntoView = scrollIntoView;
    onTestFinished(() => {
      Element.prototype.scrollIntoView = original;
    });
    const sources = screen.getAllByTestId("source");
    await user.click(screen.getByRole("button", { name: "Source 2: manual.pdf" }));
    expect(sources[1]).toHaveAttribute("data-active", "true");
    expect(sources[0]).not.toHaveAttribute("data-active");
    expect(sources[1]).toHaveFocus();
    expect(scrollIntoView).toHaveBeenCalled();
    expect(screen.getByRole("button", { name: "Source 2: manual.pdf" })).toHaveAttribute("data-active", "true");
  });

  it("shows each source's document, place, score, kind and snippet as plain text", () => {
    setup({ sources: [{ ...item().sources[0]!, text: "<b>not bold</b> <script>x()</script>" }, item().sources[1]!] });
    const [first, second] = screen.getAllByTestId("source");
    expect(first).toHaveTextContent("guide.md");
    expect(first).toHaveTextContent("lines 4–12");
    expect(first).toHaveTextContent("Guide › Install");
    expect(first).toHaveTextContent("score 0.71");
    expect(first).toHaveTextContent("<b>not bold</b> <script>x()</script>");
    expect(first!.querySelector("b, script")).toBeNull();
    expect(second).toHaveTextContent("p. 7");
    expect(within(second!).getByText("attributed")).toBeInTheDocument();
  });

  it("explains a missing context and a degraded retrieval", async () => {
    const { user, onOpenSettings } = setup({ noContext: true, degraded: ["vector search failed; used keyword search only"], sources: [] });
    expect(screen.getByTestId("no-context")).toHaveTextContent("No relevant context found");
    expect(screen.getByTestId("degraded")).toHaveTextContent("vector search failed; used keyword search only");
    await user.click(screen.getByRole("button", { name: "Adjust retrieval" }));
    expect(onOpenSettings).toHaveBeenCalled();
  });

  it("shows a failure with its partial text and a Retry button", async () => {
    const { user, onRetry } = setup({ status: "FAILED", content: "Run the", error: { code: "provider_unavailable", message: "the scripted model failed" }, sources: [] });
    const alert = screen.getByTestId("message-error");
    expect(alert).toHaveTextContent("The model failed");
    expect(alert).toHaveTextContent("The scripted model failed");
    expect(screen.getByText("Run the")).toBeInTheDocument();
    await user.click(within(alert).getByRole("button", { name: "Retry" }));
    expect(onRetry).toHaveBeenCalledWith("m2");
  });

  it("says 'busy' in a friendly way", () => {
    setup({ status: "FAILED", content: "", error: { code: "busy", message: "3 answers are being generated" }, sources: [] });
    expect(screen.getByTestId("message-error")).toHaveTextContent("ragchat is busy right now");
    expect(screen.getByTestId("message-error")).toHaveTextContent("Wait a few seconds, then retry");
  });
});
