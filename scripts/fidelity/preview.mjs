#!/usr/bin/env node
// The Rust preview against the fidelity benchmark's drawing (issue 40 item 2): each converted
// page drawn by `code2des-worker preview` (worker/src/preview: resvg, fonts through fontdb,
// paragraphs shaped and broken in Rust) and by this benchmark's writer (svg.mjs, rendered by
// resvg-js, paragraphs broken by Chromium), as SSIM between the two (image.mjs's, as
// fidelity.mjs measures it).
//
//   node preview.mjs --converted DIR --worker BIN [--out DIR] [--check] capture.html...
//
// DIR/<stem>/document.json and DIR/<stem>/images/ are what `convert --out DIR` writes; BIN is
// the code2des-worker binary. --out keeps both pictures, the side-by-side and the report;
// --check exits 1 when a page of samples/ (not samples/real/) is below FLOOR.

import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { basename, dirname, join } from "node:path";
import { chromium } from "playwright-core";
import { Resvg } from "@resvg/resvg-js";
import { SvgWriter } from "./svg.mjs";
import { wrapped } from "./editability.mjs";
import { decode, encode, fit, ssim, sideBySide } from "./image.mjs";
import { webFonts, resvgFonts } from "./webfonts.mjs";

/** The agreement issue 40 item 2 asks for on the samples. */
export const FLOOR = 0.99;

const MIME = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", svg: "image/svg+xml" };

function args(argv) {
  const o = { captures: [], check: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--converted") o.converted = argv[++i];
    else if (a === "--worker") o.worker = argv[++i];
    else if (a === "--out") o.out = argv[++i];
    else if (a === "--check") o.check = true;
    else o.captures.push(a);
  }
  if (!o.converted || !o.worker || o.captures.length === 0) {
    console.error("usage: preview.mjs --converted DIR --worker BIN [--out DIR] [--check] capture.html...");
    process.exit(2);
  }
  return o;
}

function loadConverted(dir) {
  const out = JSON.parse(readFileSync(join(dir, "document.json"), "utf8"));
  const images = new Map();
  for (const [ref, file] of Object.entries(out.images ?? {})) {
    const ext = file.split(".").pop().toLowerCase();
    images.set(ref, { mime: MIME[ext] ?? "application/octet-stream", bytes: readFileSync(join(dir, file)) });
  }
  return { ...out, imageMap: images };
}

async function main() {
  const o = args(process.argv.slice(2));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--font-render-hinting=none", "--hide-scrollbars", "--disable-gpu"],
  });
  const pages = [];
  try {
    for (const capture of o.captures) {
      const stem = basename(capture).replace(/\.[^.]*$/, "");
      const sample = basename(dirname(capture)) === "samples";
      const dir = join(o.converted, stem);
      const converted = loadConverted(dir);
      const width = Math.round(converted.document.width);
      const height = Math.round(converted.document.height);
      // The fidelity drawing exactly as fidelity.mjs draws it: with the capture's web fonts.
      const web = await webFonts(readFileSync(capture, "utf8"));
      const writer = new SvgWriter(converted.imageMap, () => {}, await wrapped(browser, converted.document, web.css), web.faces);
      const svg = writer.write(converted.document, width, height);
      const resvg = new Resvg(svg, { fitTo: { mode: "original" }, font: resvgFonts(web.faces) });
      const theirs = fit(decode(resvg.render().asPng()), width, height);
      const png = join(dir, "preview.png");
      const t0 = Date.now();
      execFileSync(o.worker, ["preview", join(dir, "document.json"), "--out", png], { stdio: ["ignore", "ignore", "inherit"] });
      const seconds = (Date.now() - t0) / 1000;
      const ours = fit(decode(readFileSync(png)), width, height);
      const s = ssim(theirs, ours).mean;
      pages.push({ page: stem, sample, width, height, ssim: s, seconds });
      if (o.out) {
        const d = join(o.out, stem);
        mkdirSync(d, { recursive: true });
        writeFileSync(join(d, "fidelity.png"), encode(theirs));
        writeFileSync(join(d, "preview.png"), encode(ours));
        writeFileSync(join(d, "side-by-side.png"), encode(sideBySide(theirs, ours)));
      }
      console.error(`${stem}: SSIM ${s.toFixed(4)} (the Rust preview in ${seconds.toFixed(1)} s)`);
    }
  } finally {
    await browser.close();
  }
  const md = [
    "| page | size | SSIM, preview vs fidelity drawing | preview time |",
    "| --- | --- | --- | --- |",
    ...pages.map((p) => `| ${p.page} | ${p.width}×${p.height} | ${p.ssim.toFixed(4)} | ${p.seconds.toFixed(1)} s |`),
    `| floor (samples/) | | ≥ ${FLOOR} | |`,
  ].join("\n");
  console.log(md);
  if (o.out) writeFileSync(join(o.out, "report.json"), JSON.stringify({ floor: FLOOR, pages }, null, 2));
  if (o.check) {
    const failed = pages.filter((p) => p.sample && p.ssim < FLOOR);
    if (failed.length) {
      console.error(`preview below ${FLOOR}: ${failed.map((p) => `${p.page} ${p.ssim.toFixed(4)}`).join(", ")}`);
      process.exit(1);
    }
    console.error(`preview: every sample at or above ${FLOOR}`);
  }
}

await main();
