import { describe, expect, it } from "vitest";
import { endpointsFor } from "./apollo";

describe("endpointsFor", () => {
  it("uses ws: beside http:", () => {
    expect(endpointsFor({ protocol: "http:", host: "127.0.0.1:8000" })).toEqual({
      httpUrl: "http://127.0.0.1:8000/graphql",
      wsUrl: "ws://127.0.0.1:8000/graphql",
    });
  });

  it("uses wss: beside https:", () => {
    expect(endpointsFor({ protocol: "https:", host: "chat.example.org" }).wsUrl).toBe("wss://chat.example.org/graphql");
  });
});
