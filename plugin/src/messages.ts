// The messages between the UI iframe (network, decoding) and the main thread (the Figma
// document). Images cross ONE per message, each acknowledged before the next is sent: a whole
// result in one message has exhausted plugin memory in peer plugins.

import type { Node } from "@code2des/client";

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

/** UI → main. `id` pairs a request with its reply. */
export type UiToMain =
  | { type: "ready" }
  | { type: "save-settings"; settings: Settings }
  | { type: "image"; id: number; ref: string; mimeType: "image/png" | "image/jpeg" | "image/gif"; bytes: Uint8Array }
  | { type: "svg"; id: number; ref: string; svg: string }
  | { type: "build"; id: number; code2desId: string; document: Node }
  /** Select the node, on its page, and scroll to it. */
  | { type: "show"; id: number; nodeId: string }
  /** Which of these nodes are no longer in the file. */
  | { type: "check-nodes"; id: number; nodeIds: string[] }
  | { type: "close" };

/** main → UI. */
export type MainToUi =
  | { type: "init"; settings: Partial<Settings> | null; file: FileInfo }
  | { type: "stored"; replyTo: number }
  | { type: "built"; replyTo: number; nodeId: string; nodes: number; warnings: string[] }
  | { type: "shown"; replyTo: number; found: boolean; page: string | null }
  | { type: "nodes"; replyTo: number; missing: string[] }
  | { type: "failed"; replyTo: number; message: string };
