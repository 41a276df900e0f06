import { describe, expect, it } from "vitest";
import { citedNumbers, rehypeCitationMarkers } from "./citationMarkers";

describe("citation markers", () => {
  it("lists the cited numbers in order of first use", () => {
    expect(citedNumbers("A [2]. B [1, 3]. C [2][4].")).toEqual([2, 1, 3, 4]);
  });

  it("splits text nodes into buttons for known numbers only, skipping code", () => {
    const tree = {
      type: "root",
      children: [
        { type: "element", tagName: "p", children: [{ type: "text", value: "See [1] and [7], or [1, 2]." }] },
        { type: "element", tagName: "code", children: [{ type: "text", value: "[1]" }] },
      ],
    };
    rehypeCitationMarkers({ numbers: new Set([1, 2]) })(tree);
    const paragraph = tree.children[0]!.children;
    expect(paragraph.map((n) => (n.type === "text" ? n.value : `<${(n as unknown as { properties: { dataCitation: string } }).properties.dataCitation}>`))).toEqual([
      "See ",
      "<1>",
      " and [7], or ",
      "<1>",
      "<2>",
      ".",
    ]);
    expect(tree.children[1]!.children).toEqual([{ type: "text", value: "[1]" }]);
  });
});
