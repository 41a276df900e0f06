import { describe, expect, it } from "vitest";
import { formatPlaces } from "./format";

describe("formatPlaces", () => {
  it("names one kind of place once, in reading order", () => {
    expect(formatPlaces([{ lineStart: 12, lineEnd: 13 }, { lineStart: 10, lineEnd: 10 }])).toBe("lines 10, 12–13");
    expect(formatPlaces([{ page: 7, lineStart: 1, lineEnd: 4 }, { page: 3, lineStart: 1, lineEnd: 2 }])).toBe("pp. 3, 7");
  });
  it("says line or p. for a single place, and each place once", () => {
    expect(formatPlaces([{ lineStart: 7, lineEnd: 7 }, { lineStart: 7, lineEnd: 7 }])).toBe("line 7");
    expect(formatPlaces([{ lineStart: 7, lineEnd: 9 }])).toBe("lines 7–9");
    expect(formatPlaces([{ page: 2, lineStart: 1, lineEnd: 1 }])).toBe("p. 2");
    expect(formatPlaces([])).toBe("");
  });
});
