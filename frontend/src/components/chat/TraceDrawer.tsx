import { useQuery } from "@apollo/client/react";
import { MessageTraceDocument } from "../../gql/graphql";
import { TracePanel } from "./TracePanel";

export interface TraceDrawerProps {
  /** The stored answer whose trace to show. */
  messageId: string | null;
  open: boolean;
  onClose: () => void;
}

/**
 * "Why this answer" for a stored answer. The chat holds only a summary of each trace; the whole one
 * (every candidate, timing and token count) is loaded when the panel opens, fresh each time.
 */
export function TraceDrawer({ messageId, open, onClose }: TraceDrawerProps) {
  const { data } = useQuery(MessageTraceDocument, {
    variables: { id: messageId ?? "" },
    skip: !open || !messageId,
    fetchPolicy: "no-cache",
  });
  const message = data?.message;
  const trace = message?.__typename === "ChatMessage" && message.id === messageId ? (message.trace ?? null) : null;
  return <TracePanel trace={trace} messageId={messageId} open={open} onClose={onClose} />;
}
