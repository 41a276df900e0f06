import { act, fireEvent, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfirmDialog, Dialog } from "./Dialog";

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

async function openConfirm() {
  const user = userEvent.setup();
  render(<Harness onConfirm={vi.fn()} />);
  const opener = screen.getByRole("button", { name: "Delete" });
  await user.click(opener);
  return { user, opener, dialog: screen.getByRole("dialog", { name: "Delete chat?" }) };
}

describe("ConfirmDialog", () => {
  const onWindowKey = vi.fn();
  afterEach(() => window.removeEventListener("keydown", onWindowKey));

  it("opens as a native modal labelled by its title, focuses Cancel, closes on Escape and gives focus back", async () => {
    const showModal = vi.spyOn(HTMLDialogElement.prototype, "showModal");
    const { user, opener, dialog } = await openConfirm();
    // showModal() is what makes the browser keep focus inside and the page behind inert.
    expect(showModal).toHaveBeenCalledOnce();
    expect(showModal.mock.contexts[0]).toBe(dialog);
    expect(dialog).toHaveAttribute("open");
    expect(screen.getByRole("button", { name: "Cancel" })).toHaveFocus();

    window.addEventListener("keydown", onWindowKey);
    await user.keyboard("{Escape}");
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(opener).toHaveFocus();
    // The page's own Escape handlers (the phone drawer's) never saw it.
    expect(onWindowKey).not.toHaveBeenCalled();
  });

  it("leaves closing to its owner when the browser sends cancel", async () => {
    const { opener, dialog } = await openConfirm();
    const cancel = new Event("cancel", { cancelable: true });
    fireEvent(dialog, cancel);
    expect(cancel.defaultPrevented).toBe(true);
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(opener).toHaveFocus();
  });

  it("tells its owner when the browser closes it without asking (Escape twice with no click between)", async () => {
    const { opener, dialog } = await openConfirm();
    act(() => (dialog as HTMLDialogElement).close());
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(opener).toHaveFocus();
  });

  it("closes from its close button and a click on the backdrop, not from a click inside", async () => {
    const { user, opener, dialog } = await openConfirm();
    vi.spyOn(dialog, "getBoundingClientRect").mockReturnValue(new DOMRect(100, 100, 400, 200));
    await user.pointer({ keys: "[MouseLeft]", target: dialog, coords: { clientX: 300, clientY: 150 } });
    await user.click(screen.getByText("Gone for good."));
    expect(screen.getByRole("dialog")).toBeInTheDocument();
    await user.pointer({ keys: "[MouseLeft]", target: dialog, coords: { clientX: 20, clientY: 20 } });
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(opener).toHaveFocus();

    await user.click(opener);
    await user.click(screen.getByRole("button", { name: "Close" }));
    expect(screen.queryByRole("dialog")).toBeNull();
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

function Nested() {
  const [outer, setOuter] = useState(true);
  const [inner, setInner] = useState(false);
  return (
    <Dialog open={outer} onClose={() => setOuter(false)} title="Settings">
      <button type="button" onClick={() => setInner(true)}>
        More
      </button>
      <Dialog open={inner} onClose={() => setInner(false)} title="Details" size="sm">
        <input aria-label="Detail" data-autofocus />
      </Dialog>
    </Dialog>
  );
}

describe("Dialog", () => {
  it("closes nested dialogs one at a time, the topmost first", async () => {
    const user = userEvent.setup();
    render(<Nested />);
    // Nothing asked for focus: the first focusable, the close button, has it.
    expect(screen.getByRole("button", { name: "Close" })).toHaveFocus();
    const more = screen.getByRole("button", { name: "More" });
    await user.click(more);
    expect(screen.getByRole("textbox", { name: "Detail" })).toHaveFocus();

    await user.keyboard("{Escape}");
    expect(screen.queryByRole("dialog", { name: "Details" })).toBeNull();
    expect(screen.getByRole("dialog", { name: "Settings" })).toBeInTheDocument();
    expect(more).toHaveFocus();

    await user.keyboard("{Escape}");
    expect(screen.queryByRole("dialog")).toBeNull();
  });
});
