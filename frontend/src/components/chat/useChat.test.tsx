import { ApolloClient, InMemoryCache } from "@apollo/client";
import { ApolloProvider } from "@apollo/client/react";
import { MockSubscriptionLink } from "@apollo/client/testing";
import { act, renderHook, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { describe, expect, it } from "vitest";
import { useChat } from "./useChat";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function setup() {
  const link = new MockSubscriptionLink();
  const sent: { name: string | undefined; variables: Record<string, unknown> }[] = [];
  link.onSetup(() => sent.push({ name: link.operation?.operationName, variables: { ...link.operation?.variables } }));
  const client = new ApolloClient({ link, cache: new InMemoryCache() });
  const wrapper = ({ children }: { children: ReactNode }) => <ApolloProvider client={client}>{children}</ApolloProvider>;
  const hook = renderHook(() => useChat("7", []), { wrapper });
  return { link, sent, hook };
}

describe("useChat", () => {
  it("sends each question with a clientMessageId of its own", () => {
    const { sent, hook } = setup();
    act(() => hook.result.current.send("first?"));
    act(() => hook.result.current.stop());
    act(() => hook.result.current.send("second?"));

    const chats = sent.filter((s) => s.name === "Chat").map((s) => s.variables);
    expect(chats).toHaveLength(2);
    expect(chats[0]).toMatchObject({ sessionId: "7", content: "first?" });
    expect(chats[0]!.clientMessageId).toMatch(UUID_V4);
    expect(chats[1]!.clientMessageId).toMatch(UUID_V4);
    expect(chats[1]!.clientMessageId).not.toBe(chats[0]!.clientMessageId);
  });

  it("regenerates with a clientMessageId too", async () => {
    const { link, sent, hook } = setup();
    act(() => hook.result.current.send("penguins?"));
    const failure = { __typename: "ChatError", failedMessageId: "12", code: "PROVIDER", message: "down", partial: "" };
    act(() => link.simulateResult({ result: { data: { chat: failure } } }));
    const answer = await waitFor(() => {
      const item = hook.result.current.state.items.find((i) => i.id === "12");
      expect(item?.status).toBe("FAILED");
      return item!;
    });

    act(() => hook.result.current.regenerate(answer.key));

    const regenerations = sent.filter((s) => s.name === "Regenerate").map((s) => s.variables);
    expect(regenerations).toHaveLength(1);
    expect(regenerations[0]).toMatchObject({ messageId: "12" });
    expect(regenerations[0]!.clientMessageId).toMatch(UUID_V4);
  });
});
