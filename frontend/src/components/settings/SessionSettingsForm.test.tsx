import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { SessionFieldsFragment } from "../../gql/graphql";
import { SessionSettingsForm } from "./SessionSettingsForm";

const session: SessionFieldsFragment = {
  id: "7",
  projectId: "1",
  title: "Install questions",
  systemPrompt: "",
  provider: "scripted",
  model: "scripted",
  enableRag: true,
  topK: 5,
  threshold: 0.25,
  includeCitations: true,
  answerMode: "AUTO",
  rerank: "AUTO",
  expansion: "OFF",
  quality: "BALANCED",
  rewrite: "AUTO",
  toolGroups: [],
  documentFilter: null,
  shared: false,
  owner: null,
  createdAt: "2025-01-01T10:00:00",
  updatedAt: "2025-01-01T10:00:00",
};

const providers = [
  { provider: "scripted", available: true, reachable: true, reason: null, models: ["scripted"], openEnded: false, defaultModel: "scripted" },
  { provider: "openai", available: false, reachable: false, reason: "set RAGCHAT_OPENAI__API_KEY", models: ["gpt-4o"], openEnded: true, defaultModel: null },
  { provider: "ollama", available: true, reachable: false, reason: "connection refused at http://127.0.0.1:11434", models: [], openEnded: true, defaultModel: null },
];

function setup(onSubmit = vi.fn().mockResolvedValue(null), session_ = session) {
  render(
    <>
      <SessionSettingsForm session={session_} providers={providers} onSubmit={onSubmit} />
      <button type="submit" form="session-settings">
        Save
      </button>
    </>,
  );
  return { onSubmit, user: userEvent.setup() };
}

/** The message an input points at with aria-describedby. */
/** What an invalid input is described by: its error alone (a field shows no hint while it has one). */
function describedError(input: HTMLElement): string | null {
  if (input.getAttribute("aria-invalid") !== "true") return null;
  const ids = input.getAttribute("aria-describedby")?.split(" ") ?? [];
  return ids
    .map((id) => document.getElementById(id)?.textContent)
    .filter((text) => text != null)
    .join(" ");
}

describe("SessionSettingsForm", () => {
  it("shows the session's values", () => {
    setup();
    expect(screen.getByLabelText("Top K")).toHaveValue(5);
    expect(screen.getByLabelText("Threshold")).toHaveValue(0.25);
    expect(screen.getByRole("switch", { name: "Answer from the knowledge base (RAG)" })).toBeChecked();
    expect(screen.getByRole("option", { name: "openai (unavailable)" })).toBeDisabled();
  });

  it("offers unreachable providers disabled, each with the reason it cannot be used", () => {
    setup();
    const select = within(screen.getByLabelText("Provider"));
    expect(select.getByRole("option", { name: "scripted" })).toBeEnabled();
    expect(select.getByRole("option", { name: "ollama (unreachable)" })).toBeDisabled();
    const hint = screen.getByTestId("provider-problems");
    expect(hint).toHaveTextContent("ollama is unreachable: connection refused at http://127.0.0.1:11434");
    expect(hint).toHaveTextContent("openai is unavailable: set RAGCHAT_OPENAI__API_KEY");
    expect(hint).not.toHaveTextContent("scripted");
    // The reason is what the select is described by, so a screen reader says it too.
    const describedBy = screen.getByLabelText("Provider").getAttribute("aria-describedby") ?? "";
    expect(document.getElementById(describedBy)).toContainElement(hint);
  });

  it("keeps a chat's own provider selectable when it stops answering, and says why", () => {
    setup(undefined, { ...session, provider: "ollama", model: "llama3.2" });
    expect(screen.getByRole("option", { name: "ollama (unreachable)" })).toBeEnabled();
    expect(screen.getByLabelText("Provider")).toHaveValue("ollama");
    expect(screen.getByTestId("provider-problems")).toHaveTextContent("ollama is unreachable");
  });

  it("flags out-of-range values next to their input and does not submit them", async () => {
    const { user, onSubmit } = setup();
    const topK = screen.getByLabelText("Top K");
    await user.clear(topK);
    await user.type(topK, "60");
    expect(topK).toHaveAttribute("aria-invalid", "true");
    expect(describedError(topK)).toBe("A whole number from 1 to 50.");
    const threshold = screen.getByLabelText("Threshold");
    await user.clear(threshold);
    await user.type(threshold, "1.5");
    expect(describedError(threshold)).toBe("A number from 0 to 1, e.g. 0.25.");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).not.toHaveBeenCalled();
  });

  it("sends only the changed fields", async () => {
    const { user, onSubmit } = setup();
    const threshold = screen.getByLabelText("Threshold");
    await user.clear(threshold);
    await user.type(threshold, "0.4");
    await user.click(screen.getByRole("switch", { name: "Cite sources" }));
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenCalledExactlyOnceWith({ threshold: 0.4, includeCitations: false });
  });

  it("shows the server's ValidationError fields next to the right inputs", async () => {
    const onSubmit = vi.fn().mockResolvedValue({ topK: "must be between 1 and 50 (got 0)", model: "scripted has no model 'x'" });
    const { user } = setup(onSubmit);
    await user.clear(screen.getByLabelText("Top K"));
    await user.type(screen.getByLabelText("Top K"), "7");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(describedError(screen.getByLabelText("Top K"))).toBe("must be between 1 and 50 (got 0)");
    expect(describedError(screen.getByLabelText("Model"))).toBe("scripted has no model 'x'");
    expect(describedError(screen.getByLabelText("Threshold"))).toBeNull();

    // Editing the field clears the server's verdict on it.
    await user.clear(screen.getByLabelText("Top K"));
    await user.type(screen.getByLabelText("Top K"), "8");
    expect(describedError(screen.getByLabelText("Top K"))).toBeNull();
    expect(describedError(screen.getByLabelText("Model"))).toBe("scripted has no model 'x'");
  });

  it("offers the answer modes as a labelled radio group, each with its help, and saves the choice", async () => {
    const { user, onSubmit } = setup();
    const group = screen.getByRole("group", { name: "Answer mode" });
    const radios = within(group).getAllByRole("radio");
    expect(radios.map((r) => r.getAttribute("value"))).toEqual(["AUTO", "GENERATIVE", "EXTRACTIVE"]);
    expect(within(group).getByRole("radio", { name: "Auto" })).toBeChecked();
    expect(within(group).getByRole("radio", { name: "Auto" })).toHaveAccessibleDescription(
      "The model writes when it is a reliable writer; otherwise answers are quoted from your documents.",
    );
    expect(within(group).getByRole("radio", { name: "Extractive" })).toHaveAccessibleDescription(/quoted from your documents/);
    await user.click(within(group).getByRole("radio", { name: "Extractive" }));
    expect(within(group).getByRole("radio", { name: "Auto" })).not.toBeChecked();
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenCalledExactlyOnceWith({ answerMode: "EXTRACTIVE" });
  });

  it("offers reranking and query expansion and sends only what changed", async () => {
    const { user, onSubmit } = setup();
    const rerank = screen.getByLabelText("Reranking");
    expect(rerank).toHaveValue("AUTO");
    expect(screen.getByLabelText("Query expansion")).toHaveValue("OFF");
    await user.selectOptions(rerank, "JUDGE");
    await user.selectOptions(screen.getByLabelText("Query expansion"), "ON");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenCalledExactlyOnceWith({ rerank: "JUDGE", expansion: "ON" });
  });

  it("keeps dropdown labels short and says what the chosen one does in the hint, which wraps", async () => {
    const { user } = setup();
    // A <select> cannot wrap: a long option label was cut mid-word in the drawer's two columns.
    for (const label of ["Reranking", "Query expansion", "Quality", "Rewrite follow-ups"]) {
      const options = [...screen.getByLabelText<HTMLSelectElement>(label).options].map((o) => o.text);
      expect(options.filter((text) => text.length > 16), label).toEqual([]);
    }
    const rerank = screen.getByLabelText("Reranking");
    expect(rerank).toHaveAccessibleDescription(/^Auto: the server's rerank endpoint, if it has one\. Reorders/);
    await user.selectOptions(rerank, "JUDGE");
    expect(rerank).toHaveAccessibleDescription(/^Model judges: the chat model judges the candidates \(one more model call\)\./);
  });

  it("shows the chat's own answer mode, and sends nothing when it is chosen again", async () => {
    const { user, onSubmit } = setup(undefined, { ...session, answerMode: "GENERATIVE" });
    expect(screen.getByRole("radio", { name: "Generative" })).toBeChecked();
    await user.click(screen.getByRole("radio", { name: "Auto" }));
    await user.click(screen.getByRole("radio", { name: "Generative" }));
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenCalledExactlyOnceWith({});
  });

  it("offers the search quality and follow-up rewrite, and saves only what changed", async () => {
    const { user, onSubmit } = setup();
    const group = screen.getByRole("group", { name: "Search" });
    expect(within(group).getByLabelText("Quality")).toHaveValue("BALANCED");
    expect(within(group).getByLabelText("Rewrite follow-ups")).toHaveValue("AUTO");
    await user.selectOptions(within(group).getByLabelText("Quality"), "THOROUGH");
    await user.selectOptions(within(group).getByLabelText("Rewrite follow-ups"), "OFF");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenCalledExactlyOnceWith({ quality: "THOROUGH", rewrite: "OFF" });
  });

  it("shows an error for no particular field above the buttons", async () => {
    const { user } = setup(vi.fn().mockResolvedValue({ _form: "The database refused the write" }));
    await user.click(screen.getByRole("switch", { name: "Cite sources" }));
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(screen.getByRole("alert")).toHaveTextContent("The database refused the write");
  });
});

describe("SessionSettingsForm tool groups", () => {
  const options = [
    { group: "knowledge_base", tools: ["list_documents", "read_document", "search_knowledge_base"] },
    { group: "shop", tools: ["cancel_order"] },
  ];

  function setupTools(onSubmit = vi.fn().mockResolvedValue(null), session_ = session) {
    render(
      <>
        <SessionSettingsForm session={session_} providers={providers} onSubmit={onSubmit} toolGroupOptions={options} />
        <button type="submit" form="session-settings">
          Save
        </button>
      </>,
    );
    return { onSubmit, user: userEvent.setup() };
  }

  it("lists every group with its tools, none allowed by default, and sends the groups only when they changed", async () => {
    const { user, onSubmit } = setupTools();
    const group = within(screen.getByRole("group", { name: "Tools" }));
    expect(group.getByRole("switch", { name: "knowledge_base" })).not.toBeChecked();
    expect(group.getByRole("switch", { name: "shop" })).toHaveAccessibleDescription("cancel_order");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenLastCalledWith({});
    await user.click(group.getByRole("switch", { name: "shop" }));
    await user.click(group.getByRole("switch", { name: "knowledge_base" }));
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenLastCalledWith({}, ["knowledge_base", "shop"]);
  });

  it("turns a chat's groups off with an empty list, and keeps a group that lost its tools listed", async () => {
    const { user, onSubmit } = setupTools(undefined, { ...session, toolGroups: ["gone"] });
    const gone = screen.getByRole("switch", { name: "gone" });
    expect(gone).toBeChecked();
    expect(gone).toHaveAccessibleDescription("no tools left in this group");
    await user.click(gone);
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(onSubmit).toHaveBeenLastCalledWith({}, []);
  });

  it("shows the server's refusal (a model that cannot call tools) at the groups, until the model or groups change", async () => {
    const refusal = "the chat model scripted/scripted cannot call tools: choose a model whose provider declares tool calling (openai, ollama) before allowing tool groups";
    const { user } = setupTools(vi.fn().mockResolvedValue({ groups: refusal }));
    await user.click(screen.getByRole("switch", { name: "shop" }));
    await user.click(screen.getByRole("button", { name: "Save" }));
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent(refusal);
    expect(screen.getByRole("group", { name: "Tools" })).toContainElement(alert);
    await user.clear(screen.getByLabelText("Title"));
    await user.type(screen.getByLabelText("Title"), "Other");
    expect(screen.getByRole("alert")).toHaveTextContent(refusal);
    await user.click(screen.getByRole("switch", { name: "knowledge_base" }));
    expect(screen.queryByRole("alert")).toBeNull();
  });

  describe("the document filter", () => {
    const tags = [
      { tag: "handbook", documents: 1 },
      { tag: "policy", documents: 2 },
    ];
    function setupFilter(onSubmit = vi.fn().mockResolvedValue(null), session_ = session) {
      render(
        <>
          <SessionSettingsForm session={session_} providers={providers} onSubmit={onSubmit} tagOptions={tags} />
          <button type="submit" form="session-settings">
            Save
          </button>
        </>,
      );
      return { onSubmit, user: userEvent.setup(), filter: within(screen.getByTestId("document-filter")) };
    }

    it("offers the knowledge base's tags with their counts and saves a tag filter", async () => {
      const { user, onSubmit, filter } = setupFilter();
      expect(filter.getByRole("switch", { name: "policy" })).toHaveAccessibleDescription("2 documents");
      expect(filter.getByRole("switch", { name: "handbook" })).toHaveAccessibleDescription("1 document");
      await user.click(filter.getByRole("switch", { name: "policy" }));
      await user.click(filter.getByRole("switch", { name: "handbook" }));
      await user.selectOptions(filter.getByLabelText("Tags must match"), "all");
      await user.type(filter.getByLabelText("Path starts with"), "runbooks/");
      await user.click(filter.getByRole("switch", { name: "PDF" }));
      await user.type(filter.getByLabelText("Dated from"), "2026-01-01");
      await user.type(filter.getByLabelText("Dated to"), "2026-06-30");
      await user.click(screen.getByRole("button", { name: "Save" }));
      expect(onSubmit).toHaveBeenLastCalledWith({
        documentFilter: { tagsAll: ["handbook", "policy"], pathPrefix: "runbooks/", kinds: ["pdf"], dateFrom: "2026-01-01T00:00:00Z", dateTo: "2026-06-30T23:59:59Z" },
      });
    });

    it("shows the chat's filter, sends nothing when it is unchanged, and {} to clear it", async () => {
      const saved = { ...session, documentFilter: { tagsAny: ["policy"], tagsAll: [], pathPrefix: null, kinds: [], dateFrom: "2026-01-01T00:00:00+00:00", dateTo: null } };
      const { user, onSubmit, filter } = setupFilter(undefined, saved);
      expect(filter.getByRole("switch", { name: "policy" })).toBeChecked();
      expect(filter.getByLabelText("Dated from")).toHaveValue("2026-01-01");
      await user.click(screen.getByRole("button", { name: "Save" }));
      expect(onSubmit).toHaveBeenLastCalledWith({});
      await user.click(filter.getByRole("switch", { name: "policy" }));
      await user.clear(filter.getByLabelText("Dated from"));
      await user.click(screen.getByRole("button", { name: "Save" }));
      expect(onSubmit).toHaveBeenLastCalledWith({ documentFilter: {} });
    });

    it("keeps a chosen tag no document has any more, and refuses a range that ends before it starts", async () => {
      const gone = { ...session, documentFilter: { tagsAny: [], tagsAll: ["retired"], pathPrefix: null, kinds: [], dateFrom: null, dateTo: null } };
      const { user, onSubmit, filter } = setupFilter(undefined, gone);
      expect(filter.getByRole("switch", { name: "retired" })).toBeChecked();
      expect(filter.getByLabelText("Tags must match")).toHaveValue("all");
      await user.type(filter.getByLabelText("Dated from"), "2026-06-01");
      await user.type(filter.getByLabelText("Dated to"), "2026-01-01");
      expect(describedError(filter.getByLabelText("Dated to"))).toBe("The range ends before it starts.");
      await user.click(screen.getByRole("button", { name: "Save" }));
      expect(onSubmit).not.toHaveBeenCalled();
    });

    it("shows the server's refusal of a filter next to its field", async () => {
      const { user, filter } = setupFilter(vi.fn().mockResolvedValue({ pathPrefix: "at most 1000 characters (got 1001)" }));
      await user.type(filter.getByLabelText("Path starts with"), "x");
      await user.click(screen.getByRole("button", { name: "Save" }));
      expect(describedError(await filter.findByLabelText("Path starts with"))).toBe("at most 1000 characters (got 1001)");
      await user.type(filter.getByLabelText("Path starts with"), "y");
      expect(describedError(filter.getByLabelText("Path starts with"))).toBeNull();
    });
  });
});
