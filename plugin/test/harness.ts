// Runs in the test page: stands in for Figma around the plugin's REAL dist/code.js and
// dist/ui.html. The plugin API is figma-api-stub (./figma.ts); showUI puts the UI in an
// `<iframe sandbox="allow-scripts">` (so its Origin is `null`, as in Figma) and carries the
// messages both ways as Figma does (`{pluginMessage}`), recording each one for the test.

import type { Node } from "../../clients/typescript/src/index.js";
import { compareTree, countNodes, testFigma } from "./figma.js";

interface Recorded {
  dir: "ui→main" | "main→ui";
  type: string;
  /** Uint8Arrays anywhere in the message, and their bytes in all. */
  arrays: number;
  arrayBytes: number;
  /** Characters of SVG markup anywhere in the message. */
  svgChars: number;
}

function inspect(value: unknown, acc = { arrays: 0, arrayBytes: 0, svgChars: 0 }) {
  if (value instanceof Uint8Array) {
    acc.arrays++;
    acc.arrayBytes += value.length;
  } else if (typeof value === "string") {
    if (value.includes("<svg")) acc.svgChars += value.length;
  } else if (Array.isArray(value)) {
    for (const v of value) inspect(v, acc);
  } else if (value && typeof value === "object") {
    for (const v of Object.values(value)) inspect(v, acc);
  }
  return acc;
}

const t = testFigma();
const messages: Recorded[] = [];
let frame: HTMLIFrameElement | null = null;
type Handler = (msg: unknown, props: { origin: string }) => void;

const ui = {
  onmessage: undefined as Handler | undefined,
  postMessage(msg: unknown) {
    messages.push({ dir: "main→ui", type: String((msg as { type?: unknown }).type), ...inspect(msg) });
    frame?.contentWindow?.postMessage({ pluginMessage: msg }, "*");
  },
  show() {},
  hide() {},
  resize() {},
  close() {},
};

Object.assign(t.figma, {
  ui,
  showUI(html: string, options?: { width?: number; height?: number }) {
    frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts");
    frame.width = String(options?.width ?? 300);
    frame.height = String(options?.height ?? 200);
    frame.srcdoc = html;
    document.body.append(frame);
  },
});

window.addEventListener("message", (event) => {
  if (!frame || event.source !== frame.contentWindow) return;
  const msg = (event.data as { pluginMessage?: unknown } | null)?.pluginMessage;
  if (msg === undefined) return;
  messages.push({ dir: "ui→main", type: String((msg as { type?: unknown }).type), ...inspect(msg) });
  ui.onmessage?.(msg, { origin: event.origin });
});

// figma-api-stub sets a global __html__ of its own: the page's UI document goes in after it.
const g = globalThis as unknown as Record<string, unknown>;
g.figma = t.figma;
g.__html__ = g.__UI_HTML__;

const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

g.__harness = {
  messages,
  roots: () => t.figma.currentPage.children.map((n) => n.id),
  /** Compares the page's only root with the document, given the result's images as base64. */
  compare(doc: Node, images: Record<string, { mimeType: string; data: string }>) {
    const raster = new Map<string, Uint8Array>();
    const svg = new Map<string, string>();
    for (const [ref, img] of Object.entries(images)) {
      if (img.mimeType === "image/svg+xml") svg.set(ref, new TextDecoder().decode(bytesOf(img.data)));
      else raster.set(ref, bytesOf(img.data));
    }
    const root = t.figma.currentPage.children[0];
    if (!root) return { diffs: ["no root on the page"], compared: 0, expected: countNodes(doc) };
    // The plugin puts the root where the user is looking: its own position is the plugin's.
    const placed = { ...doc, x: root.x, y: root.y } as Node;
    return { ...compareTree(placed, root, t, { raster, svg }), expected: countNodes(doc) };
  },
};
