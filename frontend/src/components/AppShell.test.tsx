import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { AppShell } from "./AppShell";

function renderShell() {
  render(
    <AppShell sidebar={<p>side</p>} title="New chat">
      <p>main</p>
    </AppShell>,
  );
  // data-drawer-open is what the phone layout slides the drawer in on.
  return screen.getByTestId("app-shell");
}

describe("AppShell", () => {
  it("lays out a labelled sidebar, a titled top bar and the main area", () => {
    renderShell();
    expect(screen.getByRole("complementary", { name: "Sidebar" })).toHaveTextContent("side");
    expect(screen.getByRole("heading", { level: 1 })).toHaveTextContent("New chat");
    expect(screen.getByRole("main")).toHaveTextContent("main");
  });

  it("opens the drawer from the menu button and closes it with Escape or the close button", async () => {
    const user = userEvent.setup();
    const shell = renderShell();
    const menu = screen.getByRole("button", { name: "Open sidebar" });
    expect(shell).toHaveAttribute("data-drawer-open", "false");

    await user.click(menu);
    expect(shell).toHaveAttribute("data-drawer-open", "true");
    expect(menu).toHaveAttribute("aria-expanded", "true");
    await user.keyboard("{Escape}");
    expect(shell).toHaveAttribute("data-drawer-open", "false");

    await user.click(menu);
    await user.click(screen.getByRole("button", { name: "Close sidebar" }));
    expect(shell).toHaveAttribute("data-drawer-open", "false");
  });
});
