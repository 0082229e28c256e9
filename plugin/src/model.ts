// What the UI shows, decided without the DOM (tested in Node, test/model.test.ts): the state
// a job is in for a designer, the actions each state allows, the pasted settings, the age of a
// job in words.

import type { Job, WarningCode } from "@code2des/client";
import type { BuildWarning } from "./build.js";
import type { Settings } from "./messages.js";

/** A job as a designer sees it: the API's three statuses, told apart further. */
export type JobState = "processing" | "completed" | "placed" | "failed" | "cancelled" | "timed-out";

export function stateOf(job: Job): JobState {
  switch (job.status) {
    case "processing":
      return "processing";
    case "completed":
      return job.materializedNodeId ? "placed" : "completed";
    case "failed":
      if (job.errorMessage === "cancelled") return "cancelled";
      if (job.errorMessage === "timed out") return "timed-out";
      return "failed";
  }
}

export const STATE_LABEL: Record<JobState, string> = {
  processing: "Processing",
  completed: "Completed",
  placed: "Placed",
  failed: "Failed",
  cancelled: "Cancelled",
  "timed-out": "Timed out",
};

export type Action = "cancel" | "retry" | "place" | "show" | "delete";

/**
 * The actions a job allows, in the order the row shows them: a running job can be cancelled;
 * a failed one (cancelled and timed out included) retried while attempts remain; a completed
 * one with a result placed; a placed one shown; any deleted.
 */
export function actionsFor(job: Job): Action[] {
  const out: Action[] = [];
  const state = stateOf(job);
  if (state === "processing") out.push("cancel");
  if ((state === "failed" || state === "cancelled" || state === "timed-out") && job.attempt < job.maxAttempts) out.push("retry");
  if (state === "completed" && job.hasResult) out.push("place");
  if (state === "placed") out.push("show");
  out.push("delete");
  return out;
}

/** "attempt 2 of 3". */
export const attemptText = (job: Job) => `attempt ${job.attempt} of ${job.maxAttempts}`;

/** How long ago `iso` was, in words: "just now", "5 min ago", "3 h ago", "2 days ago", then the date. */
export function ageText(iso: string, now: number = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 45) return "just now";
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min ago`;
  const h = Math.round(min / 60);
  if (h < 24) return `${h} h ago`;
  const d = Math.round(h / 24);
  if (d < 7) return d === 1 ? "yesterday" : `${d} days ago`;
  return new Date(at).toISOString().slice(0, 10);
}

/** `2026-01-05 14:03` in the viewer's time zone (the tooltip of the age). */
export function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * Settings from what the designer pasted: the JSON `code2des-local seed --json` prints
 * (`organizationId`, `projectId`, `pageImportId`, `sub`, `token`, `baseUrl`), or any JSON object
 * with those members (`apiUrl` instead of `baseUrl` for a deployed API). `baseUrl` is the
 * project's jobs URL; the API URL is what precedes `/organizations/`. Members it lacks are
 * taken from `current`. Throws an Error saying what is wrong.
 */
export function settingsFromPaste(text: string, current: Partial<Settings> = {}): Settings {
  let v: unknown;
  try {
    v = JSON.parse(text.trim());
  } catch {
    throw new Error("That is not JSON: paste the one line `code2des-local seed --json` prints.");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("Paste a JSON object.");
  const o = v as Record<string, unknown>;
  const str = (k: string) => (typeof o[k] === "string" && (o[k] as string).trim() !== "" ? (o[k] as string).trim() : undefined);
  const id = (k: string) => {
    const x = o[k];
    const n = typeof x === "string" && /^\d+$/.test(x.trim()) ? Number(x) : x;
    return typeof n === "number" && Number.isInteger(n) && n > 0 && n <= 2147483647 ? n : undefined;
  };
  let apiUrl = str("apiUrl");
  const baseUrl = str("baseUrl");
  if (baseUrl !== undefined) {
    const at = baseUrl.indexOf("/organizations/");
    if (at < 0) throw new Error("baseUrl has no /organizations/ in it.");
    apiUrl = baseUrl.slice(0, at);
  }
  const s: Partial<Settings> = {
    apiUrl: apiUrl ?? current.apiUrl,
    token: str("token") ?? current.token,
    organizationId: id("organizationId") ?? current.organizationId,
    projectId: id("projectId") ?? current.projectId,
    pageImportId: str("pageImportId") ?? current.pageImportId,
    sub: str("sub") ?? current.sub,
  };
  return checkSettings(s);
}

/** Settings complete and sound, or an Error naming what is missing or wrong. */
export function checkSettings(s: Partial<Settings>): Settings {
  const missing = (["apiUrl", "token", "organizationId", "projectId"] as const).filter((k) => !s[k]);
  if (missing.length > 0) throw new Error(`Missing ${missing.join(", ")}.`);
  let url: URL;
  try {
    url = new URL(s.apiUrl as string);
  } catch {
    throw new Error(`API URL ${JSON.stringify(s.apiUrl)} is not a URL.`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("The API URL must be http or https.");
  return {
    apiUrl: (s.apiUrl as string).replace(/\/+$/, ""),
    token: s.token as string,
    organizationId: s.organizationId as number,
    projectId: s.projectId as number,
    pageImportId: s.pageImportId ?? "",
    ...(s.sub ? { sub: s.sub } : {}),
  };
}

/** Whole seconds left until `at` (epoch ms), never negative: the quota wait's countdown. */
export const secondsLeft = (at: number, now: number = Date.now()) => Math.max(0, Math.ceil((at - now) / 1000));

/**
 * The fidelity report's codes as a designer reads them: the converter's (openapi.yaml
 * `ResultWarning`; a code added there fails the type check until it has a label here), then the
 * plugin's own.
 */
export const WARNING_LABEL: Record<WarningCode | BuildWarning["code"], string> = {
  font_substituted: "Font substituted",
  unsupported_css: "Unsupported CSS",
  image_converted: "Image converted",
  image_too_large: "Image too large",
  image_unavailable: "Image unavailable",
  pseudo_element: "Pseudo-element",
  canvas_skipped: "Canvas skipped",
  iframe_skipped: "Iframe skipped",
  video_skipped: "Video skipped",
  node_limit: "Node limit reached",
  depth_limit: "Depth limit reached",
  empty_group: "Empty group",
  paint_skipped: "Paint skipped",
  instance_unresolved: "Instance without its component",
  link_unresolved: "Link without its layer",
  segment_skipped: "Text style skipped",
};

/** A code's label; one added to the API after this plugin was built still reads: `new_code` → "New code". */
export function warningLabel(code: string): string {
  // Own keys only: a code never shadows Object.prototype's members ("constructor").
  if (Object.prototype.hasOwnProperty.call(WARNING_LABEL, code)) return (WARNING_LABEL as Record<string, string>)[code] as string;
  const words = code.replace(/_/g, " ").trim();
  return words ? words[0]?.toUpperCase() + words.slice(1) : "Warning";
}

/** "No warnings", "1 warning", "3 warnings". */
export const warningsText = (n: number) => (n === 0 ? "No warnings" : n === 1 ? "1 warning" : `${n} warnings`);
