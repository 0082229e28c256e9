// The Figma plugin API for the tests: figma-api-stub (the plugin-API stub on the npm registry),
// plus the few members the builder uses that it lacks, made from its own mixins so they behave
// like its other nodes. Also the node-by-node comparison of a built tree with its document.
// No Node.js imports: the UI test bundles this file into the browser page too.

import { createFigma } from "figma-api-stub";
// Internal modules of figma-api-stub 0.0.57: the mixins its own node classes are made of.
import { applyMixins } from "figma-api-stub/dist/applyMixins.js";
import * as mixins from "figma-api-stub/dist/mixins.js";

import type { Node, Paint as DocPaint } from "@code2des/client";
import { FALLBACK_FONT, substitute } from "../src/fonts.js";

export interface TestFigma {
  figma: PluginAPI;
  /** Bytes of every image made with createImage, by hash. */
  imageBytes: Map<string, Uint8Array>;
  /** The SVG text each createNodeFromSvg frame was made from. */
  svgSource: WeakMap<object, string>;
  /** The ids of the nodes of each viewport.scrollAndZoomIntoView call. */
  scrolledTo: string[][];
  /** What clientStorage holds, by key. */
  storage: Map<string, unknown>;
}

/** Faces of a family: each weight name upright, then italic ("Italic" alone for Regular). */
const faces = (family: string, weights: string[], slope = "Italic"): FontName[] =>
  [false, true].flatMap((italic) =>
    weights.map((w) => ({ family, style: !italic ? w : w === "Regular" ? slope : `${w} ${slope}` })),
  );

/**
 * The fonts this Figma has, as Figma names their styles (the stub's own list calls Inter's
 * italic "Regular Italic" and lists Helvetica's "Oblique" twice); it refuses to load any other.
 * Roboto has no Semi Bold, so a missing Roboto Semi Bold has neighbours on both sides.
 */
export const FONTS: FontName[] = [
  ...faces("Inter", ["Thin", "Extra Light", "Light", "Regular", "Medium", "Semi Bold", "Bold", "Extra Bold", "Black"]),
  ...faces("Roboto", ["Thin", "Light", "Regular", "Medium", "Bold", "Black"]),
  ...faces("Helvetica", ["Light", "Regular", "Bold"], "Oblique"),
];
const listed = (font: FontName) => FONTS.some((f) => f.family === font.family && f.style === font.style);

/**
 * figma-api-stub 0.0.57 has no createEllipse, createLine, createVector, createNodeFromSvg,
 * getNodeByIdAsync, setCurrentPageAsync, viewport or clientStorage, its createImage keeps no
 * record of the bytes, and its
 * loadFontAsync loads any font at all. Those are filled in here, as close to Figma as the
 * builder needs: new nodes go to the current page, a line has height 0, an SVG becomes a frame
 * of the SVG's size, a font that is not in FONTS is refused.
 */
export function testFigma(): TestFigma {
  const config = { simulateErrors: true, isWithoutTimeout: true };
  const figma = createFigma(config) as unknown as PluginAPI & Record<string, unknown>;
  const base = [
    mixins.getBaseNodeMixinStub(config),
    mixins.getLayoutMixinStub(config),
    mixins.ExportMixinStub,
    mixins.GeometryMixinStub,
  ];
  let nextId = 1000;
  const make = (type: string) => {
    class Stub {
      type = type;
      id = `2:${nextId++}`;
      config = config;
    }
    applyMixins(Stub, base);
    const node = new Stub() as unknown as SceneNode;
    (figma.currentPage as unknown as ChildrenMixin).appendChild(node);
    return node;
  };
  figma.createEllipse = () => make("ELLIPSE") as EllipseNode;
  figma.createVector = () => make("VECTOR") as VectorNode;
  figma.createLine = () => {
    const line = make("LINE") as LineNode & { resize(w: number, h: number): void };
    // Figma lets a line (and only a line) have height 0.
    line.resize = function (this: { width: number; height: number }, w: number, h: number) {
      if (h !== 0) throw new Error("Error: a line's height must be 0");
      this.width = w;
      this.height = 0;
    };
    return line;
  };

  const svgSource = new WeakMap<object, string>();
  figma.createNodeFromSvg = (svg: string) => {
    const m = /<svg\b[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"/.exec(svg);
    if (!/<svg\b/.test(svg)) throw new Error("Error: failed to parse SVG");
    const frame = figma.createFrame();
    frame.resize(Number(m?.[1] ?? 100), Number(m?.[2] ?? 100));
    svgSource.set(frame, svg);
    return frame;
  };

  const imageBytes = new Map<string, Uint8Array>();
  const createImage = figma.createImage.bind(figma);
  figma.createImage = (bytes: Uint8Array) => {
    const image = createImage(bytes);
    imageBytes.set(image.hash, bytes);
    return image;
  };

  // figma-api-stub 0.0.57 has no GRID: a frame's grid tracks are kept as Figma keeps them (new
  // tracks FLEX, counts below 1 refused) and a child is placed in a cell of its GRID parent,
  // refused outside the grid or in an occupied cell, as Figma refuses it.
  const track = (): GridTrackSize => ({ type: "FLEX", value: 1 });
  const gridded = (node: SceneNode) => {
    const g = node as SceneNode & { _rows?: GridTrackSize[]; _cols?: GridTrackSize[] };
    const resize = (key: "_rows" | "_cols") => (n: number) => {
      if (!(n >= 1)) throw new Error("Error: a grid needs at least one track");
      const list = g[key] ?? [];
      g[key] = Array.from({ length: n }, (_, i) => list[i] ?? track());
    };
    Object.defineProperties(g, {
      gridRowCount: { get: () => (g._rows ?? [track()]).length, set: resize("_rows"), configurable: true },
      gridColumnCount: { get: () => (g._cols ?? [track()]).length, set: resize("_cols"), configurable: true },
      gridRowSizes: { get: () => (g._rows ??= [track()]), configurable: true },
      gridColumnSizes: { get: () => (g._cols ??= [track()]), configurable: true },
    });
    Object.assign(g, {
      // A style applied is recorded by its id; an unknown id is refused, as Figma refuses it.
      async setFillStyleIdAsync(this: SceneNode & { fillStyleId?: string }, id: string) {
        if (!figma.getStyleById(id)) throw new Error(`Error: no style ${id}`);
        this.fillStyleId = id;
      },
      async setTextStyleIdAsync(this: SceneNode & { textStyleId?: string }, id: string) {
        if (!figma.getStyleById(id)) throw new Error(`Error: no style ${id}`);
        this.textStyleId = id;
      },
      setGridChildPosition(this: SceneNode & { gridRowAnchorIndex?: number; gridColumnAnchorIndex?: number }, r: number, c: number) {
        const parent = this.parent as (FrameNode & { layoutMode: string }) | null;
        if (!parent || parent.layoutMode !== "GRID") throw new Error("Error: not in a GRID frame");
        if (r < 0 || c < 0 || r >= parent.gridRowCount || c >= parent.gridColumnCount) throw new Error("Error: cell out of bounds");
        const taken = parent.children.some(
          (o) => o !== this && (o as typeof this).gridRowAnchorIndex === r && (o as typeof this).gridColumnAnchorIndex === c,
        );
        if (taken) throw new Error("Error: the cell is occupied");
        this.gridRowAnchorIndex = r;
        this.gridColumnAnchorIndex = c;
      },
    });
    return node;
  };
  // figma-api-stub 0.0.57 has no auto layout sizing either: a node's layoutSizingHorizontal,
  // layoutSizingVertical and layoutPositioning are refused where Figma refuses them (FILL and
  // ABSOLUTE outside an auto layout frame, HUG on a layer that is neither text nor an auto
  // layout frame), and resizing an auto layout frame makes it FIXED again, as in Figma.
  const autoLayout = (n: BaseNode | null) => {
    const mode = (n as { layoutMode?: string } | null)?.layoutMode;
    return mode === "HORIZONTAL" || mode === "VERTICAL";
  };
  const sized = (node: SceneNode) => {
    const g = node as SceneNode & { _h?: string; _v?: string; _pos?: string; resize(w: number, h: number): void };
    const sizing = (key: "_h" | "_v", member: string) => ({
      get: () => g[key] ?? "FIXED",
      set: (v: string) => {
        if (v === "FILL" && !autoLayout(g.parent)) throw new Error(`Error: ${member} FILL outside an auto layout frame`);
        if (v === "HUG" && g.type !== "TEXT" && !autoLayout(g)) throw new Error(`Error: ${member} HUG on a layer without auto layout`);
        g[key] = v;
      },
      configurable: true,
    });
    // Wrapping: rows only, and the rows' spacing once the frame wraps, as Figma refuses both.
    const w = g as typeof g & { _wrap?: string; _rowGap?: number; layoutMode?: string; itemSpacing?: number };
    Object.defineProperties(g, {
      layoutWrap: {
        get: () => w._wrap ?? "NO_WRAP",
        set: (v: string) => {
          if (v === "WRAP" && w.layoutMode !== "HORIZONTAL") throw new Error("Error: layoutWrap WRAP needs layoutMode HORIZONTAL");
          w._wrap = v;
        },
        configurable: true,
      },
      counterAxisSpacing: {
        get: () => w._rowGap ?? w.itemSpacing ?? 0,
        set: (v: number) => {
          if (w._wrap !== "WRAP") throw new Error("Error: counterAxisSpacing needs layoutWrap WRAP");
          if (!(v >= 0)) throw new Error("Error: counterAxisSpacing must be positive");
          w._rowGap = v;
        },
        configurable: true,
      },
      layoutSizingHorizontal: sizing("_h", "layoutSizingHorizontal"),
      layoutSizingVertical: sizing("_v", "layoutSizingVertical"),
      layoutPositioning: {
        get: () => g._pos ?? "AUTO",
        set: (v: string) => {
          if (v === "ABSOLUTE" && !autoLayout(g.parent)) throw new Error("Error: ABSOLUTE outside an auto layout frame");
          g._pos = v;
        },
        configurable: true,
      },
    });
    const resize = g.resize;
    if (typeof resize === "function") {
      g.resize = function (this: typeof g, w: number, h: number) {
        resize.call(this, w, h);
        if (autoLayout(this)) this._h = this._v = "FIXED";
      };
    }
    return node;
  };
  for (const name of ["createFrame", "createRectangle", "createEllipse", "createVector", "createLine"] as const) {
    const create = (figma[name] as () => SceneNode).bind(figma);
    (figma as unknown as Record<string, () => SceneNode>)[name] = () => sized(gridded(create()));
  }

  // figma-api-stub's components are no frames (no grid, no styles) and their instances copy
  // the component's layers with the stub's methods still bound to the originals: a component
  // here is a frame of type COMPONENT, and an instance a fresh copy of its layers, each made by
  // the same create* as the original, so overrides land on the copy. A layer inside an instance
  // cannot be removed or given children, as in Figma.
  const copyOf = (from: SceneNode): SceneNode => {
    const kind = from.type === "COMPONENT" || from.type === "INSTANCE" ? "FRAME" : from.type;
    const create: Record<string, () => SceneNode> = {
      FRAME: () => figma.createFrame(),
      TEXT: () => figma.createText(),
      RECTANGLE: () => figma.createRectangle(),
      ELLIPSE: () => figma.createEllipse(),
      LINE: () => figma.createLine(),
      VECTOR: () => figma.createVector(),
    };
    const make = create[kind];
    if (!make) throw new Error(`Error: the stub cannot copy a ${from.type} into an instance`);
    const to = make() as SceneNode & Record<string, unknown>;
    for (const [k, v] of Object.entries(from)) {
      if (k === "id" || k === "parent" || k === "children" || k === "config" || typeof v === "function") continue;
      to[k] = k === "mainComponent" ? v : structuredClone(v);
    }
    const svg = svgSource.get(from);
    if (svg !== undefined) svgSource.set(to, svg);
    for (const c of (from as Partial<ChildrenMixin>).children ?? []) (to as unknown as ChildrenMixin).appendChild(copyOf(c));
    // A nested instance copied into an instance is still an instance (Figma's nested instances).
    if (from.type === "INSTANCE") asInstance(to, (from as InstanceNode).mainComponent as ComponentNode);
    return to;
  };
  // An instance of `component`, which can swap to another: its layers become a copy of that
  // one's (Figma keeps overrides it can match; the Builder sets them again after the swap).
  const asInstance = (node: SceneNode, component: ComponentNode): InstanceNode => {
    const instance = node as unknown as InstanceNode & { type: string; mainComponent: ComponentNode };
    instance.type = "INSTANCE";
    instance.mainComponent = component;
    instance.swapComponent = (other: ComponentNode) => {
      if (other.type !== "COMPONENT") throw new Error("Error: swapComponent needs a COMPONENT");
      // Figma replaces the layers itself (a plugin may remove none inside an instance).
      (instance as unknown as { children: SceneNode[] }).children = [];
      for (const c of other.children) instance.appendChild(copyOf(c));
      instance.mainComponent = other;
    };
    return instance;
  };
  figma.createComponent = () => {
    const component = figma.createFrame() as unknown as ComponentNode & { type: string };
    component.type = "COMPONENT";
    component.createInstance = () => asInstance(copyOf(component), component);
    return component;
  };

  // With "documentAccess": "dynamic-page" Figma lists local styles asynchronously only.
  Object.assign(figma, {
    getLocalPaintStylesAsync: async () => figma.getLocalPaintStyles(),
    getLocalTextStylesAsync: async () => figma.getLocalTextStyles(),
  });

  // figma-api-stub's text nodes have no setRange* but the list options, and no hyperlink:
  // each range is recorded as Figma keeps it, per character, refused outside the text or for a
  // font not loaded, as Figma refuses them.
  const createText = figma.createText.bind(figma);
  figma.createText = () => {
    const text = sized(createText()) as TextNode & { ranges?: RangeStyle[] };
    const record = (field: keyof RangeStyle) => (start: number, end: number, value: unknown) => {
      if (!(start >= 0 && end > start && end <= text.characters.length)) {
        throw new Error(`Error: range ${start}..${end} outside ${text.characters.length} characters`);
      }
      if (field === "fontName" && !listed(value as FontName)) throw new Error("Error: font not loaded");
      text.ranges ??= Array.from({ length: text.characters.length }, () => ({}));
      for (let i = start; i < end; i++) text.ranges[i] = { ...text.ranges[i], [field]: structuredClone(value) };
    };
    Object.assign(text, {
      setRangeFontName: record("fontName"),
      setRangeFontSize: record("fontSize"),
      setRangeFills: record("fills"),
      setRangeTextDecoration: record("textDecoration"),
      setRangeTextCase: record("textCase"),
      setRangeLetterSpacing: record("letterSpacing"),
      setRangeLineHeight: record("lineHeight"),
      setRangeHyperlink: record("hyperlink"),
      setRangeTextDecorationStyle: record("textDecorationStyle"),
      setRangeTextDecorationOffset: record("textDecorationOffset"),
      setRangeTextDecorationThickness: record("textDecorationThickness"),
      setRangeTextDecorationColor: record("textDecorationColor"),
      setRangeTextDecorationSkipInk: record("textDecorationSkipInk"),
      setRangeTextStyleIdAsync: async (start: number, end: number, id: string) => {
        if (!figma.getStyleById(id)) throw new Error(`Error: no style ${id}`);
        record("textStyleId")(start, end, id);
      },
      setRangeFillStyleIdAsync: async (start: number, end: number, id: string) => {
        if (!figma.getStyleById(id)) throw new Error(`Error: no style ${id}`);
        record("fillStyleId")(start, end, id);
      },
    });
    wholeText(text);
    return gridded(text) as TextNode;
  };
  // Figma's whole-text setters set every character: what the ranges held of that field goes.
  // Characters replaced all at once take the first character's style, as Figma's do. (The stub
  // keeps neither: an instance's text rewritten would keep its component's runs.)
  const wholeText = (text: TextNode & { ranges?: RangeStyle[] }) => {
    const fields = ["fontName", "fontSize", "fills", "textDecoration", "textCase", "letterSpacing", "lineHeight", "hyperlink"] as const;
    const accessor = (field: string): PropertyDescriptor | undefined => {
      for (let o = Object.getPrototypeOf(text); o; o = Object.getPrototypeOf(o)) {
        const d = Object.getOwnPropertyDescriptor(o, field);
        if (d) return d.set ? d : undefined;
      }
      return undefined;
    };
    const own = text as unknown as Record<string, unknown>;
    const wrap = (field: string, after: (v: unknown) => void) => {
      const inherited = accessor(field);
      // A plain field is kept in an enumerable twin, which copies (an instance's layers) take.
      const twin = `_whole_${field}`;
      if (!inherited && field in own) own[twin] = own[field];
      Object.defineProperty(text, field, {
        get: () => (inherited ? inherited.get!.call(text) : own[twin]),
        set: (v: unknown) => {
          if (inherited) inherited.set!.call(text, v);
          else own[twin] = v;
          after(v);
        },
        configurable: true,
        enumerable: false,
      });
    };
    for (const field of fields) {
      // Setting a field a style holds detaches the ranges from that style too.
      const style = field === "fills" ? "fillStyleId" : field === "hyperlink" ? undefined : "textStyleId";
      wrap(field, () => {
        for (const r of text.ranges ?? []) {
          delete r[field];
          if (style) delete r[style];
        }
      });
    }
    wrap("characters", (v) => {
      if (!text.ranges) return;
      const first = text.ranges[0] ?? {};
      text.ranges = Array.from({ length: String(v).length }, () => structuredClone(first));
    });
  };

  const loadFont = figma.loadFontAsync.bind(figma);
  figma.loadFontAsync = async (font: FontName) => {
    if (!listed(font)) throw new Error(`The font "${font.family} ${font.style}" could not be loaded`);
    await loadFont(font);
  };
  figma.listAvailableFontsAsync = async () => FONTS.map((fontName) => ({ fontName: { ...fontName } }));

  // With "documentAccess": "dynamic-page" Figma has only the async forms of these.
  const getNodeById = (figma as unknown as { getNodeById(id: string): BaseNode | null }).getNodeById.bind(figma);
  const scrolledTo: string[][] = [];
  const store = new Map<string, unknown>();
  Object.assign(figma, {
    getNodeByIdAsync: async (id: string) => getNodeById(id),
    setCurrentPageAsync: async (page: PageNode) => {
      figma.currentPage = page;
    },
    viewport: {
      center: { x: 0, y: 0 },
      zoom: 1,
      scrollAndZoomIntoView: (nodes: readonly BaseNode[]) => void scrolledTo.push(nodes.map((n) => n.id)),
    },
    clientStorage: {
      // A structured clone, as Figma stores it: nothing shared with the caller's object.
      getAsync: async (k: string) => structuredClone(store.get(k)),
      setAsync: async (k: string, v: unknown) => void store.set(k, structuredClone(v)),
    },
    fileKey: undefined,
    closePlugin: () => {},
  });
  return { figma, imageBytes, svgSource, scrolledTo, storage: store };
}

/** What the stub's setRange* calls recorded for one character. */
export interface RangeStyle {
  fontName?: FontName;
  fontSize?: number;
  fills?: Paint[];
  textDecoration?: string;
  textCase?: string;
  letterSpacing?: LetterSpacing;
  lineHeight?: LineHeight;
  hyperlink?: HyperlinkTarget;
  textDecorationStyle?: TextDecorationStyle;
  textDecorationOffset?: TextDecorationOffset;
  textDecorationThickness?: TextDecorationThickness;
  textDecorationColor?: TextDecorationColor;
  textDecorationSkipInk?: boolean;
  textStyleId?: string;
  fillStyleId?: string;
}

// --- the built tree against its document -------------------------------------------------------

export interface Images {
  /** The result's images as bytes (raster) or text (SVG), by imageRef. */
  raster: Map<string, Uint8Array>;
  svg: Map<string, string>;
}

type Built = SceneNode & Partial<ChildrenMixin>;

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array | undefined) =>
  a !== undefined && b !== undefined && a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * Compares a built Figma tree with the document it was built from, node by node, and answers
 * every difference (an empty list when they match) and how many nodes were compared. The rules
 * are the builder's contract (openapi.yaml `Node`), written out again independently: positions
 * are parent-relative, a GROUP's members sit in its parent's space, a leaf's children follow it.
 */
export function compareTree(doc: Node, root: SceneNode, t: TestFigma, images: Images, beside: readonly SceneNode[] = []) {
  const diffs: string[] = [];
  let compared = 0;
  /** The built component of each document COMPONENT's id, as met (before its instances). */
  const components = new Map<string, Built>();
  const eq = (path: string, what: string, got: unknown, want: unknown) => {
    if (canonical(got) !== canonical(want)) {
      diffs.push(`${path}: ${what} is ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
  };
  const close = (path: string, what: string, got: number, want: number) => {
    if (Math.abs(got - want) > 1e-6) diffs.push(`${path}: ${what} is ${got}, want ${want}`);
  };

  const paints = (path: string, what: string, got: readonly Paint[] | undefined, want: DocPaint[]) => {
    eq(path, `${what} count`, got?.length ?? 0, want.length);
    want.forEach((w, i) => {
      const g = got?.[i];
      if (w.type === "SOLID") {
        eq(path, `${what}[${i}]`, g, { type: "SOLID", color: w.color, ...(w.opacity === undefined ? {} : { opacity: w.opacity }) });
      } else if (w.type === "GRADIENT_LINEAR") {
        eq(path, `${what}[${i}].type`, g?.type, "GRADIENT_LINEAR");
        eq(path, `${what}[${i}].gradientStops`, (g as GradientPaint | undefined)?.gradientStops, w.gradientStops);
      } else {
        eq(path, `${what}[${i}].type`, g?.type, "IMAGE");
        eq(path, `${what}[${i}].scaleMode`, (g as ImagePaint | undefined)?.scaleMode, w.scaleMode ?? "FILL");
        const hash = (g as ImagePaint | undefined)?.imageHash ?? "";
        if (!sameBytes(t.imageBytes.get(hash), images.raster.get(w.imageRef))) {
          diffs.push(`${path}: ${what}[${i}] is not image ${w.imageRef}'s bytes`);
        }
      }
    });
  };

  /** Checks `doc` against `node`, placed from (ox, oy) in its Figma parent's coordinates. */
  /** The Figma nodes built of document nodes with an `id`, and the checks of links to them. */
  const ids = new Map<string, Built>();
  const later: (() => void)[] = [];
  const linked = (h: HyperlinkTarget | undefined) =>
    h?.type === "NODE" ? { type: "NODE", value: ids.get(h.value)?.id ?? `(no node of id ${h.value})` } : h;
  const one = (d: Node, node: Built | undefined, ox: number, oy: number, path: string): void => {
    if (!node) {
      diffs.push(`${path}: no node built`);
      return;
    }
    compared++;
    if (d.type === "COMPONENT") components.set(d.id, node);
    if (d.id !== undefined) ids.set(d.id, node);
    if (d.type === "INSTANCE") {
      const main = (node as Partial<InstanceNode>).mainComponent;
      if (!main || main !== components.get(d.componentId)) diffs.push(`${path}: not an instance of component ${d.componentId}`);
    }
    const isEmptyGroup = d.type === "GROUP" && (d.children ?? []).length === 0;
    const figmaType = d.type === "SVG" || isEmptyGroup ? "FRAME" : d.type;
    eq(path, "type", node.type, figmaType);
    if (d.name !== undefined) eq(path, "name", node.name, d.name);
    if (d.type === "SVG") eq(path, "svg source", t.svgSource.get(node), images.svg.get(d.imageRef));
    if (d.type !== "GROUP" || isEmptyGroup) {
      close(path, "x", node.x, ox + (d.x ?? 0));
      close(path, "y", node.y, oy + (d.y ?? 0));
      if (d.type === "LINE") {
        if (d.width !== undefined) close(path, "width", node.width, d.width);
        close(path, "height", node.height, 0);
      } else if (d.type === "SVG") {
        if (d.width !== undefined && d.height !== undefined) {
          // Scaled uniformly to fit: one side matches, the other is within.
          const fits = node.width <= d.width + 1e-6 && node.height <= d.height + 1e-6;
          const touches = Math.abs(node.width - d.width) < 1e-6 || Math.abs(node.height - d.height) < 1e-6;
          if (!fits || !touches) diffs.push(`${path}: SVG is ${node.width}x${node.height}, want it to fit ${d.width}x${d.height}`);
        }
      } else {
        // Inside an instance, a text box that follows its text is sized by Figma's own line
        // breaking, and an auto layout frame that HUGs by Figma's own layout of what it holds
        // (a badge wrapped onto a second row as the instance's longer name pushes it: a layer
        // there cannot be resized): the stub has neither, so those sizes are not compared.
        const inside = insideInstance(node);
        const follows = d.type === "TEXT" && inside ? d.textAutoResize : undefined;
        const hugs = (sizing: string | undefined) => inside && frameLike(d) && d.layoutMode !== undefined && sizing === "HUG";
        const freeWidth = follows === "WIDTH_AND_HEIGHT" || hugs(d.layoutSizingHorizontal);
        const freeHeight = follows === "HEIGHT" || follows === "WIDTH_AND_HEIGHT" || hugs(d.layoutSizingVertical);
        // Figma's smallest side is 0.01 px (a converted page has empty boxes of height 0).
        if (d.width !== undefined && !freeWidth) close(path, "width", node.width, Math.max(d.width, 0.01));
        if (d.height !== undefined && !freeHeight) close(path, "height", node.height, Math.max(d.height, 0.01));
      }
    }
    const n = node as Built & Partial<MinimalFillsMixin & MinimalStrokesMixin & BlendMixin & CornerMixin & LayoutMixin>;
    if (d.rotation !== undefined) eq(path, "rotation", n.rotation, d.rotation);
    if (d.opacity !== undefined) eq(path, "opacity", n.opacity, d.opacity);
    if (d.visible !== undefined) eq(path, "visible", n.visible, d.visible);
    if (d.type !== "GROUP") {
      if (d.fills !== undefined) paints(path, "fills", n.fills as readonly Paint[], d.fills);
      if (d.strokes !== undefined) paints(path, "strokes", n.strokes as readonly Paint[], d.strokes);
      if (d.strokeWeight !== undefined) eq(path, "strokeWeight", n.strokeWeight, d.strokeWeight);
    }
    if ((frameLike(d) || d.type === "RECTANGLE") && d.cornerRadius !== undefined) {
      eq(path, "cornerRadius", n.cornerRadius, d.cornerRadius);
    }
    if (frameLike(d) && d.clipsContent !== undefined) eq(path, "clipsContent", (node as FrameNode).clipsContent, d.clipsContent);
    if (frameLike(d) && d.layoutMode === "GRID") {
      const g = node as FrameNode;
      eq(path, "layoutMode", g.layoutMode, "GRID");
      eq(path, "gridRowCount", g.gridRowCount, d.gridRowCount);
      eq(path, "gridColumnCount", g.gridColumnCount, d.gridColumnCount);
      const sizes = (got: readonly GridTrackSize[], want: typeof d.gridRowSizes) =>
        (want ?? []).map((w, i) => ({ type: got[i]?.type, value: w.type === "HUG" ? undefined : got[i]?.value })).map((x, i) => [x, want?.[i]]);
      for (const [got, want] of sizes(g.gridRowSizes, d.gridRowSizes)) eq(path, "gridRowSizes", got, { type: want?.type, value: want?.type === "HUG" ? undefined : want?.value });
      for (const [got, want] of sizes(g.gridColumnSizes, d.gridColumnSizes)) eq(path, "gridColumnSizes", got, { type: want?.type, value: want?.type === "HUG" ? undefined : want?.value });
    }
    // A node on a shared style is on the file's style of that name.
    const styleName = (id: unknown) => (typeof id === "string" ? t.figma.getStyleById(id)?.name : undefined);
    const docStyle = (id: string | undefined) => (doc.type === "FRAME" ? doc.styles ?? [] : []).find((st) => st.id === id)?.name;
    if (d.fillStyleId !== undefined) eq(path, "fill style", styleName((node as { fillStyleId?: unknown }).fillStyleId), docStyle(d.fillStyleId));
    if (d.type === "TEXT" && d.textStyleId !== undefined) {
      eq(path, "text style", styleName((node as { textStyleId?: unknown }).textStyleId), docStyle(d.textStyleId));
    }
    // Auto layout: the document's sizing and positioning, where it gives them.
    const laid = node as SceneNode & Partial<LayoutMixin & AutoLayoutChildrenMixin>;
    if (d.layoutPositioning !== undefined) eq(path, "layoutPositioning", laid.layoutPositioning, d.layoutPositioning);
    if (d.layoutSizingHorizontal !== undefined) eq(path, "layoutSizingHorizontal", laid.layoutSizingHorizontal, d.layoutSizingHorizontal);
    if (d.layoutSizingVertical !== undefined) eq(path, "layoutSizingVertical", laid.layoutSizingVertical, d.layoutSizingVertical);
    if (frameLike(d) && (d.layoutMode === "HORIZONTAL" || d.layoutMode === "VERTICAL")) eq(path, "layoutMode", (node as FrameNode).layoutMode, d.layoutMode);
    if (frameLike(d) && d.layoutWrap !== undefined) eq(path, "layoutWrap", (node as FrameNode).layoutWrap, d.layoutWrap);
    if (frameLike(d) && d.counterAxisSpacing !== undefined) eq(path, "counterAxisSpacing", (node as FrameNode).counterAxisSpacing, d.counterAxisSpacing);
    if (d.gridRowAnchorIndex !== undefined) {
      const c = node as SceneNode & { gridRowAnchorIndex?: number; gridColumnAnchorIndex?: number };
      eq(path, "grid cell", [c.gridRowAnchorIndex, c.gridColumnAnchorIndex], [d.gridRowAnchorIndex, d.gridColumnAnchorIndex]);
    }
    if (d.type === "TEXT") {
      const text = node as TextNode;
      eq(path, "characters", text.characters, d.characters ?? "");
      if (d.fontSize !== undefined) eq(path, "fontSize", text.fontSize, d.fontSize);
      const wantFont = !d.fontName ? FALLBACK_FONT : listed(d.fontName) ? d.fontName : substitute(d.fontName, FONTS);
      eq(path, "fontName", text.fontName, wantFont);
      if (d.textAlignHorizontal !== undefined) eq(path, "textAlignHorizontal", text.textAlignHorizontal, d.textAlignHorizontal);
      eq(path, "paragraphIndent", text.paragraphIndent ?? 0, d.paragraphIndent ?? 0);
      const h = d.hyperlink;
      if (h !== undefined) later.push(() => eq(path, "hyperlink", text.hyperlink, linked(h)));
      const ranges = (text as TextNode & { ranges?: RangeStyle[] }).ranges ?? [];
      // A text of one style has no runs of another (an instance's text keeps none of its
      // component's).
      if (d.segments === undefined) {
        const runs = ranges.filter((r) => r.fontName !== undefined || r.fontSize !== undefined || r.fills !== undefined);
        eq(path, "characters styled apart", runs.length, 0);
      }
      for (const seg of d.segments ?? []) {
        // Every character of the segment carries its style (the font as substituted).
        const font = listed(seg.fontName) ? seg.fontName : substitute(seg.fontName, FONTS);
        for (const i of [seg.start, seg.end - 1]) {
          const r = ranges[i] ?? {};
          const at = `${path}.segments[${seg.start}..${seg.end}] @${i}`;
          eq(at, "fontName", r.fontName, font);
          eq(at, "fontSize", r.fontSize, seg.fontSize);
          eq(at, "textDecoration", r.textDecoration, seg.textDecoration);
          later.push(() => eq(at, "hyperlink", r.hyperlink, linked(seg.hyperlink)));
        }
      }
    }
    if (d.type === "VECTOR" && d.vectorPaths !== undefined) {
      eq(path, "vectorPaths", (node as VectorNode).vectorPaths, d.vectorPaths.map((p) => ({ windingRule: p.windingRule ?? "NONZERO", data: p.data })));
    }
  };

  /** The Figma nodes expected at one level for `kids`, each with its own origin. */
  const level = (kids: Node[], ox: number, oy: number, path: string) => {
    const out: { d: Node; ox: number; oy: number; path: string }[] = [];
    kids.forEach((d, i) => {
      const p = `${path}/${i}:${d.type}`;
      out.push({ d, ox, oy, path: p });
      const nests = frameLike(d) || d.type === "GROUP";
      if (!nests) out.push(...level(d.children ?? [], ox + (d.x ?? 0), oy + (d.y ?? 0), p));
    });
    return out;
  };

  const walk = (d: Node, node: Built | undefined, ox: number, oy: number, path: string) => {
    one(d, node, ox, oy, path);
    if (!node) return;
    const kids = d.children ?? [];
    if (frameLike(d)) {
      match(level(kids, 0, 0, path), node.children ?? [], path);
    } else if (d.type === "GROUP" && kids.length > 0) {
      // The group's members keep the coordinates of the group's parent.
      match(level(kids, ox + (d.x ?? 0), oy + (d.y ?? 0), path), node.children ?? [], path);
    }
  };

  const match = (want: ReturnType<typeof level>, got: readonly SceneNode[], path: string) => {
    eq(path, "child count", got.length, want.length);
    want.forEach((w, i) => walk(w.d, got[i] as Built | undefined, w.ox, w.oy, w.path));
  };

  // The components beside the screen (the root's `components`) first, as the Builder builds
  // them: placed from the root's top-left, in the root's parent.
  const aside = doc.type === "FRAME" ? doc.components ?? [] : [];
  eq("beside", "count", beside.length, aside.length);
  aside.forEach((c, i) => walk(c, beside[i] as Built | undefined, doc.x ?? 0, doc.y ?? 0, `beside[${i}]:${c.type}`));
  walk(doc, root as Built, 0, 0, `0:${doc.type}`);
  // Links once every node is built: a NODE hyperlink goes to the Figma node built of the
  // document node of its id, which may come later (a table of contents).
  for (const check of later) check();
  return { diffs, compared };
}

/** The node is a layer of an instance. */
function insideInstance(node: BaseNode): boolean {
  for (let p = node.parent; p; p = p.parent) if (p.type === "INSTANCE") return true;
  return false;
}

/** A FRAME, or a COMPONENT or an INSTANCE: Figma builds each as a frame of its children. */
function frameLike(d: Node): d is Node & { type: "FRAME" | "COMPONENT" | "INSTANCE" } {
  return d.type === "FRAME" || d.type === "COMPONENT" || d.type === "INSTANCE";
}

/** JSON with object keys sorted: the API does not keep a document's key order. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** Every node of a document, children included (what the builder must make, leaves' children too). */
export function countNodes(doc: Node): number {
  const beside = doc.type === "FRAME" ? doc.components ?? [] : [];
  return 1 + [...beside, ...(doc.children ?? [])].reduce((n, c) => n + countNodes(c), 0);
}
