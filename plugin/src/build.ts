// Builds a Code2Des result document as native Figma nodes with the plugin API. Pure over the
// `PluginAPI` it is given (the real `figma` in the plugin, a stub in the tests), so the tests
// run exactly this code. The node schema is openapi.yaml's `Node` (SPEC section 4).

import type { Node, Paint as DocPaint, Style as DocStyle, TextSegment } from "@code2des/client";
import { FALLBACK_FONT, substitute } from "./fonts.js";

type Container = BaseNode & ChildrenMixin;
/** A document node Figma builds as a frame: a FRAME, a COMPONENT, an INSTANCE. */
type FrameDoc = Node & { type: "FRAME" | "COMPONENT" | "INSTANCE" };

/** Images received from the UI, by imageRef: raster ones as Figma image hashes, SVG as text. */
export class ImageStore {
  readonly hashes = new Map<string, string>();
  readonly svgs = new Map<string, string>();

  constructor(private readonly figma: PluginAPI) {}

  /** `figma.createImage` checks the bytes (PNG, JPEG or GIF, at most 4096 px a side). */
  addRaster(ref: string, bytes: Uint8Array): void {
    this.hashes.set(ref, this.figma.createImage(bytes).hash);
  }

  addSvg(ref: string, svg: string): void {
    this.svgs.set(ref, svg);
  }
}

/**
 * Plugin data on every node the Builder makes: the document node's child indices from the
 * root, as `indexKey` writes them. Kept in the file, so a warning's `indices` still find their
 * layer in a later session, after the designer renamed, reordered or regrouped layers inside the
 * design (./report.ts).
 */
export const INDICES_KEY = "code2des.indices";
/** Plugin data on a design's root: the job it was built from (code.ts sets it). */
export const JOB_KEY = "code2desId";

/** `[2, 0]` → `"[2,0]"`; the root is `"[]"`. */
export const indexKey = (indices: readonly number[]) => JSON.stringify(indices);

/** What the Builder itself could not render as the document asked: the plugin's part of the fidelity report. */
export interface BuildWarning {
  code: "font_substituted" | "empty_group" | "paint_skipped" | "segment_skipped" | "instance_unresolved" | "link_unresolved";
  message: string;
  /** The document node's name, when it has one. */
  node?: string;
  /** The document node's child indices from the root (for a font: its first text layer). */
  indices: number[];
}

/** One row of a gradient's 2×3 transform. */
function row(r: number[] | undefined): [number, number, number] {
  return [r?.[0] ?? 0, r?.[1] ?? 0, r?.[2] ?? 0];
}

export interface Built {
  root: SceneNode;
  /**
   * The components built beside the root (the document root's `components`: icons its
   * instances swap in), placed from its top-left: whoever moves the root moves them too.
   */
  beside: SceneNode[];
  /** Figma nodes created, the root included. */
  nodes: number;
  /** What could not be rendered as the document asked (font fallbacks, empty groups, …). */
  warnings: BuildWarning[];
}

export class Builder {
  private fonts = new Map<string, Promise<FontName>>();
  /** Figma's font list, asked for once, at the first font it cannot load. */
  private available: Promise<Font[]> | undefined;
  private warnings: BuildWarning[] = [];
  /** One warning per unavailable font, counting the text layers it concerns. */
  private substituted = new Map<string, { warning: BuildWarning; layers: number }>();
  private count = 0;
  /** The document's styles (its root's `styles`) as this file's local styles, by the document's id. */
  private styles = new Map<string, string>();
  /** The components built so far, by the document's `id`, with the document node each was built from. */
  private components = new Map<string, { node: ComponentNode; doc: Node }>();
  /** The layers built of nodes with an `id`, by that id: where NODE hyperlinks go. */
  private ids = new Map<string, SceneNode>();
  /**
   * NODE hyperlinks waiting for the tree to be built (a table of contents links to layers
   * further on): each names a document `id`, which becomes the Figma node's own id.
   */
  private nodeLinks: { text: TextNode; range?: [number, number]; id: string; doc: Node; at: number[] }[] = [];

  constructor(
    private readonly figma: PluginAPI,
    private readonly images: ImageStore,
  ) {}

  /** Builds `doc` into `parent` (the current page by default) and answers its root. */
  async build(doc: Node, parent: Container = this.figma.currentPage): Promise<Built> {
    this.warnings = [];
    this.substituted.clear();
    this.count = 0;
    this.components.clear();
    this.ids.clear();
    this.nodeLinks = [];
    this.styles = await this.localStyles(doc.type === "FRAME" ? doc.styles ?? [] : []);
    // The components beside the screen first: the screen's instances swap them in. They are
    // no layer of the screen, so their warnings name them by name, with the root's indices.
    const beside: SceneNode[] = [];
    for (const c of doc.type === "FRAME" ? doc.components ?? [] : []) {
      beside.push(...(await this.node(c, parent, doc.x ?? 0, doc.y ?? 0, [])));
    }
    const roots = await this.node(doc, parent, 0, 0, []);
    const root = roots[0];
    if (!root) throw new Error("the document built no node");
    this.linkNodes();
    return { root, beside, nodes: this.count, warnings: this.warnings };
  }

  /** Points each NODE hyperlink at the Figma node built of the document node it names. */
  private linkNodes(): void {
    for (const { text, range, id, doc, at } of this.nodeLinks) {
      const target = this.ids.get(id);
      if (target === undefined) {
        this.warn("link_unresolved", `a link to ${JSON.stringify(id)} names no node of the document: left without a link`, doc, at);
        continue;
      }
      const link: HyperlinkTarget = { type: "NODE", value: target.id };
      if (range === undefined) text.hyperlink = link;
      else text.setRangeHyperlink(range[0], range[1], link);
    }
  }

  /** A text's hyperlink (`range` one of its runs): a URL now, a node once the tree is built. */
  private hyperlink(text: TextNode, link: { type: "URL" | "NODE"; value: string }, doc: Node, at: number[], range?: [number, number]): void {
    if (link.type === "NODE") this.nodeLinks.push({ text, range, id: link.value, doc, at });
    else if (range === undefined) text.hyperlink = { ...link };
    else text.setRangeHyperlink(range[0], range[1], { ...link });
  }

  /**
   * Builds one document node into `parent`, positioned from (ox, oy) in the parent's
   * coordinates. Answers the Figma nodes made at this level: the node itself, then (for a node
   * Figma cannot nest children in) its children as following siblings. `at` is the node's child
   * indices from the document root.
   */
  private async node(doc: Node, parent: Container, ox: number, oy: number, at: number[]): Promise<SceneNode[]> {
    const made = await this.make(doc, parent, ox, oy, at);
    if (doc.id !== undefined && made[0] !== undefined) this.ids.set(doc.id, made[0]);
    return made;
  }

  /** [`node`](#node) without noting the node's `id`. */
  private async make(doc: Node, parent: Container, ox: number, oy: number, at: number[]): Promise<SceneNode[]> {
    const x = ox + (doc.x ?? 0);
    const y = oy + (doc.y ?? 0);
    let made: SceneNode;
    switch (doc.type) {
      case "GROUP":
        return [await this.group(doc, parent, x, y, at)];
      case "FRAME":
      case "COMPONENT": {
        // A component is a frame its instances copy: built as one, then known by its id.
        const frame = doc.type === "COMPONENT" ? this.figma.createComponent() : this.figma.createFrame();
        parent.appendChild(frame);
        this.common(frame, doc, x, y, at);
        this.corners(frame, doc);
        await this.fillStyle(frame, doc);
        if (doc.clipsContent !== undefined) frame.clipsContent = doc.clipsContent;
        // A grid's tracks first: each child is placed in its cell as it is added.
        if (doc.layoutMode === "GRID") this.grid(frame, doc);
        // A frame is its children's coordinate space.
        const built: [SceneNode, Node][] = [];
        for (const [i, child] of (doc.children ?? []).entries()) {
          const made = await this.node(child, frame, 0, 0, [...at, i]);
          if (doc.layoutMode === "GRID" && made[0]) this.gridCell(made[0], child);
          if (made[0]) built.push([made[0], child]);
        }
        if (doc.layoutMode !== "GRID") this.autoLayout(frame, doc, built);
        if (doc.type === "COMPONENT") this.components.set(doc.id, { node: frame as ComponentNode, doc });
        return [frame];
      }
      case "INSTANCE":
        return [await this.instance(doc, parent, ox, oy, at)];
      case "RECTANGLE": {
        const rect = this.figma.createRectangle();
        parent.appendChild(rect);
        this.common(rect, doc, x, y, at);
        this.corners(rect, doc);
        made = rect;
        break;
      }
      case "ELLIPSE": {
        const ellipse = this.figma.createEllipse();
        parent.appendChild(ellipse);
        this.common(ellipse, doc, x, y, at);
        made = ellipse;
        break;
      }
      case "LINE": {
        const line = this.figma.createLine();
        parent.appendChild(line);
        // A line's height is 0 by definition (Figma refuses any other); its length is the width.
        this.common(line, { ...doc, width: undefined, height: undefined }, x, y, at);
        if (doc.width !== undefined) line.resize(Math.max(doc.width, 0.01), 0);
        made = line;
        break;
      }
      case "VECTOR": {
        const vector = this.figma.createVector();
        parent.appendChild(vector);
        if (doc.vectorPaths) {
          vector.vectorPaths = doc.vectorPaths.map((p) => ({ windingRule: p.windingRule ?? "NONZERO", data: p.data }));
        }
        this.common(vector, doc, x, y, at);
        made = vector;
        break;
      }
      case "TEXT": {
        const text = this.figma.createText();
        parent.appendChild(text);
        await this.textContent(text, doc, at);
        this.common(text, doc, x, y, at);
        // After the resize: a box that follows its text (one line stays one line).
        if (doc.textAutoResize !== undefined) text.textAutoResize = doc.textAutoResize;
        made = text;
        break;
      }
      case "SVG": {
        const svg = this.images.svgs.get(doc.imageRef);
        if (svg === undefined) throw new Error(`SVG image ${JSON.stringify(doc.imageRef)} was not received`);
        // createNodeFromSvg makes a frame of vector layers at the SVG's own size; scale it
        // (children included) to the size the document asks for.
        const frame = this.figma.createNodeFromSvg(svg);
        parent.appendChild(frame);
        const { width, height, ...rest } = doc;
        this.common(frame, rest, x, y, at);
        if (width !== undefined && height !== undefined && frame.width > 0 && frame.height > 0) {
          frame.rescale(Math.min(width / frame.width, height / frame.height));
        }
        made = frame;
        break;
      }
      default: {
        // openapi.yaml lists every type the backend lets through; a new one fails loudly here.
        const unknown: never = doc;
        throw new Error(`node type ${(unknown as { type: string }).type} cannot be built`);
      }
    }
    await this.fillStyle(made, doc);
    // Figma nests children only in frames and groups: a leaf's children follow it, placed
    // from its top-left, so nothing the backend validated is dropped.
    const out: SceneNode[] = [made];
    for (const [i, child] of (doc.children ?? []).entries()) out.push(...(await this.node(child, parent, x, y, [...at, i])));
    return out;
  }

  /**
   * A TEXT node's text and type: its font (loaded first: Figma refuses text edits until it is),
   * characters, the node's own style, then each styled run over its range.
   */
  private async textContent(text: TextNode, doc: Node & { type: "TEXT" }, at: number[]): Promise<void> {
    const want = doc.fontName ?? FALLBACK_FONT;
    const font = await this.font(want);
    text.fontName = font;
    if (font.family !== want.family || font.style !== want.style) this.fontSubstituted(want, font, doc, at);
    text.characters = doc.characters ?? "";
    if (doc.fontSize !== undefined) text.fontSize = doc.fontSize;
    if (doc.textAlignHorizontal !== undefined) text.textAlignHorizontal = doc.textAlignHorizontal;
    if (doc.lineHeight !== undefined) {
      text.lineHeight =
        doc.lineHeight.unit === "AUTO" ? { unit: "AUTO" } : { unit: doc.lineHeight.unit, value: doc.lineHeight.value ?? 0 };
    }
    if (doc.letterSpacing !== undefined) text.letterSpacing = { ...doc.letterSpacing };
    // Always: an instance's text rewritten keeps no indent of its component's.
    text.paragraphIndent = doc.paragraphIndent ?? 0;
    if (doc.textDecoration !== undefined) text.textDecoration = doc.textDecoration;
    if (doc.textCase !== undefined) text.textCase = doc.textCase;
    if (doc.hyperlink !== undefined) this.hyperlink(text, doc.hyperlink, doc, at);
    const textStyle = doc.textStyleId !== undefined ? this.styles.get(doc.textStyleId) : undefined;
    if (textStyle !== undefined) await text.setTextStyleIdAsync(textStyle);
    // After the style, which would set them back to its own.
    const deco = decorationOf(doc);
    if (deco.style !== undefined) text.textDecorationStyle = deco.style;
    if (deco.offset !== undefined) text.textDecorationOffset = deco.offset;
    if (deco.thickness !== undefined) text.textDecorationThickness = deco.thickness;
    if (deco.color !== undefined) text.textDecorationColor = deco.color;
    if (deco.skipInk !== undefined) text.textDecorationSkipInk = deco.skipInk;
    // A paragraph's differently styled runs, each over its range of the characters.
    for (const seg of doc.segments ?? []) await this.segment(text, seg, doc, at);
  }

  /**
   * An instance of a component built before it, placed and sized as the document says, then
   * each of its layers given what the document shows otherwise than the component: text and
   * its runs, fills (images), names, sizes and places. A component not built (a document the
   * route would refuse) leaves a frame of the instance's own layers, and a warning.
   */
  private async instance(doc: Node & { type: "INSTANCE" }, parent: Container, ox: number, oy: number, at: number[]): Promise<SceneNode> {
    const component = this.components.get(doc.componentId);
    if (!component) {
      this.warn("instance_unresolved", `component ${JSON.stringify(doc.componentId)} is not built before its instance: built as a frame`, doc, at);
      const { componentId: _unused, ...rest } = doc;
      const made = await this.node({ ...rest, type: "FRAME" }, parent, ox, oy, at);
      return made[0] as SceneNode;
    }
    const inst = component.node.createInstance();
    parent.appendChild(inst);
    this.count++;
    inst.setPluginData(INDICES_KEY, indexKey(at));
    if (doc.name !== undefined) inst.name = doc.name;
    if (doc.width !== undefined && doc.height !== undefined) inst.resize(Math.max(doc.width, 0.01), Math.max(doc.height, 0.01));
    inst.x = ox + (doc.x ?? 0);
    inst.y = oy + (doc.y ?? 0);
    await this.overrides(inst.children, doc.children ?? [], component.doc.children ?? [], at);
    return inst;
  }

  /**
   * The layers of an instance (`made`, the component's copies in order) given what the
   * document's `want` shows otherwise than the component's `was`, level by level.
   */
  private async overrides(made: readonly SceneNode[], want: Node[], was: Node[], at: number[]): Promise<void> {
    const w = laidOutAs(want);
    const c = laidOutAs(was);
    for (const [i, node] of made.entries()) {
      const d = w[i];
      let o = c[i];
      if (!d || !o) continue;
      const here = [...at, d.index];
      this.count++;
      node.setPluginData(INDICES_KEY, indexKey(here));
      // A nested instance of another component (each card's own icon): swapped, then given
      // what the document shows otherwise than that component.
      if (d.node.type === "INSTANCE" && o.node.type === "INSTANCE" && d.node.componentId !== o.node.componentId && node.type === "INSTANCE") {
        const swap = this.components.get(d.node.componentId);
        if (swap) {
          node.swapComponent(swap.node);
          o = { ...o, node: swap.doc };
        } else {
          this.warn("instance_unresolved", `component ${JSON.stringify(d.node.componentId)} is not built before its instance: left as ${JSON.stringify(o.node.componentId)}`, d.node, here);
        }
      }
      if (d.node.name !== undefined && d.node.name !== o.node.name) node.name = d.node.name;
      const rewritten = d.node.type === "TEXT" && o.node.type === "TEXT" && !sameText(d.node, o.node);
      // The whole text's fill before its runs', which a fill for the whole would paint over; a
      // text without fills has a new text's (Figma's black), not its component's first run's.
      const fills = d.node.fills ?? (rewritten ? NEW_TEXT_FILLS : undefined);
      if (fills !== undefined && (rewritten || !sameJson(fills, o.node.fills)) && "fills" in node) {
        (node as MinimalFillsMixin).fills = this.paints(fills, d.node, here);
        await this.fillStyle(node, d.node);
      }
      if (rewritten) await this.textContent(node as TextNode, d.node as Node & { type: "TEXT" }, here);
      this.place(node, d.x, d.y);
      if ("children" in node) await this.overrides(node.children, d.node.children ?? [], o.node.children ?? [], here);
    }
  }

  /**
   * An instance's layer placed as the document says, where it differs from the component. The
   * converter lets a layer inside an instance differ in place or size only where Figma computes
   * them itself (a child in auto layout's flow, a text box following its text; Figma refuses to
   * resize a layer inside an instance), so where Figma refuses to move one, what it computed
   * stands.
   */
  private place(node: SceneNode, x: number, y: number): void {
    try {
      if (x !== node.x || y !== node.y) {
        node.x = x;
        node.y = y;
      }
    } catch {
      // Figma's own layout of the instance stands (see above).
    }
  }

  private async group(doc: Node & { type: "GROUP" }, parent: Container, x: number, y: number, at: number[]): Promise<SceneNode> {
    // A group has no coordinate space of its own: its children sit in the parent's.
    const members: SceneNode[] = [];
    for (const [i, child] of (doc.children ?? []).entries()) members.push(...(await this.node(child, parent, x, y, [...at, i])));
    if (members.length === 0) {
      // Figma cannot make an empty group; keep the layer (and its name) as an empty frame.
      this.warn("empty_group", `empty group ${JSON.stringify(doc.name ?? "")} built as an empty frame`, doc, at);
      const frame = this.figma.createFrame();
      parent.appendChild(frame);
      this.common(frame, { ...doc, fills: [], strokes: [] }, x, y, at);
      frame.fills = [];
      return frame;
    }
    const group = this.figma.group(members, parent);
    this.count++;
    group.setPluginData(INDICES_KEY, indexKey(at));
    if (doc.name !== undefined) group.name = doc.name;
    if (doc.opacity !== undefined) group.opacity = doc.opacity;
    if (doc.visible !== undefined) group.visible = doc.visible;
    if (doc.rotation !== undefined) group.rotation = doc.rotation;
    return group;
  }

  /** One radius for all corners, then each corner that has its own. */
  private corners(
    node: RectangleCornerMixin & CornerMixin,
    doc: {
      cornerRadius?: number;
      topLeftRadius?: number;
      topRightRadius?: number;
      bottomRightRadius?: number;
      bottomLeftRadius?: number;
    },
  ): void {
    if (doc.cornerRadius !== undefined) node.cornerRadius = doc.cornerRadius;
    if (doc.topLeftRadius !== undefined) node.topLeftRadius = doc.topLeftRadius;
    if (doc.topRightRadius !== undefined) node.topRightRadius = doc.topRightRadius;
    if (doc.bottomRightRadius !== undefined) node.bottomRightRadius = doc.bottomRightRadius;
    if (doc.bottomLeftRadius !== undefined) node.bottomLeftRadius = doc.bottomLeftRadius;
  }

  /**
   * Auto layout, once the children are in: the frame keeps the document's size (both axes
   * FIXED, set before the resize), and Figma places the children in list order.
   */
  /** Figma's GRID: the tracks (FIXED px, FLEX shares, HUG), gaps and padding, at the frame's size. */
  private grid(frame: FrameNode | ComponentNode, doc: FrameDoc): void {
    frame.layoutMode = "GRID";
    frame.gridRowCount = doc.gridRowCount ?? 1;
    frame.gridColumnCount = doc.gridColumnCount ?? 1;
    if (doc.gridRowGap !== undefined) frame.gridRowGap = doc.gridRowGap;
    if (doc.gridColumnGap !== undefined) frame.gridColumnGap = doc.gridColumnGap;
    const tracks = (sizes: GridTrackSize[], want: { type: "FIXED" | "FLEX" | "HUG"; value?: number }[] | undefined) =>
      (want ?? []).forEach((w, i) => {
        const t = sizes[i];
        if (!t) return;
        t.type = w.type;
        if (w.type !== "HUG" && w.value !== undefined) t.value = w.value;
      });
    tracks(frame.gridRowSizes, doc.gridRowSizes);
    tracks(frame.gridColumnSizes, doc.gridColumnSizes);
    if (doc.paddingTop !== undefined) frame.paddingTop = doc.paddingTop;
    if (doc.paddingRight !== undefined) frame.paddingRight = doc.paddingRight;
    if (doc.paddingBottom !== undefined) frame.paddingBottom = doc.paddingBottom;
    if (doc.paddingLeft !== undefined) frame.paddingLeft = doc.paddingLeft;
    if (doc.width !== undefined && doc.height !== undefined) {
      frame.resize(Math.max(doc.width, 0.01), Math.max(doc.height, 0.01));
    }
  }

  /** A child of a GRID frame: its cell and spans, its own size kept. */
  private gridCell(made: SceneNode, doc: Node): void {
    const child = made as SceneNode & LayoutMixin & GridChildrenMixin;
    child.setGridChildPosition(doc.gridRowAnchorIndex ?? 0, doc.gridColumnAnchorIndex ?? 0);
    if ((doc.gridRowSpan ?? 1) > 1) child.gridRowSpan = doc.gridRowSpan ?? 1;
    if ((doc.gridColumnSpan ?? 1) > 1) child.gridColumnSpan = doc.gridColumnSpan ?? 1;
  }

  /**
   * Auto layout, once the children are built: the frame's axis, spacing, padding and
   * alignment, then each child's place in it (ABSOLUTE where it is, FILL its room) and the
   * frame's own sizing (HUG its content) last, as `resize` makes a frame FIXED again.
   */
  private autoLayout(frame: FrameNode | ComponentNode, doc: FrameDoc, built: [SceneNode, Node][]): void {
    if (doc.layoutMode === undefined || doc.layoutMode === "NONE") return;
    frame.layoutMode = doc.layoutMode;
    frame.primaryAxisSizingMode = "FIXED";
    frame.counterAxisSizingMode = "FIXED";
    if (doc.itemSpacing !== undefined) frame.itemSpacing = doc.itemSpacing;
    if (doc.paddingTop !== undefined) frame.paddingTop = doc.paddingTop;
    if (doc.paddingRight !== undefined) frame.paddingRight = doc.paddingRight;
    if (doc.paddingBottom !== undefined) frame.paddingBottom = doc.paddingBottom;
    if (doc.paddingLeft !== undefined) frame.paddingLeft = doc.paddingLeft;
    if (doc.primaryAxisAlignItems !== undefined) frame.primaryAxisAlignItems = doc.primaryAxisAlignItems;
    if (doc.counterAxisAlignItems !== undefined) frame.counterAxisAlignItems = doc.counterAxisAlignItems;
    // Rows only (Figma throws on a column), and the rows' spacing once they wrap.
    if (doc.layoutWrap === "WRAP" && doc.layoutMode === "HORIZONTAL") {
      frame.layoutWrap = "WRAP";
      if (doc.counterAxisSpacing !== undefined) frame.counterAxisSpacing = doc.counterAxisSpacing;
    }
    if (doc.width !== undefined && doc.height !== undefined) {
      frame.resize(Math.max(doc.width, 0.01), Math.max(doc.height, 0.01));
    }
    for (const [made, child] of built) {
      const item = made as SceneNode & AutoLayoutChildrenMixin & LayoutMixin;
      if (child.layoutPositioning === "ABSOLUTE") {
        // Out of the flow: Figma keeps it where it is set after.
        item.layoutPositioning = "ABSOLUTE";
        item.x = child.x ?? 0;
        item.y = child.y ?? 0;
      } else {
        if (child.layoutSizingHorizontal === "FILL") item.layoutSizingHorizontal = "FILL";
        if (child.layoutSizingVertical === "FILL") item.layoutSizingVertical = "FILL";
      }
    }
    if (doc.layoutSizingHorizontal === "HUG") frame.layoutSizingHorizontal = "HUG";
    if (doc.layoutSizingVertical === "HUG") frame.layoutSizingVertical = "HUG";
  }

  /** What every built node shares: its indices, name, geometry, paints, opacity, visibility. */
  private common(
    node: SceneNode & LayoutMixin & BlendMixin & MinimalFillsMixin & MinimalStrokesMixin,
    doc: Omit<Node, "type"> & { fills?: DocPaint[]; strokes?: DocPaint[] },
    x: number,
    y: number,
    at: number[],
  ): void {
    this.count++;
    node.setPluginData(INDICES_KEY, indexKey(at));
    if (doc.name !== undefined) node.name = doc.name;
    if (doc.width !== undefined || doc.height !== undefined) {
      // Figma's smallest side is 0.01 px.
      node.resize(Math.max(doc.width ?? node.width, 0.01), Math.max(doc.height ?? node.height, 0.01));
    }
    node.x = x;
    node.y = y;
    if (doc.rotation !== undefined) node.rotation = doc.rotation;
    if (doc.opacity !== undefined) node.opacity = doc.opacity;
    if (doc.visible !== undefined) node.visible = doc.visible;
    if (doc.fills !== undefined) node.fills = this.paints(doc.fills, doc, at);
    if (doc.strokes !== undefined) node.strokes = this.paints(doc.strokes, doc, at);
    if (doc.strokeWeight !== undefined) node.strokeWeight = doc.strokeWeight;
    if (doc.strokeAlign !== undefined) node.strokeAlign = doc.strokeAlign;
    // Per-side weights exist on frames and rectangles only.
    const sides = node as Partial<IndividualStrokesMixin>;
    if (node.type === "FRAME" || node.type === "COMPONENT" || node.type === "RECTANGLE") {
      if (doc.strokeTopWeight !== undefined) sides.strokeTopWeight = doc.strokeTopWeight;
      if (doc.strokeRightWeight !== undefined) sides.strokeRightWeight = doc.strokeRightWeight;
      if (doc.strokeBottomWeight !== undefined) sides.strokeBottomWeight = doc.strokeBottomWeight;
      if (doc.strokeLeftWeight !== undefined) sides.strokeLeftWeight = doc.strokeLeftWeight;
    }
    if (doc.effects !== undefined) {
      (node as SceneNode & BlendMixin).effects = doc.effects.map((e): Effect => {
        // A blur is the whole layer's, of Figma's radius; a shadow has a colour and an offset
        // (the result route refuses one without).
        if (e.type === "LAYER_BLUR") return { type: "LAYER_BLUR", blurType: "NORMAL", radius: e.radius, visible: true };
        return {
          type: e.type,
          color: { r: e.color?.r ?? 0, g: e.color?.g ?? 0, b: e.color?.b ?? 0, a: e.color?.a ?? 1 },
          offset: { x: e.offset?.x ?? 0, y: e.offset?.y ?? 0 },
          radius: e.radius,
          spread: e.spread ?? 0,
          visible: true,
          blendMode: "NORMAL",
        };
      });
    }
    if (doc.blendMode !== undefined) node.blendMode = doc.blendMode;
    // Dashed and dotted strokes (every node built here has Figma's GeometryMixin).
    if (doc.dashPattern !== undefined) node.dashPattern = [...doc.dashPattern];
    if (doc.strokeCap !== undefined) (node as SceneNode & GeometryMixin).strokeCap = doc.strokeCap;
  }

  private paints(paints: DocPaint[], doc: { name?: string }, at: number[]): Paint[] {
    const out: Paint[] = [];
    for (const p of paints) {
      switch (p.type) {
        case "SOLID":
          out.push({
            type: "SOLID",
            color: { r: p.color.r, g: p.color.g, b: p.color.b },
            ...(p.opacity === undefined ? {} : { opacity: p.opacity }),
          });
          break;
        case "IMAGE": {
          const imageHash = this.images.hashes.get(p.imageRef);
          if (imageHash === undefined) throw new Error(`image ${JSON.stringify(p.imageRef)} was not received`);
          out.push({
            type: "IMAGE",
            imageHash,
            scaleMode: p.scaleMode ?? "FILL",
            ...(p.opacity === undefined ? {} : { opacity: p.opacity }),
          });
          break;
        }
        case "GRADIENT_LINEAR":
          out.push({
            type: "GRADIENT_LINEAR",
            // Two rows of three, as the schema says (its type cannot).
            gradientTransform: [row(p.gradientTransform[0]), row(p.gradientTransform[1])],
            gradientStops: p.gradientStops.map((s) => ({ position: s.position, color: { ...s.color } })),
            ...(p.opacity === undefined ? {} : { opacity: p.opacity }),
          });
          break;
        default:
          this.warn("paint_skipped", `paint type ${(p as { type: string }).type} skipped`, doc, at);
      }
    }
    return out;
  }

  private warn(code: BuildWarning["code"], message: string, doc: { name?: string }, at: number[]): BuildWarning {
    const w: BuildWarning = { code, message, ...(doc.name ? { node: doc.name } : {}), indices: at };
    this.warnings.push(w);
    return w;
  }

  /** One warning per font, not per text layer: a page in a missing font would list every paragraph. */
  private fontSubstituted(font: FontName, used: FontName, doc: { name?: string }, at: number[]): void {
    const key = `${font.family}\u0000${font.style}`;
    const seen = this.substituted.get(key);
    const base = `font ${font.family} ${font.style} is not available; used ${used.family} ${used.style}`;
    if (!seen) {
      this.substituted.set(key, { warning: this.warn("font_substituted", base, doc, at), layers: 1 });
      return;
    }
    seen.layers++;
    seen.warning.message = `${base} (${seen.layers} text layers)`;
  }

  /**
   * One styled run of a TEXT node, as Figma's `setRange*` set it: `start` and `end` count
   * UTF-16 code units, as `characters` does. A range outside the text is skipped and said.
   */
  private async segment(text: TextNode, seg: TextSegment, doc: Node, at: number[]): Promise<void> {
    const { start, end } = seg;
    if (!(start >= 0 && end > start && end <= text.characters.length)) {
      this.warn("segment_skipped", `a text segment ${start}..${end} lies outside its ${text.characters.length} characters`, doc, at);
      return;
    }
    const font = await this.font(seg.fontName);
    if (font.family !== seg.fontName.family || font.style !== seg.fontName.style) this.fontSubstituted(seg.fontName, font, doc, at);
    text.setRangeFontName(start, end, font);
    text.setRangeFontSize(start, end, seg.fontSize);
    text.setRangeFills(start, end, this.paints(seg.fills, doc, at));
    text.setRangeTextDecoration(start, end, seg.textDecoration);
    text.setRangeTextCase(start, end, seg.textCase);
    text.setRangeLetterSpacing(start, end, { ...seg.letterSpacing });
    text.setRangeLineHeight(
      start,
      end,
      seg.lineHeight.unit === "AUTO" ? { unit: "AUTO" } : { unit: seg.lineHeight.unit, value: seg.lineHeight.value ?? 0 },
    );
    if (seg.hyperlink !== undefined) this.hyperlink(text, seg.hyperlink, doc, at, [start, end]);
    const textStyle = seg.textStyleId !== undefined ? this.styles.get(seg.textStyleId) : undefined;
    if (textStyle !== undefined) await text.setRangeTextStyleIdAsync(start, end, textStyle);
    const fillStyle = seg.fillStyleId !== undefined ? this.styles.get(seg.fillStyleId) : undefined;
    if (fillStyle !== undefined) await text.setRangeFillStyleIdAsync(start, end, fillStyle);
    // After the style, which would set them back to its own.
    const deco = decorationOf(seg);
    if (deco.style !== undefined) text.setRangeTextDecorationStyle(start, end, deco.style);
    if (deco.offset !== undefined) text.setRangeTextDecorationOffset(start, end, deco.offset);
    if (deco.thickness !== undefined) text.setRangeTextDecorationThickness(start, end, deco.thickness);
    if (deco.color !== undefined) text.setRangeTextDecorationColor(start, end, deco.color);
    if (deco.skipInk !== undefined) text.setRangeTextDecorationSkipInk(start, end, deco.skipInk);
  }

  /** A node's fills as the shared PAINT style they are (the fills themselves are already set). */
  private async fillStyle(node: SceneNode, doc: Node): Promise<void> {
    const id = doc.fillStyleId !== undefined ? this.styles.get(doc.fillStyleId) : undefined;
    if (id !== undefined && "setFillStyleIdAsync" in node) await node.setFillStyleIdAsync(id);
  }

  /**
   * The document's styles as local styles of this file: one already there with the same name
   * and the same value is used again (a second import of a page makes no duplicates); any
   * other is made. A text style's font falls back as a layer's does.
   */
  private async localStyles(styles: DocStyle[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (styles.length === 0) return out;
    const paints = await this.figma.getLocalPaintStylesAsync();
    const texts = await this.figma.getLocalTextStylesAsync();
    for (const st of styles) {
      if (st.type === "PAINT") {
        const want = this.paints(st.paints ?? [], { name: st.name }, []);
        const same = paints.find((p) => p.name === st.name && sameJson(p.paints, want));
        const style = same ?? this.figma.createPaintStyle();
        if (!same) {
          style.name = st.name;
          style.paints = want;
        }
        out.set(st.id, style.id);
      } else {
        const font = await this.font(st.fontName ?? FALLBACK_FONT);
        const value = textStyleValue(st, font);
        const same = texts.find((t) => t.name === st.name && sameJson(textStyleValue(t, t.fontName), value));
        const style = same ?? this.figma.createTextStyle();
        if (!same) {
          style.name = st.name;
          Object.assign(style, value);
        }
        out.set(st.id, style.id);
      }
    }
    return out;
  }

  /**
   * Loads a font once. One that is not available falls back keeping its weight and slope
   * (./fonts.ts: the nearest face of its family, else Inter's), and Inter Regular when even
   * that does not load.
   */
  private font(font: FontName): Promise<FontName> {
    const key = `${font.family}\u0000${font.style}`;
    let loading = this.fonts.get(key);
    if (!loading) {
      loading = this.figma.loadFontAsync(font).then(
        () => font,
        async () => {
          const stand = substitute(font, (await this.listFonts()).map((f) => f.fontName));
          try {
            await this.figma.loadFontAsync(stand);
            return stand;
          } catch {
            await this.figma.loadFontAsync(FALLBACK_FONT);
            return FALLBACK_FONT;
          }
        },
      );
      this.fonts.set(key, loading);
    }
    return loading;
  }

  /** Figma's fonts; none when it cannot list them (the fallback then names Inter's face). */
  private listFonts(): Promise<Font[]> {
    this.available ??= this.figma.listAvailableFontsAsync().catch(() => []);
    return this.available;
  }
}

type DecorationLengthDoc = { unit: "PIXELS" | "PERCENT" | "AUTO"; value?: number };

/** A TEXT node's or a segment's decoration members as Figma's values (each absent: Figma's default). */
function decorationOf(d: {
  textDecorationStyle?: TextDecorationStyle;
  textDecorationOffset?: DecorationLengthDoc;
  textDecorationThickness?: DecorationLengthDoc;
  textDecorationColor?: { r: number; g: number; b: number; a: number };
  textDecorationSkipInk?: boolean;
}): {
  style?: TextDecorationStyle;
  offset?: TextDecorationOffset;
  thickness?: TextDecorationThickness;
  color?: TextDecorationColor;
  skipInk?: boolean;
} {
  const length = (l: DecorationLengthDoc | undefined) =>
    l === undefined ? undefined : l.unit === "AUTO" ? ({ unit: "AUTO" } as const) : { unit: l.unit, value: l.value ?? 0 };
  const c = d.textDecorationColor;
  return {
    style: d.textDecorationStyle,
    offset: length(d.textDecorationOffset),
    thickness: length(d.textDecorationThickness),
    color: c === undefined ? undefined : { value: { type: "SOLID", color: { r: c.r, g: c.g, b: c.b }, opacity: c.a } },
    skipInk: d.textDecorationSkipInk,
  };
}

/** What a text style is, as compared with an existing one and set on a new one. */
function textStyleValue(
  st: {
    fontSize?: number;
    lineHeight?: { unit: "PIXELS" | "PERCENT" | "AUTO"; value?: number };
    letterSpacing?: { unit: "PIXELS" | "PERCENT"; value: number };
    textCase?: string;
    textDecoration?: string;
  },
  font: FontName,
) {
  const lh = st.lineHeight;
  return {
    fontName: font,
    fontSize: st.fontSize ?? 12,
    lineHeight: !lh || lh.unit === "AUTO" ? ({ unit: "AUTO" } as LineHeight) : ({ unit: lh.unit, value: lh.value ?? 0 } as LineHeight),
    letterSpacing: { ...(st.letterSpacing ?? { unit: "PIXELS" as const, value: 0 }) } as LetterSpacing,
    textCase: (st.textCase ?? "ORIGINAL") as TextCase,
    textDecoration: (st.textDecoration ?? "NONE") as TextDecoration,
  };
}

/**
 * A level's document nodes as the builder lays them out in Figma (a leaf's children follow it
 * in its parent, placed from its top-left), each with its index among its document siblings
 * and its position in the Figma parent.
 */
function laidOutAs(kids: Node[], ox = 0, oy = 0): { node: Node; index: number; x: number; y: number }[] {
  const nests = (n: Node) => n.type === "FRAME" || n.type === "GROUP" || n.type === "COMPONENT" || n.type === "INSTANCE";
  return kids.flatMap((node, index) => {
    const x = ox + (node.x ?? 0);
    const y = oy + (node.y ?? 0);
    const after = nests(node) ? [] : laidOutAs(node.children ?? [], x, y).map((k) => ({ ...k, index }));
    return [{ node, index, x, y }, ...after];
  });
}

/** What Figma fills a new text with. */
const NEW_TEXT_FILLS: DocPaint[] = [{ type: "SOLID", color: { r: 0, g: 0, b: 0 } }];

/**
 * Whether an instance's text shows as its component's: the characters, the runs, and the type
 * they default to (a text of several runs takes its longest run's, which differs from item to
 * item as the runs do).
 */
function sameText(a: Node & { type: "TEXT" }, b: Node & { type: "TEXT" }): boolean {
  const type = (n: Node & { type: "TEXT" }) =>
    [n.fontName, n.fontSize, n.lineHeight, n.letterSpacing, n.textCase, n.textDecoration, n.textStyleId, n.hyperlink, n.paragraphIndent];
  return a.characters === b.characters && sameJson(a.segments, b.segments) && sameJson(type(a), type(b));
}

/** Equal as JSON, object keys in any order. */
function sameJson(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(norm)
      : v && typeof v === "object"
        ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).sort(([k], [l]) => k.localeCompare(l)).map(([k, x]) => [k, norm(x)]))
        : v;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}
