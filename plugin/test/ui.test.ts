// The plugin's UI in headless Chromium, against the REAL local stacks: the built dist/ui.html
// runs in an `<iframe sandbox="allow-scripts">` (Origin: null, as Figma runs it) with nothing
// but an `Authorization: Bearer` header for identity; dist/code.js runs beside it on
// figma-api-stub (test/harness.ts). The page is served from loopback, so Chromium treats the
// calls to the stack as local-to-local.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";
import { type Browser, type Frame, type Page, type Request, chromium } from "playwright-core";

import { Code2DesClient, type Job, type Result } from "../../clients/typescript/src/index.js";
import {
  type StackEnv,
  type Tenant,
  demoStack,
  finish,
  plainStack,
  readManifest,
  reportProgress,
  seedTenant,
} from "../../clients/typescript/test/stack.js";
import { EVERY_TYPE, WORKER_IMAGES } from "./fixtures.js";

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
      `<!doctype html><meta charset="utf-8"><title>Figma stand-in</title><body>
<script>window.__UI_HTML__ = ${JSON.stringify(await readFile(pkg("dist/ui.html"), "utf8")).replaceAll("</", "<\\/")};</script>
<script src="/harness.js"></script>
<script src="/code.js"></script>`,
    ],
  };
  server = createServer((req, res) => {
    const file = files[req.url ?? ""];
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
    ],
  });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

interface Session {
  page: Page;
  ui: Frame;
  /** Every request the UI iframe sent to the stack, with all its headers. */
  requests: { method: string; url: string; headers: Record<string, string> }[];
  /** Header reads still in flight (Playwright answers a request's full headers asynchronously). */
  pending: Promise<void>[];
  errors: string[];
}

async function open(stack: StackEnv): Promise<Session> {
  const page = await browser.newPage();
  const requests: Session["requests"] = [];
  const errors: string[] = [];
  const pending: Promise<void>[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (req: Request) => {
    if (!req.url().startsWith(stack.url)) return;
    pending.push(
      req.allHeaders().then((headers) => void requests.push({ method: req.method(), url: req.url(), headers })),
    );
  });
  await page.goto(hostUrl);
  const handle = await page.waitForSelector("iframe");
  const ui = await handle.contentFrame();
  assert.ok(ui, "the UI iframe is there");
  await ui.waitForSelector("#generate");
  // The iframe is sandboxed without allow-same-origin: its origin is opaque ("null").
  assert.equal(await ui.evaluate(() => self.origin), "null");
  return { page, ui, requests, pending, errors };
}

async function fill(ui: Frame, stack: StackEnv, t: Tenant, screenId: string) {
  await ui.fill("#apiUrl", stack.url);
  await ui.fill("#token", t.token);
  await ui.fill("#organizationId", String(t.organizationId));
  await ui.fill("#projectId", String(t.projectId));
  await ui.fill("#pageImportId", t.pageImportId);
  await ui.fill("#figmaFileKey", "FILEkey123");
  await ui.fill("#screenId", screenId);
}

const statusText = (ui: Frame) => ui.textContent("#status").then((s) => s ?? "");
const logText = (ui: Frame) => ui.$$eval("#log li", (lis) => lis.map((li) => li.textContent ?? ""));

/** Waits for the UI to finish (done, failed or an error) and answers its status line. */
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

/** The job the UI's trigger created (from the trigger's own answer). */
async function triggered(page: Page): Promise<Job> {
  const res = await page.waitForResponse((r) => r.request().method() === "POST" && /\/code2des$/.test(r.url()));
  assert.equal(res.status(), 202);
  return (await res.json()) as Job;
}

/** The stack's view of a job and its result, through the client (as another device would see it). */
async function fromApi(stack: StackEnv, t: Tenant, id: string): Promise<{ job: Job; result: Result }> {
  const jobs = new Code2DesClient({ baseUrl: stack.url, token: t.token }).project(t);
  return { job: await jobs.get(id), result: await jobs.fullResult(id) };
}

/** What every run must show: identity by bearer token only, from Origin null, images one per message. */
async function checkWire(s: Session, t: Tenant, result: Result) {
  await Promise.all(s.pending);
  assert.ok(s.requests.length >= 4, `the UI called the API (${s.requests.length} requests)`);
  for (const r of s.requests) {
    assert.equal(r.headers.authorization, `Bearer ${t.token}`, `${r.method} ${r.url}`);
    assert.equal(r.headers["x-code2des-dev-sub"], undefined, "no dev header: the bearer token alone");
    assert.equal(r.headers.origin, "null", `${r.method} ${r.url} comes from the sandboxed iframe`);
  }
  const messages = await s.page.evaluate(
    () => (window as unknown as { __harness: { messages: unknown[] } }).__harness.messages,
  ) as { dir: string; type: string; arrays: number; arrayBytes: number; svgChars: number }[];
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

async function checkBuilt(s: Session, stack: StackEnv, t: Tenant, jobId: string) {
  const { job, result } = await fromApi(stack, t, jobId);
  assert.equal(job.status, "completed");
  const roots = await s.page.evaluate(() => (window as unknown as { __harness: { roots(): string[] } }).__harness.roots());
  assert.equal(roots.length, 1, "one root on the page");
  assert.equal(job.materializedNodeId, roots[0], "placement recorded the root the plugin built");
  assert.ok(result.document);
  const cmp = await s.page.evaluate(
    ([doc, images]) =>
      (window as unknown as { __harness: { compare(d: unknown, i: unknown): { diffs: string[]; compared: number; expected: number } } }).__harness.compare(doc, images),
    [result.document, result.images] as const,
  );
  assert.deepEqual(cmp.diffs, []);
  assert.equal(cmp.compared, cmp.expected, "every document node was compared");
  await checkWire(s, t, result);
  assert.deepEqual(s.errors, []);
}

describe("the plugin UI in headless Chromium", () => {
  test("zero to a first result: the seeded tenant, the reference worker", async () => {
    const stack = demoStack();
    // The tenant scripts/test-plugin seeded with `code2des-local seed --json`, as a developer would.
    const t = JSON.parse(await readFile(process.env.C2D_TENANT_JSON ?? "", "utf8")) as Tenant;
    const s = await open(stack);
    try {
      await fill(s.ui, stack, t, "home");
      const jobP = triggered(s.page);
      await s.ui.click("#generate");
      const job = await jobP;
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      await checkBuilt(s, stack, t, job.code2desId);
      assert.ok((await logText(s.ui)).some((l) => /^built \d+ nodes/.test(l)));
    } finally {
      await s.page.close();
    }
  });

  test("every node type, with the worker's progress shown while it converts", async () => {
    const stack = plainStack();
    const tenant = await seedTenant(stack);
    const s = await open(stack);
    try {
      await fill(s.ui, stack, tenant, "every-type");
      const jobP = triggered(s.page);
      await s.ui.click("#generate");
      const job = await jobP;
      const manifest = await readManifest(stack, job.code2desId);
      for (const [percent, stage] of [[40, "layout"], [80, "images"]] as const) {
        assert.equal((await reportProgress(stack, manifest, percent, stage)).status, 200);
        await until(`${percent}% ${stage} in the UI`, async () => (await logText(s.ui)).includes(`${percent}% ${stage}`));
        assert.equal(await s.ui.$eval("#progress", (p) => (p as HTMLProgressElement).value), percent);
      }
      const hook = await finish(stack, manifest, { kind: "result", document: EVERY_TYPE, images: WORKER_IMAGES });
      assert.equal(hook.status, 200);
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      await checkBuilt(s, stack, tenant, job.code2desId);
      const log = await logText(s.ui);
      assert.ok(log.includes("warning: empty group \"Empty group\" built as an empty frame"), log.join("\n"));
      assert.ok(log.some((l) => l.startsWith("warning: font No Such Font Regular")), log.join("\n"));
    } finally {
      await s.page.close();
    }
  });

  test("Cancel job, then Retry: the second attempt is built and placed", async () => {
    const stack = plainStack();
    const tenant = await seedTenant(stack);
    const s = await open(stack);
    try {
      await fill(s.ui, stack, tenant, "cancel-retry");
      const jobP = triggered(s.page);
      await s.ui.click("#generate");
      const job = await jobP;
      await until("Cancel job enabled", async () => !(await s.ui.isDisabled("#cancel")));
      await s.ui.click("#cancel");
      await until("Cancelled", async () => (await statusText(s.ui)).startsWith("Cancelled"));
      const api = new Code2DesClient({ baseUrl: stack.url, token: tenant.token }).project(tenant);
      const cancelled = await api.get(job.code2desId);
      assert.equal(cancelled.status, "failed");
      assert.equal(cancelled.errorMessage, "cancelled");

      await until("Retry enabled", async () => !(await s.ui.isDisabled("#retry")));
      await s.ui.click("#retry");
      await until("attempt 2", async () => (await logText(s.ui)).includes("retry: attempt 2"));
      const m2 = await readManifest(stack, job.code2desId, 2);
      assert.equal((await finish(stack, m2, { kind: "result", document: EVERY_TYPE, images: WORKER_IMAGES })).status, 200);
      assert.match(await finished(s.ui), /^Done: root \d+:\d+$/);
      await checkBuilt(s, stack, tenant, job.code2desId);
      const retried = s.requests.filter((r) => r.url.endsWith("/retry"));
      assert.equal(retried.length, 1);
    } finally {
      await s.page.close();
    }
  });

  test("a failed job: its failure artifact has kind failure and document null; nothing is built", async () => {
    const stack = plainStack();
    const tenant = await seedTenant(stack);
    const s = await open(stack);
    try {
      await fill(s.ui, stack, tenant, "fails");
      const jobP = triggered(s.page);
      await s.ui.click("#generate");
      const job = await jobP;
      const manifest = await readManifest(stack, job.code2desId);
      assert.equal((await finish(stack, manifest, { kind: "failure", errorMessage: "the page could not be captured" })).status, 200);
      await until("Failed", async () => (await statusText(s.ui)).startsWith("Failed"));
      assert.equal(await statusText(s.ui), "Failed: the page could not be captured");
      await until("the failure result", async () => (await logText(s.ui)).includes("result kind failure, document null"));
      const roots = await s.page.evaluate(() => (window as unknown as { __harness: { roots(): string[] } }).__harness.roots());
      assert.deepEqual(roots, []);
      await Promise.all(s.pending);
      assert.ok(!s.requests.some((r) => r.url.endsWith("/placement")), "no placement for a failed job");
      assert.deepEqual(s.errors, []);
    } finally {
      await s.page.close();
    }
  });
});
