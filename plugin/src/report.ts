// The fidelity report of a built design (main thread): the converter's warnings (the result's
// `warnings`) and the Builder's own, kept on the design's root as plugin data. The report then
// lives with the design, not with the session or the result: a designer who opens the plugin
// again later, or a colleague in the same file, sees it without fetching the result again
// (the result route serves images and document too, and stops serving at `resultExpiresAt`).
// The layer a warning concerns is found again through the child indices the Builder marks
// every node with (build.ts, INDICES_KEY).

import type { ResultWarning } from "@code2des/client";
import { type BuildWarning, INDICES_KEY, JOB_KEY, indexKey } from "./build.js";
import type { Report, ReportEntry } from "./messages.js";

export const REPORT_KEY = "code2des.report";
/** Figma keeps at most 100 kB per plugin-data entry (plugin id, key and value together). */
export const REPORT_BUDGET = 99_000;

export function composeReport(
  converter: readonly ResultWarning[],
  warningCount: number | null | undefined,
  plugin: readonly BuildWarning[],
): Report {
  const entries: ReportEntry[] = [
    ...converter.map(
      (w): ReportEntry => ({
        source: "converter",
        code: w.code,
        message: w.message,
        ...(w.path ? { path: w.path } : {}),
        ...(w.node ? { node: w.node } : {}),
        ...(w.indices ? { indices: [...w.indices] } : {}),
      }),
    ),
    ...plugin.map(
      (w): ReportEntry => ({
        source: "plugin",
        code: w.code,
        message: w.message,
        ...(w.node ? { node: w.node } : {}),
        indices: [...w.indices],
      }),
    ),
  ];
  // A result from before the list counts its warnings without listing them.
  const unlisted = Math.max(0, (warningCount ?? 0) - converter.length);
  return { entries, unlisted, dropped: 0 };
}

export const reportTotal = (r: Report) => r.entries.length + r.unlisted + r.dropped;

/** Bytes of `s` in UTF-8 (TextEncoder is not promised in Figma's main thread). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A surrogate pair is 4 bytes: 2 for each half.
    n += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c < 0xe000) ? 2 : 3;
  }
  return n;
}

/** The report as JSON of at most `budget` bytes: the entries past it are left out, counted in `dropped`. */
export function fitReport(r: Report, budget: number = REPORT_BUDGET): string {
  const full = JSON.stringify(r);
  if (utf8Length(full) <= budget) return full;
  // The envelope, with the largest `dropped` it can have; each entry adds itself and a comma.
  let used = utf8Length(JSON.stringify({ entries: [], unlisted: r.unlisted, dropped: r.dropped + r.entries.length }));
  let kept = 0;
  for (const e of r.entries) {
    const size = utf8Length(JSON.stringify(e)) + 1;
    if (used + size > budget) break;
    used += size;
    kept++;
  }
  return JSON.stringify({ entries: r.entries.slice(0, kept), unlisted: r.unlisted, dropped: r.dropped + r.entries.length - kept });
}

export function storeReport(root: BaseNode, r: Report): void {
  root.setPluginData(REPORT_KEY, fitReport(r));
}

const count = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : 0);
const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);

/** The report kept on `root`, or null when it has none (built before reports were kept). */
export function readReport(root: BaseNode): Report | null {
  const raw = root.getPluginData(REPORT_KEY);
  if (!raw) return null;
  let v: { entries?: unknown; unlisted?: unknown; dropped?: unknown };
  try {
    v = JSON.parse(raw) as typeof v;
  } catch {
    return null;
  }
  if (!v || typeof v !== "object" || !Array.isArray(v.entries)) return null;
  // Plugin data is ours, but the file outlives plugin versions: take only what has the shape.
  const entries: ReportEntry[] = [];
  for (const e of v.entries as Record<string, unknown>[]) {
    if (!e || typeof e !== "object" || typeof e.code !== "string" || typeof e.message !== "string") continue;
    const indices = Array.isArray(e.indices) && e.indices.every((i) => Number.isInteger(i) && i >= 0) ? (e.indices as number[]) : undefined;
    const path = text(e.path);
    const node = text(e.node);
    entries.push({
      source: e.source === "plugin" ? "plugin" : "converter",
      code: e.code,
      message: e.message,
      ...(path ? { path } : {}),
      ...(node ? { node } : {}),
      ...(indices ? { indices } : {}),
    });
  }
  return { entries, unlisted: count(v.unlisted), dropped: count(v.dropped) };
}

/**
 * The layers under `root` by the indices the Builder marked them with. Another design dropped
 * inside this one (a root of its own, with JOB_KEY) is not searched: its indices are its own.
 * A layer the designer duplicated is found as the first in layer order.
 */
export function layersByIndex(root: SceneNode): Map<string, SceneNode> {
  const out = new Map<string, SceneNode>();
  const visit = (n: SceneNode, top: boolean) => {
    if (!top && n.getPluginData(JOB_KEY)) return;
    const key = n.getPluginData(INDICES_KEY);
    if (key && !out.has(key)) out.set(key, n);
    if ("children" in n) for (const c of n.children) visit(c, false);
  };
  visit(root, true);
  return out;
}

/** The layer at `indices` under `root`, or null when it is no longer there (deleted, or moved out of the design). */
export function findLayer(root: SceneNode, indices: readonly number[], layers = layersByIndex(root)): SceneNode | null {
  // The root is the root, marked or not.
  if (indices.length === 0) return root;
  return layers.get(indexKey(indices)) ?? null;
}

/** The positions in `report.entries` of the warnings whose layer is gone. */
export function missingLayers(root: SceneNode, report: Report): number[] {
  const layers = layersByIndex(root);
  const out: number[] = [];
  report.entries.forEach((e, i) => {
    if (e.indices && !findLayer(root, e.indices, layers)) out.push(i);
  });
  return out;
}
