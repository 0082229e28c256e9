// The messages between the UI iframe (network, decoding) and the main thread (the Figma
// document). Images cross ONE per message, each acknowledged before the next is sent: a whole
// result in one message has exhausted plugin memory in peer plugins.

import type { Node } from "../../clients/typescript/src/index.js";

export interface Settings {
  apiUrl: string;
  token: string;
  organizationId: number;
  projectId: number;
  pageImportId: string;
  figmaFileKey: string;
  screenId: string;
}

/** UI → main. `id` pairs a request with its reply. */
export type UiToMain =
  | { type: "ready" }
  | { type: "save-settings"; settings: Settings }
  | { type: "image"; id: number; ref: string; mimeType: "image/png" | "image/jpeg" | "image/gif"; bytes: Uint8Array }
  | { type: "svg"; id: number; ref: string; svg: string }
  | { type: "build"; id: number; code2desId: string; document: Node }
  | { type: "close" };

/** main → UI. */
export type MainToUi =
  | { type: "init"; settings: Partial<Settings> | null; fileKey: string | null }
  | { type: "stored"; replyTo: number }
  | { type: "built"; replyTo: number; nodeId: string; nodes: number; warnings: string[] }
  | { type: "failed"; replyTo: number; message: string };
