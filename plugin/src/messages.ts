// The messages between the UI iframe (network, decoding) and the main thread (the Figma
// document). Images cross ONE per message, each acknowledged before the next is sent: a whole
// result in one message has exhausted plugin memory in peer plugins.

import type { Node, ResultWarning } from "@code2des/client";
import type { BuildWarning } from "./build.js";

/**
 * What the plugin keeps in `figma.clientStorage`: how to reach the API, as whoever, in which
 * project. Never a job: the jobs of a file are found again through the list.
 */
export interface Settings {
  apiUrl: string;
  token: string;
  organizationId: number;
  projectId: number;
  /** The page import new jobs convert ("" when none was given yet). */
  pageImportId: string;
  /** Who the token is for, as `seed` printed it (shown, never sent). */
  sub?: string;
  /** The screen id last used for Generate. */
  screenId?: string;
}

/** The Figma file the plugin runs in: the key its jobs are listed by. */
export interface FileInfo {
  key: string;
  /**
   * `figma`: `figma.fileKey` (private plugins with `enablePrivatePluginApi`). `document`: Figma
   * gave none, so a key made once and kept in the file itself (`figma.root` plugin data).
   */
  source: "figma" | "document";
  name: string;
}

/** One warning of a design's fidelity report: the converter's (the result's) or the plugin's own. */
export interface ReportEntry {
  source: "converter" | "plugin";
  /** A `ResultWarning` code, or a BuildWarning code for the plugin's. */
  code: string;
  message: string;
  /** The element's DOM path in the capture (the converter's warnings). */
  path?: string;
  /** The document node's name. */
  node?: string;
  /** The document node's child indices from the root; absent when the warning has no node. */
  indices?: number[];
}

/** A design's fidelity report, as kept on its root (./report.ts). */
export interface Report {
  entries: ReportEntry[];
  /** Warnings the result counted without listing them (a result from before the list). */
  unlisted: number;
  /** Entries left out to fit Figma's 100 kB per plugin-data entry. */
  dropped: number;
}

/** UI → main. `id` pairs a request with its reply. */
export type UiToMain =
  | { type: "ready" }
  | { type: "save-settings"; settings: Settings }
  | { type: "image"; id: number; ref: string; mimeType: "image/png" | "image/jpeg" | "image/gif"; bytes: Uint8Array }
  | { type: "svg"; id: number; ref: string; svg: string }
  /** The result's document, with its `warnings` and `warningCount`: the report is kept with the design. */
  | { type: "build"; id: number; code2desId: string; document: Node; warnings: ResultWarning[]; warningCount: number | null }
  /** Select the node, on its page, and scroll to it. */
  | { type: "show"; id: number; nodeId: string }
  /** Which of these nodes are no longer in the file. */
  | { type: "check-nodes"; id: number; nodeIds: string[] }
  /** The fidelity report kept on a design's root, with the entries whose layer is gone. */
  | { type: "get-report"; id: number; nodeId: string }
  /** Select the layer at `indices` in the design rooted at `nodeId`, on its page, and scroll to it. */
  | { type: "select"; id: number; nodeId: string; indices: number[] }
  | { type: "close" };

/** main → UI. */
export type MainToUi =
  | { type: "init"; settings: Partial<Settings> | null; file: FileInfo }
  | { type: "stored"; replyTo: number }
  /** `warnings`: the Builder's own; `reportCount`: the whole report's (the converter's too). */
  | { type: "built"; replyTo: number; nodeId: string; nodes: number; warnings: BuildWarning[]; reportCount: number }
  | { type: "shown"; replyTo: number; found: boolean; page: string | null }
  /** `reports`: how many warnings the report kept on each found node holds (none: it keeps no report). */
  | { type: "nodes"; replyTo: number; missing: string[]; reports: Record<string, number> }
  /** `report` null: the root is gone, or keeps no report. `missing`: positions of entries whose layer is gone. */
  | { type: "report"; replyTo: number; report: Report | null; missing: number[] }
  /** `no-design`: the root is gone; `no-layer`: the root is there, the warning's layer is not. */
  | { type: "selected"; replyTo: number; outcome: "selected" | "no-design" | "no-layer"; name: string | null; page: string | null }
  | { type: "failed"; replyTo: number; message: string };
