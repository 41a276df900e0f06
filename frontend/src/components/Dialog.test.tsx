import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { describe, expect, it, vi } from "vitest";
import { ConfirmDialog } from "./Dialog";

function Harness({ onConfirm }: { onConfirm: () => Promise<string | null> }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Delete
      </button>
      <ConfirmDialog open={open} title="Delete chat?" confirmLabel="Delete chat" danger onConfirm={onConfirm} onCancel={() => setOpen(false)}>
        <p>Gone for good.</p>
      </ConfirmDialog>
    </>
  );
}

describe("ConfirmDialog", () => {
  it("focuses Cancel, traps Tab, closes on Escape and gives focus back", async () => {
    const user = userEvent.setup();
    render(<Harness onConfirm={vi.fn()} />);
    const opener = screen.getByRole("button", { name: "Delete" });
    await user.click(opener);
    const dialog = screen.getByRole("dialog", { name: "Delete chat?" });
    expect(dialog).toHaveAttribute("aria-modal", "true");
    expect(screen.getByRole("button", { name: "Cancel" })).toHaveFocus();
    await user.tab();
    expect(screen.getByRole("button", { name: "Delete chat" })).toHaveFocus();
    await user.tab();
    expect(screen.getByRole("button", { name: "Close" })).toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(opener).toHaveFocus();
  });

  it("shows why the action failed and stays open", async () => {
    const user = userEvent.setup();
    render(<Harness onConfirm={vi.fn().mockResolvedValue("chat session 3 not found")} />);
    await user.click(screen.getByRole("button", { name: "Delete" }));
    await user.click(screen.getByRole("button", { name: "Delete chat" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("chat session 3 not found");
    expect(screen.getByRole("dialog")).toBeInTheDocument();
  });
});
