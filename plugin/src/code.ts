// The plugin's main thread: owns the Figma document, never the network. The UI iframe does
// the API calls and sends the images one message each, then the document; this side turns
// them into nodes (./build.ts) and answers the root's id for the placement call.

import { Builder, ImageStore } from "./build.js";
import type { MainToUi, UiToMain } from "./messages.js";

const SETTINGS_KEY = "code2des.settings";

figma.showUI(__html__, { width: 380, height: 560, themeColors: true });

let images = new ImageStore(figma);
const send = (msg: MainToUi) => figma.ui.postMessage(msg);

figma.ui.onmessage = async (msg: UiToMain) => {
  switch (msg.type) {
    case "ready": {
      const settings = (await figma.clientStorage.getAsync(SETTINGS_KEY)) ?? null;
      // figma.fileKey is only given to private plugins; the UI asks the user otherwise.
      send({ type: "init", settings, fileKey: figma.fileKey ?? null });
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
        root.x = Math.round(center.x - root.width / 2);
        root.y = Math.round(center.y - root.height / 2);
        root.setPluginData("code2desId", msg.code2desId);
        figma.currentPage.selection = [root];
        figma.viewport.scrollAndZoomIntoView([root]);
        send({ type: "built", replyTo: msg.id, nodeId: root.id, nodes: built.nodes, warnings: built.warnings });
      } catch (e) {
        send({ type: "failed", replyTo: msg.id, message: String(e) });
      } finally {
        // The next result starts from an empty store: image bytes are not kept around.
        images = new ImageStore(figma);
      }
      return;
    case "close":
      figma.closePlugin();
      return;
  }
};
