// The plugin's main thread: owns the Figma document, never the network. The UI iframe does
// the API calls and sends the images one message each, then the document; this side turns
// them into nodes (./build.ts), keeps the fidelity report on the root (./report.ts), answers
// the root's id for the placement call, and finds a placed job's node, or a warning's layer,
// again.

import { Builder, ImageStore, JOB_KEY } from "./build.js";
import type { FileInfo, MainToUi, UiToMain } from "./messages.js";
import { composeReport, findLayer, missingLayers, readReport, reportTotal, storeReport } from "./report.js";

const SETTINGS_KEY = "code2des.settings";
const FILE_KEY_DATA = "code2des.fileKey";

// themeColors: Figma puts its theme's CSS variables (--figma-color-bg, …) into the UI.
figma.showUI(__html__, { width: 400, height: 640, themeColors: true });

let images = new ImageStore(figma);
const send = (msg: MainToUi) => figma.ui.postMessage(msg);

/**
 * The key this file's jobs are listed by: `figma.fileKey` where Figma gives it (private
 * plugins, `enablePrivatePluginApi` in manifest.json); otherwise a key made once and kept in
 * the document's plugin data, so it stays with the file (a duplicate of the file shares it).
 */
function fileInfo(): FileInfo {
  const name = figma.root.name;
  if (figma.fileKey) return { key: figma.fileKey, source: "figma", name };
  let key = figma.root.getPluginData(FILE_KEY_DATA);
  if (!key) {
    key = `doc-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    figma.root.setPluginData(FILE_KEY_DATA, key);
  }
  return { key, source: "document", name };
}

/** The node, or null when it is no longer in the file. */
async function findNode(nodeId: string): Promise<SceneNode | null> {
  const node = await figma.getNodeByIdAsync(nodeId);
  if (!node || node.removed || node.type === "DOCUMENT" || node.type === "PAGE") return null;
  return node as SceneNode;
}

function pageOf(node: BaseNode): PageNode | null {
  let n: BaseNode | null = node;
  while (n && n.type !== "PAGE") n = n.parent;
  return n;
}

/** Makes the node's page current, selects the node and scrolls to it; answers the page's name. */
async function reveal(node: SceneNode, page: PageNode): Promise<string> {
  if (page.id !== figma.currentPage.id) await figma.setCurrentPageAsync(page);
  figma.currentPage.selection = [node];
  figma.viewport.scrollAndZoomIntoView([node]);
  return page.name;
}

figma.ui.onmessage = async (msg: UiToMain) => {
  switch (msg.type) {
    case "ready": {
      const settings = (await figma.clientStorage.getAsync(SETTINGS_KEY)) ?? null;
      send({ type: "init", settings, file: fileInfo() });
      return;
    }
    case "save-settings":
      await figma.clientStorage.setAsync(SETTINGS_KEY, msg.settings);
      return;
    case "image":
      try {
        images.addRaster(msg.ref, msg.bytes);
        send({ type: "stored", replyTo: msg.id });
      } catch (e) {
        send({ type: "failed", replyTo: msg.id, message: `image ${msg.ref}: ${String(e)}` });
      }
      return;
    case "svg":
      images.addSvg(msg.ref, msg.svg);
      send({ type: "stored", replyTo: msg.id });
      return;
    case "build":
      try {
        const built = await new Builder(figma, images).build(msg.document);
        const root = built.root;
        // Put the new design where the user is looking, and show it.
        const center = figma.viewport.center;
        const [x0, y0] = [root.x, root.y];
        root.x = Math.round(center.x - root.width / 2);
        root.y = Math.round(center.y - root.height / 2);
        // The components beside it (its icons) stay beside it.
        for (const c of built.beside) {
          c.x += root.x - x0;
          c.y += root.y - y0;
        }
        root.setPluginData(JOB_KEY, msg.code2desId);
        const report = composeReport(msg.warnings, msg.warningCount, built.warnings);
        try {
          storeReport(root, report);
        } catch {
          // The design is built: losing its report must not lose its placement.
        }
        figma.currentPage.selection = [root];
        figma.viewport.scrollAndZoomIntoView([root]);
        send({
          type: "built",
          replyTo: msg.id,
          nodeId: root.id,
          nodes: built.nodes,
          warnings: built.warnings,
          reportCount: reportTotal(report),
        });
      } catch (e) {
        send({ type: "failed", replyTo: msg.id, message: String(e) });
      } finally {
        // The next result starts from an empty store: image bytes are not kept around.
        images = new ImageStore(figma);
      }
      return;
    case "show":
      try {
        const node = await findNode(msg.nodeId);
        const page = node && pageOf(node);
        if (!node || !page) {
          send({ type: "shown", replyTo: msg.id, found: false, page: null });
          return;
        }
        send({ type: "shown", replyTo: msg.id, found: true, page: await reveal(node, page) });
      } catch (e) {
        send({ type: "failed", replyTo: msg.id, message: String(e) });
      }
      return;
    case "check-nodes":
      try {
        const missing: string[] = [];
        const reports: Record<string, number> = {};
        for (const id of msg.nodeIds) {
          const node = await findNode(id);
          if (!node) missing.push(id);
          const report = node && readReport(node);
          if (report) reports[id] = reportTotal(report);
        }
        send({ type: "nodes", replyTo: msg.id, missing, reports });
      } catch (e) {
        send({ type: "failed", replyTo: msg.id, message: String(e) });
      }
      return;
    case "get-report":
      try {
        const root = await findNode(msg.nodeId);
        const report = root && readReport(root);
        send({ type: "report", replyTo: msg.id, report, missing: root && report ? missingLayers(root, report) : [] });
      } catch (e) {
        send({ type: "failed", replyTo: msg.id, message: String(e) });
      }
      return;
    case "select":
      try {
        const root = await findNode(msg.nodeId);
        const page = root && pageOf(root);
        const layer = root && findLayer(root, msg.indices);
        if (!root || !page || !layer) {
          send({ type: "selected", replyTo: msg.id, outcome: root && page ? "no-layer" : "no-design", name: null, page: null });
          return;
        }
        send({ type: "selected", replyTo: msg.id, outcome: "selected", name: layer.name, page: await reveal(layer, page) });
      } catch (e) {
        send({ type: "failed", replyTo: msg.id, message: String(e) });
      }
      return;
    case "close":
      figma.closePlugin();
      return;
  }
};
