// AskBridge's service worker: shows the server's pushes (issue 23) and answers from them. It
// caches nothing and handles no fetch, so a page is never shown from a stale copy; it exists for
// `push`, `notificationclick` and `notificationclose` only.
//
// A push's JSON (src/notify/notice.rs): `{type: "ask", tag, title, body, url, actions: [{action,
// title, path, body}]}` shows a notification; `{type: "close", tag}` closes it (the question was
// answered elsewhere). An action posts its `body` to its `path`, the same server function and the
// same first-wins rule as a click on the card, with this site's sign-in cookie.

"use strict";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => event.waitUntil(onPush(event.data)));
self.addEventListener("notificationclick", (event) => event.waitUntil(onNotificationClick(event)));
// Nothing to do when the person swipes a notification away: the card still waits in the page.
self.addEventListener("notificationclose", () => {});

/** Shows or closes a notification as the push says. */
async function onPush(data) {
  let push;
  try {
    push = data ? data.json() : null;
  } catch {
    push = null;
  }
  if (push && push.type === "close") {
    const shown = await self.registration.getNotifications({ tag: push.tag });
    for (const notification of shown) notification.close();
    return;
  }
  const ask = push && push.type === "ask" ? push : { title: "AskBridge", body: "A session needs you", url: "/" };
  const actions = Array.isArray(ask.actions) ? ask.actions : [];
  await self.registration.showNotification(ask.title || "AskBridge", {
    body: ask.body || "",
    tag: ask.tag,
    renotify: Boolean(ask.tag),
    icon: "/icons/icon-192.png",
    badge: "/icons/icon-192.png",
    // The server offers at most as many as Chrome shows (2).
    actions: actions.map(({ action, title }) => ({ action, title })),
    data: { url: sameOriginPath(ask.url), actions },
  });
}

/**
 * A tap: on an action, answers with it; on the body (or when the answer could not be given),
 * opens the session on its card. The listener calls this; so may a test, with a NotificationEvent
 * of its own (a script's event cannot `waitUntil`).
 */
async function onNotificationClick(event) {
  const notification = event.notification;
  const data = notification.data || {};
  notification.close();
  const action = (data.actions || []).find((a) => a.action === event.action);
  if (action && (await answer(action))) return;
  await openCard(data.url || "/");
}

/** Posts the action's answer; whether it was taken (or someone answered first: nothing to open). */
async function answer(action) {
  try {
    const response = await fetch(sameOriginPath(action.path), {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(action.body),
    });
    return response.ok;
  } catch {
    return false;
  }
}

/** Focuses a window on the card's session, or opens one. */
async function openCard(url) {
  const target = new URL(url, self.location.origin);
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const same = windows.find((client) => new URL(client.url).pathname === target.pathname);
  // The session's page shows its waiting card: focusing it is enough, and does not reload it.
  if (same) return void (await same.focus());
  await self.clients.openWindow(target.href);
}

/** Only this site's paths: a push never leads the person, or their cookie, elsewhere. */
function sameOriginPath(path) {
  const url = new URL(typeof path === "string" ? path : "/", self.location.origin);
  return url.origin === self.location.origin ? url.pathname + url.search + url.hash : "/";
}
