// Draws the app's PNG icons (the web app manifest's and the iPhone's home-screen icon) from
// public/favicon.svg, in the headless Chromium the browser tests use: no image tool is needed,
// and the PNGs are committed, so this runs only when the logo changes.
//   node scripts/icons.mjs
import { chromium } from "@playwright/test";
import * as fs from "node:fs";
import * as path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const svg = fs.readFileSync(path.join(root, "public/favicon.svg"), "utf8");
// The logo's lines without its rounded tile: the maskable and Apple icons fill their square, and
// the phone cuts its own shape out of it.
const lines = svg.replace(/<rect[^>]*\/>/, "");
const blue = "#3b6fd8";

const icons = [
  // name, size, how: "any" keeps the rounded tile on a transparent ground.
  ["icon-192.png", 192, "any"],
  ["icon-512.png", 512, "any"],
  // Maskable: the logo within the middle 80% (the safe zone), the ground full bleed.
  ["icon-maskable-512.png", 512, "maskable"],
  ["apple-touch-icon.png", 180, "full"],
];

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
const page = await browser.newPage({ deviceScaleFactor: 1 });
for (const [name, size, how] of icons) {
  const inner = how === "maskable" ? Math.round(size * 0.7) : how === "full" ? Math.round(size * 0.86) : size;
  const art = how === "any" ? svg : lines;
  const ground = how === "any" ? "transparent" : blue;
  await page.setViewportSize({ width: size, height: size });
  await page.setContent(
    `<html><body style="margin:0;width:${size}px;height:${size}px;display:grid;place-items:center;background:${ground}">` +
      `<div style="width:${inner}px;height:${inner}px">${art.replace("<svg ", `<svg width="${inner}" height="${inner}" `)}</div></body></html>`,
  );
  await page.screenshot({ path: path.join(root, "public/icons", name), omitBackground: how === "any" });
}
await browser.close();
