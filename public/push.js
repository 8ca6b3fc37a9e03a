// Subscribes this browser to AskBridge's pushes, or unsubscribes it (issue 23): loaded by the bell
// only when it is clicked, so that a page that never asks for push pays nothing for it. It
// registers the service worker (public/sw.js), subscribes with the server's VAPID key
// (`/api/push_key`), and gives the server `PushSubscription.toJSON()` (`/api/push_subscribe`), or
// takes it back (`/api/push_unsubscribe`, `{endpoint}`).

async function call(name, body) {
  const response = await fetch(`/api/${name}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${name}: ${response.status} ${await response.text()}`);
  return response.json();
}

function bytesOfBase64url(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function sameKey(subscription, key) {
  const had = subscription.options && subscription.options.applicationServerKey;
  if (!had) return false;
  const a = new Uint8Array(had);
  return a.length === key.length && a.every((byte, i) => byte === key[i]);
}

/**
 * Says `text` beside the bell, for ten seconds, to assistive technology too (`role="alert"`):
 * every failure of a click on the bell is said, with what to do.
 */
export function say(text) {
  let box = document.getElementById("bell-message");
  if (!box) {
    box = document.createElement("div");
    box.id = "bell-message";
    box.setAttribute("role", "alert");
    box.style.cssText =
      "position:fixed;z-index:50;top:3.4rem;right:1rem;max-width:min(24rem,calc(100vw - 2rem));padding:.6rem .8rem;" +
      "background:var(--surface);color:var(--text);border:1px solid var(--border);border-radius:8px;" +
      "box-shadow:var(--shadow);font-size:.85rem;line-height:1.4";
    box.addEventListener("click", () => (box.hidden = true));
    document.body.append(box);
  }
  box.textContent = text;
  box.hidden = false;
  clearTimeout(say.timer);
  say.timer = setTimeout(() => (box.hidden = true), 10_000);
}

/** The bell was clicked: `on`, `off` (push for this browser), or `blocked` (by the browser). */
export async function bell(what) {
  if (what === "blocked") {
    say(
      "Notifications are blocked for this site in your browser's settings. Allow them there (the icon " +
        "left of the address), then click the bell again.",
    );
    return;
  }
  try {
    await setPush(what === "on");
  } catch (error) {
    console.warn("AskBridge push:", error);
    say(
      what === "on"
        ? `Notifications with every tab closed could not be turned on (${error.message || error}). This tab ` +
            "still notifies while it is open; click the bell twice to try again."
        : `This browser could not be unsubscribed (${error.message || error}); it may still be notified.`,
    );
  }
}

/** Turns push on or off for this browser; resolves once the server knows. */
export async function setPush(on) {
  if (!("serviceWorker" in navigator) || !("PushManager" in self)) {
    if (on) throw new Error("this browser cannot receive pushes");
    return;
  }
  const registration = await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  await navigator.serviceWorker.ready;
  let subscription = await registration.pushManager.getSubscription();
  if (!on) {
    if (subscription) {
      await call("push_unsubscribe", { endpoint: subscription.endpoint });
      await subscription.unsubscribe();
    }
    return;
  }
  const key = bytesOfBase64url(await call("push_key", {}));
  // A subscription made with another key (the data folder was replaced) cannot be pushed to.
  if (subscription && !sameKey(subscription, key)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  await call("push_subscribe", subscription.toJSON());
}
