import { useApolloClient } from "@apollo/client/react";
import { type FormEvent, useEffect, useState } from "react";
import { useApiKeyState, useServices } from "../lib/services";
import { Button } from "./Button";
import { Dialog } from "./Dialog";
import { Field, Form, TextInput } from "./Field";

/**
 * Asks for the server's API key when a request was refused (HTTP 401, websocket 4403), or when
 * opened from the sidebar. The key is kept in this browser's localStorage.
 */
export function ApiKeyDialog() {
  const client = useApolloClient();
  const { keys } = useServices();
  const { key, needed } = useApiKeyState();
  const [value, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (needed) {
      setValue("");
      setError(null);
    }
  }, [needed]);

  function save(event: FormEvent) {
    event.preventDefault();
    if (!value.trim()) {
      setError("Paste an API key.");
      return;
    }
    keys.setKey(value);
    // Everything that failed for want of the key is asked again.
    void client.refetchQueries({ include: "active" });
  }

  function forget() {
    keys.setKey(null);
    void client.refetchQueries({ include: "active" });
  }

  return (
    <Dialog
      open={needed !== null}
      onClose={() => keys.dismiss()}
      title="API key"
      size="sm"
      testId="api-key-dialog"
      description={
        needed === "rejected" && key
          ? "The server refused the saved key. Enter a valid key."
          : needed === "missing"
            ? "The server asked for an API key: it refused the request without one. Ask whoever runs it for one, or make your own on your Keys page."
            : "Use an API key in this browser: a personal key from your Keys page, or one whoever runs the server gave you."
      }
      footer={
        <>
          {key && (
            <Button variant="ghost" onClick={forget}>
              Forget key
            </Button>
          )}
          <Button onClick={() => keys.dismiss()}>Cancel</Button>
          <Button type="submit" form="api-key-form" variant="primary">
            Save key
          </Button>
        </>
      }
    >
      <Form id="api-key-form" onSubmit={save} noValidate>
        <Field label="Key" error={error} hint="Stored in this browser only; sent as a Bearer token.">
          <TextInput
            className="mono"
            type="password"
            autoComplete="off"
            spellCheck={false}
            value={value}
            data-autofocus
            onChange={(e) => {
              setValue(e.target.value);
              setError(null);
            }}
          />
        </Field>
      </Form>
    </Dialog>
  );
}
