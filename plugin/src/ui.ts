// The plugin's UI iframe: the only side with network access. On open it lists the jobs of the
// current Figma file (the list route, `figmaFileKey`, newest first, page by page) and follows
// the running ones at the pace the API sets (Retry-After); every row offers what its state
// allows: cancel, retry, place (fetch the result, build it, record the placement), show the
// placed node, delete. Generate triggers a new job (waiting out a 429 quota refusal with the
// same Idempotency-Key) and builds it when it completes. Images cross to the main thread ONE
// per message, each acknowledged before the next, then the document. A placed job's row
// shows its fidelity report (kept on the design's root by the main thread), each warning a
// button that selects its layer.

import {
  ApiError,
  Code2DesClient,
  DEFAULT_POLL_MS,
  type Job,
  type JobStatus,
  type ProjectJobs,
  QuotaExceededError,
  type Result,
} from "@code2des/client";
import type { FileInfo, MainToUi, Report, ReportEntry, Settings, UiToMain } from "./messages.js";
import {
  type Action,
  STATE_LABEL,
  actionsFor,
  ageText,
  attemptText,
  checkSettings,
  localTime,
  secondsLeft,
  settingsFromPaste,
  stateOf,
  warningLabel,
  warningsText,
} from "./model.js";

/** Jobs per page of the list. */
const PAGE_SIZE = 20;
/** GETs in flight at once while following running jobs. */
const FOLLOW_CONCURRENCY = 4;
/** Never poll sooner than this, whatever an answer says. */
const MIN_POLL_MS = 1000;
/** How long a first click on Delete stays armed for the confirming second click. */
const DELETE_ARMED_MS = 5000;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const fileEl = $<HTMLSpanElement>("file");
const settingsEl = $<HTMLElement>("settings");
const settingsToggle = $<HTMLButtonElement>("settingsToggle");
const settingsJson = $<HTMLTextAreaElement>("settingsJson");
const connectionEl = $<HTMLDivElement>("connection");
const screenInput = $<HTMLInputElement>("screenId");
const generateBtn = $<HTMLButtonElement>("generate");
const statusEl = $<HTMLDivElement>("status");
const stopWaitingBtn = $<HTMLButtonElement>("stopWaiting");
const filterEl = $<HTMLSelectElement>("filter");
const refreshBtn = $<HTMLButtonElement>("refresh");
const listEl = $<HTMLUListElement>("jobs");
const listNote = $<HTMLDivElement>("listNote");
const moreBtn = $<HTMLButtonElement>("more");
const logEl = $<HTMLOListElement>("log");
const FIELDS = ["apiUrl", "token", "organizationId", "projectId", "pageImportId"] as const;
const input = (name: (typeof FIELDS)[number]) => $<HTMLInputElement>(name);

function status(text: string, kind: "" | "error" | "waiting" = "") {
  statusEl.textContent = text;
  statusEl.className = kind;
}

function log(text: string) {
  const li = document.createElement("li");
  li.textContent = text;
  logEl.append(li);
  logEl.scrollTop = logEl.scrollHeight;
}

function describe(e: unknown): string {
  if (e instanceof ApiError) return `${e.status} ${e.code}: ${e.message} (request ${e.requestId ?? "?"})`;
  if (e instanceof Error) return e.message;
  return String(e);
}

function report(e: unknown, what = "") {
  const text = what ? `${what}: ${describe(e)}` : describe(e);
  status(text, "error");
  log(`error: ${text}`);
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
  if (msg.type === "init") return void init(msg.settings, msg.file);
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

// --- state -------------------------------------------------------------------------------------

let settings: Settings | null = null;
let file: FileInfo | null = null;
let api: ProjectJobs | null = null;

/** The rows, in the list's order (newest first), and each row's job as last read. */
let order: string[] = [];
const jobs = new Map<string, Job>();
let cursor: string | null = null;
/** Answers of an older list request are dropped (the filter changed, a refresh started). */
let listSeq = 0;
/** Jobs this session started (Generate) or retried: they are built when they complete. */
const autoPlace = new Set<string>();
/** Placed nodes the main thread could not find: removed from the file. */
const missingNodes = new Set<string>();
/** How many warnings the report kept on each placed root holds (a root that keeps none is not here). */
const reportCounts = new Map<string, number>();

/** A row's fidelity report as shown. */
interface ReportView {
  open: boolean;
  /** As the main thread last answered it: undefined until asked, null when the file keeps none. */
  report: Report | null | undefined;
  /** Positions of the entries whose layer is no longer in the design. */
  missing: Set<number>;
}

interface RowState {
  busy: Action | null;
  /** Delete was clicked once, until this time (epoch ms). */
  armedUntil: number;
  note: { text: string; error: boolean } | null;
  report: ReportView;
  /**
   * The result's small preview as a data: URL, for a completed job not yet placed: undefined
   * until asked, "loading" while asked, null when the result has none (a worker that draws none).
   */
  preview?: string | null;
}
const rows = new Map<string, RowState>();
const newReportView = (): ReportView => ({ open: false, report: undefined, missing: new Set() });
const rowState = (id: string) => {
  let r = rows.get(id);
  if (!r) rows.set(id, (r = { busy: null, armedUntil: 0, note: null, report: newReportView() }));
  return r;
};

// --- settings -----------------------------------------------------------------------------------

function showSettings(open: boolean) {
  settingsEl.hidden = !open;
  settingsToggle.setAttribute("aria-expanded", String(open));
}

function describeConnection(s: Settings) {
  connectionEl.textContent =
    `Project ${s.projectId} of organization ${s.organizationId} at ${s.apiUrl}` +
    (s.sub ? `, as ${s.sub}` : "") +
    (s.pageImportId ? `; new jobs convert page import ${s.pageImportId}.` : "; no page import yet: Generate needs one.");
}

/** Uses `s` from now on: the client, the form, clientStorage (when `save`), then this file's jobs. */
function connect(s: Settings, save: boolean) {
  settings = s;
  for (const name of FIELDS) input(name).value = String(s[name] ?? "");
  if (s.screenId) screenInput.value = s.screenId;
  describeConnection(s);
  if (save) post({ type: "save-settings", settings: s });
  const client = new Code2DesClient({ baseUrl: s.apiUrl, token: s.token });
  api = client.project({ organizationId: s.organizationId, projectId: s.projectId });
  generateBtn.disabled = false;
  refreshBtn.disabled = false;
  void load();
}

function init(stored: Partial<Settings> | null, f: FileInfo) {
  file = f;
  fileEl.textContent = f.name || f.key;
  fileEl.title =
    f.source === "figma"
      ? `Jobs of this file, by Figma's key of it: ${f.key}`
      : `Jobs of this file, by the key it keeps for this plugin (Figma gives the plugin none): ${f.key}`;
  let s: Settings | null = null;
  try {
    s = stored ? checkSettings(stored) : null;
  } catch {
    s = null;
  }
  if (stored) for (const name of FIELDS) if (stored[name] !== undefined) input(name).value = String(stored[name]);
  if (s) {
    connect({ ...s, ...(stored?.screenId ? { screenId: stored.screenId } : {}) }, false);
  } else {
    showSettings(true);
    status("Paste the JSON that `code2des-local seed --json` prints, then Use these settings.");
    listNote.textContent = "No settings yet.";
  }
}

settingsToggle.onclick = () => showSettings(settingsEl.hidden);

$<HTMLButtonElement>("useSettings").onclick = () => {
  try {
    const s = settingsFromPaste(settingsJson.value, settings ?? {});
    settingsJson.value = ""; // the token is in it: do not leave it on screen
    connect({ ...s, ...(settings?.screenId ? { screenId: settings.screenId } : {}) }, true);
    showSettings(false);
    status(`Settings saved: project ${s.projectId} of organization ${s.organizationId}.`);
  } catch (e) {
    status(describe(e), "error");
  }
};

$<HTMLButtonElement>("saveSettings").onclick = () => {
  try {
    const s = checkSettings({
      apiUrl: input("apiUrl").value.trim(),
      token: input("token").value.trim(),
      organizationId: Number(input("organizationId").value) || undefined,
      projectId: Number(input("projectId").value) || undefined,
      pageImportId: input("pageImportId").value.trim(),
      ...(settings?.sub ? { sub: settings.sub } : {}),
      ...(settings?.screenId ? { screenId: settings.screenId } : {}),
    });
    connect(s, true);
    showSettings(false);
    status("Settings saved.");
  } catch (e) {
    status(describe(e), "error");
  }
};

// --- the list ------------------------------------------------------------------------------------

const currentFilter = (): JobStatus | undefined => (filterEl.value === "" ? undefined : (filterEl.value as JobStatus));

/** This file's jobs, first page, newest first. */
async function load(): Promise<void> {
  if (!api || !file) return;
  const seq = ++listSeq;
  stopFollowing();
  listNote.textContent = "Loading this file's jobs…";
  try {
    const page = await api.list({ figmaFileKey: file.key, status: currentFilter(), limit: PAGE_SIZE });
    if (seq !== listSeq) return;
    order = [];
    jobs.clear();
    for (const j of page.items) {
      order.push(j.code2desId);
      jobs.set(j.code2desId, j);
    }
    cursor = page.nextCursor;
    render();
    await checkNodes(page.items);
    follow();
  } catch (e) {
    if (seq !== listSeq) return;
    listNote.textContent = "";
    report(e, "listing this file's jobs");
  }
}

/** The next page, after the rows already shown. */
async function loadMore(): Promise<void> {
  if (!api || !file || cursor === null) return;
  const seq = listSeq;
  moreBtn.disabled = true;
  try {
    const page = await api.list({ figmaFileKey: file.key, status: currentFilter(), limit: PAGE_SIZE, cursor });
    if (seq !== listSeq) return;
    for (const j of page.items) {
      if (!jobs.has(j.code2desId)) order.push(j.code2desId);
      jobs.set(j.code2desId, j);
    }
    cursor = page.nextCursor;
    render();
    await checkNodes(page.items);
    follow();
  } catch (e) {
    report(e, "loading more jobs");
  } finally {
    moreBtn.disabled = false;
  }
}

/** Asks the main thread which placed jobs' nodes are gone from the file. */
async function checkNodes(list: Job[]) {
  const ids = list.map((j) => j.materializedNodeId).filter((id): id is string => !!id);
  if (ids.length === 0) return;
  const reply = await call({ type: "check-nodes", id: nextId++, nodeIds: ids });
  if (reply.type !== "nodes") return;
  for (const id of ids) {
    missingNodes.delete(id);
    reportCounts.delete(id);
  }
  for (const id of reply.missing) missingNodes.add(id);
  for (const [id, n] of Object.entries(reply.reports)) reportCounts.set(id, n);
  for (const j of list) if (j.materializedNodeId) renderRow(j.code2desId);
}

function render() {
  const keep = new Set(order);
  for (const li of Array.from(listEl.children)) {
    if (!keep.has((li as HTMLElement).dataset.id ?? "")) li.remove();
  }
  let before: Element | null = listEl.firstElementChild;
  for (const id of order) {
    const li = rowElement(id);
    if (li !== before) listEl.insertBefore(li, before);
    before = li.nextElementSibling;
    renderRow(id);
  }
  listNote.textContent = order.length === 0 ? (currentFilter() ? "No jobs of this file with that status." : "No jobs for this file yet.") : "";
  moreBtn.hidden = cursor === null;
}

function rowElement(id: string): HTMLLIElement {
  let li = listEl.querySelector<HTMLLIElement>(`li[data-id="${CSS.escape(id)}"]`);
  if (!li) {
    li = document.createElement("li");
    li.className = "job";
    li.dataset.id = id;
    listEl.append(li);
  }
  return li;
}

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

const ACTION_LABEL: Record<Action, string> = { cancel: "Cancel", retry: "Retry", place: "Place", show: "Show", delete: "Delete" };

/**
 * Fetches a completed job's small preview (the result's `preview` image, a PNG of at most
 * 64 KB) once, and redraws its row with it. The preview is inlined first in the result; a
 * deferred one is asked for by its ref. A row stays without a picture when the result has none
 * or cannot be read (Place says why).
 */
async function loadPreview(id: string) {
  const row = rowState(id);
  const client = api;
  if (!client) return;
  row.preview = "loading";
  try {
    const first = await client.result(id);
    let found: string | null = null;
    if (!first.notModified) {
      const ref = first.result.preview;
      let img = ref ? first.result.images[ref] : undefined;
      if (ref && !img && first.result.deferredImages.includes(ref)) {
        const more = await client.result(id, { images: [ref] });
        if (!more.notModified) img = more.result.images[ref];
      }
      if (img && img.mimeType === "image/png") found = `data:image/png;base64,${img.data}`;
    }
    row.preview = found;
  } catch (e) {
    row.preview = null;
    log(`preview: ${describe(e)}`);
  }
  renderRow(id);
}

/** Draws one row from its job (server data only ever goes in as text). */
function renderRow(id: string) {
  const job = jobs.get(id);
  const li = listEl.querySelector<HTMLLIElement>(`li[data-id="${CSS.escape(id)}"]`);
  if (!job || !li) return;
  const st = stateOf(job);
  const row = rowState(id);
  li.dataset.state = st;
  const parts: HTMLElement[] = [];

  const line = el("div", "line");
  line.append(el("span", "screen", job.screenId), el("span", `badge ${st}`, STATE_LABEL[st]));
  parts.push(line);

  const meta = el("div", "meta", `${attemptText(job)} · `);
  const time = el("time", "", ageText(job.createdAt));
  time.dateTime = job.createdAt;
  time.title = `Made ${localTime(job.createdAt)}`;
  meta.append(time);
  parts.push(meta);

  if (st === "processing") {
    const bar = el("div", "bar");
    const track = el("div", "track");
    const fill = el("div", "fill");
    if (job.progress) fill.style.width = `${job.progress.percent}%`;
    else fill.classList.add("unknown");
    track.append(fill);
    track.setAttribute("role", "progressbar");
    track.setAttribute("aria-valuemin", "0");
    track.setAttribute("aria-valuemax", "100");
    if (job.progress) track.setAttribute("aria-valuenow", String(job.progress.percent));
    bar.append(track, el("span", "stage", job.progress ? `${job.progress.percent}% · ${job.progress.stage}` : "waiting for the worker"));
    parts.push(bar);
  }

  let note = row.note;
  if (!note && (st === "failed" || st === "timed-out") && job.errorMessage) note = { text: job.errorMessage, error: true };
  if (!note && st === "failed" && job.attempt >= job.maxAttempts) note = { text: "No attempts left.", error: false };
  if (!note && st === "placed" && job.materializedNodeId) {
    note = missingNodes.has(job.materializedNodeId)
      ? { text: `Its node ${job.materializedNodeId} was removed from the file.`, error: false }
      : { text: `Built as node ${job.materializedNodeId}`, error: false };
  }
  if (note) parts.push(el("div", note.error ? "note error" : "note muted", note.text));
  // A job this session places as it completes needs no preview (and no second result GET).
  if (st === "completed" && !autoPlace.has(id) && row.busy !== "place") {
    if (row.preview === undefined) void loadPreview(id);
    else if (row.preview && row.preview !== "loading") {
      const img = document.createElement("img");
      img.className = "preview";
      img.alt = `Preview of ${job.screenId}`;
      img.src = row.preview;
      parts.push(img);
    }
  }
  const root = job.materializedNodeId;
  const count = root && !missingNodes.has(root) ? reportCounts.get(root) : undefined;
  if (st === "placed" && count !== undefined) parts.push(reportElement(id, count, row.report));

  const actions = el("div", "actions");
  for (const a of actionsFor(job)) {
    if (a === "show" && job.materializedNodeId && missingNodes.has(job.materializedNodeId)) continue;
    const armed = a === "delete" && row.armedUntil > Date.now();
    const b = el("button", armed ? "armed" : a === "delete" ? "danger" : a === "place" ? "primary" : "", armed ? "Confirm delete" : ACTION_LABEL[a]);
    b.type = "button";
    b.dataset.action = a;
    b.dataset.key = `action:${a}`;
    b.disabled = row.busy !== null;
    if (row.busy === a) b.textContent = `${ACTION_LABEL[a]}…`;
    actions.append(b);
  }
  parts.push(actions);
  // A row is redrawn from scratch: keep the keyboard's place in it (each control has a data-key).
  const active = document.activeElement;
  const focused = active instanceof HTMLElement && li.contains(active) ? active.dataset.key : undefined;
  li.replaceChildren(...parts);
  if (focused) li.querySelector<HTMLElement>(`[data-key="${CSS.escape(focused)}"]`)?.focus();
}

const SOURCE_HEADING: Record<ReportEntry["source"], string> = {
  converter: "From the conversion",
  plugin: "From building in Figma",
};

/**
 * A placed job's fidelity report: "3 warnings", a button that opens the list (or a calm "No
 * warnings"). Each warning with a layer still in the design is a button that selects it; one
 * without a layer, or whose layer was deleted, is listed as text saying so.
 */
function reportElement(id: string, count: number, view: ReportView): HTMLElement {
  const box = el("div", "report");
  if (count === 0) {
    box.append(el("span", "muted", warningsText(0)));
    return box;
  }
  const bodyId = `report-${id}`;
  const toggle = el("button", "report-toggle", warningsText(count));
  toggle.type = "button";
  toggle.dataset.report = "toggle";
  toggle.dataset.key = "report";
  toggle.setAttribute("aria-expanded", String(view.open));
  toggle.setAttribute("aria-controls", bodyId);
  const body = el("div", "report-body");
  body.id = bodyId;
  body.hidden = !view.open;
  box.append(toggle, body);
  if (!view.open) return box;
  const r = view.report;
  if (r === undefined) {
    body.append(el("div", "muted", "Reading the report…"));
    return box;
  }
  if (r === null) {
    body.append(el("div", "muted", "The report is no longer in this file."));
    return box;
  }
  if (r.entries.some((e, i) => e.indices && !view.missing.has(i))) {
    body.append(el("div", "muted hint", "Choose a warning to select its layer in Figma."));
  }
  for (const source of ["converter", "plugin"] as const) {
    const mine = r.entries.map((e, i) => [e, i] as const).filter(([e]) => e.source === source);
    if (mine.length === 0) continue;
    const heading = el("div", "report-heading", `${SOURCE_HEADING[source]} (${mine.length})`);
    heading.id = `${bodyId}-${source}`;
    const list = el("ul", "");
    list.setAttribute("aria-labelledby", heading.id);
    for (const [e, i] of mine) {
      const li = el("li", "");
      li.append(warningElement(e, i, view.missing.has(i)));
      list.append(li);
    }
    body.append(heading, list);
  }
  if (r.unlisted > 0) body.append(el("div", "muted", `The conversion counted ${r.unlisted} more without listing ${r.unlisted === 1 ? "it" : "them"}.`));
  if (r.dropped > 0) body.append(el("div", "muted", `${r.dropped} more ${r.dropped === 1 ? "was" : "were"} not kept with the design (too many to store).`));
  return box;
}

function warningElement(e: ReportEntry, i: number, gone: boolean): HTMLElement {
  const selectable = e.indices !== undefined && !gone;
  const item = selectable ? el("button", "warning") : el("div", "warning static");
  if (item instanceof HTMLButtonElement) {
    item.type = "button";
    item.dataset.warning = String(i);
  } else {
    // Not a control, but the keyboard's place is kept here when its button turns into text.
    item.tabIndex = -1;
  }
  item.dataset.key = `warning:${i}`;
  item.append(el("span", "label", warningLabel(e.code)), el("span", "message", e.message));
  if (e.path) item.append(el("code", "where", e.path));
  else if (e.node) item.append(el("span", "where", `Layer "${e.node}"`));
  if (!selectable) item.append(el("span", "why", gone ? "Its layer is no longer in the design." : "Not tied to a layer."));
  return item;
}

/** A job's new answer: its row, and what its leaving `processing` means. */
function update(job: Job) {
  const id = job.code2desId;
  const prev = jobs.get(id);
  jobs.set(id, job);
  if (!order.includes(id)) {
    order.unshift(id);
    render();
  } else {
    renderRow(id);
  }
  if (job.status === "processing" && autoPlace.has(id) && job.progress) {
    const line = `${job.progress.percent}% ${job.progress.stage}`;
    const p = prev?.progress;
    if (!p || prev?.attempt !== job.attempt || `${p.percent}% ${p.stage}` !== line) log(line);
  }
  if (prev?.status === "processing" && job.status !== "processing") void finished(job);
}

function removeRow(id: string) {
  order = order.filter((x) => x !== id);
  jobs.delete(id);
  rows.delete(id);
  autoPlace.delete(id);
  render();
}

/** A job this session was following has completed or failed. */
async function finished(job: Job) {
  const id = job.code2desId;
  const mine = autoPlace.has(id);
  autoPlace.delete(id);
  if (job.status === "completed") {
    log(`completed: ${job.screenId}`);
    if (mine) place(id);
    else status(`${job.screenId} completed: Place builds it.`);
    return;
  }
  log(`failed: ${job.errorMessage ?? ""}`);
  if (!mine) return;
  status(job.errorMessage === "cancelled" ? `Cancelled (job ${id}).` : `Failed: ${job.errorMessage ?? "no message"}`, job.errorMessage === "cancelled" ? "" : "error");
  if (job.hasResult && api) {
    try {
      // A failure artifact: kind "failure", document null.
      const r = await api.result(id);
      if (!r.notModified) log(`result kind ${r.result.kind}, document ${r.result.document === null ? "null" : "present"}`);
    } catch (e) {
      log(`result: ${describe(e)}`);
    }
  }
}

// --- following running jobs -------------------------------------------------------------------

let followTimer: ReturnType<typeof setTimeout> | null = null;
let followRound = 0;

function stopFollowing() {
  if (followTimer !== null) clearTimeout(followTimer);
  followTimer = null;
  followRound++;
}

const running = () => order.filter((id) => jobs.get(id)?.status === "processing");

/**
 * Polls the running jobs, each with its GET (whose `Retry-After` says when to look again),
 * then waits the longest Retry-After any answer gave (2 s when they gave none); stops when
 * none runs. A refreshed list or a new job restarts it.
 */
function follow(delayMs: number = DEFAULT_POLL_MS) {
  if (followTimer !== null || running().length === 0) return;
  const round = followRound;
  followTimer = setTimeout(() => {
    followTimer = null;
    void poll(round);
  }, Math.max(delayMs, MIN_POLL_MS));
}

async function poll(round: number) {
  const a = api;
  if (!a) return;
  const ids = running();
  let wait = 0;
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++] as string;
      try {
        const { job, retryAfterMs } = await a.getWithRetryAfter(id);
        if (round !== followRound) return;
        update(job);
        if (job.status === "processing") wait = Math.max(wait, retryAfterMs ?? DEFAULT_POLL_MS);
      } catch (e) {
        if (round !== followRound) return;
        if (e instanceof ApiError && e.status === 404) {
          log(`job ${id} is gone (deleted elsewhere)`);
          removeRow(id);
        } else {
          wait = Math.max(wait, e instanceof ApiError && e.retryAfterMs !== null ? e.retryAfterMs : DEFAULT_POLL_MS);
          log(`following ${id}: ${describe(e)}`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(FOLLOW_CONCURRENCY, ids.length) }, worker));
  if (round !== followRound) return;
  follow(wait || DEFAULT_POLL_MS);
}

// --- waiting for a free slot (429) --------------------------------------------------------------

let waitTicker: ReturnType<typeof setInterval> | null = null;
let waitAbort: AbortController | null = null;

function showQuotaWait(refusal: QuotaExceededError, retryAt: number) {
  const why =
    refusal.limit === "active"
      ? " (too many jobs running)"
      : refusal.limit === "burst"
        ? " (too many jobs started lately)"
        : refusal.limit
          ? ` (${refusal.limit})`
          : "";
  const tick = () => status(`Waiting for a free slot${why}: ${secondsLeft(retryAt)} s`, "waiting");
  if (waitTicker !== null) clearInterval(waitTicker);
  tick();
  waitTicker = setInterval(tick, 250);
  stopWaitingBtn.hidden = false;
  log(`waiting for a free slot${why}: ${Math.round(refusal.retryAfterMs / 1000)} s`);
}

function endQuotaWait() {
  if (waitTicker !== null) clearInterval(waitTicker);
  waitTicker = null;
  waitAbort = null;
  stopWaitingBtn.hidden = true;
}

/** Runs a call that may wait for a free slot: the Stop waiting button aborts it. */
async function mayWait<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  waitAbort = abort;
  try {
    return await work(abort.signal);
  } finally {
    if (waitAbort === abort) endQuotaWait();
  }
}

stopWaitingBtn.onclick = () => waitAbort?.abort(new Error("Stopped waiting for a free slot."));

// --- actions ---------------------------------------------------------------------------------------

generateBtn.onclick = () => {
  const s = settings;
  const a = api;
  const f = file;
  if (!s || !a || !f) return;
  const screenId = screenInput.value.trim();
  if (!screenId) return void status("Give the screen an id.", "error");
  if (!s.pageImportId) {
    showSettings(true);
    return void status("No page import: paste settings with a pageImportId, or fill it in.", "error");
  }
  if (s.screenId !== screenId) {
    settings = { ...s, screenId };
    post({ type: "save-settings", settings });
  }
  generateBtn.disabled = true;
  status("Triggering…");
  void (async () => {
    try {
      const { job } = await mayWait((signal) =>
        a.triggerWhenFree({ pageImportId: s.pageImportId, figmaFileKey: f.key, screenId }, { signal, onWait: showQuotaWait }),
      );
      autoPlace.add(job.code2desId);
      log(`job ${job.code2desId}`);
      status(`Converting ${screenId} (job ${job.code2desId}, attempt ${job.attempt})…`);
      update(job);
      follow();
    } catch (e) {
      report(e);
    } finally {
      generateBtn.disabled = false;
    }
  })();
};

filterEl.onchange = () => void load();
refreshBtn.onclick = () => void load();
moreBtn.onclick = () => void loadMore();

listEl.onclick = (event) => {
  const target = event.target as HTMLElement;
  const id = target.closest<HTMLLIElement>("li[data-id]")?.dataset.id;
  if (!id) return;
  if (target.closest("button[data-report]")) return void toggleReport(id);
  const warning = target.closest<HTMLButtonElement>("button[data-warning]");
  if (warning) return void selectWarning(id, Number(warning.dataset.warning));
  const b = target.closest<HTMLButtonElement>("button[data-action]");
  if (!b || b.disabled) return;
  void act(b.dataset.action as Action, id);
};

/** Opens or closes a placed job's report; opening reads it again (layers may have been deleted meanwhile). */
async function toggleReport(id: string) {
  const root = jobs.get(id)?.materializedNodeId;
  if (!root) return;
  const view = rowState(id).report;
  view.open = !view.open;
  renderRow(id);
  if (!view.open) return;
  try {
    const reply = await call({ type: "get-report", id: nextId++, nodeId: root });
    if (reply.type === "failed") throw new Error(reply.message);
    if (reply.type !== "report") return;
    view.report = reply.report;
    view.missing = new Set(reply.missing);
    renderRow(id);
  } catch (e) {
    report(e, "reading the report");
  }
}

/** Selects a warning's layer in Figma, on its page, and scrolls to it; or says it is gone. */
async function selectWarning(id: string, i: number) {
  const job = jobs.get(id);
  const root = job?.materializedNodeId;
  const view = rowState(id).report;
  const entry = view.report?.entries[i];
  if (!job || !root || !entry?.indices) return;
  const what = warningLabel(entry.code);
  try {
    const reply = await call({ type: "select", id: nextId++, nodeId: root, indices: entry.indices });
    if (reply.type === "failed") throw new Error(reply.message);
    if (reply.type !== "selected") return;
    switch (reply.outcome) {
      case "selected":
        status(`Selected "${reply.name ?? ""}" (${what}) on page ${reply.page ?? "?"}.`);
        return;
      case "no-layer":
        view.missing.add(i);
        status(`The layer of this warning (${what}${entry.node ? `, "${entry.node}"` : ""}) is no longer in the design.`);
        renderRow(id);
        return;
      case "no-design":
        missingNodes.add(root);
        status(`The node of ${job.screenId} (${root}) was removed from the file.`);
        log(`node ${root} was removed`);
        renderRow(id);
        return;
    }
  } catch (e) {
    report(e, `selecting the layer of a warning (${what})`);
  }
}

async function act(action: Action, id: string) {
  const job = jobs.get(id);
  const a = api;
  if (!job || !a) return;
  const row = rowState(id);
  if (action === "delete" && row.armedUntil <= Date.now()) {
    row.armedUntil = Date.now() + DELETE_ARMED_MS;
    renderRow(id);
    setTimeout(() => renderRow(id), DELETE_ARMED_MS + 50);
    return;
  }
  row.busy = action;
  row.note = null;
  renderRow(id);
  try {
    switch (action) {
      case "cancel":
        try {
          const cancelled = await a.cancel(id);
          autoPlace.delete(id);
          status(`Cancelled (job ${id}).`);
          log("cancelled");
          update(cancelled);
        } catch (e) {
          // 409 already_terminal: the worker finished first; show what it did.
          if (!(e instanceof ApiError && e.code === "already_terminal")) throw e;
          log(`cancel: ${describe(e)}`);
          update(await a.get(id));
        }
        return;
      case "retry": {
        // Naming the attempt makes a double click (or a resend after a 429) start one attempt, not two.
        const { job: next } = await mayWait((signal) =>
          a.retryWhenFree(id, { attempt: job.attempt, signal, onWait: showQuotaWait }),
        );
        autoPlace.add(id);
        log(`retry: attempt ${next.attempt}`);
        status(`Converting ${next.screenId} (job ${id}, attempt ${next.attempt})…`);
        update(next);
        follow();
        return;
      }
      case "place":
        await place(id);
        return;
      case "show":
        await show(job);
        return;
      case "delete":
        await a.delete(id).catch((e: unknown) => {
          if (!(e instanceof ApiError && e.status === 404)) throw e;
        });
        log(`deleted ${job.screenId} (job ${id})`);
        status(`Deleted ${job.screenId} from this file's jobs; nodes built from it stay.`);
        removeRow(id);
        return;
    }
  } catch (e) {
    report(e, `${ACTION_LABEL[action]} ${job.screenId}`);
    if (e instanceof ApiError && e.status === 404) removeRow(id);
  } finally {
    row.busy = null;
    row.armedUntil = 0;
    renderRow(id);
  }
}

/** Builds run one at a time: the main thread's image store holds one result's images. */
let builds: Promise<void> = Promise.resolve();

function place(id: string): Promise<void> {
  const run = builds.then(() => placeNow(id));
  builds = run.catch(() => undefined);
  return run.catch((e: unknown) => report(e, "building"));
}

/** Fetches the result, builds it on the current page, records the root with placement. */
async function placeNow(id: string): Promise<void> {
  const a = api;
  if (!a) return;
  const row = rowState(id);
  row.busy = "place";
  renderRow(id);
  try {
    status("Fetching the result…");
    const result = await a.fullResult(id);
    if (result.kind !== "result" || !result.document) {
      status("The result has no document.", "error");
      return;
    }
    const document = result.document;
    log(`result: ${Object.keys(result.images).length} images, ${result.warningCount ?? 0} warnings`);
    await sendImages(result);
    status("Building the design…");
    // The result's warnings go with the document: the main thread keeps the report on the root.
    const built = await call({
      type: "build",
      id: nextId++,
      code2desId: id,
      document,
      warnings: result.warnings ?? [], // an API from before the list answers none
      warningCount: result.warningCount,
    });
    if (built.type !== "built") throw new Error(built.type === "failed" ? built.message : "unexpected reply");
    for (const w of built.warnings) log(`warning: ${w.message}`);
    reportCounts.set(built.nodeId, built.reportCount);
    row.report = newReportView();
    const placed = await a.place(id, built.nodeId);
    log(`built ${built.nodes} nodes, root ${built.nodeId}`);
    if (placed.materializedNodeId) missingNodes.delete(placed.materializedNodeId);
    update(placed);
    status(
      placed.materializedNodeId === built.nodeId
        ? `Done: root ${built.nodeId}`
        : `Done: root ${built.nodeId} (this job's first root is ${placed.materializedNodeId ?? "?"})`,
    );
  } finally {
    row.busy = null;
    renderRow(id);
  }
}

/** Selects the placed job's node, on its page, and scrolls to it; or says it was removed. */
async function show(job: Job) {
  const nodeId = job.materializedNodeId;
  if (!nodeId) return;
  const reply = await call({ type: "show", id: nextId++, nodeId });
  if (reply.type === "failed") throw new Error(reply.message);
  if (reply.type !== "shown") return;
  if (reply.found) {
    missingNodes.delete(nodeId);
    status(`Showing ${job.screenId}: node ${nodeId} on page ${reply.page ?? "?"}.`);
  } else {
    missingNodes.add(nodeId);
    status(`The node of ${job.screenId} (${nodeId}) was removed from the file.`);
    log(`node ${nodeId} was removed`);
  }
}

// The ages ("5 min ago") move on while the plugin stays open.
setInterval(() => {
  for (const li of Array.from(listEl.querySelectorAll<HTMLTimeElement>("time[datetime]"))) {
    li.textContent = ageText(li.dateTime);
  }
}, 30_000);

post({ type: "ready" });
