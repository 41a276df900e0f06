import { ApiKeyDialog } from "./components/ApiKeyDialog";
import { AppShell } from "./components/AppShell";
import { AppSidebar } from "./components/AppSidebar";
import { buttonClass } from "./components/Button";
import { Page } from "./components/Page";
import { EmptyState } from "./components/States";
import { ChatPage } from "./pages/ChatPage";
import { HomePage } from "./pages/HomePage";
import { DocumentPage } from "./pages/DocumentPage";
import { ProjectPage } from "./pages/ProjectPage";
import { ToolsPage } from "./pages/ToolsPage";
import { Link, paths, useRoute } from "./lib/router";

export function App() {
  const route = useRoute();
  return (
    <>
      {route.name === "home" && <HomePage />}
      {route.name === "project" && <ProjectPage key={route.projectId} projectId={route.projectId} />}
      {route.name === "session" && <ChatPage key={route.sessionId} sessionId={route.sessionId} />}
      {route.name === "document" && <DocumentPage key={route.documentId} documentId={route.documentId} />}
      {route.name === "tools" && <ToolsPage />}
      {route.name === "notFound" && (
        <AppShell title="Not found" sidebar={<AppSidebar />}>
          <Page>
            <EmptyState title="Nothing here" action={<Link to={paths.home()} className={buttonClass()}>Go home</Link>}>
              No page at <code>{route.path}</code>.
            </EmptyState>
          </Page>
        </AppShell>
      )}
      <ApiKeyDialog />
    </>
  );
}
