import type { MockLink } from "@apollo/client/testing";
import { MockedProvider } from "@apollo/client/testing/react";
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { ReactNode } from "react";
import { describe, expect, it, vi } from "vitest";
import { createCache } from "../../apollo";
import {
  AddMemberDocument,
  type ApiKeyFieldsFragment,
  CreateApiKeyDocument,
  MembersDocument,
  type MemberFieldsFragment,
  type PersonFieldsFragment,
  ProjectsDocument,
  ServerAccessDocument,
  type ServerAccessQuery,
  SignInDocument,
  SignOutDocument,
} from "../../gql/graphql";
import { mayWrite } from "../../pages/ChatPage";
import { keyScope, keyState } from "../../pages/KeysPage";
import { SignInPage, singleSignOnProblem } from "../../pages/SignInPage";
import { CreateKeyDialog } from "./CreateKeyDialog";
import { MembersPanel, canManageMembers } from "./MembersPanel";
import { SidebarPerson } from "./SidebarPerson";

const ada: PersonFieldsFragment = { id: "1", email: "ada@example.com", name: "Ada", isAdmin: true, disabled: false, createdAt: "2026-01-01T00:00:00Z" };
const bob: PersonFieldsFragment = { id: "2", email: "bob@example.com", name: "Bob", isAdmin: false, disabled: false, createdAt: "2026-01-02T00:00:00Z" };

function access(me: PersonFieldsFragment | null, overrides: Partial<ServerAccessQuery["serverAccess"]> = {}): MockLink.MockedResponse {
  return {
    request: { query: ServerAccessDocument },
    result: { data: { serverAccess: { __typename: "ServerAccess", peopleExist: true, firstRunAvailable: false, passwordSignIn: true, singleSignOnUrl: null, me: me && { __typename: "Person", ...me }, ...overrides } } },
    maxUsageCount: 10,
  };
}

function renderWith(mocks: MockLink.MockedResponse[], ui: ReactNode) {
  return render(
    <MockedProvider cache={createCache()} mocks={mocks}>
      {ui}
    </MockedProvider>,
  );
}

function signInAnswer(email: string, password: string, signIn: object): MockLink.MockedResponse {
  return { request: { query: SignInDocument, variables: { email, password } }, result: { data: { signIn } } };
}

describe("SignInPage", () => {
  it("signs in and goes where the person was going", async () => {
    window.history.replaceState(null, "", "/sign-in?next=%2Fprojects%2F3");
    const entered = vi.fn();
    renderWith([access(null), signInAnswer("bob@example.com", "correct horse battery", { __typename: "Person", ...bob })], <SignInPage onSignedIn={entered} />);
    await userEvent.type(screen.getByLabelText("Email"), "bob@example.com");
    await userEvent.type(screen.getByLabelText("Password"), "correct horse battery");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    await waitFor(() => expect(entered).toHaveBeenCalledWith("/projects/3"));
    window.history.replaceState(null, "", "/");
  });

  it("says a wrong email or password in words, and how long to wait when throttled", async () => {
    const entered = vi.fn();
    renderWith(
      [
        access(null),
        signInAnswer("bob@example.com", "wrong", { __typename: "ValidationError", message: "invalid input", fields: [{ __typename: "FieldError", field: "password", message: "wrong email or password" }] }),
        signInAnswer("bob@example.com", "wrong", { __typename: "TooManyAttemptsError", message: "too many failed sign-ins", retryAfterSeconds: 42 }),
      ],
      <SignInPage onSignedIn={entered} />,
    );
    await userEvent.type(screen.getByLabelText("Email"), "bob@example.com");
    await userEvent.type(screen.getByLabelText("Password"), "wrong");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("Wrong email or password.");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByText("Too many attempts. Try again in 42 s.")).toBeInTheDocument();
    expect(entered).not.toHaveBeenCalled();
  });

  it("offers single sign-on when the server has it", async () => {
    renderWith([access(null, { singleSignOnUrl: "/auth/oidc/login" })], <SignInPage onSignedIn={vi.fn()} />);
    expect(await screen.findByRole("link", { name: "Sign in with single sign-on" })).toHaveAttribute("href", "/auth/oidc/login");
  });

  it("says in words why single sign-on sent the browser back", async () => {
    window.history.replaceState(null, "", "/sign-in?error=unverified");
    renderWith([access(null, { singleSignOnUrl: "/auth/oidc/login" })], <SignInPage onSignedIn={vi.fn()} />);
    expect(await screen.findByRole("alert")).toHaveTextContent(/has not verified that the address is yours/);
    window.history.replaceState(null, "", "/");
    expect(singleSignOnProblem("something new")).toBe("Single sign-on did not sign you in. Try again.");
    expect(singleSignOnProblem(null)).toBeNull();
  });
});

describe("SidebarPerson", () => {
  it("shows the person, their pages, and signs out to the sign-in page", async () => {
    const left = vi.fn();
    renderWith([access(ada), { request: { query: SignOutDocument }, result: { data: { signOut: true } } }], <SidebarPerson onSignedOut={left} />);
    const panel = await screen.findByTestId("signed-in-person");
    expect(panel).toHaveTextContent("Ada");
    expect(panel).toHaveTextContent("ada@example.com");
    expect(within(panel).getByRole("link", { name: "API keys" })).toHaveAttribute("href", "/settings/keys");
    expect(within(panel).getByRole("link", { name: "People" })).toHaveAttribute("href", "/settings/people");
    await userEvent.click(within(panel).getByRole("button", { name: "Sign out" }));
    await waitFor(() => expect(left).toHaveBeenCalledWith("/sign-in"));
  });

  it("gives a member no People page", async () => {
    renderWith([access(bob)], <SidebarPerson onSignedOut={vi.fn()} />);
    const panel = await screen.findByTestId("signed-in-person");
    expect(within(panel).queryByRole("link", { name: "People" })).toBeNull();
  });

  it("keeps the API key button without a person, and offers the first run on a fresh server", async () => {
    renderWith([access(null, { peopleExist: false, firstRunAvailable: true })], <SidebarPerson />);
    expect(await screen.findByRole("link", { name: "Set up sign-in" })).toHaveAttribute("href", "/first-run");
    expect(screen.getByRole("button", { name: "API key" })).toBeInTheDocument();
    expect(screen.queryByTestId("signed-in-person")).toBeNull();
  });
});

function member(person: PersonFieldsFragment, role: MemberFieldsFragment["role"]) {
  return { __typename: "Member" as const, knowledgeBaseId: "7", role, person: { __typename: "Person" as const, ...person } };
}

function members(list: ReturnType<typeof member>[]): MockLink.MockedResponse {
  return { request: { query: MembersDocument, variables: { knowledgeBaseId: "7" } }, result: { data: { members: { __typename: "MemberList", knowledgeBaseId: "7", members: list } } } };
}

describe("MembersPanel", () => {
  it("lets an owner add a member by email with a role", async () => {
    const add: MockLink.MockedResponse = {
      request: { query: AddMemberDocument, variables: { knowledgeBaseId: "7", email: "bob@example.com", role: "EDITOR" } },
      result: { data: { addMember: member(bob, "EDITOR") } },
    };
    const olga: PersonFieldsFragment = { ...bob, id: "3", email: "olga@example.com", name: "Olga" };
    renderWith([access(olga), members([member(olga, "OWNER")]), add, members([member(olga, "OWNER"), member(bob, "EDITOR")])], <MembersPanel knowledgeBaseId="7" />);
    const form = await screen.findByRole("form", { name: "Add a member" });
    await userEvent.type(within(form).getByLabelText("Email"), "bob@example.com");
    await userEvent.selectOptions(within(form).getByLabelText("Role"), "EDITOR");
    await userEvent.click(within(form).getByRole("button", { name: "Add member" }));
    expect(await screen.findByRole("combobox", { name: "Role of bob@example.com" })).toHaveValue("EDITOR");
    expect(within(form).getByLabelText("Email")).toHaveValue("");
  });

  it("is read-only for a viewer", async () => {
    renderWith([access(bob), members([member(ada, "OWNER"), member(bob, "VIEWER")])], <MembersPanel knowledgeBaseId="7" />);
    const rows = await screen.findAllByTestId("member-row");
    expect(rows).toHaveLength(2);
    expect(rows[1]).toHaveTextContent("Viewer");
    expect(screen.queryByRole("form", { name: "Add a member" })).toBeNull();
    expect(screen.queryByRole("combobox")).toBeNull();
    expect(screen.queryByRole("button", { name: /Remove/ })).toBeNull();
  });

  it("decides who manages members as the server does", () => {
    const list = [member(bob, "EDITOR")];
    expect(canManageMembers(bob, list)).toBe(false);
    expect(canManageMembers(bob, [member(bob, "OWNER")])).toBe(true);
    expect(canManageMembers(ada, list)).toBe(true);
    expect(canManageMembers(null, list)).toBe(true);
  });
});

const projects: MockLink.MockedResponse = {
  request: { query: ProjectsDocument },
  result: {
    data: {
      projects: {
        __typename: "ProjectConnection",
        totalCount: 2,
        pageInfo: { __typename: "PageInfo", hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
        edges: ["Handbook", "Finance"].map((name, i) => ({
          __typename: "ProjectEdge",
          cursor: String(i),
          node: { __typename: "Project", id: String(i + 1), name, description: "", createdAt: "2026-01-01T00:00:00Z", updatedAt: "2026-01-01T00:00:00Z", documentCount: 0, chunkCount: 0, embeddingSpace: null },
        })),
      },
    },
  },
};

const created: ApiKeyFieldsFragment = {
  id: "9", name: "notebook", prefix: "rck_abc123", knowledgeBaseIds: ["2"], readOnly: true, manageUsers: false,
  createdAt: "2026-01-01T00:00:00Z", expiresAt: null, lastUsedAt: null, revokedAt: null,
};

describe("CreateKeyDialog", () => {
  it("creates a key scoped to the ticked knowledge bases, read-only, and shows its secret once", async () => {
    const create: MockLink.MockedResponse = {
      request: { query: CreateApiKeyDocument, variables: { input: { name: "notebook", knowledgeBaseIds: ["2"], readOnly: true, manageUsers: false, expiresAt: null } } },
      result: { data: { createApiKey: { __typename: "CreatedApiKey", secret: "rck_abc123_the-secret", apiKey: { __typename: "ApiKey", ...created } } } },
    };
    renderWith([access(bob), projects, create], <CreateKeyDialog open onClose={vi.fn()} />);
    await userEvent.type(screen.getByLabelText("Name"), "notebook");
    await userEvent.click(await screen.findByRole("checkbox", { name: "Finance" }));
    await userEvent.click(screen.getByRole("switch", { name: "Read-only" }));
    expect(screen.queryByRole("switch", { name: "May manage people" })).toBeNull();
    await userEvent.click(screen.getByRole("button", { name: "Create key" }));
    expect(await screen.findByRole("textbox", { name: "API key" })).toHaveValue("rck_abc123_the-secret");
    expect(screen.getByText(/shown this once/)).toBeInTheDocument();
  });

  it("asks for a name and a future expiry before sending anything", async () => {
    renderWith([access(ada), projects], <CreateKeyDialog open onClose={vi.fn()} />);
    expect(await screen.findByRole("switch", { name: "May manage people" })).toBeInTheDocument();
    await userEvent.type(screen.getByLabelText("Expires"), "2001-01-01");
    await userEvent.click(screen.getByRole("button", { name: "Create key" }));
    expect(screen.getByText("Name the key after what will use it.")).toBeInTheDocument();
    expect(screen.getByText("Pick a day after today.")).toBeInTheDocument();
  });
});

describe("keys and chats, in words", () => {
  it("names a key's scope and state", () => {
    const names = new Map([["2", "Finance"]]);
    expect(keyScope(created, names)).toBe("Finance · read-only");
    expect(keyScope({ ...created, knowledgeBaseIds: null, readOnly: false, manageUsers: true }, names)).toBe("All your knowledge bases · read-write · manages people");
    expect(keyState(created)).toBe("active");
    expect(keyState({ ...created, expiresAt: "2020-01-01T00:00:00" })).toBe("expired");
    expect(keyState({ ...created, revokedAt: "2026-01-01T00:00:00Z" })).toBe("revoked");
  });

  it("lets only a chat's owner write in it (the administrators own the chats from before people)", () => {
    expect(mayWrite({ owner: { id: "1", name: "Ada", email: "ada@example.com" } }, ada)).toBe(true);
    expect(mayWrite({ owner: { id: "1", name: "Ada", email: "ada@example.com" } }, bob)).toBe(false);
    expect(mayWrite({ owner: null }, ada)).toBe(true);
    expect(mayWrite({ owner: null }, bob)).toBe(false);
    expect(mayWrite({ owner: null }, null)).toBe(true);
  });
});
