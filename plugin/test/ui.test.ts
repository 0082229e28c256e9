// The plugin's UI in headless Chromium, against the REAL local stacks, opened as a designer
// opens it: the built dist/ui.html runs in an `<iframe sandbox="allow-scripts">` (Origin: null,
// as Figma runs it) with nothing but an `Authorization: Bearer` header for identity;
// dist/code.js runs beside it on figma-api-stub (test/harness.ts), in a Figma file whose key
// the page names. Settings are pasted once, as `code2des-local seed --json` printed them;
// everything else is found through the list of this file's jobs. The page is served from
// loopback, so Chromium treats the calls to the stack as local-to-local.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";
import { type Browser, type Frame, type Page, type Request, chromium } from "playwright-core";

import { ApiError, Code2DesClient, type Job, type ProjectJobs, type Result } from "@code2des/client";
import {
  type StackEnv,
  type Tenant,
  type WorkerImage,
  demoStack,
  failWithoutArtifact,
  finish,
  plainStack,
  readManifest,
  reportProgress,
  seedTenant,
} from "../../clients/typescript/test/stack.js";
import { EVERY_TYPE, WORKER_IMAGES } from "./fixtures.js";
import type { Harness } from "./harness.js";
import { pngText, withPngText } from "./png.js";
import { FIGMA_THEME, type Theme } from "./theme.js";

const pkg = (p: string) => fileURLToPath(new URL(`../${p}`, import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

let server: Server;
let hostUrl: string;
let browser: Browser;

before(async () => {
  const harness = await esbuild.build({
    entryPoints: [pkg("test/harness.ts")],
    bundle: true,
    format: "iife",
    target: "es2020",
    write: false,
    // figma-api-stub is written for Node.js: it assigns to `global`.
    define: { global: "globalThis" },
    logLevel: "warning",
  });
  const files: Record<string, [string, string]> = {
    "/harness.js": ["text/javascript", harness.outputFiles[0]?.text ?? ""],
    "/code.js": ["text/javascript", await readFile(pkg("dist/code.js"), "utf8")],
    "/": [
      "text/html",
      `<!doctype html><meta charset="utf-8"><title>Figma stand-in</title><body style="margin:0">
<script>window.__UI_HTML__ = ${JSON.stringify(await readFile(pkg("dist/ui.html"), "utf8")).replaceAll("</", "<\\/")};</script>
<script src="/harness.js"></script>
<script src="/code.js"></script>`,
    ],
  };
  server = createServer((req, res) => {
    const file = files[new URL(req.url ?? "/", "http://x").pathname];
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": file[0] }).end(file[1]);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  hostUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      // Chromium puts a sandboxed iframe in a process of its own, and a reopened plugin's first
      // requests were then never reported to Playwright; in one process, every request is.
      "--disable-features=IsolateSandboxedIframes",
    ],
  });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

// --- the session: one Figma file with the plugin in it ---------------------------------------

interface Seen {
  at: number;
  method: string;
  url: string;
  headers: Record<string, string>;
}

interface Session {
  page: Page;
  /** The UI frame of the plugin as it runs now (a reopened plugin has a new one). */
  ui: Frame;
  /** Every request the UI iframe sent to the API, with all its headers. */
  requests: Seen[];
  /** Header reads still in flight (Playwright answers a request's full headers asynchronously). */
  pending: Promise<void>[];
  errors: string[];
  /** figma.fileKey; null when Figma gives the plugin none (the file then keeps a key of its own). */
  fileKey: string | null;
}

async function uiFrame(page: Page): Promise<Frame> {
  const handle = await page.waitForSelector("iframe");
  const ui = await handle.contentFrame();
  assert.ok(ui, "the UI iframe is there");
  await ui.waitForSelector("#generate");
  // The iframe is sandboxed without allow-same-origin: its origin is opaque ("null").
  assert.equal(await ui.evaluate(() => self.origin), "null");
  return ui;
}

/** Opens a Figma file (`fileKey` is what figma.fileKey answers) with the plugin running in it. */
async function open(
  apiUrl: string,
  opts: { fileKey?: string | null; theme?: Theme; scale?: number } = {},
): Promise<Session> {
  const fileKey = opts.fileKey === undefined ? `FILE-${Math.random().toString(36).slice(2, 10)}` : opts.fileKey;
  const page = await browser.newPage({ deviceScaleFactor: opts.scale ?? 1 });
  const requests: Seen[] = [];
  const errors: string[] = [];
  const pending: Promise<void>[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // Routed, not merely watched: a routed request waits here until it is recorded.
  await page.route(
    (url) => url.href.startsWith(apiUrl),
    async (route) => {
      const req: Request = route.request();
      const at = performance.now();
      const headers = await req.allHeaders();
      if (req.method() !== "OPTIONS") requests.push({ at, method: req.method(), url: req.url(), headers });
      await route.continue();
    },
  );
  const q = new URLSearchParams({ theme: opts.theme ?? "light" });
  if (fileKey !== null) q.set("file", fileKey);
  await page.goto(`${hostUrl}?${q}`);
  return { page, ui: await uiFrame(page), requests, pending, errors, fileKey };
}

/** Calls the harness in the page: `h` is window.__harness (`fn` crosses as source text, as Playwright sends it). */
async function H<T, A = undefined>(s: Session, fn: (h: Harness, arg: A) => T, arg?: A): Promise<T> {
  return s.page.evaluate(
    ([src, a]) => {
      const h = (window as unknown as { __harness: Harness }).__harness;
      return new Function("h", "a", `return (${src})(h, a)`)(h, a) as T;
    },
    [fn.toString(), arg] as const,
  );
}
/** The designer closes the plugin, and opens it again in the same file. */
async function reopen(s: Session) {
  await H(s, (h) => h.close());
  assert.equal(await s.page.$("iframe"), null, "the plugin is closed");
  await H(s, (h) => h.run());
  s.ui = await uiFrame(s.page);
}

/** Pastes the settings JSON (what `seed --json` printed) and waits for the first list. */
async function paste(s: Session, json: string) {
  if (await s.ui.isHidden("#settings")) await s.ui.click("#settingsToggle");
  await s.ui.fill("#settingsJson", json);
  await s.ui.click("#useSettings");
  await until("the settings taken", async () => await s.ui.isHidden("#settings"));
  await listed(s);
}

/** Waits for a list answer to be shown. */
const listed = (s: Session) =>
  until("the list", async () => !/Loading/.test((await s.ui.textContent("#listNote")) ?? "Loading") && (await s.ui.isEnabled("#refresh")));

const statusText = (ui: Frame) => ui.textContent("#status").then((t) => t ?? "");
const logText = (ui: Frame) => ui.$$eval("#log li", (lis) => lis.map((li) => li.textContent ?? ""));

/** Waits for the UI to finish a build or fail, and answers its status line. */
const finished = (ui: Frame) =>
  until("the UI to finish", async () => {
    const st = await statusText(ui);
    return /^(Done|Failed)|^\d{3} [a-z_]+:|rror/.test(st) ? st : false;
  });

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Row {
  id: string;
  state: string;
  screen: string;
  badge: string;
  meta: string;
  stage: string | null;
  percent: string | null;
  note: string | null;
  actions: string[];
}

/** The list as shown, top to bottom. */
const rows = (ui: Frame): Promise<Row[]> =>
  ui.$$eval("#jobs > li", (lis) =>
    lis.map((li) => {
      const e = li as HTMLElement;
      return {
        id: e.dataset.id ?? "",
        state: e.dataset.state ?? "",
        screen: e.querySelector(".screen")?.textContent ?? "",
        badge: e.querySelector(".badge")?.textContent ?? "",
        meta: e.querySelector(".meta")?.textContent ?? "",
        stage: e.querySelector(".stage")?.textContent ?? null,
        percent: e.querySelector("[role=progressbar]")?.getAttribute("aria-valuenow") ?? null,
        note: e.querySelector(".note")?.textContent ?? null,
        actions: Array.from(e.querySelectorAll<HTMLButtonElement>("button[data-action]")).map((b) => b.dataset.action ?? ""),
      };
    }),
  );

async function row(ui: Frame, id: string): Promise<Row | undefined> {
  return (await rows(ui)).find((r) => r.id === id);
}

/** Waits until the job's row satisfies `ok`, and answers it. */
const untilRow = (ui: Frame, id: string, what: string, ok: (r: Row) => boolean, ms?: number) =>
  until(`${what} (job ${id})`, async () => {
    const r = await row(ui, id);
    return r && ok(r) ? r : false;
  }, ms);

const click = (ui: Frame, id: string, action: string) => ui.click(`#jobs li[data-id="${id}"] button[data-action="${action}"]`);

interface ShownReport {
  /** The disclosure button's text ("3 warnings"), or null when there is none. */
  toggle: string | null;
  expanded: string | null;
  /** The toggle's aria-controls names the list. */
  controls: boolean;
  /** The calm text shown instead of a toggle ("No warnings"). */
  calm: string | null;
  headings: string[];
  /** The warnings, as shown while open; `button`: a control that selects the layer. */
  entries: { key: string; button: boolean; label: string; message: string; where: string | null; why: string | null }[];
  notes: string[];
}

/** A job's fidelity report as its row shows it. */
const reportOf = (ui: Frame, id: string): Promise<ShownReport> =>
  ui.$eval(`#jobs > li[data-id="${id}"]`, (li) => {
    const toggle = li.querySelector(".report-toggle");
    const body = li.querySelector<HTMLElement>(".report-body");
    const open = !!body && !body.hidden;
    return {
      toggle: toggle?.textContent ?? null,
      expanded: toggle?.getAttribute("aria-expanded") ?? null,
      controls: !!body && toggle?.getAttribute("aria-controls") === body.id,
      calm: li.querySelector(".report > .muted")?.textContent ?? null,
      headings: open ? Array.from(body.querySelectorAll(".report-heading")).map((h) => h.textContent ?? "") : [],
      entries: open
        ? Array.from(body.querySelectorAll<HTMLElement>(".warning")).map((w) => ({
            key: w.dataset.key ?? "",
            button: w.tagName === "BUTTON",
            label: w.querySelector(".label")?.textContent ?? "",
            message: w.querySelector(".message")?.textContent ?? "",
            where: w.querySelector(".where")?.textContent ?? null,
            why: w.querySelector(".why")?.textContent ?? null,
          }))
        : [],
      notes: open ? Array.from(body.querySelectorAll(":scope > .muted")).map((n) => n.textContent ?? "") : [],
    };
  });

const untilReport = (ui: Frame, id: string, what: string, ok: (r: ShownReport) => boolean) =>
  until(`${what} (job ${id})`, async () => {
    const r = await reportOf(ui, id).catch(() => null);
    return r && ok(r) ? r : false;
  });

const toggleOf = (id: string) => `#jobs li[data-id="${id}"] .report-toggle`;
const warningOf = (id: string, i: number) => `#jobs li[data-id="${id}"] [data-key="warning:${i}"]`;

/** Types a screen id, presses Generate, answers the job the trigger created (its 202). */
async function generate(s: Session, screenId: string): Promise<Job> {
  await s.ui.fill("#screenId", screenId);
  const res = s.page.waitForResponse(
    (r) => r.request().method() === "POST" && /\/code2des$/.test(r.url()) && r.status() === 202,
  );
  await s.ui.click("#generate");
  return (await (await res).json()) as Job;
}

const api = (stack: StackEnv, t: Tenant): ProjectJobs => new Code2DesClient({ baseUrl: stack.url, token: t.token }).project(t);

/** The stack's view of a job and its result, through the client (as another device would see it). */
async function fromApi(stack: StackEnv, t: Tenant, id: string): Promise<{ job: Job; result: Result }> {
  const jobs = api(stack, t);
  return { job: await jobs.get(id), result: await jobs.fullResult(id) };
}

/** Identity by bearer token only, from Origin null, on every request the UI made. */
async function checkIdentity(s: Session, t: Tenant) {
  await Promise.all(s.pending);
  assert.ok(s.requests.length > 0, "the UI called the API");
  for (const r of s.requests) {
    assert.equal(r.headers.authorization, `Bearer ${t.token}`, `${r.method} ${r.url}`);
    assert.equal(r.headers["x-code2des-dev-sub"], undefined, "no dev header: the bearer token alone");
    if (r.method !== "OPTIONS") assert.equal(r.headers.origin, "null", `${r.method} ${r.url} comes from the sandboxed iframe`);
  }
}

/** What every build must show: images one per message, each acknowledged, then the document. */
async function checkWire(s: Session, t: Tenant, result: Result) {
  await checkIdentity(s, t);
  const messages = (await H(s, (h) => h.messages)) as Harness["messages"];
  const toMain = messages.filter((m) => m.dir === "ui→main");
  const refs = Object.keys(result.images);
  const imageMsgs = toMain.filter((m) => m.type === "image" || m.type === "svg");
  assert.equal(imageMsgs.length, refs.length, "one message per image");
  for (const m of imageMsgs) {
    const carried = m.type === "image" ? m.arrays : m.svgChars > 0 ? 1 : 0;
    assert.equal(carried, 1, `${m.type} message carries exactly one image`);
    if (m.type === "svg") assert.equal(m.arrays, 0);
  }
  for (const m of toMain.filter((m) => m.type !== "image" && m.type !== "svg")) {
    assert.equal(m.arrays, 0, `the ${m.type} message carries no image bytes`);
    assert.equal(m.svgChars, 0, `the ${m.type} message carries no SVG`);
  }
  // Each image waits for the previous one's acknowledgement; the document comes after them all.
  const flow = messages.filter((m) => ["image", "svg", "stored", "build", "built"].includes(m.type)).map((m) => m.type);
  const expected = [...imageMsgs.flatMap((m) => [m.type, "stored"]), "build", "built"];
  assert.deepEqual(flow, expected);
}

/** The page's one root is the job's document, node by node, and placement recorded it. */
async function checkBuilt(s: Session, stack: StackEnv, t: Tenant, jobId: string) {
  const { job, result } = await fromApi(stack, t, jobId);
  assert.equal(job.status, "completed");
  const roots = await H(s, (h) => h.roots());
  assert.equal(roots.length, 1, "one root on the page");
  // Beside it, the components its instances swap in (the landing's icons), none on other pages.
  const doc = result.document as { components?: unknown[] } | null;
  assert.equal((await H(s, (h) => h.beside())).length, doc?.components?.length ?? 0, "its components beside it");
  assert.equal(job.materializedNodeId, roots[0], "placement recorded the root the plugin built");
  assert.ok(result.document);
  const cmp = await H(s, (h, a) => h.compare(a[0], a[1]), [result.document, result.images] as const);
  assert.deepEqual(cmp.diffs, []);
  assert.equal(cmp.compared, cmp.expected, "every document node was compared");
  await checkWire(s, t, result);
  assert.deepEqual(s.errors, []);
  return job;
}

/** Jobs made through the API (another session, another device), for the list to find. */
async function jobOf(stack: StackEnv, t: Tenant, figmaFileKey: string, screenId: string) {
  const { job } = await api(stack, t).trigger({ pageImportId: t.pageImportId, figmaFileKey, screenId });
  return { job, manifest: await readManifest(stack, job.code2desId) };
}

const SMALL_DOC = { type: "FRAME", name: "page", width: 320, height: 200, children: [{ type: "TEXT", characters: "hello" }] };

/** A nested page whose worker reports three warnings: two on layers (one in an SVG's group), one on none. */
const REPORT_DOC = {
  type: "FRAME",
  name: "Report page",
  width: 800,
  height: 600,
  children: [
    {
      type: "FRAME",
      name: "Header",
      width: 800,
      height: 80,
      children: [
        { type: "TEXT", name: "Title", characters: "Welcome" },
        { type: "RECTANGLE", name: "Rule", y: 79, width: 800, height: 1 },
      ],
    },
    {
      type: "GROUP",
      name: "Card",
      x: 40,
      y: 120,
      children: [
        { type: "RECTANGLE", name: "Card bg", width: 200, height: 100 },
        { type: "SVG", name: "Logo", imageRef: "logo", x: 10, y: 10, width: 48, height: 48 },
      ],
    },
  ],
};
const REPORT_WARNINGS = [
  { code: "font_substituted", message: "Helvetica Neue is not available; drawn with Inter", path: "body > header > h1", node: "Title", indices: [0, 0] },
  { code: "unsupported_css", message: "a transform: its bounding box is drawn", path: "body > main > div.card > svg.logo", node: "Logo", indices: [1, 1] },
  { code: "node_limit", message: "more than 19 000 nodes: the rest of the page is left out", path: "body > footer" },
];

/** The design of the theme test's placed job, with a report from both sources (an empty group is the plugin's). */
const ABOUT_DOC = {
  type: "FRAME",
  name: "about",
  width: 1280,
  height: 900,
  children: [
    { type: "FRAME", name: "Header", width: 1280, height: 120, children: [{ type: "TEXT", name: "Heading", characters: "About us" }] },
    { type: "RECTANGLE", name: "Team photo", y: 160, width: 600, height: 400 },
    { type: "RECTANGLE", name: "Map", x: 680, y: 160, width: 600, height: 400 },
    { type: "GROUP", name: "Badges", y: 600 },
  ],
};
const ABOUT_WARNINGS = [
  { code: "font_substituted", message: "Playfair Display is not available; drawn with Inter", path: "body > header > h1", node: "Heading", indices: [0, 0] },
  { code: "image_converted", message: "a WebP image, drawn as PNG", path: "body > main > img.team", node: "Team photo", indices: [1] },
  { code: "iframe_skipped", message: "an <iframe> (maps.example.com): its box kept", path: "body > main > iframe.map", node: "Map", indices: [2] },
];

// --- the tests ----------------------------------------------------------------------------------

describe("the plugin UI in headless Chromium", () => {
  test("zero to a first result: the seed JSON pasted once, Generate; reopened, it is all still there", async () => {
    const stack = demoStack();
    // The tenant scripts/test-plugin seeded with `code2des-local seed --json`, as a developer would:
    // its output is pasted as it is.
    const seedOutput = await readFile(process.env.C2D_TENANT_JSON ?? "", "utf8");
    const t = JSON.parse(seedOutput) as Tenant;
    const s = await open(stack.url, { fileKey: `FILEkey-zero-${Date.now()}` });
    try {
      assert.equal(await s.ui.isVisible("#settings"), true, "no settings yet: the paste box is open");
      assert.equal(await s.ui.isDisabled("#generate"), true);
      await paste(s, seedOutput);
      assert.equal(await s.ui.textContent("#listNote"), "No jobs for this file yet.");
      const job = await generate(s, "home");
      assert.equal(job.figmaFileKey, s.fileKey, "the job is this file's");
      assert.equal(job.pageImportId, t.pageImportId, "the page import of the pasted settings");
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      const placed = await checkBuilt(s, stack, t, job.code2desId);
      assert.ok((await logText(s.ui)).some((l) => /^built \d+ nodes/.test(l)));
      const r = await untilRow(s.ui, job.code2desId, "placed", (r) => r.state === "placed");
      assert.deepEqual(r.actions, ["show", "delete"]);
      assert.equal(r.note, `Built as node ${placed.materializedNodeId}`);

      // Kept in clientStorage: the settings, never a job.
      const stored = JSON.stringify(await H(s, (h) => h.storage()));
      assert.ok(stored.includes(t.token) && stored.includes(String(t.projectId)), "the settings are kept");
      assert.ok(!stored.includes(job.code2desId), "no job is kept in plugin state");

      // Opened again: no paste, no typing; the list finds the job, placed.
      await reopen(s);
      assert.equal(await s.ui.isHidden("#settings"), true);
      await listed(s);
      const again = await untilRow(s.ui, job.code2desId, "listed again", (r) => r.state === "placed");
      assert.equal(again.screen, "home");
      const lists = () => s.requests.filter((q) => q.method === "GET" && new URL(q.url).pathname.endsWith("/code2des"));
      await until("listed on paste and on reopening", async () => lists().length >= 2);
      for (const q of lists()) assert.equal(new URL(q.url).searchParams.get("figmaFileKey"), s.fileKey);
      await checkIdentity(s, t);
    } finally {
      await s.page.close();
    }
  });

  test("every node type, with the worker's progress shown in the job's row", async () => {
    const stack = plainStack();
    const tenant = await seedTenant(stack);
    const s = await open(stack.url);
    try {
      await paste(s, tenant.seedJson);
      const job = await generate(s, "every-type");
      const manifest = await readManifest(stack, job.code2desId);
      for (const [percent, stage] of [[40, "layout"], [80, "images"]] as const) {
        assert.equal((await reportProgress(stack, manifest, percent, stage)).status, 200);
        const r = await untilRow(s.ui, job.code2desId, `${percent}% ${stage}`, (r) => r.stage === `${percent}% · ${stage}`);
        assert.equal(r.percent, String(percent));
        assert.equal(r.state, "processing");
        assert.deepEqual(r.actions, ["cancel", "delete"]);
        assert.ok((await logText(s.ui)).includes(`${percent}% ${stage}`));
      }
      const hook = await finish(stack, manifest, { kind: "result", document: EVERY_TYPE, images: WORKER_IMAGES });
      assert.equal(hook.status, 200);
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      await checkBuilt(s, stack, tenant, job.code2desId);
      const log = await logText(s.ui);
      assert.ok(log.includes("warning: empty group \"Empty group\" built as an empty frame"), log.join("\n"));
      assert.ok(log.some((l) => l.startsWith("warning: font No Such Font Regular")), log.join("\n"));

      // The plugin's own warnings are the report, apart from the conversion's (it listed none).
      const closed = await untilReport(s.ui, job.code2desId, "the report", (r) => r.toggle !== null);
      assert.equal(closed.toggle, "2 warnings");
      await s.ui.click(toggleOf(job.code2desId));
      const r = await untilReport(s.ui, job.code2desId, "the report open", (r) => r.entries.length === 2);
      assert.deepEqual(r.headings, ["From building in Figma (2)"]);
      assert.deepEqual(
        r.entries.map((e) => [e.button, e.label, e.message, e.where]),
        [
          [true, "Font substituted", "font No Such Font Regular is not available; used Inter Regular", 'Layer "Missing font"'],
          [true, "Empty group", 'empty group "Empty group" built as an empty frame', 'Layer "Empty group"'],
        ],
      );
      await s.ui.click(warningOf(job.code2desId, 1));
      await until("the empty group selected", async () => (await statusText(s.ui)).startsWith("Selected"));
      assert.deepEqual(await H(s, (h) => h.selection()), await H(s, (h) => h.named("Empty group")));
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
    }
  });

  test("the fidelity report: 3 warnings, each selecting its layer (by mouse and keyboard); a deleted layer says so; reopened, it is all still there", async () => {
    const stack = plainStack();
    const t = await seedTenant(stack);
    const s = await open(stack.url);
    try {
      await paste(s, t.seedJson);
      const job = await generate(s, "report");
      const id = job.code2desId;
      const manifest = await readManifest(stack, id);
      const hook = await finish(stack, manifest, {
        kind: "result",
        document: REPORT_DOC,
        images: { logo: WORKER_IMAGES.logo as WorkerImage },
        warnings: REPORT_WARNINGS,
      });
      assert.equal(hook.status, 200, JSON.stringify(hook.json));
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      const placed = await checkBuilt(s, stack, t, id);
      // The API answers the worker's list as it was written, indices included.
      const { result } = await fromApi(stack, t, id);
      assert.equal(result.warningCount, 3);
      assert.deepEqual(result.warnings, REPORT_WARNINGS);

      const closed = await untilReport(s.ui, id, "the report", (r) => r.toggle !== null);
      assert.equal(closed.toggle, "3 warnings");
      assert.equal(closed.expanded, "false");
      assert.ok(closed.controls, "the toggle's aria-controls names the list");
      assert.equal(await s.ui.isHidden(`#report-${id}`), true);
      await s.ui.click(toggleOf(id));
      const r = await untilReport(s.ui, id, "the report open", (r) => r.entries.length === 3);
      assert.equal(r.expanded, "true");
      assert.deepEqual(r.headings, ["From the conversion (3)"], "nothing from building in Figma");
      assert.deepEqual(
        r.entries.map((e) => [e.button, e.label, e.message, e.where, e.why]),
        [
          [true, "Font substituted", REPORT_WARNINGS[0]?.message, "body > header > h1", null],
          [true, "Unsupported CSS", REPORT_WARNINGS[1]?.message, "body > main > div.card > svg.logo", null],
          [false, "Node limit reached", REPORT_WARNINGS[2]?.message, "body > footer", "Not tied to a layer."],
        ],
      );

      const [title] = await H(s, (h) => h.named("Title"));
      const [logo] = await H(s, (h) => h.named("Logo"));
      assert.ok(title && logo);
      assert.deepEqual(await H(s, (h, n: string) => h.node(n), logo), { name: "Logo", type: "FRAME" }, "the SVG's frame");

      // A click selects the warning's layer and brings it into view.
      const scrolls = (await H(s, (h) => h.scrolledTo())).length;
      await s.ui.click(warningOf(id, 1));
      await until("selected", async () => (await statusText(s.ui)).startsWith("Selected"));
      assert.equal(await statusText(s.ui), 'Selected "Logo" (Unsupported CSS) on page Page 1.');
      assert.deepEqual(await H(s, (h) => h.selection()), [logo]);
      assert.deepEqual((await H(s, (h) => h.scrolledTo())).slice(scrolls), [[logo]]);

      // The keyboard, with the designer on another page: Enter on the focused entry goes back
      // to the design's page and selects the layer.
      const home = await H(s, (h) => h.currentPage());
      await H(s, (h) => h.newPage("Elsewhere"));
      await s.ui.focus(warningOf(id, 0));
      await s.ui.press(warningOf(id, 0), "Enter");
      await until("the title selected", async () => (await H(s, (h) => h.selection())).includes(title));
      assert.equal(await H(s, (h) => h.currentPage()), home);
      assert.equal(await statusText(s.ui), 'Selected "Title" (Font substituted) on page Page 1.');

      // The designer deletes the title: its warning stays listed, says so, selects nothing, and
      // the keyboard's place stays on it.
      await H(s, (h, n: string) => h.remove(n), title);
      await s.ui.press(warningOf(id, 0), "Enter");
      await until("the layer gone", async () => /no longer in the design/.test(await statusText(s.ui)));
      assert.equal(await statusText(s.ui), 'The layer of this warning (Font substituted, "Title") is no longer in the design.');
      const gone = await reportOf(s.ui, id);
      assert.deepEqual(gone.entries.map((e) => [e.button, e.why]), [
        [false, "Its layer is no longer in the design."],
        [true, null],
        [false, "Not tied to a layer."],
      ]);
      assert.equal(await s.ui.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.key), "warning:0");

      // Reopened (a later session): the report is the one kept with the design, the deleted
      // layer is known as such before any click, and the others still select.
      await reopen(s);
      const again = await untilReport(s.ui, id, "the report, reopened", (r) => r.toggle !== null);
      assert.equal(again.toggle, "3 warnings");
      await s.ui.click(toggleOf(id));
      const later = await untilReport(s.ui, id, "the report open again", (r) => r.entries.length === 3);
      assert.deepEqual(later.entries.map((e) => e.button), [false, true, false]);
      await s.ui.click(warningOf(id, 1));
      await until("selected again", async () => (await statusText(s.ui)).startsWith("Selected"));
      assert.deepEqual(await H(s, (h) => h.selection()), [logo]);
      const gets = s.requests.filter((q) => q.method === "GET" && q.url.includes("/result"));
      assert.equal(gets.length, 1, "the report comes from the file, not from the result again");

      // The design itself deleted: its row says so, and shows no report.
      await H(s, (h, n: string) => h.remove(n), placed.materializedNodeId as string);
      await s.ui.click(warningOf(id, 1));
      await untilRow(s.ui, id, "the design removed", (r) => /was removed/.test(r.note ?? ""));
      assert.equal((await reportOf(s.ui, id)).toggle, null);

      // A result without warnings: a calm line, nothing to open.
      const quiet = await generate(s, "quiet");
      assert.equal((await finish(stack, await readManifest(stack, quiet.code2desId), { kind: "result", document: SMALL_DOC, warnings: [] })).status, 200);
      const calm = await untilReport(s.ui, quiet.code2desId, "the quiet report", (r) => r.calm !== null);
      assert.deepEqual([calm.calm, calm.toggle], ["No warnings", null]);
      await checkIdentity(s, t);
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
    }
  });

  test("this file's jobs: newest first, page by page, filtered by status; other files' jobs are not there", async () => {
    const stack = plainStack();
    const t = await seedTenant(stack);
    const fileKey = `FILE-list-${Date.now()}`;
    const made: Job[] = [];
    const failed = new Set<string>();
    for (let i = 0; i < 22; i++) {
      const { job, manifest } = await jobOf(stack, t, fileKey, `s${String(i).padStart(2, "0")}`);
      made.push(job);
      if (i % 3 !== 0) {
        assert.equal((await failWithoutArtifact(stack, manifest, `failure ${i}`)).status, 200);
        failed.add(job.code2desId);
      }
      if (i === 1) {
        // Every attempt used: no Retry.
        for (const attempt of [2, 3]) {
          await api(stack, t).retry(job.code2desId, { attempt: attempt - 1 });
          await failWithoutArtifact(stack, await readManifest(stack, job.code2desId, attempt), `failure ${i}.${attempt}`);
        }
      }
    }
    const other = await jobOf(stack, t, "ANOTHER-file", "elsewhere");
    const newestFirst = [...made].reverse().map((j) => j.code2desId);

    const s = await open(stack.url, { fileKey });
    try {
      await paste(s, t.seedJson);
      const first = await rows(s.ui);
      assert.deepEqual(first.map((r) => r.id), newestFirst.slice(0, 20), "the first page, newest first");
      assert.equal(await s.ui.isVisible("#more"), true);
      await s.ui.click("#more");
      await until("the second page", async () => (await rows(s.ui)).length === 22);
      const all = await rows(s.ui);
      assert.deepEqual(all.map((r) => r.id), newestFirst);
      assert.equal(await s.ui.isHidden("#more"), true, "no page after the last");
      assert.ok(!all.some((r) => r.id === other.job.code2desId), "another file's job is not listed");

      for (const r of all) {
        const i = Number(r.screen.slice(1));
        assert.match(r.meta, /^attempt [123] of 3 · just now$/, r.meta);
        if (failed.has(r.id)) {
          assert.equal(r.state, "failed");
          assert.equal(r.badge, "Failed");
          assert.equal(r.note, i === 1 ? "failure 1.3" : `failure ${i}`);
          assert.deepEqual(r.actions, i === 1 ? ["delete"] : ["retry", "delete"], `${r.screen}: retry only while attempts remain`);
        } else {
          assert.equal(r.state, "processing");
          assert.equal(r.stage, "waiting for the worker");
          assert.deepEqual(r.actions, ["cancel", "delete"]);
        }
      }
      assert.equal(all.find((r) => r.screen === "s01")?.meta.startsWith("attempt 3 of 3"), true);

      await s.ui.selectOption("#filter", "failed");
      await until("only failed jobs", async () => {
        const r = await rows(s.ui);
        return r.length === failed.size && r.every((x) => x.state === "failed");
      });
      await s.ui.selectOption("#filter", "processing");
      await until("only processing jobs", async () => {
        const r = await rows(s.ui);
        return r.length === 22 - failed.size && r.every((x) => x.state === "processing");
      });
      await s.ui.selectOption("#filter", "completed");
      await until("none completed", async () => (await s.ui.textContent("#listNote")) === "No jobs of this file with that status.");

      await checkIdentity(s, t);
      const lists = s.requests.filter((q) => q.method === "GET" && new URL(q.url).pathname.endsWith("/code2des"));
      for (const q of lists) {
        const p = new URL(q.url).searchParams;
        assert.equal(p.get("figmaFileKey"), fileKey);
        assert.equal(p.get("limit"), "20");
      }
      assert.ok(lists.some((q) => new URL(q.url).searchParams.has("cursor")), "the second page by its cursor");
      assert.deepEqual(
        lists.map((q) => new URL(q.url).searchParams.get("status")).filter((x) => x !== null),
        ["failed", "processing", "completed"],
      );
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
    }
  });

  test("reopening resumes: a job started before the plugin closed is found through the list, followed, placed, shown", async () => {
    const stack = plainStack();
    const t = await seedTenant(stack);
    const s = await open(stack.url);
    try {
      await paste(s, t.seedJson);
      const job = await generate(s, "resume-me");
      const manifest = await readManifest(stack, job.code2desId);
      await reportProgress(stack, manifest, 30, "layout");
      await untilRow(s.ui, job.code2desId, "30%", (r) => r.percent === "30");
      assert.ok(!JSON.stringify(await H(s, (h) => h.storage())).includes(job.code2desId), "no job in clientStorage");

      // Closed while it runs; the worker goes on.
      await H(s, (h) => h.close());
      await reportProgress(stack, manifest, 60, "images");
      const reopenedAt = performance.now();
      await H(s, (h) => h.run());
      s.ui = await uiFrame(s.page);
      const r = await untilRow(s.ui, job.code2desId, "found again at 60%", (r) => r.percent === "60");
      assert.equal(r.stage, "60% · images");
      const since = (at: number) => s.requests.filter((q) => q.at > at).sort((a, b) => a.at - b.at);
      const firstCall = await until("the reopened plugin's first call", async () => since(reopenedAt)[0]);
      assert.equal(firstCall.method, "GET");
      assert.equal(new URL(firstCall.url).pathname, `/organizations/${t.organizationId}/projects/${t.projectId}/code2des`);
      assert.equal(new URL(firstCall.url).searchParams.get("figmaFileKey"), s.fileKey, "found through the list of this file's jobs");

      // Followed at the API's pace (Retry-After: 2) until it completes; then it waits for Place.
      await new Promise((r) => setTimeout(r, 4500));
      const hook = await finish(stack, manifest, { kind: "result", document: EVERY_TYPE, images: WORKER_IMAGES });
      assert.equal(hook.status, 200);
      const done = await untilRow(s.ui, job.code2desId, "completed", (r) => r.state === "completed");
      assert.deepEqual(done.actions, ["place", "delete"]);
      await Promise.all(s.pending);
      const polls = since(reopenedAt).filter((q) => q.method === "GET" && q.url.endsWith(job.code2desId));
      assert.ok(polls.length >= 2, `followed with ${polls.length} GETs`);
      for (let i = 1; i < polls.length; i++) {
        const gap = (polls[i]?.at ?? 0) - (polls[i - 1]?.at ?? 0);
        assert.ok(gap >= 1900, `poll ${i} came ${gap.toFixed(0)} ms after the previous one`);
      }
      const after = polls.at(-1)?.at ?? 0;
      await new Promise((r) => setTimeout(r, 2500));
      await Promise.all(s.pending);
      assert.ok(!s.requests.some((q) => q.at > after && q.url.endsWith(job.code2desId)), "no polling once nothing runs");
      assert.ok(!s.requests.some((q) => q.url.endsWith("/placement")), "a job from an earlier session waits for Place");
      assert.deepEqual(await H(s, (h) => h.roots()), []);

      await click(s.ui, job.code2desId, "place");
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      const placed = await checkBuilt(s, stack, t, job.code2desId);
      const nodeId = placed.materializedNodeId as string;
      const shown = await untilRow(s.ui, job.code2desId, "placed", (r) => r.state === "placed");
      assert.deepEqual(shown.actions, ["show", "delete"]);

      // The designer is on another page: Show goes back to the node's page and selects it.
      const home = await H(s, (h) => h.currentPage());
      const elsewhere = await H(s, (h) => h.newPage("Elsewhere"));
      assert.notEqual(home, elsewhere);
      const scrolls = (await H(s, (h) => h.scrolledTo())).length;
      await click(s.ui, job.code2desId, "show");
      await until("shown", async () => (await statusText(s.ui)).startsWith("Showing resume-me"));
      assert.equal(await statusText(s.ui), `Showing resume-me: node ${nodeId} on page Page 1.`);
      assert.equal(await H(s, (h) => h.currentPage()), home, "back on the node's page");
      assert.deepEqual(await H(s, (h) => h.selection()), [nodeId], "the node is selected");
      const scrolled = await H(s, (h) => h.scrolledTo());
      assert.deepEqual(scrolled.slice(scrolls), [[nodeId]], "and scrolled into view");

      // The designer deletes the node: Show says so, and so does the list when reopened.
      await H(s, (h, id: string) => h.remove(id), nodeId);
      await click(s.ui, job.code2desId, "show");
      const gone = await untilRow(s.ui, job.code2desId, "the node removed", (r) => /was removed/.test(r.note ?? ""));
      assert.equal(gone.note, `Its node ${nodeId} was removed from the file.`);
      assert.deepEqual(gone.actions, ["delete"], "nothing to show");
      assert.equal(await statusText(s.ui), `The node of resume-me (${nodeId}) was removed from the file.`);
      await reopen(s);
      const later = await untilRow(s.ui, job.code2desId, "removed, on reopening", (r) => /was removed/.test(r.note ?? ""));
      assert.equal(later.state, "placed");
      await checkIdentity(s, t);
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
    }
  });

  test("Cancel, then Retry, from the job's row: the second attempt is built; then Delete", async () => {
    const stack = plainStack();
    const tenant = await seedTenant(stack);
    const s = await open(stack.url);
    try {
      await paste(s, tenant.seedJson);
      const job = await generate(s, "cancel-retry");
      await untilRow(s.ui, job.code2desId, "listed", (r) => r.actions.includes("cancel"));
      await click(s.ui, job.code2desId, "cancel");
      const cancelled = await untilRow(s.ui, job.code2desId, "cancelled", (r) => r.state === "cancelled");
      assert.equal(cancelled.badge, "Cancelled");
      assert.deepEqual(cancelled.actions, ["retry", "delete"]);
      assert.ok((await statusText(s.ui)).startsWith("Cancelled"));
      const fromStack = await api(stack, tenant).get(job.code2desId);
      assert.equal(fromStack.status, "failed");
      assert.equal(fromStack.errorMessage, "cancelled");

      await click(s.ui, job.code2desId, "retry");
      await until("attempt 2", async () => (await logText(s.ui)).includes("retry: attempt 2"));
      const second = await untilRow(s.ui, job.code2desId, "attempt 2", (r) => r.state === "processing");
      assert.match(second.meta, /^attempt 2 of 3/);
      const m2 = await readManifest(stack, job.code2desId, 2);
      assert.equal((await finish(stack, m2, { kind: "result", document: EVERY_TYPE, images: WORKER_IMAGES })).status, 200);
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      await checkBuilt(s, stack, tenant, job.code2desId);
      await Promise.all(s.pending);
      const retried = s.requests.filter((r) => r.url.endsWith("/retry"));
      assert.equal(retried.length, 1);

      // Delete asks once more, then the job leaves the history; its node stays in the file.
      await untilRow(s.ui, job.code2desId, "placed", (r) => r.state === "placed");
      await click(s.ui, job.code2desId, "delete");
      assert.equal(await s.ui.textContent(`#jobs li[data-id="${job.code2desId}"] button[data-action="delete"]`), "Confirm delete");
      await Promise.all(s.pending);
      assert.ok(!s.requests.some((r) => r.method === "DELETE"), "one click deletes nothing");
      await click(s.ui, job.code2desId, "delete");
      await until("the row gone", async () => !(await row(s.ui, job.code2desId)));
      await assert.rejects(api(stack, tenant).get(job.code2desId), (e: unknown) => e instanceof ApiError && e.status === 404);
      assert.equal((await H(s, (h) => h.roots())).length, 1, "the Figma node stays");
      assert.equal(await s.ui.textContent("#listNote"), "No jobs for this file yet.");
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
    }
  });

  test("a failed job: its failure artifact has kind failure and document null; nothing is built (a file Figma gives no key)", async () => {
    const stack = plainStack();
    const tenant = await seedTenant(stack);
    // A plugin without the private API: figma.fileKey is undefined, the file keeps its own key.
    const s = await open(stack.url, { fileKey: null });
    try {
      await paste(s, tenant.seedJson);
      const job = await generate(s, "fails");
      const manifest = await readManifest(stack, job.code2desId);
      assert.equal((await finish(stack, manifest, { kind: "failure", errorMessage: "the page could not be captured" })).status, 200);
      await until("Failed", async () => (await statusText(s.ui)).startsWith("Failed"));
      assert.equal(await statusText(s.ui), "Failed: the page could not be captured");
      await until("the failure result", async () => (await logText(s.ui)).includes("result kind failure, document null"));
      const r = await untilRow(s.ui, job.code2desId, "failed", (r) => r.state === "failed");
      assert.equal(r.note, "the page could not be captured");
      assert.deepEqual(r.actions, ["retry", "delete"]);
      assert.deepEqual(await H(s, (h) => h.roots()), []);
      await Promise.all(s.pending);
      assert.ok(!s.requests.some((r) => r.url.endsWith("/placement")), "no placement for a failed job");
      assert.match(job.figmaFileKey, /^doc-[0-9a-z]+-[0-9a-z]+$/, "the key the file keeps");
      await reopen(s);
      const again = await untilRow(s.ui, job.code2desId, "found again by the file's own key", (r) => r.state === "failed");
      assert.equal(again.note, "the page could not be captured");
      const lists = s.requests.filter((q) => q.method === "GET" && new URL(q.url).pathname.endsWith("/code2des"));
      assert.deepEqual(new Set(lists.map((q) => new URL(q.url).searchParams.get("figmaFileKey"))), new Set([job.figmaFileKey]));
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
    }
  });

  test("a 429 on Generate: waiting for a free slot with the time left, then the same trigger, same Idempotency-Key", async () => {
    const stack = plainStack();
    const t = await seedTenant(stack);
    const proxy = await quotaProxy(stack.url);
    const s = await open(proxy.url);
    try {
      // The same settings, pointed at the proxy in front of the stack.
      const json = JSON.parse(t.seedJson) as Tenant;
      await paste(s, JSON.stringify({ ...json, baseUrl: json.baseUrl.replace(stack.url, proxy.url) }));

      proxy.refuse = [{ limit: "active", retryAfter: 2 }];
      const jobP = generate(s, "quota");
      const waiting = await until("the wait shown", async () => {
        const st = await statusText(s.ui);
        return st.startsWith("Waiting") ? st : false;
      });
      assert.match(waiting, /^Waiting for a free slot \(too many jobs running\): [12] s$/);
      assert.equal(await s.ui.isVisible("#stopWaiting"), true);
      const job = await jobP;
      assert.ok(!(await statusText(s.ui)).startsWith("Waiting"));
      assert.equal(await s.ui.isHidden("#stopWaiting"), true);
      const posts = proxy.seen.filter((r) => r.method === "POST");
      assert.equal(posts.length, 2, "refused once, sent again once");
      assert.equal(posts[0]?.status, 429);
      assert.equal(posts[1]?.status, 202);
      assert.ok(posts[0]?.idempotencyKey, "Generate sends an Idempotency-Key");
      assert.equal(posts[1]?.idempotencyKey, posts[0]?.idempotencyKey, "the same key: one job however often it waits");
      assert.equal(posts[1]?.body, posts[0]?.body);
      assert.ok((posts[1]?.at ?? 0) - (posts[0]?.at ?? 0) >= 1990, "not before Retry-After");
      assert.ok((await logText(s.ui)).includes("waiting for a free slot (too many jobs running): 2 s"));
      const listedJobs = await api(stack, t).list({ figmaFileKey: job.figmaFileKey });
      assert.deepEqual(listedJobs.items.map((j) => j.code2desId), [job.code2desId], "one job");
      await untilRow(s.ui, job.code2desId, "in the list", (r) => r.state === "processing");

      // Stop waiting gives up: nothing more is sent.
      proxy.seen.length = 0;
      proxy.refuse = [{ limit: "burst", retryAfter: 30 }];
      await s.ui.fill("#screenId", "never");
      await s.ui.click("#generate");
      await until("the burst wait", async () => (await statusText(s.ui)).startsWith("Waiting for a free slot (too many jobs started lately): "));
      await s.ui.click("#stopWaiting");
      await until("stopped", async () => (await statusText(s.ui)) === "Stopped waiting for a free slot.");
      assert.equal(proxy.seen.filter((r) => r.method === "POST").length, 1);
      assert.equal(await s.ui.isEnabled("#generate"), true);
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
      await proxy.close();
    }
  });

  test("Figma's theme: every state in the list, in the light and the dark theme; the screenshots in docs/", async () => {
    const stack = plainStack();
    const t = await seedTenant(stack);
    const fileKey = `FILE-shot-${Date.now()}`;
    const jobs = api(stack, t);

    // Every state, oldest first: cancelled, failed, placed, completed, processing with progress.
    const cancelled = await jobOf(stack, t, fileKey, "checkout");
    await jobs.cancel(cancelled.job.code2desId);
    const failed = await jobOf(stack, t, fileKey, "pricing");
    await finish(stack, failed.manifest, { kind: "failure", errorMessage: "The page could not be captured: the site answered 502" });
    const placed = await jobOf(stack, t, fileKey, "about");
    await finish(stack, placed.manifest, { kind: "result", document: SMALL_DOC });
    const completed = await jobOf(stack, t, fileKey, "blog");
    await finish(stack, completed.manifest, { kind: "result", document: SMALL_DOC });
    const running = await jobOf(stack, t, fileKey, "home");
    await reportProgress(stack, running.manifest, 64, "rendering images");

    const css = await readFile(pkg("dist/ui.html"), "utf8");
    const used = [...new Set(css.match(/--figma-color-[a-z-]+/g) ?? [])];
    assert.ok(used.includes("--figma-color-bg") && used.includes("--figma-color-text"));
    for (const theme of ["light", "dark"] as const) {
      const missing = used.filter((v) => !(v in FIGMA_THEME[theme]));
      assert.deepEqual(missing, [], `the stylesheet uses only variables Figma's ${theme} theme defines`);
    }

    let placedNode: string | null = null;
    for (const theme of ["light", "dark"] as const) {
      const s = await open(stack.url, { fileKey, theme, scale: 2 });
      try {
        // The design built from "about" earlier, in this file, with its report.
        const frame = await H(s, (h, a) => h.design(a[0], a[1], a[2]), [ABOUT_DOC, ABOUT_WARNINGS, placed.job.code2desId] as const);
        if (placedNode === null) {
          placedNode = frame;
          await jobs.place(placed.job.code2desId, frame);
        }
        assert.equal(frame, placedNode, "the same node id in both files");
        await paste(s, t.seedJson);
        const shown = await until("every state", async () => {
          const r = await rows(s.ui);
          return r.length === 5 && r[0]?.percent === "64" ? r : false;
        });
        assert.deepEqual(
          shown.map((r) => [r.screen, r.state, r.actions.join(" ")]),
          [
            ["home", "processing", "cancel delete"],
            ["blog", "completed", "place delete"],
            ["about", "placed", "show delete"],
            ["pricing", "failed", "retry delete"],
            ["checkout", "cancelled", "retry delete"],
          ],
        );
        assert.equal(shown[2]?.note, `Built as node ${placedNode}`);
        const about = await untilReport(s.ui, placed.job.code2desId, "the report's count", (r) => r.toggle !== null);
        assert.equal(about.toggle, "4 warnings");

        // The colours are the theme's: Figma's variables, not the stylesheet's fallbacks.
        const v = FIGMA_THEME[theme];
        // (No function declared inside: tsx names functions with a helper the page does not have.)
        const got = await s.ui.evaluate(() => ({
          themeClass: document.documentElement.className,
          bg: getComputedStyle(document.body).backgroundColor,
          text: getComputedStyle(document.body).color,
          processing: getComputedStyle(document.querySelector(".badge.processing") as Element).color,
          failed: getComputedStyle(document.querySelector(".badge.failed") as Element).color,
          generate: getComputedStyle(document.querySelector("#generate") as Element).backgroundColor,
          report: getComputedStyle(document.querySelector(".report-toggle") as Element).color,
        }));
        const rgb = (hex: string) => {
          const m = /^#(..)(..)(..)$/.exec(hex);
          return m ? `rgb(${m.slice(1).map((x) => Number.parseInt(x, 16)).join(", ")})` : hex.replace(/rgba\((\d+), (\d+), (\d+), 1\)/, "rgb($1, $2, $3)");
        };
        assert.equal(got.themeClass, `figma-${theme}`, "showUI asked for themeColors");
        assert.equal(got.bg, rgb(v["--figma-color-bg"] as string));
        assert.equal(got.text, rgb(v["--figma-color-text"] as string));
        assert.equal(got.processing, rgb(v["--figma-color-text-brand"] as string));
        assert.equal(got.failed, rgb(v["--figma-color-text-danger"] as string));
        assert.equal(got.generate, rgb(v["--figma-color-bg-brand"] as string));
        assert.equal(got.report, rgb(v["--figma-color-text-warning"] as string));

        const shot = await (await s.page.$("iframe"))?.screenshot({ type: "png" });
        assert.ok(shot);
        await keepScreenshot(theme === "light" ? "plugin-jobs.png" : "plugin-jobs-dark.png", shot, await H(s, (h) => h.shown()), "job list");

        // The report open: both sources, every entry a button.
        await s.ui.click(toggleOf(placed.job.code2desId));
        const open = await untilReport(s.ui, placed.job.code2desId, "the report open", (r) => r.entries.length === 4);
        assert.deepEqual(open.headings, ["From the conversion (3)", "From building in Figma (1)"]);
        assert.ok(open.entries.every((e) => e.button));
        if (theme === "light") {
          const row = await s.ui.$(`#jobs > li[data-id="${placed.job.code2desId}"]`);
          await row?.scrollIntoViewIfNeeded();
          // No entry under the pointer (scrolling may have put one there): no hover in the picture.
          await s.page.mouse.move(0, 0);
          const box = await row?.boundingBox();
          assert.ok(box);
          // The row with the list's side margins (the page's coordinates: the iframe is at 0, 0).
          const rowShot = await s.page.screenshot({ type: "png", clip: { x: box.x - 12, y: box.y, width: box.width + 24, height: box.height } });
          await keepScreenshot("plugin-report.png", rowShot, await H(s, (h) => h.shown()), "fidelity report of a placed job");
        }
        assert.deepEqual(s.errors, []);
      } finally {
        await s.page.close();
      }
    }
  });
});

// --- the screenshots ------------------------------------------------------------------------------

/**
 * docs/<name> is the screenshot this run took of the real UI, with the SHA-256 of the UI
 * document it shows (dist/ui.html with the theme, as Figma shows it) in a PNG tEXt chunk.
 * When the committed file carries the same hash, it was taken from this very UI and is left
 * as it is (pixels vary from run to run: fonts, times; nothing to compare there). When the
 * hash differs, the UI changed: the new screenshot is written in its place, and under CI
 * (CI=true) the test fails, since the committed picture no longer shows the plugin.
 */
async function keepScreenshot(name: string, png: Buffer, shownDocument: string, what: string) {
  const hash = createHash("sha256").update(shownDocument).digest("hex");
  const path = pkg(`../docs/${name}`);
  const committed = await readFile(path).catch(() => null);
  const committedHash = committed ? pngText(committed).get("code2des-ui-sha256") : undefined;
  if (committedHash === hash) return;
  await writeFile(
    path,
    withPngText(png, {
      "code2des-ui-sha256": hash,
      Description: `The Code2Des reference plugin's ${what}, screenshot by plugin/test/ui.test.ts`,
    }),
  );
  if (process.env.CI) {
    assert.fail(`docs/${name} was taken from another UI (its hash ${committedHash ?? "none"}, now ${hash}): this run wrote the new one, commit it`);
  }
  console.log(`docs/${name} written from the current UI (${hash.slice(0, 12)}): commit it`);
}

// --- a stand-in for the server's quota (issue 23): a proxy in front of the real stack ------------

interface ProxySeen {
  at: number;
  method: string;
  path: string;
  status: number;
  idempotencyKey: string | undefined;
  body: string;
}

/**
 * Forwards everything to the stack, except the triggers it is told to refuse: those it answers
 * as the server will answer a used-up quota (429, the error body with `limit`, Retry-After,
 * RateLimit-Policy, RateLimit), with the stack's CORS headers.
 */
async function quotaProxy(target: string) {
  const state = {
    url: "",
    seen: [] as ProxySeen[],
    refuse: [] as { limit: "active" | "burst"; retryAfter: number }[],
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
  const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const seen: ProxySeen = {
          at: performance.now(),
          method: req.method ?? "",
          path: req.url ?? "",
          status: 0,
          idempotencyKey: req.headers["idempotency-key"] as string | undefined,
          body: body.toString("utf8"),
        };
        if (seen.method !== "OPTIONS") state.seen.push(seen);
        const refusal = seen.method === "POST" && /\/code2des$/.test(new URL(seen.path, "http://x").pathname) ? state.refuse.shift() : undefined;
        if (refusal) {
          seen.status = 429;
          res.writeHead(429, {
            "content-type": "application/json",
            "retry-after": String(refusal.retryAfter),
            "ratelimit-policy": '"active";q=20, "burst";q=30;w=60',
            ratelimit: `"${refusal.limit}";r=0;t=${refusal.retryAfter}`,
            "access-control-allow-origin": "*",
            "access-control-expose-headers": "location, retry-after, etag",
          });
          res.end(
            JSON.stringify({
              error: { code: "quota_exceeded", message: `the ${refusal.limit} quota is used up`, limit: refusal.limit },
              requestId: "00000000-0000-7000-8000-000000000429",
            }),
          );
          return;
        }
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers)) {
          if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers.set(k, v);
        }
        const answer = await fetch(`${target}${seen.path}`, {
          method: seen.method,
          headers,
          body: ["GET", "HEAD", "OPTIONS"].includes(seen.method) ? undefined : body,
        });
        seen.status = answer.status;
        const out: Record<string, string> = {};
        answer.headers.forEach((v, k) => {
          if (!["content-length", "transfer-encoding", "connection", "content-encoding"].includes(k)) out[k] = v;
        });
        const bytes = Buffer.from(await answer.arrayBuffer());
        res.writeHead(answer.status, out).end(bytes);
      })().catch((e: unknown) => {
        res.writeHead(502).end(String(e));
      });
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  return state;
}
