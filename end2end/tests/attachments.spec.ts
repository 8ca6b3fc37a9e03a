import { test, expect, type Page } from "@playwright/test";
import { claudeURL, mockURL } from "../playwright.config";
import { waitForHydration } from "./helpers";

/** A 1×1 PNG: a real image, which Claude Code reads as one. */
const PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** Picks files with the Attach button, as a person would in the file dialog. */
async function attach(page: Page, files: { name: string; mimeType: string; buffer: Buffer }[]) {
  const chooser = page.waitForEvent("filechooser");
  await page.getByRole("button", { name: "Attach", exact: true }).click();
  await (await chooser).setFiles(files);
}

/** Pastes a file into the message box: a real paste event, its clipboard holding the file. */
async function paste(page: Page, name: string, type: string, base64: string) {
  await page.getByRole("textbox", { name: "Message" }).evaluate(
    (box, [name, type, base64]) => {
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      const clipboard = new DataTransfer();
      clipboard.items.add(new File([bytes], name, { type }));
      box.dispatchEvent(new ClipboardEvent("paste", { clipboardData: clipboard, bubbles: true, cancelable: true }));
    },
    [name, type, base64],
  );
}

test.describe("with the real Claude Code CLI", () => {
  test.use({ baseURL: claudeURL });

  test("a pasted image shows as a thumbnail, can be removed and attached again, and reaches the model with the same bytes", async ({
    page,
    request,
  }) => {
    await page.goto("/");
    await waitForHydration(page);
    await expect(page.getByRole("button", { name: "Attach", exact: true })).toBeVisible();
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("What is in this picture?");

    const attached = page.getByRole("list", { name: "Attached files" });
    await paste(page, "pixel.png", "image/png", PIXEL_PNG);
    await expect(attached.getByRole("img", { name: "pixel.png" })).toBeVisible();
    await page.getByRole("button", { name: "Remove pixel.png" }).click();
    await expect(attached.getByRole("img", { name: "pixel.png" })).toHaveCount(0);

    await attach(page, [{ name: "pixel.png", mimeType: "image/png", buffer: Buffer.from(PIXEL_PNG, "base64") }]);
    await expect(attached.getByRole("img", { name: "pixel.png" })).toBeVisible();
    // Uploaded: the message may go.
    await expect(attached.getByRole("listitem")).not.toHaveAttribute("aria-busy", "true");
    await box.press("Enter");
    await page.waitForURL(/\/s\/[0-9a-f]+$/);

    // The thread shows it with the message; the box is empty of files again.
    const mine = page.getByRole("article", { name: "You" });
    await expect(mine.getByRole("img", { name: "pixel.png" })).toBeVisible();
    await expect(attached.getByRole("listitem")).toHaveCount(0);
    await expect(page.getByRole("article", { name: "Agent" }).last()).toContainText("A single pixel, it seems.");
    // The image as the browser shows it is the stored file, byte for byte.
    const src = await mine.getByRole("img", { name: "pixel.png" }).getAttribute("src");
    expect(src).toMatch(/^\/api\/attachments\/[0-9a-f]{64}$/);
    expect((await (await request.get(src!)).body()).toString("base64")).toBe(PIXEL_PNG);

    // Claude Code sent the model the image as an image block, with exactly the pasted bytes.
    await expect
      .poll(async () => {
        const requests: any[] = await (await request.get(`${mockURL}/_requests`)).json();
        return requests
          .flatMap((r) => r.messages)
          .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
          .filter((b: any) => b.type === "image")
          .map((b: any) => b.source);
      })
      .toContainEqual({ type: "base64", media_type: "image/png", data: PIXEL_PNG });
  });
});

test("an oversized, a mislabelled and an unknown file are explained in the composer, and nothing is sent", async ({
  page,
  request,
}) => {
  await page.goto("/");
  await waitForHydration(page);
  const box = page.getByRole("textbox", { name: "Message" });
  await box.fill("Look at these.");
  const problem = page.getByRole("alert").filter({ hasText: "cannot be attached" });

  await attach(page, [{ name: "huge.png", mimeType: "image/png", buffer: Buffer.alloc(6 * 1024 * 1024, 1) }]);
  await expect(problem).toHaveText("huge.png cannot be attached: it is 6.0 MB, and a file may be at most 5 MB.");

  // Text labelled as a PNG: the browser believes the label, the server reads the bytes.
  await attach(page, [{ name: "fake.png", mimeType: "image/png", buffer: Buffer.from("this is not a picture") }]);
  await expect(problem).toHaveText("fake.png cannot be attached: its content is not image/png.");

  await attach(page, [{ name: "paper.pdf", mimeType: "application/pdf", buffer: Buffer.from("%PDF-1.7") }]);
  await expect(problem).toHaveText(
    "paper.pdf cannot be attached: application/pdf is not an image the agent can read (PNG, JPEG, GIF, WebP) or a text file.",
  );

  // A text file is fine: it shows as a chip with its name.
  await attach(page, [{ name: "notes.md", mimeType: "", buffer: Buffer.from("# Notes\n") }]);
  const attached = page.getByRole("list", { name: "Attached files" });
  await expect(attached.getByText("notes.md")).toBeVisible();
  await expect(page.getByRole("button", { name: "Remove notes.md" })).toBeVisible();
  await expect(problem).toHaveCount(0);
  await expect(attached.getByRole("listitem")).toHaveCount(1);

  // Nothing of the refused files was sent: no session was started, the text waits in the box.
  await expect(page).toHaveURL(/\/$/);
  await expect(box).toHaveValue("Look at these.");
  // (Other tests share this server: no session holds this text, whatever they started.)
  const found = await (await request.post("/api/list_sessions", { data: { query: "Look at these" } })).json();
  expect(found).toEqual([]);
});
