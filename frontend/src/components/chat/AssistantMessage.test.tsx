import type { MockLink } from "@apollo/client/testing";
import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { GuardOriginalDocument, type GuardOriginalQuery } from "../../gql/graphql";
import type { ChatItem } from "../../lib/chatReducer";
import { extractiveAnswer, guard, loopedAnswer, trace } from "../../test/fixtures";
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
    noAnswer: false,
    degraded: [],
    trace: null,
    createdAt: null,
    unsent: false,
    previous: null,
    toolCalls: [],
    ...overrides,
  };
}

function setup(overrides: Partial<ChatItem> = {}, mocks: MockLink.MockedResponse[] = []) {
  const props = { onRetry: vi.fn(), onOpenTrace: vi.fn(), onOpenSettings: vi.fn() };
  render(
    <MockedProvider mocks={mocks}>
      <AssistantMessage item={item(overrides)} busy={false} {...props} />
    </MockedProvider>,
  );
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

  it("links each source's document to the viewer at the cited chunk and lines", () => {
    setup({});
    const link = within(screen.getAllByTestId("source")[0]!).getByRole("link", { name: "guide.md" });
    expect(link.getAttribute("href")).toMatch(/^\/documents\/[^?]+\?chunk=[^&]+&lines=4-12$/);
  });

  it("shows each source's document, place, score, kind and (on demand) snippet as plain text", async () => {
    const { user } = setup({ sources: [{ ...item().sources[0]!, text: "<b>not bold</b> <script>x()</script>" }, item().sources[1]!] });
    // Compact at first, so the sources never push the answer out of view; the text on demand.
    expect(screen.queryByText("<b>not bold</b> <script>x()</script>")).toBeNull();
    await user.click(screen.getByRole("button", { name: "Show the cited text" }));
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
    const { user, onOpenSettings } = setup({
      noContext: true,
      degraded: [{ reason: "VECTOR_SEARCH_FAILED", message: "vector search failed; used keyword search only" }],
      sources: [],
    });
    expect(screen.getByTestId("no-context")).toHaveTextContent("No relevant context found");
    expect(screen.getByTestId("degraded")).toHaveTextContent("vector search failed; used keyword search only");
    await user.click(screen.getByRole("button", { name: "Adjust retrieval" }));
    expect(onOpenSettings).toHaveBeenCalled();
  });

  it("tells an answer step that found no sentence apart from a retrieval that kept nothing", () => {
    setup({ noAnswer: true, noContext: false });
    expect(screen.getByTestId("no-answer")).toHaveTextContent("No sentence in the sources answers this");
    expect(screen.queryByTestId("no-context")).toBeNull();
    expect(screen.queryByText(/similarity threshold/)).toBeNull();
  });

  it("shows a failure with its partial text and a Retry button", async () => {
    const { user, onRetry } = setup({ status: "FAILED", content: "Run the", error: { code: "PROVIDER_UNAVAILABLE", message: "the scripted model failed" }, sources: [] });
    const alert = screen.getByTestId("message-error");
    expect(alert).toHaveTextContent("The model failed");
    expect(alert).toHaveTextContent("The scripted model failed");
    expect(screen.getByText("Run the")).toBeInTheDocument();
    await user.click(within(alert).getByRole("button", { name: "Retry" }));
    expect(onRetry).toHaveBeenCalledWith("m2");
  });

  it("says its place in line while the question waits for a free slot", () => {
    setup({ status: "PENDING", content: "", sources: [], queued: 2 });
    expect(screen.getByText("Waiting for a free slot (2nd in line)…")).toBeInTheDocument();
  });

  it("says 'busy' in a friendly way", () => {
    setup({ status: "FAILED", content: "", error: { code: "BUSY", message: "3 answers are being generated" }, sources: [] });
    expect(screen.getByTestId("message-error")).toHaveTextContent("ragchat is busy right now");
    expect(screen.getByTestId("message-error")).toHaveTextContent("Wait a few seconds, then retry");
  });

  describe("how the answer came about", () => {
    const looped = "the source of the source of the source of the source of";

    function original(text: string | null): MockLink.MockedResponse<GuardOriginalQuery> {
      return {
        request: { query: GuardOriginalDocument, variables: { id: "2" } },
        result: { data: { message: { __typename: "ChatMessage", id: "2", trace: { answer: { guard: { original: text } } } } } },
      };
    }

    it("says the model's answer looped and was replaced by quotes, with the reasons and the model's text on request", async () => {
      const { user } = setup({ trace: trace({ answer: loopedAnswer }) }, [original(looped)]);
      const notice = screen.getByTestId("guard-notice");
      expect(notice).toHaveAttribute("data-decision", "FALLBACK");
      expect(notice).toHaveTextContent("The model's answer looped; showing sentences quoted from your documents instead.");
      expect(within(notice).getByRole("list", { name: "What the answer guard found" })).toHaveTextContent("the text “the source of” repeats 4+ times in a row");
      expect(screen.queryByTestId("answer-label")).toBeNull();

      const show = within(notice).getByRole("button", { name: "Show the model's text" });
      expect(show).toHaveAttribute("aria-expanded", "false");
      await user.click(show);
      expect(await within(notice).findByTestId("guard-original")).toHaveTextContent(looped);
      expect(within(notice).getByRole("button", { name: "Hide the model's text" })).toHaveAttribute("aria-expanded", "true");
      // The stored (quoted) answer is what the message shows.
      const content = screen.getByTestId("message-content");
      expect(content).toHaveTextContent("Run the installer");
      expect(content).not.toHaveTextContent("the source of");
    });

    it("flags a kept answer with unsupported sentences, and says when the stored text is the model's own", async () => {
      const flagged = { ...loopedAnswer, guard: guard({ decision: "FLAGGED", reasons: ["1 of 3 sentence(s) unsupported"], unsupportedSentences: 1 }) };
      const { user } = setup({ trace: trace({ answer: flagged }) }, [original(null)]);
      const notice = screen.getByTestId("guard-notice");
      expect(notice).toHaveTextContent("Parts of this answer may not be supported by your documents.");
      expect(notice).toHaveTextContent("1 of 3 sentence(s) unsupported");
      await user.click(within(notice).getByRole("button", { name: "Show the model's text" }));
      expect(await within(notice).findByText("The stored answer is the model's own text.")).toBeInTheDocument();
    });

    it("explains a rejected answer next to its failure", () => {
      const rejected = { ...loopedAnswer, guard: guard({ decision: "REJECTED", reasons: ["the answer only repeated the prompt"] }) };
      setup({ status: "FAILED", content: "", error: { code: "FAILED", message: "the answer guard rejected the answer" }, sources: [], trace: trace({ answer: rejected }) });
      expect(screen.getByTestId("guard-notice")).toHaveTextContent("The model's answer was unusable, and no sentence in your documents answered the question instead.");
      expect(screen.getByTestId("guard-notice")).toHaveTextContent("the answer only repeated the prompt");
      expect(screen.getByTestId("message-error")).toHaveTextContent("The answer guard rejected the answer");
    });

    it("labels an extractive answer as quoted from the documents", () => {
      setup({ trace: trace({ answer: extractiveAnswer }) });
      expect(screen.getByTestId("answer-label")).toHaveTextContent("Quoted from your documents");
      expect(screen.queryByTestId("guard-notice")).toBeNull();
    });

    it("says nothing about a generated answer that passed, or a trace from before answer modes", () => {
      setup({ trace: trace({ answer: { ...loopedAnswer, guard: guard(), sentences: null } }) });
      expect(screen.queryByTestId("guard-notice")).toBeNull();
      expect(screen.queryByTestId("answer-label")).toBeNull();
      setup({ trace: trace({ answer: null }) });
      expect(screen.queryByTestId("guard-notice")).toBeNull();
    });

    it("shows a quoted source as quoted, with the exact lines or page of each sentence", async () => {
      const quoted = { ...location, lineStart: 5, lineEnd: 5 };
      const { user } = setup({
        trace: trace({ answer: extractiveAnswer }),
        sources: [
          { ...item().sources[0]!, kind: "EXTRACTED", location: quoted, quotes: [{ location: quoted, text: "Run the installer." }, { location: { ...location, lineStart: 9, lineEnd: 10 }, text: "Then log in." }] },
          { ...item().sources[1]!, kind: "EXTRACTED", quotes: [{ location: { ...location, page: 7 }, text: "Reboot after installing." }] },
        ],
      });
      await user.click(screen.getByRole("button", { name: "Show the cited text" }));
      const [first, second] = screen.getAllByTestId("source");
      expect(within(first!).getByText("quoted")).toBeInTheDocument();
      expect(first).toHaveTextContent("quoted from lines 5, 9–10");
      expect(first).toHaveTextContent("Run the installer.");
      expect(first).toHaveTextContent("Then log in.");
      expect(second).toHaveTextContent("quoted from p. 7");
      expect(screen.getByRole("button", { name: "Source 1: guide.md, quoted from lines 5, 9–10" })).toBeInTheDocument();
    });
  });
});
