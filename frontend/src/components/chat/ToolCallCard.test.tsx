import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { ToolCallView } from "../../lib/chatReducer";
import { AssistantMessage } from "./Messages";
import { ToolCallCard } from "./ToolCallCard";

function call(overrides: Partial<ToolCallView> = {}): ToolCallView {
  return {
    callId: "call_1",
    id: "31",
    name: "create_ticket",
    arguments: '{"title":"printer"}',
    status: "PREVIEW",
    ok: true,
    error: null,
    result: null,
    size: null,
    truncated: false,
    ms: null,
    preview: "POST https://tickets.example/new",
    decidedAt: null,
    outcomeMessageId: null,
    offset: null,
    ...overrides,
  };
}

describe("ToolCallCard", () => {
  it("shows a call's name, indented arguments, result and timing", () => {
    render(<ToolCallCard call={call({ status: "EXECUTED", preview: null, result: "12°C", size: 4, ms: 42 })} />);
    expect(screen.getByText("create_ticket")).toBeInTheDocument();
    expect(screen.getByTestId("tool-call-arguments").textContent).toBe('{\n  "title": "printer"\n}');
    expect(screen.getByTestId("tool-call-result")).toHaveTextContent("12°C");
    expect(screen.getByText("42 ms")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: /Approve/ })).toBeNull();
  });

  it("shows a failed call's error and its arguments as the model wrote them", () => {
    render(<ToolCallCard call={call({ status: "FAILED", preview: null, arguments: "{oops", error: "invalid arguments", ms: 1 })} />);
    expect(screen.getByTestId("tool-call-error")).toHaveTextContent("invalid arguments");
    expect(screen.getByTestId("tool-call-arguments")).toHaveTextContent("{oops");
  });

  it("asks for a decision on a preview, and shows why one failed", async () => {
    const user = userEvent.setup();
    const onDecide = vi.fn().mockResolvedValueOnce("this call was rejected already").mockResolvedValueOnce(null);
    render(<ToolCallCard call={call()} onDecide={onDecide} />);
    expect(screen.getByTestId("tool-call-status")).toHaveTextContent("waiting for your approval");
    expect(screen.getByTestId("tool-call-preview")).toHaveTextContent("POST https://tickets.example/new");
    await user.click(screen.getByRole("button", { name: /Approve/ }));
    expect(onDecide).toHaveBeenLastCalledWith(expect.objectContaining({ id: "31" }), "approve");
    expect(await screen.findByRole("alert")).toHaveTextContent("this call was rejected already");
    await user.click(screen.getByRole("button", { name: /Reject/ }));
    expect(onDecide).toHaveBeenLastCalledWith(expect.objectContaining({ id: "31" }), "reject");
    expect(screen.queryByRole("alert")).toBeNull();
  });

  it("shows a decided call's decision and no buttons", () => {
    const { rerender } = render(<ToolCallCard call={call({ status: "REJECTED" })} onDecide={vi.fn()} />);
    expect(screen.getByText("You rejected it: it never ran.")).toBeInTheDocument();
    expect(screen.queryByRole("button")).toBeNull();
    rerender(<ToolCallCard call={call({ status: "APPROVED", result: '{"id": 7}', size: 9, ms: 12, outcomeMessageId: "3" })} onDecide={vi.fn()} />);
    expect(screen.getByTestId("tool-call-status")).toHaveTextContent("approved");
    expect(screen.getByTestId("tool-call-result")).toHaveTextContent('{"id": 7}');
    expect(screen.getByTestId("tool-call-outcome")).toHaveTextContent("added to the conversation");
    expect(screen.queryByRole("button")).toBeNull();
  });
});

describe("AssistantMessage with tool calls", () => {
  const answer = {
    key: "t1", id: "2", role: "ASSISTANT" as const, content: "Let me look. It rains.", status: "COMPLETE" as const, error: null, sources: [], cited: false,
    noContext: false, noAnswer: false, degraded: [], trace: null, createdAt: null, unsent: false, previous: null,
    toolCalls: [call({ status: "EXECUTED", preview: null, result: "rain", name: "weather", offset: 13 })],
  };
  const props = { busy: false, onRetry: vi.fn(), onOpenTrace: vi.fn(), onOpenSettings: vi.fn() };

  it("shows each call between the text it was made in, and the answer after it", () => {
    render(
      <MockedProvider>
        <AssistantMessage item={answer} {...props} />
      </MockedProvider>,
    );
    const message = screen.getByTestId("assistant-message");
    const order = [...message.querySelectorAll('[data-testid="message-segment"], [data-testid="tool-call"], [data-testid="message-content"]')].map((el) => el.getAttribute("data-testid"));
    expect(order).toEqual(["message-segment", "tool-call", "message-content"]);
    expect(screen.getByTestId("message-content")).toHaveTextContent("It rains.");
    expect(within(message).getByRole("button", { name: /Regenerate/ })).toBeInTheDocument();
  });

  it("offers no Regenerate on the message that records an approved call's outcome", () => {
    render(
      <MockedProvider>
        <AssistantMessage item={{ ...answer, toolCalls: [] }} regenerable={false} {...props} />
      </MockedProvider>,
    );
    expect(screen.queryByRole("button", { name: /Regenerate/ })).toBeNull();
  });
});
