import { AppShell } from "./components/AppShell";
import { Composer } from "./components/Composer";
import { ServerStatus } from "./components/ServerStatus";
import { Sidebar } from "./components/Sidebar";
import { Welcome } from "./components/Welcome";

export function App() {
  return (
    <AppShell title="New chat" sidebar={<Sidebar footer={<ServerStatus />} />}>
      <div className="chat">
        <div className="chat__scroll">
          <Welcome />
        </div>
        <div className="chat__composer">
          {/* Wired to the `chat` subscription once the schema has it. */}
          <Composer onSend={() => {}} />
        </div>
      </div>
    </AppShell>
  );
}
