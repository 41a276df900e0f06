import { describe, expect, it, vi } from "vitest";
import { downloadArchive, fileName } from "./archive";

describe("downloadArchive", () => {
  it("sends the key and saves the file under the server's name", async () => {
    const fetcher = vi
      .fn<typeof fetch>()
      .mockResolvedValue(
        new Response(new Blob([new Uint8Array([0x1f, 0x8b])]), {
          status: 200,
          headers: {
            "content-disposition":
              'attachment; filename="Handbook.ragchat.tar.gz"',
          },
        }),
      );
    const clicked: string[] = [];
    const click = vi
      .spyOn(HTMLAnchorElement.prototype, "click")
      .mockImplementation(function (this: HTMLAnchorElement) {
        clicked.push(this.download);
      });
    URL.createObjectURL = vi.fn(() => "blob:x");
    URL.revokeObjectURL = vi.fn();
    expect(await downloadArchive("7", "Bearer k", fetcher)).toBeNull();
    expect(fetcher.mock.calls[0]![0]).toBe("/api/knowledge-bases/7/export");
    expect(
      (fetcher.mock.calls[0]![1]!.headers as Record<string, string>)
        .Authorization,
    ).toBe("Bearer k");
    expect(clicked).toEqual(["Handbook.ragchat.tar.gz"]);
    click.mockRestore();
  });

  it("says why the server refused, and asks for a key on 401", async () => {
    const refused = vi
      .fn<typeof fetch>()
      .mockResolvedValue(
        new Response(
          JSON.stringify({
            errors: [{ message: "your role is editor; this needs owner" }],
          }),
          { status: 403 },
        ),
      );
    expect(await downloadArchive("7", null, refused)).toBe(
      "your role is editor; this needs owner",
    );
    const unknown = vi
      .fn<typeof fetch>()
      .mockResolvedValue(new Response("{}", { status: 401 }));
    expect(await downloadArchive("7", null, unknown)).toBe(401);
  });

  it("reads the file name from Content-Disposition", () => {
    expect(fileName('attachment; filename="a.tar.gz"')).toBe("a.tar.gz");
    expect(fileName("attachment; filename=b.tar.gz")).toBe("b.tar.gz");
    expect(fileName(null)).toBeNull();
  });
});
