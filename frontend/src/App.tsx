import { useEffect } from "react";
import { ApiKeyDialog } from "./components/ApiKeyDialog";
import { AppShell } from "./components/AppShell";
import { AppSidebar } from "./components/AppSidebar";
import { buttonClass } from "./components/Button";
import { Page } from "./components/Page";
import { EmptyState } from "./components/States";
import { ChatPage } from "./pages/ChatPage";
import { FirstRunPage } from "./pages/FirstRunPage";
import { HomePage } from "./pages/HomePage";
import { DocumentPage } from "./pages/DocumentPage";
import { InvitationPage } from "./pages/InvitationPage";
import { KeysPage } from "./pages/KeysPage";
import { PeoplePage } from "./pages/PeoplePage";
import { ProjectPage } from "./pages/ProjectPage";
import { SignInPage } from "./pages/SignInPage";
import { ToolsPage } from "./pages/ToolsPage";
import { decide, useServerAccess } from "./lib/access";
import { Link, type Route, navigate, paths, useRoute } from "./lib/router";
import { useApiKeyState } from "./lib/services";

export function App() {
  const route = useRoute();
  const { access, loading } = useServerAccess();
  const { key } = useApiKeyState();
  const decision = decide(route, access, loading, key !== null, window.location);
  const redirect = "redirect" in decision ? decision.redirect : null;

  useEffect(() => {
    if (redirect) navigate(redirect, { replace: true });
  }, [redirect]);

  return (
    <>
      {"show" in decision && decision.show === "page" && <Screen route={route} />}
      <ApiKeyDialog />
    </>
  );
}

function Screen({ route }: { route: Route }) {
  switch (route.name) {
    case "home":
      return <HomePage />;
    case "project":
      return <ProjectPage key={route.projectId} projectId={route.projectId} />;
    case "session":
      return <ChatPage key={route.sessionId} sessionId={route.sessionId} />;
    case "document":
      return <DocumentPage key={route.documentId} documentId={route.documentId} />;
    case "tools":
      return <ToolsPage />;
    case "signIn":
      return <SignInPage />;
    case "firstRun":
      return <FirstRunPage />;
    case "invitation":
      return <InvitationPage key={route.token} token={route.token} />;
    case "keys":
      return <KeysPage />;
    case "people":
      return <PeoplePage />;
    case "notFound":
      return (
        <AppShell title="Not found" sidebar={<AppSidebar />}>
          <Page>
            <EmptyState title="Nothing here" action={<Link to={paths.home()} className={buttonClass()}>Go home</Link>}>
              No page at <code>{route.path}</code>.
            </EmptyState>
          </Page>
        </AppShell>
      );
  }
}
