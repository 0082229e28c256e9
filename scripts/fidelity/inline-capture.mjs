#!/usr/bin/env node
// Makes a page from an unpacked documentation package self-contained, as a capture holds it
// (samples/real/README.md): stylesheets inlined as <style> (their @imports followed), images
// and fonts as data: URLs, scripts removed (a capture runs no script, so <noscript> content is
// kept as plain markup), links to other resources (icons, preloads, disabled themes) dropped.
// Of the @font-face rules only the faces Chromium loads drawing the page are kept, so that
// the page stays small; the others could not change a pixel.
//
//   node inline-capture.mjs SOURCE.html OUT.html [ADDRESS]
//
// ADDRESS is where the same page is published: written as a browser's "Save page as" notes
// where a page was saved from, so that its relative links have an address to resolve against,
// as in a capture of the live page.
//
// Regular expressions, not a parser: enough for the generated HTML of Sphinx, rustdoc and
// the PostgreSQL DocBook stylesheets, which is all it is used on.

import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, resolve, extname } from "node:path";
import { chromium } from "playwright-core";

const MIME = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
  ".otf": "font/otf",
};

/** A local file the page refers to (query and fragment dropped), or null for anything remote. */
function local(ref, base) {
  const clean = ref.trim().replace(/^["']|["']$/g, "").replace(/[?#].*$/, "");
  if (!clean || /^[a-z][a-z0-9+.-]*:/i.test(clean) || clean.startsWith("//")) return null;
  const path = resolve(base, decodeURIComponent(clean));
  return existsSync(path) ? path : null;
}

function dataUrl(path) {
  const mime = MIME[extname(path).toLowerCase()] ?? "application/octet-stream";
  return `data:${mime};base64,${readFileSync(path).toString("base64")}`;
}

/** A stylesheet with its @imports inlined and its url()s as data: URLs. */
function inlineCss(css, base, seen = new Set()) {
  css = css.replace(/@import\s+(?:url\()?\s*["']?([^"')\s;]+)["']?\s*\)?\s*([^;]*);/g, (all, ref, media) => {
    const path = local(ref, base);
    if (!path || seen.has(path)) return "";
    seen.add(path);
    const inner = inlineCss(readFileSync(path, "utf8"), dirname(path), seen);
    return media.trim() ? `@media ${media.trim()} {\n${inner}\n}` : inner;
  });
  return css.replace(/url\(\s*(["']?)([^"')]+)\1\s*\)/g, (all, q, ref) => {
    if (ref.startsWith("data:")) return all;
    const path = local(ref, base);
    return path ? `url("${dataUrl(path)}")` : "url(about:invalid)";
  });
}

function attr(tag, name) {
  const m = new RegExp(`\\b${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, "i").exec(tag);
  return m ? (m[1] ?? m[2] ?? m[3]) : null;
}

function inlineHtml(html, base) {
  html = html.replace(/<script\b[^>]*>[\s\S]*?<\/script\s*>/gi, "").replace(/<script\b[^>]*\/>/gi, "");
  html = html.replace(/<\/?noscript\b[^>]*>/gi, "");
  html = html.replace(/<link\b[^>]*>/gi, (tag) => {
    const rel = (attr(tag, "rel") ?? "").toLowerCase().split(/\s+/);
    if (!rel.includes("stylesheet") || /\sdisabled\b/i.test(tag)) return "";
    const path = local(attr(tag, "href") ?? "", base);
    if (!path) return "";
    const media = attr(tag, "media");
    return `<style${media ? ` media="${media}"` : ""}>\n${inlineCss(readFileSync(path, "utf8"), dirname(path))}\n</style>`;
  });
  html = html.replace(/<style\b([^>]*)>([\s\S]*?)<\/style>/gi, (all, a, css) => `<style${a}>${inlineCss(css, base)}</style>`);
  html = html.replace(/<img\b[^>]*>/gi, (tag) => {
    tag = tag.replace(/\s+srcset\s*=\s*("[^"]*"|'[^']*')/i, "");
    const src = attr(tag, "src");
    const path = src && local(src, base);
    return path ? tag.replace(/\bsrc\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)/i, `src="${dataUrl(path)}"`) : tag;
  });
  html = html.replace(/\bstyle\s*=\s*"([^"]*url\([^"]*)"/gi, (all, css) => `style="${inlineCss(css, base).replace(/"/g, "'")}"`);
  return html;
}

const weight = (w) => ({ normal: "400", bold: "700" })[String(w).trim().toLowerCase()] ?? String(w).trim();
const face = (family, w, style) => `${family.replace(/["']/g, "").trim().toLowerCase()}|${weight(w)}|${(style || "normal").trim().toLowerCase()}`;

/** The font faces Chromium loads drawing the page (scripts off, as the converter renders it). */
async function usedFaces(html, width) {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const context = await browser.newContext({ viewport: { width, height: 900 }, javaScriptEnabled: false });
    await context.route("**/*", (route) => route.abort());
    const page = await context.newPage();
    await page.setContent(html, { waitUntil: "load" });
    return await page.evaluate(async () => {
      await document.fonts.ready;
      return [...document.fonts].filter((f) => f.status === "loaded").map((f) => [f.family, f.weight, f.style]);
    });
  } finally {
    await browser.close();
  }
}

function dropUnusedFaces(html, used) {
  const keep = new Set(used.map(([f, w, s]) => face(f, w, s)));
  return html.replace(/@font-face\s*\{[^}]*\}/g, (rule) => {
    const family = /font-family\s*:\s*([^;}]+)/.exec(rule)?.[1] ?? "";
    const w = /font-weight\s*:\s*([^;}]+)/.exec(rule)?.[1] ?? "400";
    const s = /font-style\s*:\s*([^;}]+)/.exec(rule)?.[1] ?? "normal";
    return keep.has(face(family, w, s)) ? rule : "";
  });
}

/**
 * The note a browser's "Save page as" writes at the top of the page: where it was saved from
 * (`<!-- saved from url=(0041)https://… -->`, the address's length in four digits). The
 * converter resolves the page's relative links against it.
 */
function savedFrom(html, address) {
  const note = `<!-- saved from url=(${String(address.length).padStart(4, "0")})${address} -->\n`;
  const doctype = /^(\s*(<\?xml[^>]*\?>\s*)?<!doctype[^>]*>\s*)/i.exec(html);
  return doctype ? doctype[1] + note + html.slice(doctype[1].length) : note + html;
}

async function main() {
  const [source, out, address] = process.argv.slice(2);
  if (!source || !out) {
    console.error("usage: inline-capture.mjs SOURCE.html OUT.html [ADDRESS]");
    process.exit(2);
  }
  let html = inlineHtml(readFileSync(source, "utf8"), dirname(resolve(source)));
  if (/@font-face/.test(html)) html = dropUnusedFaces(html, await usedFaces(html, 1440));
  if (address) html = savedFrom(html, address);
  writeFileSync(out, html);
  console.error(`${out}: ${(Buffer.byteLength(html) / 1024).toFixed(0)} KiB`);
}

await main();
