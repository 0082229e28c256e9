// The plugin's UI iframe: the only side with network access. It triggers a job, polls it at the
// pace the API sets (Retry-After) while showing the worker's progress, fetches the result,
// hands the images to the main thread ONE per message (each acknowledged before the next),
// then the document, and records the built root with placement.

import {
  ApiError,
  Code2DesClient,
  type Job,
  type ProjectJobs,
  type Result,
} from "../../clients/typescript/src/index.js";
import type { MainToUi, Settings, UiToMain } from "./messages.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>("form");
const statusEl = $<HTMLDivElement>("status");
const progressEl = $<HTMLProgressElement>("progress");
const logEl = $<HTMLOListElement>("log");
const generateBtn = $<HTMLButtonElement>("generate");
const cancelBtn = $<HTMLButtonElement>("cancel");
const retryBtn = $<HTMLButtonElement>("retry");
const FIELDS = ["apiUrl", "token", "organizationId", "projectId", "pageImportId", "figmaFileKey", "screenId"] as const;
const input = (name: (typeof FIELDS)[number]) => $<HTMLInputElement>(name);

function status(text: string, error = false) {
  statusEl.textContent = text;
  statusEl.className = error ? "error" : "";
}

function log(text: string) {
  const li = document.createElement("li");
  li.textContent = text;
  logEl.append(li);
  logEl.scrollTop = logEl.scrollHeight;
}

// --- talking to the main thread --------------------------------------------------------------

const post = (msg: UiToMain) => parent.postMessage({ pluginMessage: msg }, "*");
let nextId = 1;
const waiting = new Map<number, (reply: MainToUi) => void>();

/** Sends a request to the main thread and waits for its reply. */
function call(msg: UiToMain & { id: number }): Promise<MainToUi> {
  return new Promise((resolve) => {
    waiting.set(msg.id, resolve);
    post(msg);
  });
}

window.onmessage = (event: MessageEvent) => {
  const msg = (event.data as { pluginMessage?: MainToUi } | null)?.pluginMessage;
  if (!msg) return;
  if (msg.type === "init") {
    for (const name of FIELDS) {
      const v = msg.settings?.[name];
      if (v !== undefined && v !== null && v !== "") input(name).value = String(v);
    }
    if (msg.fileKey) input("figmaFileKey").value = msg.fileKey;
    return;
  }
  const resolve = waiting.get(msg.replyTo);
  if (resolve) {
    waiting.delete(msg.replyTo);
    resolve(msg);
  }
};

function base64Bytes(data: string): Uint8Array {
  const bin = atob(data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

/** Hands every image to the main thread, one message each, and waits for each to be stored. */
async function sendImages(result: Result): Promise<void> {
  const refs = Object.keys(result.images);
  for (const [i, ref] of refs.entries()) {
    const img = result.images[ref];
    if (!img) continue;
    const id = nextId++;
    const msg: UiToMain & { id: number } =
      img.mimeType === "image/svg+xml"
        ? { type: "svg", id, ref, svg: new TextDecoder().decode(base64Bytes(img.data)) }
        : { type: "image", id, ref, mimeType: img.mimeType, bytes: base64Bytes(img.data) };
    // Let the decoded copy go as soon as it is posted: only one image is in flight at a time.
    delete result.images[ref];
    const reply = await call(msg);
    if (reply.type === "failed") throw new Error(reply.message);
    status(`Sending images… ${i + 1}/${refs.length}`);
  }
}

// --- the flow ----------------------------------------------------------------------------------

let current: { jobs: ProjectJobs; job: Job; abort: AbortController } | null = null;

function readSettings(): Settings {
  return {
    apiUrl: input("apiUrl").value.trim(),
    token: input("token").value.trim(),
    organizationId: Number(input("organizationId").value),
    projectId: Number(input("projectId").value),
    pageImportId: input("pageImportId").value.trim(),
    figmaFileKey: input("figmaFileKey").value.trim(),
    screenId: input("screenId").value.trim(),
  };
}

function describe(e: unknown): string {
  if (e instanceof ApiError) return `${e.status} ${e.code}: ${e.message} (request ${e.requestId ?? "?"})`;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** Waits for the job, then builds and places its result. */
async function follow(jobs: ProjectJobs, job: Job): Promise<void> {
  const abort = new AbortController();
  current = { jobs, job, abort };
  cancelBtn.disabled = false;
  retryBtn.disabled = true;
  status(`Converting (job ${job.code2desId}, attempt ${job.attempt})…`);
  progressEl.removeAttribute("value"); // indeterminate until the worker reports
  let last = "";
  const done = await jobs.waitForJob(job.code2desId, {
    signal: abort.signal,
    onProgress: (p) => {
      if (!p) return;
      progressEl.value = p.percent;
      const line = `${p.percent}% ${p.stage}`;
      if (line !== last) log(line);
      last = line;
    },
  });
  cancelBtn.disabled = true;
  current = { jobs, job: done, abort };
  if (done.status === "failed") {
    progressEl.value = 0;
    status(`Failed: ${done.errorMessage ?? "no message"}`, true);
    log(`failed: ${done.errorMessage ?? ""}`);
    if (done.hasResult) {
      // A failure artifact: kind "failure", document null.
      const r = await jobs.result(done.code2desId);
      if (!r.notModified) log(`result kind ${r.result.kind}, document ${r.result.document === null ? "null" : "present"}`);
    }
    // (A stack without SPEC section 7 sends no maxAttempts: retry is then left to the server.)
    retryBtn.disabled = !(done.maxAttempts === undefined || done.attempt < done.maxAttempts);
    return;
  }
  progressEl.value = 100;
  status("Fetching the result…");
  const result = await jobs.fullResult(done.code2desId);
  if (result.kind !== "result" || !result.document) {
    status("The result has no document.", true);
    return;
  }
  const document = result.document;
  log(`result: ${Object.keys(result.images).length} images, ${result.warningCount ?? 0} warnings`);
  await sendImages(result);
  status("Building the design…");
  const built = await call({ type: "build", id: nextId++, code2desId: done.code2desId, document });
  if (built.type !== "built") throw new Error(built.type === "failed" ? built.message : "unexpected reply");
  for (const w of built.warnings) log(`warning: ${w}`);
  const placed = await jobs.place(done.code2desId, built.nodeId);
  log(`built ${built.nodes} nodes, root ${built.nodeId}`);
  status(
    placed.materializedNodeId === built.nodeId
      ? `Done: root ${built.nodeId}`
      : `Done: root ${built.nodeId} (this job's first root is ${placed.materializedNodeId ?? "?"})`,
  );
}

async function run(work: () => Promise<void>) {
  generateBtn.disabled = true;
  try {
    await work();
  } catch (e) {
    // A cancel aborts the wait on purpose and has already said so.
    if (current?.abort.signal.aborted) return;
    status(describe(e), true);
    log(`error: ${describe(e)}`);
  } finally {
    generateBtn.disabled = false;
    cancelBtn.disabled = true;
  }
}

// Figma's UI iframe may be sandboxed without allow-forms, where a form submission is blocked
// before its submit event: the button drives the flow, the form only validates.
form.onsubmit = (event) => event.preventDefault();
generateBtn.onclick = () => {
  if (!form.reportValidity()) return;
  void run(async () => {
    const s = readSettings();
    post({ type: "save-settings", settings: s });
    logEl.textContent = "";
    const client = new Code2DesClient({ baseUrl: s.apiUrl, token: s.token });
    const jobs = client.project({ organizationId: s.organizationId, projectId: s.projectId });
    status("Triggering…");
    const { job } = await jobs.trigger({ pageImportId: s.pageImportId, figmaFileKey: s.figmaFileKey, screenId: s.screenId });
    log(`job ${job.code2desId}`);
    await follow(jobs, job);
  });
};

cancelBtn.onclick = () => {
  const c = current;
  if (!c) return;
  cancelBtn.disabled = true;
  void (async () => {
    try {
      const job = await c.jobs.cancel(c.job.code2desId);
      c.abort.abort(new Error("cancelled"));
      status(`Cancelled (job ${job.code2desId}).`);
      log("cancelled");
      retryBtn.disabled = false;
      current = { ...c, job };
    } catch (e) {
      // 409 already_terminal: the worker finished first; the poll will pick it up.
      log(`cancel: ${describe(e)}`);
    }
  })();
};

retryBtn.onclick = () => {
  const c = current;
  if (!c) return;
  void run(async () => {
    // Naming the attempt makes a double click start one new attempt, not two.
    const { job } = await c.jobs.retry(c.job.code2desId, { attempt: c.job.attempt });
    log(`retry: attempt ${job.attempt}`);
    await follow(c.jobs, job);
  });
};

post({ type: "ready" });
