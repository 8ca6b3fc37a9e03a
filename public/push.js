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

/** Turns push on or off for this browser; resolves once the server knows. */
export async function setPush(on) {
  if (!("serviceWorker" in navigator) || !("PushManager" in self)) return;
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
