// A session page's cards, answered before the page's WebAssembly runs (issue 38; `early_answer.rs`
// says when the server puts this script in a page). A person who opens a session's link while the
// agent waits (a notification's, say) answers a one-click question or a permission on the card
// the server drew, at once: its controls carry what they send (`data-send`: the server function
// and its body, as a push notification's actions do), and a pointer's click on one sends it from
// here. The page's WebAssembly is compiled, and the page hydrates, once that answer has reached
// the server, once the person does anything else, or after 5 s: until then nothing of the page's
// own runs beside the agent, which takes the answer on the same cores.
(() => {
  const root = document.documentElement;
  const card = () => document.querySelector("section.interaction-card[data-send-early]:not([data-live])");
  let open;
  const gate = new Promise((resolve) => (open = resolve));
  // The WebAssembly waits for the gate: wasm-bindgen's loader and the chunks' compile through
  // these (the bytes are fetched meanwhile).
  const natives = {};
  for (const name of ["instantiateStreaming", "instantiate", "compileStreaming", "compile"]) {
    natives[name] = WebAssembly[name];
    WebAssembly[name] = (...args) => gate.then(() => natives[name].apply(WebAssembly, args));
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    Object.assign(WebAssembly, natives);
    removeEventListener("pointerdown", elsewhere, true);
    removeEventListener("keydown", elsewhere, true);
    removeEventListener("focusin", elsewhere, true);
    open();
  };
  // Anything but a card's early control: the page is wanted now.
  const elsewhere = (event) => {
    if (!event.target.closest?.("[data-send]")) release();
  };
  // The status line's own text node changes, nothing else of the markup: the page hydrates this
  // very markup later (a node replaced, a marker lost, and hydration would fail).
  const status = (section, text, state) => {
    section.dataset.state = state;
    const line = section.querySelector(".ic-status");
    const words = line && [...line.childNodes].find((node) => node.nodeType === Node.TEXT_NODE);
    if (words) words.data = text;
  };
  const send = async (control) => {
    const section = control.closest("section.interaction-card");
    if (!section || section.dataset.state !== "pending") return;
    const { to, body } = JSON.parse(control.dataset.send);
    // Nothing is drawn but what the click itself changes (the option checked) until the agent
    // has had the answer: a redraw of the card would be painted beside it.
    section.dataset.state = "submitting";
    section.querySelectorAll("button[data-send]").forEach((c) => (c.disabled = true));
    let sent = false;
    try {
      const response = await fetch(to, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
      });
      sent = response.ok;
    } catch {
      sent = false;
    }
    // Sent, or not: said once the agent has had it, and the page takes over either way.
    if (!sent) section.querySelectorAll("button[data-send]").forEach((c) => (c.disabled = false));
    setTimeout(() => {
      status(section, sent ? "Sent" : "Not sent: try again", sent ? "submitting" : "pending");
      release();
    }, sent ? 400 : 0);
  };
  // A pointer's click (`detail` > 0), as the card itself takes one: never a key that only moved.
  // Until the card is the page's own (`data-live`, once hydrated): between the gate's opening
  // and hydration, too.
  addEventListener(
    "click",
    (event) => {
      const control = event.target.closest?.("[data-send]");
      if (!control || event.detail === 0 || !control.closest("[data-send-early]:not([data-live])")) return;
      send(control);
    },
    true,
  );
  addEventListener("pointerdown", elsewhere, true);
  addEventListener("keydown", elsewhere, true);
  addEventListener("focusin", elsewhere, true);
  setTimeout(release, 5_000);
  const arm = () => {
    if (!card()) return release();
    root.dataset.answers = "early";
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", arm, { once: true });
  else arm();
})();
