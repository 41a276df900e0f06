import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ToolCallingNotice } from "./ToolsPage";

const providers = [
  { provider: "local", available: true, toolCalling: false },
  { provider: "openai", available: true, toolCalling: true },
  { provider: "ollama", available: false, toolCalling: true },
];

describe("ToolCallingNotice", () => {
  it("says when the default model cannot call tools, naming the providers here that can", () => {
    render(<ToolCallingNotice defaults={{ provider: "local", model: "SmolLM2-135M-Instruct" }} providers={providers} />);
    const notice = screen.getByTestId("tool-calling-notice");
    expect(notice).toHaveTextContent("New chats use local/SmolLM2-135M-Instruct, which cannot call tools.");
    expect(notice).toHaveTextContent("choose a model of openai in a chat's settings");
  });

  it("says nothing when the default model can", () => {
    const { container } = render(<ToolCallingNotice defaults={{ provider: "openai", model: "gpt-4o-mini" }} providers={providers} />);
    expect(container).toBeEmptyDOMElement();
  });
});
