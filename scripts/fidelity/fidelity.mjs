#!/usr/bin/env node
// The fidelity benchmark (docs/FIDELITY.md): each sample capture as Chromium draws it against
// its converted document drawn by resvg (document → SVG → PNG), as SSIM; and the page's text
// runs, images and background boxes, read from the page in Chromium, found in the document.
//
//   node fidelity.mjs --converted DIR [--out DIR] [--write-docs DIR] [--check] [--viewports W,W] capture.html...
//
// DIR/<stem>/document.json and DIR/<stem>/images/ are what `convert --out DIR` writes.
// --out keeps every picture (reference, document, SVG, difference) and the report there;
// --write-docs writes the side-by-side pictures and the report for the docs; --check exits 1
// when a page is below its floor (FLOORS). A second table gives the editability figures of
// issue 39 (editability.mjs) beside their goals, which --check holds too (EDIT_FLOORS);
// --outline PAGE prints that page's layer list (types and names, the first 40 lines).
// --viewports 1440,390 measures documents converted with the same --viewports (issue 40 item 3):
// each frame of the root against Chromium's page at that frame's width, as page "stem@width".

import { readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { chromium } from "playwright-core";
import { Resvg } from "@resvg/resvg-js";
import { SvgWriter } from "./svg.mjs";
import { pageTruth } from "./truth.mjs";
import { matchAll } from "./match.mjs";
import { EDIT_GOALS, editBelow, pageEditability, measureEditability, wrapped, outline } from "./editability.mjs";
import { decode, encode, fit, ssim, sideBySide, diffPicture, offShare } from "./image.mjs";
import { webFonts, resvgFonts } from "./webfonts.mjs";

/** The goals of issue 30 (item 5). */
export const GOALS = { ssim: 0.95, texts: 0.95, images: 1.0, boxes: 0.9 };

/**
 * Regression guards for --check (docs/FIDELITY.md, "Floors"): the element shares at the goals,
 * which every page meets; SSIM 0.01 under what each page measures, which a lost box or a
 * block of text moved by a few pixels goes below, while rasterizer and font updates (a few
 * thousandths) do not. A page not listed here is held to the goals; one listed as null is
 * measured and reported, never failed.
 */
export const FLOORS = {
  landing: { ssim: 0.98, texts: 0.95, images: 1.0, boxes: 0.9 },
  article: { ssim: 0.98, texts: 0.95, images: 1.0, boxes: 0.9 },
  form: { ssim: 0.98, texts: 0.95, images: 1.0, boxes: 0.9 },
  // The real pages (samples/real/README.md): each meets the goals of this table. Python's
  // since its paragraphs are one layer each (SSIM 0.955; 0.961 since a space a line broke at
  // between two elements is kept); PostgreSQL's since line-height:
  // normal is Chromium's line height (SSIM 0.913 → 0.960); rustdoc's since it is drawn in the
  // web fonts it carries (webfonts.mjs, SSIM 0.838 → 0.980) and an inline box's line fragment
  // spans its highlighted code (boxes 89.1 → 100 %). Each floor is about 0.01 under its SSIM.
  "python-annotations": { ssim: 0.95, texts: 0.95, images: 1.0, boxes: 0.9 },
  "postgresql-geometric": { ssim: 0.95, texts: 0.95, images: 1.0, boxes: 0.9 },
  "rustdoc-cell": { ssim: 0.97, texts: 0.95, images: 1.0, boxes: 0.9 },
};
const DEFAULT_FLOOR = GOALS;

const DEFAULT_WIDTH = 1440;

function args(argv) {
  const o = { captures: [], check: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--converted") o.converted = argv[++i];
    else if (a === "--out") o.out = argv[++i];
    else if (a === "--write-docs") o.docs = argv[++i];
    else if (a === "--check") o.check = true;
    else if (a === "--outline") o.outline = argv[++i];
    else if (a === "--viewports") o.viewports = argv[++i].split(",").map(Number);
    else o.captures.push(a);
  }
  if (!o.converted || o.captures.length === 0) {
    console.error("usage: fidelity.mjs --converted DIR [--out DIR] [--write-docs DIR] [--check] [--outline PAGE] capture.html...");
    process.exit(2);
  }
  return o;
}

/** `N` of the first `<meta name="viewport" content="…width=N…">` (as capture.rs reads it), else 1440. */
function viewportWidth(html) {
  for (const m of html.matchAll(/<meta\b[^>]*>/gi)) {
    const tag = m[0];
    if (!/name\s*=\s*["']?viewport/i.test(tag)) continue;
    const w = /width\s*=\s*(\d+)/i.exec(/content\s*=\s*["']([^"']*)["']/i.exec(tag)?.[1] ?? "");
    if (w) {
      const n = Number(w[1]);
      if (n >= 1 && n <= 10000) return n;
    }
    return DEFAULT_WIDTH;
  }
  return DEFAULT_WIDTH;
}

/**
 * What to measure of one converted capture: the page at its own width; or, with --viewports,
 * each frame of the root (the document itself for one width) at its width, from its own origin.
 */
function views(converted, html, stem, viewports) {
  if (!viewports) return [{ name: stem, width: viewportWidth(html), converted }];
  const frames = viewports.length > 1 ? (converted.document.children ?? []) : [converted.document];
  if (frames.length !== viewports.length) {
    throw new Error(`${stem}: ${frames.length} frames for ${viewports.length} viewports`);
  }
  return viewports.map((width, i) => {
    const frame = frames[i];
    const document = { ...frame, x: 0, y: 0 };
    return { name: `${stem}@${width}`, width, converted: { ...converted, document, width: frame.width, height: frame.height } };
  });
}

const MIME = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", svg: "image/svg+xml" };

function loadConverted(dir) {
  const out = JSON.parse(readFileSync(join(dir, "document.json"), "utf8"));
  const images = new Map();
  for (const [ref, file] of Object.entries(out.images ?? {})) {
    const ext = file.split(".").pop().toLowerCase();
    images.set(ref, { mime: MIME[ext] ?? "application/octet-stream", bytes: readFileSync(join(dir, file)) });
  }
  return { ...out, imageMap: images };
}

/** The page in Chromium, as the converter renders it: scripts off, nothing but data: loads. */
async function reference(browser, html, width) {
  const context = await browser.newContext({
    viewport: { width, height: 900 },
    deviceScaleFactor: 1,
    javaScriptEnabled: false,
  });
  let blocked = 0;
  // data: URLs never reach the router; everything that does is refused.
  await context.route("**/*", (route) => {
    blocked++;
    return route.abort();
  });
  const page = await context.newPage();
  await page.setContent(html, { waitUntil: "load" });
  const truth = await page.evaluate(pageTruth);
  const editable = await page.evaluate(pageEditability);
  const png = await page.screenshot({ fullPage: true, animations: "disabled" });
  await context.close();
  return { truth, editable, png, blocked };
}

function render(svg, width, height, faces) {
  const resvg = new Resvg(svg, {
    fitTo: { mode: "original" },
    // The system's fonts and the capture's web fonts, as Figma would have them (it ships the
    // Google Fonts families; a designer installs the rest); unknown families fall back to
    // DejaVu Sans.
    font: resvgFonts(faces),
  });
  return fit(decode(resvg.render().asPng()), width, height);
}

const pct = (v) => (v === null ? "n/a" : `${(v * 100).toFixed(1)} %`);
const share = (m) => (m.total === 0 ? null : m.matched / m.total);

const EDIT_ROWS = [
  ["paragraphs", "paragraphs as one layer"],
  ["lines", "lines equal to Chromium's"],
  ["runs", "styled runs reproduced"],
  ["strayNewlines", "stray newlines (TEXT nodes)"],
  ["flex", "flex → auto layout"],
  ["sizing", "auto layout resizes as the page"],
  ["grid", "grid → GRID"],
  ["bareTags", "bare-tag names"],
  ["sharedStyle", "nodes on a shared style"],
  ["components", "repeated groups made components"],
];

function editCell(k, f) {
  if (k === "strayNewlines") return `${f.n}`;
  return `${pct(f.share)} (${f.n}/${f.total})`;
}

function editGoal(k) {
  const g = EDIT_GOALS[k];
  if (k === "strayNewlines") return `${g.max}`;
  return g.min !== undefined ? `≥ ${g.min * 100} %` : `≤ ${g.max * 100} %`;
}

/** The editability table: a row a figure, a column a page, the goal last. */
function editTable(pages) {
  return [
    `| figure | ${pages.map((p) => p.page).join(" | ")} | goal |`,
    `| --- |${pages.map(() => " --- |").join("")} --- |`,
    ...EDIT_ROWS.map(([k, label]) => `| ${label} | ${pages.map((p) => editCell(k, p.editability[k])).join(" | ")} | ${editGoal(k)} |`),
  ].join("\n");
}

function table(pages) {
  const rows = [
    "| page | size | SSIM | pixels off | texts | images | boxes |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...pages.map(
      (p) =>
        `| ${p.page} | ${p.width}×${p.height} | ${p.ssim.toFixed(3)} | ${(p.pixelsOff * 100).toFixed(2)} % | ${pct(share(p.texts))} (${p.texts.matched}/${p.texts.total}) | ` +
        `${pct(share(p.images))} (${p.images.matched}/${p.images.total}) | ${pct(share(p.boxes))} (${p.boxes.matched}/${p.boxes.total}) |`,
    ),
    `| goal | | ≥ ${GOALS.ssim} | | ≥ ${GOALS.texts * 100} % | ${GOALS.images * 100} % | ≥ ${GOALS.boxes * 100} % |`,
  ];
  return rows.join("\n");
}

async function main() {
  const o = args(process.argv.slice(2));
  const started = Date.now();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    // As the converter starts it (render.rs): hinting off, so pictures do not depend on the
    // machine's settings.
    args: ["--no-sandbox", "--font-render-hinting=none", "--hide-scrollbars", "--disable-gpu"],
  });
  const pages = [];
  let outlined = null;
  try {
    for (const capture of o.captures) {
      const file = basename(capture).replace(/\.[^.]*$/, "");
      const html = readFileSync(capture, "utf8");
      const web = await webFonts(html);
      for (const view of views(loadConverted(join(o.converted, file)), html, file, o.viewports)) {
        const t0 = Date.now();
        const { name: stem, width, converted } = view;
        const { truth, editable, png, blocked } = await reference(browser, html, width);
        const ref = decode(png);
        const notes = [];
        if (converted.width !== width) notes.push(`document width ${converted.width}, capture width ${width}`);
        if (Math.abs(converted.height - ref.height) > 1) notes.push(`document height ${converted.height}, page ${ref.height}`);
        const lines = await wrapped(browser, converted.document, web.css);
        const writer = new SvgWriter(converted.imageMap, (w) => notes.push(w), lines, web.faces);
        const svg = writer.write(converted.document, ref.width, ref.height);
        const drawn = render(svg, ref.width, ref.height, web.faces);
        const s = ssim(ref, drawn);
        // The converter's own screenshot (--screenshot) should be this very picture.
        let agreement = null;
        const own = join(o.converted, file, "chromium.png");
        if (existsSync(own)) {
          const theirs = fit(decode(readFileSync(own)), ref.width, ref.height);
          agreement = ssim(ref, theirs).mean;
        }
        const m = matchAll(truth, converted.document);
        const editability = measureEditability(editable, converted.document, lines);
        if (o.outline === stem) outlined = outline(converted.document);
        const result = {
          page: stem,
          width: ref.width,
          height: ref.height,
          ssim: s.mean,
          pixelsOff: offShare(ref, drawn),
          texts: m.texts,
          images: m.images,
          boxes: m.boxes,
          editability,
          referenceAgreement: agreement,
          blockedRequests: blocked,
          webFonts: web.faces.map((f) => `${f.family} ${[...new Set(f.weight)].join("–")} ${f.style}${f.renamed ? " (renamed)" : ""}`),
          notes: [...new Set(notes)],
          seconds: (Date.now() - t0) / 1000,
        };
        pages.push(result);
        const side = encode(sideBySide(ref, drawn));
        if (o.out) {
          const dir = join(o.out, stem);
          mkdirSync(dir, { recursive: true });
          writeFileSync(join(dir, "reference.png"), png);
          writeFileSync(join(dir, "document.png"), encode(drawn));
          writeFileSync(join(dir, "document.svg"), svg);
          writeFileSync(join(dir, "diff.png"), encode(diffPicture(ref, drawn)));
          writeFileSync(join(dir, "side-by-side.png"), side);
        }
        if (o.docs) {
          mkdirSync(o.docs, { recursive: true });
          writeFileSync(join(o.docs, `${stem}.png`), side);
        }
        console.error(`${stem}: SSIM ${s.mean.toFixed(4)}, ${result.seconds.toFixed(1)} s`);
      }
    }
  } finally {
    await browser.close();
  }
  const report = {
    ssim: "mean SSIM on luma (BT.601), 11×11 Gaussian window σ 1.5, K1 0.01, K2 0.03, full resolution, valid windows",
    pixelsOff: "share of pixels whose luma differs by more than 24 of 255 (the red of the difference pictures)",
    tolerancePx: 4,
    goals: GOALS,
    editabilityGoals: EDIT_GOALS,
    pages,
    seconds: (Date.now() - started) / 1000,
  };
  const md = `${table(pages)}\n\nEditability (issue 39; --check holds each at its goal, or at the page's floor where it has one):\n\n${editTable(pages)}`;
  const json = JSON.stringify(report, null, 2);
  if (o.out) {
    writeFileSync(join(o.out, "report.json"), json);
    writeFileSync(join(o.out, "report.md"), `${md}\n`);
  }
  if (o.docs) {
    writeFileSync(join(o.docs, "report.json"), `${json}\n`);
    writeFileSync(join(o.docs, "report.md"), `${md}\n`);
  }
  console.log(md);
  for (const p of pages) {
    for (const kind of ["texts", "images", "boxes"]) {
      for (const miss of p[kind].misses) {
        console.log(`  ${p.page} ${kind} miss: ${miss.text ? `"${miss.text.slice(0, 50)}" ` : ""}${miss.path} at ${miss.box}: ${miss.why}`);
      }
    }
    if (p.texts.extra) console.log(`  ${p.page}: ${p.texts.extra} TEXT nodes match no run of the page (form values, markers, or misses)`);
    for (const n of p.notes) console.log(`  ${p.page} note: ${n}`);
  }
  if (o.outline) {
    if (outlined === null) console.log(`--outline ${o.outline}: no such page`);
    else console.log(`\nlayers of ${o.outline} (the first 40):\n${outlined}`);
  }
  if (o.check) {
    const failed = [];
    for (const p of pages) {
      const page = p.page.replace(/@\d+$/, "");
      const floor = page in FLOORS ? FLOORS[page] : DEFAULT_FLOOR;
      if (!floor) continue; // a page measured without a floor
      const got = { ssim: p.ssim, texts: share(p.texts) ?? 1, images: share(p.images) ?? 1, boxes: share(p.boxes) ?? 1 };
      for (const k of Object.keys(floor)) if (got[k] < floor[k]) failed.push(`${p.page} ${k} ${got[k].toFixed(3)} < ${floor[k]}`);
      failed.push(...editBelow(page, p.editability));
    }
    if (failed.length) {
      console.error(`fidelity below the floors:\n  ${failed.join("\n  ")}`);
      process.exit(1);
    }
    console.error("fidelity: every page at or above its floor");
  }
}

await main();
