// Runs in the test page: stands in for Figma around the plugin's REAL dist/code.js and
// dist/ui.html. The plugin API is figma-api-stub (./figma.ts); showUI puts the UI in an
// `<iframe sandbox="allow-scripts">` (so its Origin is `null`, as in Figma), with Figma's theme
// variables when asked for `themeColors` (./theme.ts), and carries the messages both ways as
// Figma does (`{pluginMessage}`), recording each one for the test. The document and
// clientStorage outlive the plugin: `close()` then `run()` is a designer closing the plugin and
// opening it again in the same file.
//
// The page's query string: `file` is figma.fileKey (none: Figma gives the plugin no key),
// `name` the file's name, `theme` the user's theme (light by default).

import type { Node, ResultWarning } from "@code2des/client";
import { Builder, ImageStore, JOB_KEY } from "../src/build.js";
import { composeReport, storeReport } from "../src/report.js";
import { compareTree, countNodes, testFigma } from "./figma.js";
import { type Theme, withTheme } from "./theme.js";

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

const query = new URLSearchParams(location.search);
const theme: Theme = query.get("theme") === "dark" ? "dark" : "light";
const t = testFigma();
t.figma.root.name = query.get("name") ?? "Landing page";
t.figma.currentPage.name = "Page 1";
const messages: Recorded[] = [];
let frame: HTMLIFrameElement | null = null;
/** The UI document as last shown (theme included). */
let shown = "";
let runs = 0;
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

function close() {
  frame?.remove();
  frame = null;
  ui.onmessage = undefined;
}

Object.assign(t.figma, {
  ui,
  fileKey: query.get("file") ?? undefined,
  showUI(html: string, options?: { width?: number; height?: number; themeColors?: boolean }) {
    close();
    shown = options?.themeColors ? withTheme(html, theme) : html;
    frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts");
    frame.width = String(options?.width ?? 300);
    frame.height = String(options?.height ?? 200);
    frame.style.border = "0";
    frame.srcdoc = shown;
    document.body.append(frame);
  },
  closePlugin: close,
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

/** Runs the plugin: dist/code.js, as Figma runs it each time the designer opens the plugin. */
function run(): Promise<void> {
  runs++;
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = `/code.js?run=${runs}`;
    script.onload = () => resolve();
    script.onerror = () => reject(new Error("code.js did not load"));
    document.body.append(script);
  });
}

const page = () => t.figma.currentPage;

g.__harness = {
  messages,
  run,
  close,
  shown: () => shown,
  // A design's root, and beside it the components its instances swap in (COMPONENTs).
  roots: () => page().children.filter((n) => n.type !== "COMPONENT").map((n) => n.id),
  beside: () => page().children.filter((n) => n.type === "COMPONENT").map((n) => n.id),
  storage: () => Object.fromEntries(t.storage),
  scrolledTo: () => t.scrolledTo,
  selection: () => page().selection.map((n) => n.id),
  currentPage: () => page().id,
  /** A new page, made current (the designer went elsewhere in the file). */
  newPage(name: string) {
    const p = t.figma.createPage();
    p.name = name;
    t.figma.currentPage = p;
    return p.id;
  },
  /** The page a node is on, or null when it is not in the document. */
  pageOf(id: string) {
    let n = (t.figma as unknown as { getNodeById(id: string): BaseNode | null }).getNodeById(id);
    while (n && n.type !== "PAGE") n = n.parent;
    return n?.id ?? null;
  },
  /** The designer deletes a node. */
  remove(id: string) {
    (t.figma as unknown as { getNodeById(id: string): SceneNode | null }).getNodeById(id)?.remove();
  },
  /** A frame on the current page (stands for a design built earlier). */
  frame(name: string) {
    const f = t.figma.createFrame();
    f.name = name;
    return f.id;
  },
  /**
   * A design built earlier by the plugin (no images), with its report kept on its root: the
   * plugin's own Builder and report code, as code.ts runs them on a build.
   */
  async design(doc: Node, warnings: ResultWarning[], code2desId: string) {
    const built = await new Builder(t.figma, new ImageStore(t.figma)).build(doc);
    built.root.setPluginData(JOB_KEY, code2desId);
    storeReport(built.root, composeReport(warnings, warnings.length, built.warnings));
    return built.root.id;
  },
  /** The node's name and type, or null when it is not in the document. */
  node(id: string) {
    const n = (t.figma as unknown as { getNodeById(id: string): SceneNode | null }).getNodeById(id);
    return n && !n.removed ? { name: n.name, type: n.type } : null;
  },
  /** The ids of the nodes with this name, on every page. */
  named(name: string) {
    return t.figma.root.children.flatMap((p) => p.findAll((n) => n.name === name).map((n) => n.id));
  },
  /** Compares the page's only root with the document, given the result's images as base64. */
  compare(doc: Node, images: Record<string, { mimeType: string; data: string }>) {
    const raster = new Map<string, Uint8Array>();
    const svg = new Map<string, string>();
    for (const [ref, img] of Object.entries(images)) {
      if (img.mimeType === "image/svg+xml") svg.set(ref, new TextDecoder().decode(bytesOf(img.data)));
      else raster.set(ref, bytesOf(img.data));
    }
    const root = page().children.find((n) => n.type !== "COMPONENT");
    if (!root) return { diffs: ["no root on the page"], compared: 0, expected: countNodes(doc) };
    // The plugin puts the root where the user is looking: its own position is the plugin's, and
    // the components beside it moved with it.
    const placed = { ...doc, x: root.x, y: root.y } as Node;
    const beside = page().children.filter((n) => n.type === "COMPONENT");
    return { ...compareTree(placed, root, t, { raster, svg }, beside), expected: countNodes(doc) };
  },
};

export type Harness = {
  messages: Recorded[];
  run(): Promise<void>;
  close(): void;
  shown(): string;
  roots(): string[];
  beside(): string[];
  storage(): Record<string, unknown>;
  scrolledTo(): string[][];
  selection(): string[];
  currentPage(): string;
  newPage(name: string): string;
  pageOf(id: string): string | null;
  remove(id: string): void;
  frame(name: string): string;
  design(doc: unknown, warnings: unknown[], code2desId: string): Promise<string>;
  node(id: string): { name: string; type: string } | null;
  named(name: string): string[];
  compare(doc: unknown, images: unknown): { diffs: string[]; compared: number; expected: number };
};
