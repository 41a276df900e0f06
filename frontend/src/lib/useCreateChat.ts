import { useMutation } from "@apollo/client/react";
import { useState } from "react";
import { CreateChatSessionDocument } from "../gql/graphql";
import { navigate, paths } from "./router";

/**
 * Start a chat in a knowledge base with the server's default settings, then open it with its
 * settings panel, where the user tunes RAG (with a live retrieval preview) before asking.
 * Creating first is what makes the preview possible: it needs a session.
 */
export function useCreateChat() {
  const [create, { loading }] = useMutation(CreateChatSessionDocument, { refetchQueries: ["ChatSessions"] });
  const [error, setError] = useState<string | null>(null);

  async function start(projectId: string): Promise<void> {
    setError(null);
    try {
      const { data } = await create({ variables: { projectId, input: null } });
      const result = data?.createChatSession;
      if (result?.__typename === "ChatSession") {
        navigate(`${paths.session(result.id)}?setup=1`);
      } else {
        const fields = result && "fields" in result ? result.fields.map((f) => `${f.field}: ${f.message}`).join("; ") : "";
        setError(fields || (result && "message" in result ? result.message : "The chat could not be created."));
      }
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  }

  return { start, creating: loading, error, clearError: () => setError(null) };
}
