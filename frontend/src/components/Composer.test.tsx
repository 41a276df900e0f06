import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { Composer } from "./Composer";

function setup(props: Partial<Parameters<typeof Composer>[0]> = {}) {
  const onSend = vi.fn();
  render(<Composer onSend={onSend} {...props} />);
  return { onSend, box: screen.getByRole("textbox", { name: "Message" }), user: userEvent.setup() };
}

describe("Composer", () => {
  it("sends the trimmed text on Enter and empties the box", async () => {
    const { onSend, box, user } = setup();
    await user.type(box, "  What is RAG?  {Enter}");
    expect(onSend).toHaveBeenCalledExactlyOnceWith("What is RAG?");
    expect(box).toHaveValue("");
  });

  it("starts a new line on Shift+Enter", async () => {
    const { onSend, box, user } = setup();
    await user.type(box, "line one{Shift>}{Enter}{/Shift}line two");
    expect(onSend).not.toHaveBeenCalled();
    expect(box).toHaveValue("line one\nline two");
    await user.click(screen.getByRole("button", { name: "Send" }));
    expect(onSend).toHaveBeenCalledExactlyOnceWith("line one\nline two");
  });

  it("does not send blank text", async () => {
    const { onSend, box, user } = setup();
    await user.type(box, "   {Enter}");
    expect(onSend).not.toHaveBeenCalled();
    expect(screen.getByRole("button", { name: "Send" })).toBeDisabled();
  });

  it("keeps the text but does not send while busy", async () => {
    const { onSend, box, user } = setup({ busy: true });
    await user.type(box, "next question{Enter}");
    expect(onSend).not.toHaveBeenCalled();
    expect(box).toHaveValue("next question");
  });
});
