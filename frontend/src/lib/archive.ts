// A knowledge base's archive (GET /api/knowledge-bases/:id/export), saved as a file. Fetched rather
// than linked: a link sends the session cookie but not an API key, which this app holds itself.

/** Save the archive; resolves to null when saved, 401 when a key is needed, else what went wrong. */
export async function downloadArchive(
  projectId: string,
  authorization: string | null,
  fetcher: typeof fetch = fetch,
): Promise<string | 401 | null> {
  const response = await fetcher(
    `/api/knowledge-bases/${encodeURIComponent(projectId)}/export`,
    {
      headers: authorization ? { Authorization: authorization } : {},
      credentials: "same-origin",
    },
  );
  if (response.status === 401) return 401;
  if (!response.ok) {
    const body = (await response.json().catch(() => null)) as {
      errors?: { message: string }[];
    } | null;
    return (
      body?.errors?.[0]?.message ?? `the server answered ${response.status}`
    );
  }
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download =
    fileName(response.headers.get("content-disposition")) ??
    "knowledge-base.ragchat.tar.gz";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return null;
}

/** The file name a Content-Disposition header gives (`attachment; filename="x.tar.gz"`). */
export function fileName(disposition: string | null): string | null {
  const match =
    disposition?.match(/filename="([^"]+)"/) ??
    disposition?.match(/filename=([^;]+)/);
  return match?.[1]?.trim() ?? null;
}
