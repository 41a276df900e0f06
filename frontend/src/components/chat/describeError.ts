import type { TurnError } from "../../lib/chatReducer";

/** A turn's error for people: a short title and what to do about it. */
export function describeTurnError(error: TurnError): { title: string; detail: string } {
  switch (error.code) {
    case "BUSY":
      return {
        title: "ragchat is busy right now",
        detail: "Other answers are being generated at the moment. Wait a few seconds, then retry.",
      };
    case "CANCELLED":
      return { title: "Answer stopped", detail: cap(error.message) };
    case "INTERRUPTED":
      return { title: "Answer interrupted", detail: "The server stopped before this answer was finished." };
    case "CONNECTION":
      return { title: "Connection lost", detail: `${cap(error.message)}. Check that the server is running, then retry.` };
    case "PROVIDER_TIMEOUT":
      return { title: "The model took too long", detail: cap(error.message) };
    case "PROVIDER_AUTH":
      return { title: "The model provider refused the credentials", detail: cap(error.message) };
    case "PROVIDER_RATE_LIMIT":
      return { title: "The model provider is rate-limiting", detail: `${cap(error.message)}. Retry in a moment.` };
    case "MODEL_NOT_FOUND":
      return { title: "Model not found", detail: `${cap(error.message)}. Pick another model in the chat settings.` };
    case "VALIDATION":
      return { title: "The question was not accepted", detail: cap(error.message) };
    case "NOT_FOUND":
      return { title: "This chat no longer exists", detail: cap(error.message) };
    default:
      return error.code.startsWith("PROVIDER")
        ? { title: "The model failed", detail: cap(error.message) }
        : { title: "The answer failed", detail: cap(error.message) };
  }
}

function cap(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}
