// Bundles the plugin: dist/code.js (main thread) and dist/ui.html (the UI with its script
// inlined: Figma loads `ui` as one HTML document, with no server to fetch scripts from).
// `node build.mjs --watch` rebuilds both on every change.
import { access, mkdir, readFile, writeFile } from "node:fs/promises";
import * as esbuild from "esbuild";

const here = new URL(".", import.meta.url);
const path = (p) => new URL(p, here).pathname;

// Writes dist/ui.html from src/ui.html and the bundled script, after every UI build.
const inlineIntoHtml = {
  name: "inline-into-html",
  setup(build) {
    build.onEnd(async (result) => {
      if (result.errors.length > 0) return;
      const js = result.outputFiles[0].text.replaceAll("</script", "<\\/script");
      const html = await readFile(path("src/ui.html"), "utf8");
      if (!html.includes("/*UI_SCRIPT*/")) throw new Error("src/ui.html lost its /*UI_SCRIPT*/ slot");
      await writeFile(path("dist/ui.html"), html.replace("/*UI_SCRIPT*/", () => js));
    });
  },
};

// Figma's main-thread sandbox runs ES2020 and up; the UI runs in Figma's Chromium.
const common = { bundle: true, format: "iife", target: "es2020", logLevel: "warning", legalComments: "none" };
const builds = [
  { ...common, entryPoints: [path("src/code.ts")], outfile: path("dist/code.js") },
  { ...common, entryPoints: [path("src/ui.ts")], write: false, outfile: path("dist/ui.js"), plugins: [inlineIntoHtml] },
];

// The client comes from its packed tarball, installed as a consumer installs it (`npm run
// client`: scripts/check-client-package --install-into plugin), not from clients/typescript/src.
try {
  await access(path("node_modules/@code2des/client/package.json"));
} catch {
  console.error("@code2des/client is not installed: run `npm run client` here (it packs clients/typescript and installs the tarball)");
  process.exit(1);
}

await mkdir(path("dist"), { recursive: true });
if (process.argv.includes("--watch")) {
  for (const options of builds) await (await esbuild.context(options)).watch();
  console.log("watching src/ (Ctrl-C stops)");
} else {
  for (const options of builds) await esbuild.build(options);
}
