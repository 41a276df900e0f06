import { type DragEvent, useRef, useState } from "react";
import { Button } from "../Button";
import { UploadIcon } from "../icons";
import styles from "./Dropzone.module.css";

// What the backend parses (app/rag/ingest/parsing.py); the server still has the last word.
export const ACCEPTED =
  ".txt,.text,.md,.markdown,.rst,.log,.csv,.tsv,.adoc,.org,.tex,.srt,.html,.htm,.xhtml,.pdf,.docx,.pptx,.xlsx,.png,.jpg,.jpeg," +
  ".py,.js,.mjs,.ts,.tsx,.jsx,.go,.rs,.java,.c,.h,.cpp,.cs,.rb,.php,.sh,.sql,.yaml,.yml,.toml,.json,.ini,.css,.xml,.graphql";

export interface DropzoneProps {
  onFiles: (files: File[]) => void;
  disabled?: boolean;
}

/** Drop files here, or pick them; several at once. */
export function Dropzone({ onFiles, disabled = false }: DropzoneProps) {
  const input = useRef<HTMLInputElement>(null);
  const [dragging, setDragging] = useState(false);
  const depth = useRef(0);

  function hasFiles(event: DragEvent) {
    return [...event.dataTransfer.types].includes("Files");
  }

  return (
    <div
      className={styles.dropzone}
      data-dragging={dragging || undefined}
      data-testid="dropzone"
      onDragEnter={(event) => {
        if (!hasFiles(event)) return;
        event.preventDefault();
        depth.current += 1;
        setDragging(true);
      }}
      onDragOver={(event) => {
        if (!hasFiles(event)) return;
        event.preventDefault();
        event.dataTransfer.dropEffect = disabled ? "none" : "copy";
      }}
      onDragLeave={() => {
        depth.current = Math.max(0, depth.current - 1);
        if (depth.current === 0) setDragging(false);
      }}
      onDrop={(event) => {
        event.preventDefault();
        depth.current = 0;
        setDragging(false);
        if (!disabled && event.dataTransfer.files.length > 0) onFiles([...event.dataTransfer.files]);
      }}
    >
      <span className={styles.icon} aria-hidden="true">
        <UploadIcon width={22} height={22} />
      </span>
      <p className={styles.title}>{dragging ? "Drop to upload" : "Drag files here to add them"}</p>
      <p className={styles.hint}>Text, Markdown, HTML, PDF or source code · several at once</p>
      <Button size="small" className={styles.choose} onClick={() => input.current?.click()} disabled={disabled}>
        Choose files
      </Button>
      <input
        ref={input}
        type="file"
        multiple
        accept={ACCEPTED}
        className="visually-hidden"
        aria-label="Choose files to upload"
        tabIndex={-1}
        onChange={(event) => {
          const files = [...(event.target.files ?? [])];
          event.target.value = "";
          if (files.length) onFiles(files);
        }}
      />
    </div>
  );
}
