import type { TurnError } from "../../lib/chatReducer";

/** A turn's error for people: a short title and what to do about it. */
export function describeTurnError(error: TurnError): { title: string; detail: string } {
  switch (error.code) {
    case "busy":
      return {
        title: "ragchat is busy right now",
        detail: "Other answers are being generated at the moment. Wait a few seconds, then retry.",
      };
    case "cancelled":
      return { title: "Answer stopped", detail: cap(error.message) };
    case "interrupted":
      return { title: "Answer interrupted", detail: "The server stopped before this answer was finished." };
    case "connection":
      return { title: "Connection lost", detail: `${cap(error.message)}. Check that the server is running, then retry.` };
    case "provider_timeout":
      return { title: "The model took too long", detail: cap(error.message) };
    case "provider_auth":
      return { title: "The model provider refused the credentials", detail: cap(error.message) };
    case "provider_rate_limit":
      return { title: "The model provider is rate-limiting", detail: `${cap(error.message)}. Retry in a moment.` };
    case "model_not_found":
      return { title: "Model not found", detail: `${cap(error.message)}. Pick another model in the chat settings.` };
    case "validation":
      return { title: "The question was not accepted", detail: cap(error.message) };
    case "not_found":
      return { title: "This chat no longer exists", detail: cap(error.message) };
    default:
      return error.code.startsWith("provider")
        ? { title: "The model failed", detail: cap(error.message) }
        : { title: "The answer failed", detail: cap(error.message) };
  }
}

function cap(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}
