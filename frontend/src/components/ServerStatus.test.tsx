import type { MockLink } from "@apollo/client/testing";
import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { HealthDocument, type HealthQuery } from "../gql/graphql";
import { ServerStatus } from "./ServerStatus";

const healthy: HealthQuery["health"] = {
  ok: true,
  version: "0.1.0",
  sqliteVersion: "3.51.0",
  sqliteVecVersion: "v0.1.9",
  migrationRevision: "0005",
  headRevision: "0005",
};

function answer(health: HealthQuery["health"]): MockLink.MockedResponse<HealthQuery> {
  return { request: { query: HealthDocument }, result: { data: { health } } };
}

function failure(message: string): MockLink.MockedResponse<HealthQuery> {
  return { request: { query: HealthDocument }, error: new Error(message) };
}

function renderStatus(mocks: MockLink.MockedResponse<HealthQuery>[]) {
  render(
    <MockedProvider mocks={mocks}>
      <ServerStatus pollInterval={0} />
    </MockedProvider>,
  );
  return screen.getByTestId("server-status");
}

describe("ServerStatus", () => {
  it("says it is connecting until the server answers", () => {
    const status = renderStatus([answer(healthy)]);
    expect(status).toHaveAttribute("data-state", "loading");
    expect(screen.getByRole("status")).toHaveTextContent("Connecting");
  });

  it("shows the versions and an up-to-date schema", async () => {
    const status = renderStatus([answer(healthy)]);
    expect(await screen.findByText("Connected")).toBeInTheDocument();
    expect(status).toHaveAttribute("data-state", "ok");
    expect(status).toHaveTextContent("v0.1.0");
    expect(screen.getByTestId("sqlite-version")).toHaveTextContent("3.51.0");
    expect(screen.getByTestId("sqlite-vec-version")).toHaveTextContent("v0.1.9");
    expect(screen.getByTestId("migration-state")).toHaveTextContent("0005 (latest)");
  });

  it("tells how to fix a database behind the code", async () => {
    const status = renderStatus([answer({ ...healthy, ok: false, migrationRevision: "0003" })]);
    expect(await screen.findByText("Database needs migrating")).toBeInTheDocument();
    expect(status).toHaveAttribute("data-state", "migrate");
    expect(screen.getByTestId("migration-state")).toHaveTextContent("0003 → 0005");
    expect(status).toHaveTextContent("ragchat migrate");
  });

  it("shows an empty database as such", async () => {
    renderStatus([answer({ ...healthy, ok: false, migrationRevision: null })]);
    expect(await screen.findByTestId("migration-state")).toHaveTextContent("empty → 0005");
  });

  it("reports an unreachable server and retries on request", async () => {
    const status = renderStatus([failure("Failed to fetch"), answer(healthy)]);
    expect(await screen.findByText("Server unreachable")).toBeInTheDocument();
    expect(status).toHaveAttribute("data-state", "error");
    expect(status).toHaveTextContent("Failed to fetch");

    await userEvent.click(screen.getByRole("button", { name: "Retry" }));
    expect(await screen.findByText("Connected")).toBeInTheDocument();
  });
});
