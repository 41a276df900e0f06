import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { UploadList } from "./UploadList";
import type { UploadItem } from "./useUploads";

const base: UploadItem = { id: "u1", name: "a.md", size: 2048, phase: "queued", progress: 0, outcome: null, chunks: 0, error: null };

const items: UploadItem[] = [
  { ...base, id: "u1", name: "handbook.md", phase: "uploading", progress: 0.42 },
  { ...base, id: "u2", name: "big.pdf", size: 3 * 1024 * 1024, phase: "processing", progress: 0, state: "PARSING", jobId: "1", itemId: "7" },
  { ...base, id: "u3", name: "faq.txt", phase: "done", progress: 1, outcome: "ADDED", chunks: 3 },
  { ...base, id: "u4", name: "same.txt", phase: "done", progress: 1, outcome: "UNCHANGED", chunks: 2 },
  { ...base, id: "u5", name: "scan.pdf", phase: "failed", outcome: "FAILED", error: "the PDF has no text" },
  { ...base, id: "u6", name: "next.md" },
  { ...base, id: "u7", name: "long.md", phase: "processing", progress: 0.25, state: "EMBEDDING", chunks: 2, chunksTotal: 8, jobId: "1", itemId: "8" },
  { ...base, id: "u8", name: "stopped.md", phase: "cancelled", jobId: "1", itemId: "9", state: "CANCELLED" },
];

describe("UploadList", () => {
  it("shows per-file progress while uploading and each file's result", () => {
    render(<UploadList items={items} />);
    const rows = screen.getAllByTestId("upload-item");
    expect(rows.map((r) => r.dataset.phase)).toEqual(["uploading", "processing", "done", "done", "failed", "queued", "processing", "cancelled"]);

    const uploading = within(rows[0]!).getByRole("progressbar", { name: "Uploading handbook.md" });
    expect(uploading).toHaveAttribute("aria-valuenow", "42");
    expect(rows[0]).toHaveTextContent("Uploading 42%");
    expect(rows[0]).toHaveTextContent("2.0 KB");
    expect(within(rows[1]!).getByRole("progressbar")).toHaveAttribute("data-indeterminate", "true");
    expect(rows[1]).toHaveTextContent("Reading…");
    expect(rows[1]).toHaveTextContent("3.0 MB");
    expect(rows[2]).toHaveTextContent("Added · 3 chunks");
    expect(within(rows[2]!).queryByRole("progressbar")).toBeNull();
    expect(rows[3]).toHaveTextContent("Unchanged: already up to date");
    expect(rows[4]).toHaveTextContent("Failed");
    expect(rows[4]).toHaveTextContent("the PDF has no text");
    expect(rows[5]).toHaveTextContent("Waiting…");
    expect(rows[6]).toHaveTextContent("Embedding 2/8 chunks");
    expect(within(rows[6]!).getByRole("progressbar", { name: "Ingesting long.md" })).toHaveAttribute("aria-valuenow", "25");
    expect(within(rows[6]!).getByRole("progressbar")).not.toHaveAttribute("data-indeterminate");
    expect(rows[7]).toHaveTextContent("Cancelled");
    expect(screen.getByText("4/8 finished")).toBeInTheDocument();
  });

  it("offers cancel while the server has a file, and retry once it failed or was cancelled", async () => {
    const onCancel = vi.fn();
    const onRetry = vi.fn();
    render(<UploadList items={items} onCancel={onCancel} onRetry={onRetry} />);
    await userEvent.click(screen.getByRole("button", { name: "Cancel long.md" }));
    expect(onCancel).toHaveBeenCalledWith("u7");
    await userEvent.click(screen.getByRole("button", { name: "Retry stopped.md" }));
    expect(onRetry).toHaveBeenCalledWith("u8");
    // Not before the server has the file (no item id yet), and not for one that is done.
    expect(screen.queryByRole("button", { name: "Cancel handbook.md" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Retry faq.txt" })).toBeNull();
  });

  it("clears finished rows on request, and renders nothing without uploads", async () => {
    const onClear = vi.fn();
    const { container, rerender } = render(<UploadList items={items} onClear={onClear} />);
    await userEvent.click(screen.getByRole("button", { name: "Clear finished" }));
    expect(onClear).toHaveBeenCalled();
    rerender(<UploadList items={[]} />);
    expect(container).toBeEmptyDOMElement();
  });
});
