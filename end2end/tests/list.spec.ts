// Many sessions (issue 21): the list comes a page at a time (the first page of `/` holds 25,
// whatever the total; the older ones come 50 at a time), scrolling to its end brings the next, and a search finds a session by
// its title or by what was written in it, and says why. A server of the test's own, with 60 sessions.
import { test as base, expect } from "@playwright/test";
import { call, OwnServer, waitForHydration } from "./helpers";

const test = base.extend<{ server: OwnServer }>({
  server: async ({}, use) => {
    const server = await OwnServer.start();
    try {
      await use(server);
    } finally {
      await server.kill();
    }
  },
  baseURL: async ({ server }, use) => use(server.url),
});

test("the list shows its first 25, brings the rest as it is scrolled, and a search finds by title and by text", async ({
  page,
}) => {
  for (let n = 1; n <= 60; n++) {
    const { id } = await call<{ id: string }>(page.request, "create_session", {});
    await call(page.request, "rename_session", { id, title: `topic ${String(n).padStart(2, "0")}` });
  }
  // One of them with something written in it.
  const { id: written } = await call<{ id: string }>(page.request, "create_session", {});
  await call(page.request, "send_message", { session: written, text: "please stream something about pelicans" });

  const html = await (await page.request.get("/")).text();
  expect((html.match(/class="session-item[" ]/g) ?? []).length).toBe(25);

  await page.goto("/");
  await waitForHydration(page);
  const list = page.getByRole("navigation", { name: "Session list" });
  const entries = list.getByRole("link");
  await expect(entries).toHaveCount(25);
  await expect(entries.first()).toContainText("please stream something about pelicans");
  // Scrolled to its end: the older ones come.
  await list.evaluate((nav) => nav.scrollTo(0, nav.scrollHeight));
  await expect(entries).toHaveCount(61);
  await expect(entries.last()).toContainText("topic 01");
  await expect(page.getByRole("button", { name: "Show older sessions" })).toBeHidden();

  // Search: by title, then by what the person wrote.
  const search = page.getByRole("searchbox", { name: "Search sessions" });
  await search.fill("topic 07");
  await expect(entries).toHaveCount(1);
  await expect(entries.first()).toContainText("topic 07");
  await search.fill("pelic");
  await expect(entries).toHaveCount(1);
  await expect(entries.first()).toContainText("please stream something about pelicans");
  // Found by what the agent wrote: the entry says why, with the words around the match (the
  // reply streams, so the search is typed again until it is written).
  await expect(async () => {
    await search.fill("");
    await search.click();
    await page.keyboard.type("juliett");
    await expect(entries.first()).toContainText("india juliett kilo", { timeout: 1_000 });
  }).toPass();
  await expect(entries).toHaveCount(1);
  await expect(entries.first()).toContainText("please stream something about pelicans");
  await search.fill("no such thing anywhere");
  await expect(list.getByText("No session matches.")).toBeVisible();
  await search.fill("");
  await expect(entries).toHaveCount(61);
});
