// Answering from a phone's notification (issue 23), in real Chromium: the page is installable (its
// manifest and icons) and its service worker registers at the site's root; the server's own push,
// received here by a stand-in push service and decrypted with npm's `http_ece` (as a browser
// would), is delivered to the service worker through the DevTools protocol
// (`ServiceWorker.deliverPushMessage`, the push service's part); the notification shows the
// question's options as actions; the worker's click handler answers with one, through the page's
// own server function and its sign-in cookie; the open tab shows the card answered; and the
// server's "answered" push closes the notification.
//
// A server of the test's own: its subscriptions are this test's, and its pushes go out one
// second after a question opens (`--notify-after 1s`) rather than ten.
import { test as base, expect, type BrowserContext, type CDPSession, type Page } from "@playwright/test";
import * as crypto from "node:crypto";
import * as http from "node:http";
import { card, OwnServer, waitForHydration } from "./helpers";

// npm's http_ece (package.json), not the server's own code, decrypts the pushes.
const ece = require("http_ece");

/** A push service on loopback: keeps every push it is sent, as the browser would receive it. */
class PushService {
  readonly browser = crypto.createECDH("prime256v1");
  readonly auth = crypto.randomBytes(16);
  private received: Buffer[] = [];
  private constructor(private readonly server: http.Server, readonly endpoint: string) {
    this.browser.generateKeys();
  }

  static async start(): Promise<PushService> {
    let service: PushService | null = null;
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk) => chunks.push(chunk));
      request.on("end", () => {
        service!.received.push(Buffer.concat(chunks));
        response.writeHead(201).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    service = new PushService(server, `http://127.0.0.1:${port}/push/this-browser`);
    return service;
  }

  /** What `PushSubscription.toJSON()` gives for this browser. */
  subscription() {
    return {
      endpoint: this.endpoint,
      expirationTime: null,
      keys: { p256dh: this.browser.getPublicKey().toString("base64url"), auth: this.auth.toString("base64url") },
    };
  }

  /** The pushes received so far, decrypted (RFC 8291), as the service worker reads them. */
  pushes(): string[] {
    return this.received.map((body) =>
      ece.decrypt(body, { version: "aes128gcm", privateKey: this.browser, authSecret: this.auth }).toString("utf8"),
    );
  }

  close() {
    this.server.close();
  }
}

const test = base.extend<{ server: OwnServer; pushService: PushService }>({
  server: async ({}, use) => {
    // The test's push service is on loopback: added as an operator would add one.
    const server = await OwnServer.start(["--notify-after", "1s", "--push-host", "127.0.0.1"]);
    try {
      await use(server);
    } finally {
      await server.kill();
    }
  },
  pushService: async ({}, use) => {
    const service = await PushService.start();
    try {
      await use(service);
    } finally {
      service.close();
    }
  },
  baseURL: async ({ server }, use) => use(server.url),
  // No bearer token on the browser's requests: the page, the manifest and the service worker's
  // answers are let in by the sign-in cookie alone, as on a phone.
  extraHTTPHeaders: async ({}, use) => use({}),
});

/** A server function, called as a script would (with the token). */
async function api<T>(context: BrowserContext, server: OwnServer, name: string, body: object): Promise<T> {
  const response = await context.request.post(`/api/${name}`, {
    data: body,
    headers: { Authorization: `Bearer ${server.token}` },
  });
  expect(response.ok(), `${name}: ${response.status()} ${await response.text()}`).toBeTruthy();
  return (await response.json()) as T;
}

/** The service worker's registration id, for the DevTools protocol. */
async function registrationId(cdp: CDPSession, scope: string): Promise<string> {
  return new Promise((resolve) => {
    cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }) => {
      const ours = registrations.find((r: { scopeURL: string; isDeleted: boolean }) => r.scopeURL === scope && !r.isDeleted);
      if (ours) resolve(ours.registrationId);
    });
    void cdp.send("ServiceWorker.enable");
  });
}

/**
 * Waits until the service worker is activated, not only active: `ready` resolves while it is still
 * "activating", and a push delivered then can show nothing (seen once in a full run on a busy machine).
 */
async function workerActivated(page: Page) {
  await page.evaluate(async () => {
    const worker = (await navigator.serviceWorker.ready).active!;
    if (worker.state !== "activated") {
      await new Promise<void>((resolve) =>
        worker.addEventListener("statechange", () => worker.state === "activated" && resolve()),
      );
    }
  });
}

/**
 * Delivers a push as the push service would, again until the worker has shown a notification: a
 * delivery through the protocol to a worker just activated has now and then shown nothing (once in
 * a run of `make test` in a row), where a push service would deliver again. Delivering twice shows
 * one notification: the same tag replaces it.
 */
async function deliverUntilShown(cdp: CDPSession, page: Page, origin: string, registrationId: string, data: string) {
  await expect(async () => {
    await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId, data });
    await expect.poll(async () => (await shown(page)).length, { timeout: 2_000 }).toBeGreaterThan(0);
  }).toPass({ timeout: 20_000 });
}

/** The notifications the service worker shows now. */
async function shown(page: Page) {
  return page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    const notifications = await registration.getNotifications();
    return notifications.map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => a.title) }));
  });
}

async function signedInPage(context: BrowserContext, server: OwnServer, path: string): Promise<Page> {
  await context.grantPermissions(["notifications"], { origin: server.url });
  const page = await context.newPage();
  // The token moves to the site's cookie, which the service worker's requests carry.
  await page.goto(`${path}?token=${encodeURIComponent(server.token)}`);
  await waitForHydration(page);
  return page;
}

test("the page is installable: its manifest, the icons phones ask for, and a service worker at the root", async ({
  context,
  server,
}) => {
  const page = await signedInPage(context, server, "/");
  // Signed in by the cookie alone (no token header is added to this browser's requests).
  expect(await page.evaluate(async () => (await fetch("/api/ping", { credentials: "omit" })).status)).toBe(401);
  const href = await page.locator('link[rel="manifest"]').getAttribute("href");
  const manifest = await page.evaluate(async (href) => {
    const response = await fetch(href!, { credentials: "include" });
    return { type: response.headers.get("content-type"), body: await response.json() };
  }, href);
  expect(manifest.type).toBe("application/manifest+json");
  expect(manifest.body).toMatchObject({ name: "AskBridge", start_url: "/", display: "standalone" });
  const icons: { src: string; sizes: string; purpose: string }[] = manifest.body.icons;
  for (const [sizes, purpose] of [["192x192", "any"], ["512x512", "any"], ["512x512", "maskable"]]) {
    const icon = icons.find((i) => i.sizes === sizes && i.purpose === purpose);
    expect(icon, `${sizes} ${purpose}`).toBeTruthy();
    const response = await page.request.get(icon!.src);
    expect(response.headers()["content-type"]).toBe("image/png");
  }
  const apple = await page.locator('link[rel="apple-touch-icon"]').getAttribute("href");
  expect((await page.request.get(apple!)).headers()["content-type"]).toBe("image/png");

  // The bell registers the worker (here turning push off: this offline browser has no push
  // service to subscribe with).
  await page.getByRole("button", { name: /^Notifications are on/ }).click();
  const worker = await page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    return { scope: registration.scope, script: registration.active?.scriptURL };
  });
  expect(worker).toEqual({ scope: `${server.url}/`, script: `${server.url}/sw.js` });
  // Fixed names: asked for again each time, so an upgrade of the server reaches the browser.
  for (const file of ["/sw.js", "/push.js", "/manifest.webmanifest"]) {
    const script = await page.request.get(file);
    expect(script.status(), file).toBe(200);
    expect(script.headers()["cache-control"], file).toBe("no-cache");
  }
  const script = await page.request.get("/sw.js");
  expect(script.headers()["content-type"]).toMatch(/javascript/);
});

test("a push shows the question with its options as actions; an action answers it, the open tab shows it answered, and the answered push closes the notification", async ({
  context,
  server,
  pushService,
}) => {
  // This browser subscribed (the body the bell posts: the subscription's toJSON()).
  await api(context, server, "push_subscribe", pushService.subscription());

  // A question opens while no tab shows it: after a second, the server pushes it.
  const { id: session } = await api<{ id: string }>(context, server, "create_session", {});
  await api(context, server, "send_message", { session, text: "ask me a single question (from the phone)" });
  await expect.poll(() => pushService.pushes().length, { timeout: 20_000 }).toBe(1);
  const ask = JSON.parse(pushService.pushes()[0]);
  expect(ask).toMatchObject({ type: "ask", kind: "question", question: "Which database should we use?", session });
  expect(ask.actions.map((a: { title: string }) => a.title)).toEqual(["SQLite", "Postgres"]);

  // The person's tab, open on the session: the card waits.
  const page = await signedInPage(context, server, `/s/${session}`);
  await expect(card(page)).not.toHaveAttribute("data-state", "answered");
  await page.getByRole("button", { name: /^Notifications are on/ }).click();
  const cdp = await context.newCDPSession(page);
  const id = await registrationId(cdp, `${server.url}/`);
  // Delivered once the worker is activated (a push to a worker still installing showed nothing).
  await workerActivated(page);

  // The push service delivers the push: the notification shows the options as actions.
  await deliverUntilShown(cdp, page, server.url, id, pushService.pushes()[0]);
  await expect.poll(() => shown(page)).toEqual([
    { title: ask.title, body: ask.body, tag: ask.tag, actions: ["SQLite", "Postgres"] },
  ]);

  // A tap on "Postgres": the worker's own click handler, given a NotificationEvent for it (the
  // protocol has no way to tap a notification).
  const worker =
    context.serviceWorkers().find((w) => w.url() === `${server.url}/sw.js`) ??
    (await context.waitForEvent("serviceworker", (w) => w.url() === `${server.url}/sw.js`));
  await worker.evaluate(async () => {
    const [notification] = await (self as any).registration.getNotifications();
    const event = new (self as any).NotificationEvent("notificationclick", { notification, action: notification.actions[1].action });
    await (self as any).onNotificationClick(event);
  });
  await expect(card(page)).toHaveAttribute("data-state", "answered");
  await expect(card(page).getByRole("radio", { name: "Postgres" })).toBeChecked();
  await expect(page.getByRole("article", { name: "Agent" }).first()).toContainText(
    'Received "Which database should we use?"="Postgres".',
  );
  expect(await shown(page)).toEqual([]);

  // Answered: the server pushes "close" for the same tag. A phone that still showed the
  // question has it closed. (Shown again here through the worker's push handler itself: a second
  // protocol delivery of the same push showed nothing in this Chromium; not looked into.)
  await expect.poll(() => pushService.pushes().length, { timeout: 20_000 }).toBe(2);
  const close = JSON.parse(pushService.pushes()[1]);
  expect(close).toEqual({ type: "close", tag: ask.tag });
  await worker.evaluate(async (data) => {
    await (self as any).onPush(new (self as any).PushEvent("push", { data }).data);
  }, pushService.pushes()[0]);
  await expect.poll(async () => (await shown(page)).length).toBe(1);
  await cdp.send("ServiceWorker.deliverPushMessage", { origin: server.url, registrationId: id, data: pushService.pushes()[1] });
  await expect.poll(async () => (await shown(page)).length).toBe(0);
});

test("a permission request's notification offers Allow once and Deny, and Allow once allows the command", async ({
  context,
  server,
  pushService,
}) => {
  await api(context, server, "push_subscribe", pushService.subscription());
  const { id: session } = await api<{ id: string }>(context, server, "create_session", {});
  await api(context, server, "send_message", { session, text: "run the command (from the phone)" });
  await expect.poll(() => pushService.pushes().length, { timeout: 20_000 }).toBe(1);
  const ask = JSON.parse(pushService.pushes()[0]);
  expect(ask).toMatchObject({ type: "ask", kind: "permission", question: "Run `touch deployed.txt`?" });

  const page = await signedInPage(context, server, `/s/${session}`);
  const approval = page.getByRole("group", { name: "The agent wants to run a command" }).last();
  await expect(approval).toHaveAttribute("data-state", "pending");
  await page.getByRole("button", { name: /^Notifications are on/ }).click();
  const cdp = await context.newCDPSession(page);
  const id = await registrationId(cdp, `${server.url}/`);
  await workerActivated(page);
  await deliverUntilShown(cdp, page, server.url, id, pushService.pushes()[0]);
  await expect.poll(() => shown(page)).toEqual([
    { title: ask.title, body: ask.body, tag: ask.tag, actions: ["Allow once", "Deny"] },
  ]);

  const worker =
    context.serviceWorkers().find((w) => w.url() === `${server.url}/sw.js`) ??
    (await context.waitForEvent("serviceworker", (w) => w.url() === `${server.url}/sw.js`));
  await worker.evaluate(async () => {
    const [notification] = await (self as any).registration.getNotifications();
    const event = new (self as any).NotificationEvent("notificationclick", { notification, action: "allow" });
    await (self as any).onNotificationClick(event);
  });
  await expect(approval).toHaveAttribute("data-state", "allowed");
  await expect(page.getByRole("article", { name: "Agent" }).last()).toContainText("Ran the command.");
});
