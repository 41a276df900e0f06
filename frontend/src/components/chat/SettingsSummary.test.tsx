import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { SettingsSummary } from "./Messages";

const session = { enableRag: true, topK: 5, threshold: 0.3, includeCitations: true, provider: "local", model: "SmolLM2-135M-Instruct" };

describe("SettingsSummary", () => {
  it("says how the chat answers, and changes with the setting", () => {
    const open = vi.fn();
    const { rerender } = render(<SettingsSummary session={{ ...session, answerMode: "EXTRACTIVE" }} onOpen={open} />);
    expect(screen.getByTestId("summary-mode")).toHaveTextContent("quotes the documents");
    rerender(<SettingsSummary session={{ ...session, answerMode: "GENERATIVE" }} onOpen={open} />);
    expect(screen.getByTestId("summary-mode")).toHaveTextContent("the model writes");
    fireEvent.click(screen.getByTestId("settings-summary"));
    expect(open).toHaveBeenCalledOnce();
  });
});
