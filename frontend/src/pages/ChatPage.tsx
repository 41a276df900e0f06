import { useApolloClient, useMutation, useQuery } from "@apollo/client/react";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { cx } from "../lib/cx";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Badge } from "../components/Badge";
import { Button, IconButton, buttonClass } from "../components/Button";
import { AssistantMessage, SettingsSummary, UserMessage } from "../components/chat/Messages";
import { TraceDrawer } from "../components/chat/TraceDrawer";
import { useChat } from "../components/chat/useChat";
import { Composer } from "../components/Composer";
import { ConfirmDialog, Dialog } from "../components/Dialog";
import { Field, Form, FormError, TextInput } from "../components/Field";
import { ChatIcon, InfoIcon, LayersIcon, PencilIcon, SlidersIcon, TrashIcon } from "../components/icons";
import { Notice } from "../components/Notice";
import { Page } from "../components/Page";
import { SettingsDrawer } from "../components/settings/SettingsDrawer";
import { EmptyState, ErrorState, Skeleton } from "../components/States";
import {
  ChatSessionDetailDocument,
  type ChatSessionDetailQuery,
  ChatSuggestionsDocument,
  DeleteChatSessionDocument,
  type PersonFieldsFragment,
  ShareChatSessionDocument,
  UpdateChatSessionDocument,
} from "../gql/graphql";
import { useMe } from "../lib/access";
import { suggestedQuestions } from "../lib/suggestions";
import { evictDeleted } from "../lib/evict";
import { Link, navigate, paths } from "../lib/router";
import shared from "../styles/shared.module.css";
import styles from "./ChatPage.module.css";

const PAGE = 50;
const DEFAULT_TITLE = "New chat";

type Session = Extract<ChatSessionDetailQuery["chatSession"], { __typename: "ChatSession" }>;

/**
 * Whether `me` may write in the chat: its owner (chats made before people are the administrators'),
 * or anyone on a server without people or with a server key. Everyone else reads a shared chat.
 */
export function mayWrite(session: Pick<Session, "owner">, me: Pick<PersonFieldsFragment, "id" | "isAdmin"> | null): boolean {
  if (!me) return true;
  return session.owner ? session.owner.id === me.id : me.isAdmin;
}

/** `/sessions/:id`: one chat. */
export function ChatPage({ sessionId }: { sessionId: string }) {
  const { data, loading, error, refetch, fetchMore } = useQuery(ChatSessionDetailDocument, {
    variables: { id: sessionId, last: PAGE },
    fetchPolicy: "network-only",
    nextFetchPolicy: "cache-first",
  });
  const session = data?.chatSession.__typename === "ChatSession" ? data.chatSession : null;

  if (!session) {
    return (
      <AppShell title="Chat" sidebar={<AppSidebar activeSessionId={sessionId} />}>
        <Page>
          {loading && <Skeleton lines={6} label="Loading the chat" />}
          {error && !loading && <ErrorState title="Could not load the chat" message={error.message} onRetry={() => void refetch()} />}
          {data && !session && (
            <EmptyState icon={<ChatIcon width={26} height={26} />} title="Chat not found" action={<Link to={paths.home()} className={buttonClass()}>Go home</Link>}>
              {"message" in data.chatSession ? data.chatSession.message : "It may have been deleted."}
            </EmptyState>
          )}
        </Page>
      </AppShell>
    );
  }
  // An older page goes into the cache before the ones shown (relayStylePagination, `before`); the
  // chat's own state gets it from the result.
  const loadOlder = async (before: string) => {
    const { data: older } = await fetchMore({ variables: { id: sessionId, last: PAGE, before } });
    const chat = older?.chatSession;
    return chat?.__typename === "ChatSession" && chat.messages.__typename === "ChatMessageConnection" ? chat.messages : null;
  };
  return <ChatView key={session.id} session={session} loadOlder={loadOlder} />;
}

type MessagePage = Extract<Session["messages"], { __typename: "ChatMessageConnection" }>;

function ChatView({ session, loadOlder }: { session: Session; loadOlder: (before: string) => Promise<MessagePage | null> }) {
  const client = useApolloClient();
  const [settingsOpen, setSettingsOpen] = useState(() => new URLSearchParams(window.location.search).has("setup"));
  const [isNew] = useState(settingsOpen);
  const [traceKey, setTraceKey] = useState<string | null>(null);
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const firstPage = session.messages.__typename === "ChatMessageConnection" ? session.messages : null;
  const [earlier, setEarlier] = useState(() => (firstPage?.pageInfo.hasPreviousPage ? firstPage.pageInfo.startCursor : null));
  const [loadingEarlier, setLoadingEarlier] = useState(false);
  const [update] = useMutation(UpdateChatSessionDocument);
  const [share, sharing] = useMutation(ShareChatSessionDocument);
  const [shareProblem, setShareProblem] = useState<string | null>(null);
  const me = useMe();
  const mine = mayWrite(session, me);
  const [deleteSession] = useMutation(DeleteChatSessionDocument, {
    update(cache, { data }) {
      if (data?.deleteChatSession.__typename === "ChatSessionDeleted") evictDeleted(cache, data.deleteChatSession);
    },
  });
  const scroller = useRef<HTMLDivElement>(null);
  const stickToBottom = useRef(true);

  useEffect(() => {
    // "?setup" opens the settings once, for a chat just created; a reload should not reopen them.
    if (window.location.search) window.history.replaceState(null, "", window.location.pathname);
  }, []);

  const onSettled = useCallback(() => {
    void client.refetchQueries({ include: ["ChatSessions"] });
  }, [client]);
  const chat = useChat(session.id, firstPage?.edges.map((edge) => edge.node), onSettled);
  const { items } = chat.state;

  // Follow the stream while the reader is at the bottom; leave them be once they scroll up. What is
  // followed is the answer's text, not the bottom of the page: sources and actions under it may
  // go below the fold, the words being read may not.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stickToBottom.current) el.scrollTop = followTarget(el);
  }, [items]);

  function onScroll() {
    const el = scroller.current;
    if (el) stickToBottom.current = Math.abs(followTarget(el) - el.scrollTop) < 80 || el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  }

  function send(text: string) {
    stickToBottom.current = true;
    chat.send(text);
    // Name an untitled chat after its first question.
    if (session.title === DEFAULT_TITLE && items.length === 0) {
      const title = text.replace(/\s+/g, " ").slice(0, 60).trim();
      void update({ variables: { id: session.id, input: { title } }, refetchQueries: ["ChatSessions"] });
    }
  }

  async function loadEarlier() {
    if (!earlier) return;
    setLoadingEarlier(true);
    try {
      const older = await loadOlder(earlier);
      if (!older) return;
      stickToBottom.current = false;
      chat.prepend(older.edges.map((edge) => edge.node));
      setEarlier(older.pageInfo.hasPreviousPage ? older.pageInfo.startCursor : null);
    } finally {
      setLoadingEarlier(false);
    }
  }

  async function confirmDelete(): Promise<string | null> {
    const { data } = await deleteSession({ variables: { id: session.id }, refetchQueries: ["ChatSessions"] });
    if (data?.deleteChatSession.__typename !== "ChatSessionDeleted") {
      return data && "message" in data.deleteChatSession ? data.deleteChatSession.message : "The chat could not be deleted.";
    }
    setDeleting(false);
    navigate(paths.project(session.projectId), { replace: true });
    return null;
  }

  // Messages that record how an approved tool call ended: not answers, so not regenerated.
  const outcomes = new Set(items.flatMap((i) => i.toolCalls.map((c) => c.outcomeMessageId)));
  const lastQuestion = [...items].reverse().find((i) => i.role === "USER")?.content;
  const traceItem = items.find((i) => i.key === traceKey) ?? null;
  // "Adjust retrieval" under an older answer previews that answer's question, not the latest one.
  const [previewQuestion, setPreviewQuestion] = useState<string | undefined>(undefined);
  const openSettings = () => {
    setPreviewQuestion(undefined);
    setSettingsOpen(true);
  };
  const openSettingsFor = (question: string | undefined) => {
    setPreviewQuestion(question);
    setSettingsOpen(true);
  };

  async function toggleShared() {
    setShareProblem(null);
    const { data } = await share({ variables: { id: session.id, shared: !session.shared }, refetchQueries: ["ChatSessions"] });
    const result = data?.shareChatSession;
    if (result?.__typename !== "ChatSession") setShareProblem(result && "message" in result ? result.message : "Sharing did not change.");
  }

  const actions = !mine ? (
    <Badge tone="soft" title="Shared with the knowledge base's members: you can read it, not write in it">
      Shared · read-only
    </Badge>
  ) : (
    <>
      {me && (
        <Button
          size="small"
          aria-pressed={session.shared}
          title={session.shared ? "The knowledge base's members can read this chat. Click to make it private." : "Let the knowledge base's members read this chat (not write in it)."}
          onClick={() => void toggleShared()}
          disabled={sharing.loading}
        >
          <LayersIcon width={15} height={15} /> {session.shared ? "Shared" : "Share"}
        </Button>
      )}
      <IconButton aria-label="Chat settings" title="Chat settings" onClick={openSettings}>
        <SlidersIcon width={18} height={18} />
      </IconButton>
      <IconButton aria-label="Rename chat" title="Rename" onClick={() => setRenaming(true)}>
        <PencilIcon width={18} height={18} />
      </IconButton>
      <IconButton aria-label="Delete chat" title="Delete" onClick={() => setDeleting(true)}>
        <TrashIcon width={18} height={18} />
      </IconButton>
    </>
  );

  return (
    <AppShell
      title={
        <>
          <span className={styles.crumb}>
            <Link to={paths.project(session.projectId)}>{session.project?.name ?? "Knowledge base"}</Link> /
          </span>{" "}
          {session.title}
        </>
      }
      sidebar={<AppSidebar activeProjectId={session.projectId} activeSessionId={session.id} />}
      actions={actions}
    >
      <div className={styles.chat}>
        <div className={styles.scroll} ref={scroller} onScroll={onScroll}>
          <div className={styles.thread} aria-label="Messages" role="log" aria-live="off">
            {earlier && (
              <div className={styles.earlier}>
                <Button variant="ghost" size="small" onClick={() => void loadEarlier()} disabled={loadingEarlier}>
                  {loadingEarlier ? "Loading…" : "Show earlier messages"}
                </Button>
              </div>
            )}
            {items.length === 0 && <ChatEmpty session={session} onOpenSettings={openSettings} onAsk={mine ? send : undefined} />}
            {items.map((item, index) =>
              item.role === "USER" ? (
                <UserMessage key={item.key} item={item} busy={chat.busy} onResend={chat.resend} onDiscard={chat.discard} />
              ) : (
                <AssistantMessage
                  key={item.key}
                  item={item}
                  busy={chat.busy}
                  onRetry={chat.regenerate}
                  onOpenTrace={setTraceKey}
                  onOpenSettings={() => openSettingsFor(items.slice(0, index).findLast((i) => i.role === "USER")?.content)}
                  regenerable={mine && !outcomes.has(item.id)}
                  onDecideTool={chat.decideTool}
                />
              ),
            )}
          </div>
        </div>
        <div className={styles.composer}>
          <div className={styles.composerInner}>
            {shareProblem && <FormError role="alert">{shareProblem}</FormError>}
            {mine ? (
              <>
                <SettingsSummary session={session} onOpen={openSettings} />
                <Composer onSend={send} busy={chat.busy} onStop={chat.stop} placeholder={`Ask ${session.project?.name ?? "your documents"}…`} />
              </>
            ) : (
              <Notice tone="info" icon={<InfoIcon width={16} height={16} />} role="note" data-testid="read-only-chat">
                {session.owner ? `${session.owner.name || session.owner.email} shares this chat` : "This chat is shared"} with the knowledge base's members:
                you can read it, not write in it.
              </Notice>
            )}
          </div>
        </div>
      </div>
      <SettingsDrawer session={session} open={settingsOpen} onClose={() => setSettingsOpen(false)} lastQuestion={previewQuestion ?? lastQuestion} isNew={isNew && items.length === 0} />
      <TraceDrawer messageId={traceItem?.id ?? null} open={traceKey !== null} onClose={() => setTraceKey(null)} />
      <RenameDialog open={renaming} onClose={() => setRenaming(false)} session={session} />
      <ConfirmDialog open={deleting} title="Delete chat?" confirmLabel="Delete chat" danger onConfirm={confirmDelete} onCancel={() => setDeleting(false)}>
        <p>
          <strong>{session.title}</strong> and all its messages will be deleted.
        </p>
      </ConfirmDialog>
    </AppShell>
  );
}

function ChatEmpty({ session, onOpenSettings, onAsk }: { session: Session; onOpenSettings: () => void; onAsk?: (text: string) => void }) {
  const empty = session.project && session.project.documentCount === 0;
  // no-cache: these chunks carry only their headings, and must not stand in for the document
  // viewer's cached pages of whole chunks.
  const { data } = useQuery(ChatSuggestionsDocument, { variables: { projectId: session.projectId }, skip: !onAsk || !!empty, fetchPolicy: "no-cache" });
  const project = data?.project.__typename === "Project" ? data.project : null;
  const documents = project?.documents.__typename === "DocumentConnection" ? project.documents.edges : [];
  const questions = suggestedQuestions(
    documents.flatMap(({ node }) => (node.chunks.__typename === "ChunkConnection" ? node.chunks.edges.map((edge) => edge.node.location.headingPath) : [])),
  );
  return (
    <div className={styles.empty}>
      <span className={cx(shared.brandTile, styles.emptyIcon)} aria-hidden="true">
        <ChatIcon width={24} height={24} />
      </span>
      <h2 className={shared.display}>Ask {session.project?.name ?? "your documents"}</h2>
      <p className={styles.emptyLead}>
        Answers stream in with numbered citations; open “Why this answer” under any answer to see what retrieval kept and dropped.
      </p>
      {empty && session.enableRag && (
        <Notice tone="info" icon={<InfoIcon width={16} height={16} />} role="note">
          This knowledge base has no documents yet. <Link to={paths.project(session.projectId)}>Upload some</Link> so answers can be grounded.
        </Notice>
      )}
      {onAsk && questions.length > 0 && (
        <ul className={cx(shared.plainList, styles.suggestions)} aria-label="Suggested questions">
          {questions.map((question) => (
            <li key={question}>
              <Button size="small" onClick={() => onAsk(question)} data-testid="suggested-question">
                {question}
              </Button>
            </li>
          ))}
        </ul>
      )}
      <Button onClick={onOpenSettings}>
        <SlidersIcon width={16} height={16} /> Tune retrieval
      </Button>
    </div>
  );
}

function RenameDialog({ open, onClose, session }: { open: boolean; onClose: () => void; session: Session }) {
  const [title, setTitle] = useState(session.title);
  const [error, setError] = useState<string | null>(null);
  const [update, { loading }] = useMutation(UpdateChatSessionDocument, { refetchQueries: ["ChatSessions"] });

  useEffect(() => {
    if (open) {
      setTitle(session.title);
      setError(null);
    }
  }, [open, session.title]);

  async function submit(event: React.FormEvent) {
    event.preventDefault();
    if (!title.trim()) return setError("Give the chat a title.");
    const { data } = await update({ variables: { id: session.id, input: { title: title.trim() } } });
    const result = data?.updateChatSession;
    if (result?.__typename === "ChatSession") return onClose();
    if (result?.__typename === "ValidationError") setError(result.fields[0]?.message ?? result.message);
    else setError(result && "message" in result ? result.message : "It could not be renamed.");
  }

  return (
    <Dialog
      open={open}
      onClose={onClose}
      title="Rename chat"
      size="sm"
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" form="rename-chat" variant="primary" disabled={loading}>
            Rename
          </Button>
        </>
      }
    >
      <Form id="rename-chat" onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Title" error={error}>
          <TextInput value={title} maxLength={240} data-autofocus onChange={(e) => setTitle(e.target.value)} />
        </Field>
      </Form>
    </Dialog>
  );
}

/**
 * Where the chat scrolls to follow the last answer: the bottom, unless that would push the answer's
 * text out of view (sources, notices and actions under a long answer); then the text's end, but
 * never past its start.
 */
function followTarget(el: HTMLElement): number {
  const bottom = el.scrollHeight - el.clientHeight;
  const answers = el.querySelectorAll<HTMLElement>('[data-testid="assistant-message"]');
  const answer = answers[answers.length - 1];
  const text = answer?.querySelector<HTMLElement>('[data-testid="message-content"]') ?? answer;
  if (!text) return bottom;
  const box = el.getBoundingClientRect();
  const rect = text.getBoundingClientRect();
  const margin = 24;
  const top = rect.top - box.top + el.scrollTop - margin;
  const end = rect.bottom - box.top + el.scrollTop + margin - el.clientHeight;
  return Math.max(0, Math.min(bottom, Math.max(top, end)));
}
