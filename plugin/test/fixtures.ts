// A document with every node type and member openapi.yaml's `Node` describes, and its images:
// what the builder test builds directly and the UI test has the stack serve.

import type { Node } from "@code2des/client";
import { GIF_1X1, JPEG_1X1, SVG_LOGO, type WorkerImage, png } from "../../clients/typescript/test/stack.js";
import type { Images } from "./figma.js";

const svgText = new TextDecoder().decode(SVG_LOGO);

export const EVERY_TYPE: Node = {
  type: "FRAME",
  name: "Screen",
  x: 10,
  y: 20,
  width: 1440,
  height: 900,
  cornerRadius: 8,
  clipsContent: false,
  fills: [{ type: "SOLID", color: { r: 1, g: 1, b: 1 } }],
  children: [
    { type: "TEXT", name: "Title", characters: "Captured page", x: 80, y: 64, fontSize: 48, fontName: { family: "Roboto", style: "Bold" }, textAlignHorizontal: "CENTER", fills: [{ type: "SOLID", color: { r: 0.1, g: 0.1, b: 0.1 }, opacity: 0.9 }] },
    { type: "TEXT", name: "Missing font", characters: "falls back", fontName: { family: "No Such Font", style: "Regular" } },
    { type: "RECTANGLE", name: "Hero", x: 80, y: 160, width: 640, height: 400, cornerRadius: 4, fills: [{ type: "IMAGE", imageRef: "hero", scaleMode: "FILL" }], strokes: [{ type: "SOLID", color: { r: 0, g: 0, b: 0 } }], strokeWeight: 2 },
    { type: "ELLIPSE", name: "Avatar", x: 760, y: 160, width: 64, height: 64, opacity: 0.5, fills: [{ type: "IMAGE", imageRef: "photo", scaleMode: "CROP" }] },
    { type: "LINE", name: "Rule", x: 80, y: 600, width: 1280, rotation: 0, strokes: [{ type: "SOLID", color: { r: 0.8, g: 0.8, b: 0.8 } }], strokeWeight: 1 },
    { type: "VECTOR", name: "Arrow", x: 900, y: 640, width: 24, height: 24, vectorPaths: [{ windingRule: "EVENODD", data: "M 0 0 L 24 12 L 0 24 Z" }, { data: "M 4 4 L 8 8" }], fills: [{ type: "SOLID", color: { r: 0, g: 0.5, b: 1 } }] },
    { type: "SVG", name: "Logo", x: 1320, y: 64, width: 96, height: 48, imageRef: "logo" },
    {
      type: "GROUP",
      name: "Card",
      x: 100,
      y: 700,
      opacity: 0.8,
      children: [
        { type: "RECTANGLE", name: "Card bg", width: 300, height: 120, fills: [{ type: "IMAGE", imageRef: "badge" }] },
        { type: "TEXT", name: "Card text", x: 16, y: 16, characters: "Inside a group" },
        { type: "GROUP", name: "Nested", x: 200, y: 10, children: [{ type: "ELLIPSE", name: "Dot", width: 8, height: 8 }] },
      ],
    },
    { type: "GROUP", name: "Empty group", x: 5, y: 5, width: 10, height: 10 },
    {
      type: "RECTANGLE",
      name: "Leaf with children",
      x: 400,
      y: 800,
      width: 50,
      height: 50,
      children: [{ type: "TEXT", name: "Label of the leaf", x: 4, y: 4, characters: "child of a leaf" }],
    },
    { type: "FRAME", name: "Hidden frame", x: 1000, y: 700, width: 100, height: 100, visible: false, children: [{ type: "RECTANGLE", x: 10, y: 10, width: 10, height: 10 }] },
  ],
};

export const IMAGES: Images = {
  raster: new Map([
    ["hero", png(16, 9)],
    ["photo", JPEG_1X1],
    ["badge", GIF_1X1],
  ]),
  svg: new Map([["logo", svgText]]),
};

/** The same images as a worker writes them. */
export const WORKER_IMAGES: Record<string, WorkerImage> = {
  hero: { bytes: IMAGES.raster.get("hero") as Uint8Array, mimeType: "image/png" },
  photo: { bytes: JPEG_1X1, mimeType: "image/jpeg" },
  badge: { bytes: GIF_1X1, mimeType: "image/gif" },
  logo: { bytes: SVG_LOGO, mimeType: "image/svg+xml" },
};
