// The binary is the product (issue 25): `make release` puts the site into it (`bundle-site`), so
// that copied alone into an empty folder elsewhere, and started from yet another folder, it
// serves pages that hydrate, with the bundle's files as cacheable as from the build's folder.
// Here the browser tests' own build is copied and given the site the same way.
import { test, expect } from "@playwright/test";
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ASKBRIDGE, printedAddress, waitForHydration } from "./helpers";

// A browser of its own: it signs in with the link, as a person does.
test.use({ extraHTTPHeaders: {} });

test("a binary that carries its site, copied alone into an empty folder, serves a page that hydrates", async ({ page }) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "askbridge-e2e-alone-"));
  const binary = path.join(folder, "bin", "askbridge");
  fs.mkdirSync(path.dirname(binary));
  fs.copyFileSync(ASKBRIDGE, binary);
  fs.chmodSync(binary, 0o755);
  execFileSync(binary, ["bundle-site", path.resolve(__dirname, "../../target/site")]);
  const elsewhere = path.join(folder, "elsewhere");
  fs.mkdirSync(elsewhere);
  const token = "standalone-test-token-0123456789";
  // Nothing points it at a site: not the current folder, not LEPTOS_SITE_ROOT.
  const env = { ...process.env, ASKBRIDGE_TOKEN: token };
  delete env.LEPTOS_SITE_ROOT;
  const server = spawn(binary, ["serve", "--addr", "127.0.0.1:0", "--data-dir", path.join(folder, "data")], {
    cwd: elsewhere,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  server.stderr!.on("data", (chunk) => (log = (log + chunk).slice(-8_000)));
  try {
    const url = await printedAddress(server, "the copied binary");
    await expect
      .poll(async () => (await fetch(`${url}/`, { headers: { Authorization: `Bearer ${token}` } }).catch(() => null))?.status, {
        message: `the copied binary answers (its log: ${log})`,
        timeout: 30_000,
      })
      .toBe(200);

    const wasm = page.waitForResponse((r) => new URL(r.url()).pathname.match(/^\/pkg\/askbridge\.[^/]+\.wasm$/) !== null);
    await page.goto(`${url}/?token=${token}`);
    await waitForHydration(page);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("hello from a copied binary");
    await box.press("Enter");
    await expect(page.getByRole("article", { name: "Agent" }).last()).toBeVisible();
    // Hashed names, kept by the browser for a year, as when served from the build's folder.
    const served = await wasm;
    expect(served.status()).toBe(200);
    expect(served.headers()["cache-control"]).toBe("public, max-age=31536000, immutable");
    // Its site went into its data folder, nowhere else.
    expect(fs.readdirSync(elsewhere)).toEqual([]);
    expect(fs.readdirSync(path.join(folder, "data", "site"))).toHaveLength(1);
  } finally {
    server.kill("SIGKILL");
    fs.rmSync(folder, { recursive: true, force: true });
  }
});
