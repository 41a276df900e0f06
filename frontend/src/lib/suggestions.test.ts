import { describe, expect, it } from "vitest";
import { suggestedQuestions } from "./suggestions";

describe("suggestedQuestions", () => {
  it("takes the first three distinct section headings, in document order", () => {
    const paths = ["Guide", "Guide > Install", "Guide > Install", "Guide > Install > Linux", "", "FAQ > Sync", "FAQ > Backups"];
    expect(suggestedQuestions(paths)).toEqual([
      "What do the documents say about “Install”?",
      "What do the documents say about “Linux”?",
      "What do the documents say about “Sync”?",
    ]);
  });

  it("falls back to the documents' titles, and offers nothing without headings", () => {
    expect(suggestedQuestions(["Guide", "Guide > *Install*", "guide"])).toEqual([
      "What do the documents say about “Install”?",
      "What do the documents say about “Guide”?",
    ]);
    expect(suggestedQuestions(["", ""])).toEqual([]);
  });
});
