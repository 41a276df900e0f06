import { describe, expect, it } from "vitest";
import { parseTags } from "./tags";

describe("parseTags", () => {
  it("splits on commas, trims, drops empty pieces and repeats", () => {
    expect(parseTags(" policy, 2026 ,,policy,  ")).toEqual({ tags: ["policy", "2026"], problem: null });
    expect(parseTags("")).toEqual({ tags: [], problem: null });
  });

  it("refuses what the server would: a tag over 64 characters, more than 50 tags", () => {
    expect(parseTags(`ok, ${"x".repeat(65)}`).problem).toBe('A tag has at most 64 characters ("xxxxxxxxxxxxxxxxxxxx…" has 65).');
    expect(parseTags(Array.from({ length: 51 }, (_, i) => `t${i}`).join(",")).problem).toBe("At most 50 tags (got 51).");
    expect(parseTags(Array.from({ length: 50 }, (_, i) => `t${i}`).join(",")).problem).toBeNull();
  });
});
