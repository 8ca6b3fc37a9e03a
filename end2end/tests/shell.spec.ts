import { test, expect, type Locator, type Page } from "@playwright/test";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { call, waitForHydration } from "./helpers";

// The session's Terminal (issue 36): a real shell in a PTY on the server (src/shell/), in the
// session's folder, shown by xterm.js; its screen kept on the server for a reload or another tab.

async function openTerminal(page: Page) {
  await page.getByRole("button", { name: "Terminal", exact: true }).click();
  const panel = page.getByRole("complementary", { name: "Terminal" });
  // xterm.js's own input, focused once the terminal is drawn.
  await expect(panel.getByRole("textbox", { name: "Terminal input" })).toBeFocused();
  return panel;
}

/** The new shell's first prompt, whichever shell it is: the screen shows some text. */
async function shellPrompt(panel: Locator) {
  // xterm.js draws the screen as rows of text without a role: the rows' container is xterm's own.
  await expect(panel.locator(".xterm-rows")).toHaveText(/\S/);
}

test("the terminal runs a command in the session's folder, and a reload or a second tab shows the same screen", async ({
  page,
  context,
}) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-terminal-"));
  try {
    fs.writeFileSync(path.join(folder, "only-here.txt"), "");
    const summary = await call<any>(page.request, "create_session", { workdir: folder });
    await page.goto(`/s/${summary.id}`);
    await waitForHydration(page);
    let panel = await openTerminal(page);
    // Typed before the new shell's first prompt, the line is echoed by the terminal ahead of the
    // prompt, which then stands in front of the output ("# 42": CI on 2 Dec, and a shell started
    // 2 s late): a person types once the prompt is there.
    await shellPrompt(panel);
    await page.keyboard.type("echo $((6*7)); ls");
    await page.keyboard.press("Enter");
    await expect(panel.getByText("42", { exact: true })).toBeVisible();
    await expect(panel.getByText("only-here.txt", { exact: true })).toBeVisible();

    await page.reload();
    await waitForHydration(page);
    panel = await openTerminal(page);
    await expect(panel.getByText("42", { exact: true })).toBeVisible();

    // Another tab: the same shell, the same screen, and what one types the other sees.
    const other = await context.newPage();
    await other.goto(`/s/${summary.id}`);
    await waitForHydration(other);
    const otherPanel = await openTerminal(other);
    await expect(otherPanel.getByText("42", { exact: true })).toBeVisible();
    await other.keyboard.type("echo typed-in-$((2+3))");
    await other.keyboard.press("Enter");
    await expect(panel.getByText("typed-in-5", { exact: true })).toBeVisible();

    // Closed, the panel lets the shell run on; the message box has its keys back.
    await panel.getByRole("button", { name: "Close terminal" }).click();
    await expect(panel).toHaveCount(0);
    await page.getByRole("textbox", { name: "Message" }).click();
    await page.keyboard.type("not for the shell");
    await expect(page.getByRole("textbox", { name: "Message" })).toHaveValue("not for the shell");
    await other.close();
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});

/** The terminal's socket opened by hand: the status the server answers the upgrade with. */
function upgradeStatus(base: string, session: string, headers: Record<string, string>): Promise<number> {
  const url = new URL(`/api/shell/${session}`, base);
  return new Promise((done, fail) => {
    const request = http.request(url, {
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        ...headers,
      },
    });
    request.on("upgrade", (response, socket) => {
      socket.destroy();
      done(response.statusCode ?? 0);
    });
    request.on("response", (response) => {
      response.resume();
      done(response.statusCode ?? 0);
    });
    request.on("error", fail);
    request.end();
  });
}

test("the terminal starts only inside the session's folder, only for the token holder, and only from this server's page", async ({
  page,
  baseURL,
}) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-terminal-"));
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-outside-"));
  try {
    fs.mkdirSync(path.join(folder, "src"));
    fs.symlinkSync(outside, path.join(folder, "out"));
    const summary = await call<any>(page.request, "create_session", { workdir: folder });
    for (const asked of ["..", "../..", "/etc", outside, "out", "src/../../"]) {
      const response = await page.request.get(`/api/shell/${summary.id}?folder=${encodeURIComponent(asked)}`);
      expect(response.status(), asked).toBe(400);
      expect(await response.text(), asked).toContain("is not inside the session's folder");
    }
    // Inside, and no socket: the server says what it needs.
    const inside = await page.request.get(`/api/shell/${summary.id}?folder=src`);
    expect(inside.status()).toBe(400);
    expect(await inside.text()).toContain("opens over a WebSocket");

    const origin = new URL(baseURL!).origin;
    const bearer = { Authorization: `Bearer ${process.env.ASKBRIDGE_TOKEN!}` };
    expect(await upgradeStatus(baseURL!, summary.id, { ...bearer, Origin: origin })).toBe(101);
    expect(await upgradeStatus(baseURL!, summary.id, { ...bearer }), "no Origin").toBe(403);
    expect(await upgradeStatus(baseURL!, summary.id, { ...bearer, Origin: "http://evil.example" }), "another site").toBe(403);
    expect(await upgradeStatus(baseURL!, summary.id, { Origin: origin }), "no token").toBe(401);
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
    fs.rmSync(outside, { recursive: true, force: true });
  }
});
