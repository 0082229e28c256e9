// The ground truth, read from the page itself in Chromium (page.evaluate), never from the
// converter: what a person sees as texts, images and background boxes, in page pixels.
//
// - texts: every visible DOM text node, split into its words; words that share a line (the
//   same top, within 1 px) form one run. A run's box spans its words' Range client rects
//   horizontally; vertically it is the inline box CSS lays out (CSS 2.2 section 10.8.1: the
//   glyphs' content area with the leading of a `line-height` length split evenly above and
//   below it; the content area itself for `normal`). Its font size and colour are the
//   element's computed ones, its words in the case `text-transform` draws them.
// - images: every visible <img>, outermost <svg>, <canvas>, <video>, and every element with a
//   url() background image (border box).
// - boxes: every visible element painting a background colour or gradient (its border box, or
//   for an inline element each line fragment's; the colour or the gradient's stop colours);
//   the root's (or body's) background is the canvas's, whose box is the whole page (CSS
//   Backgrounds 3, section 2.11.2).
//
// Not counted, as page scripts cannot see them: the value, placeholder and selected option of
// form controls (drawn in Chromium's user-agent shadow tree), list markers and other ::before /
// ::after content.

/** Runs in the page: answers { texts, images, boxes, width, height }. */
export function pageTruth() {
  const transparent = (c) => c === "transparent" || /rgba\([^)]*,\s*0\)$/.test(c) || /\/\s*0\)$/.test(c);
  const visibleBox = (r) => r.width > 0 && r.height > 0;
  const box = (r) => ({ x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height });
  const root = document.documentElement;
  const pageW = Math.max(root.scrollWidth, root.clientWidth);
  const pageH = Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0);
  const skipped = (el) => el.closest("script, style, head, template, noscript, svg, select, textarea, option");

  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const el = t.parentElement;
    if (!el || skipped(el)) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility !== "visible" || transparent(cs.color)) continue;
    const lh = cs.lineHeight === "normal" ? null : parseFloat(cs.lineHeight);
    const transform = (w) => {
      switch (cs.textTransform) {
        case "uppercase":
          return w.toUpperCase();
        case "lowercase":
          return w.toLowerCase();
        case "capitalize":
          return w.charAt(0).toUpperCase() + w.slice(1);
        default:
          return w;
      }
    };
    let run = null;
    const flush = () => {
      if (!run) return;
      let { top, bottom } = run;
      if (lh !== null && Number.isFinite(lh)) {
        const mid = (top + bottom) / 2;
        top = mid - lh / 2;
        bottom = mid + lh / 2;
      }
      texts.push({
        text: run.words.join(" "),
        x: run.left + scrollX,
        y: top + scrollY,
        w: run.right - run.left,
        h: bottom - top,
        fontSize: parseFloat(cs.fontSize),
        color: cs.color,
        path: run.path,
      });
      run = null;
    };
    // Words, and the white space between them that Chromium gives a width on the same line:
    // the run's box spans its characters on that line, its words are what must be equal.
    const re = /\S+|\s+/g;
    let space = null;
    let m;
    while ((m = re.exec(t.data)) !== null) {
      const range = document.createRange();
      range.setStart(t, m.index);
      range.setEnd(t, m.index + m[0].length);
      const rects = [...range.getClientRects()].filter(visibleBox);
      if (rects.length === 0) continue;
      const r = rects[0];
      if (/^\s/.test(m[0])) {
        if (run && Math.abs(r.top - run.top) <= 1 && r.left >= run.right - 1) run.right = Math.max(run.right, r.right);
        space = r;
        continue;
      }
      // A word broken across lines has a rect per line; its first decides its line.
      const last = rects[rects.length - 1];
      if (run && Math.abs(r.top - run.top) <= 1 && r.left >= run.right - 1) {
        run.words.push(transform(m[0]));
        run.right = Math.max(run.right, last.right);
        run.bottom = Math.max(run.bottom, r.bottom);
      } else {
        flush();
        run = { words: [transform(m[0])], left: r.left, right: r.right, top: r.top, bottom: r.bottom, path: describe(el) };
        // White space just before the first word on its line belongs to the run.
        if (space && Math.abs(space.top - r.top) <= 1 && Math.abs(space.right - r.left) <= 1) run.left = space.left;
      }
      space = null;
    }
    flush();
  }

  const images = [];
  const boxes = [];
  // The element whose background the canvas takes: the root's, else body's.
  const html = root;
  const body = document.body;
  const paints = (cs) => !transparent(cs.backgroundColor) || /gradient\(/.test(cs.backgroundImage);
  const canvasFrom = paints(getComputedStyle(html)) ? html : body && paints(getComputedStyle(body)) ? body : null;
  for (const el of [html, ...html.querySelectorAll("*")]) {
    if (el.closest("head, script, style, template, noscript")) continue;
    if (el.parentElement && el.parentElement.closest("svg")) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility !== "visible" || cs.display === "none") continue;
    const r = el.getBoundingClientRect();
    const tag = el.tagName.toLowerCase();
    if (visibleBox(r) && (["img", "svg", "canvas", "video"].includes(tag) || /url\(/.test(cs.backgroundImage))) {
      images.push({ ...box(r), kind: tag === "svg" || tag === "img" || tag === "canvas" || tag === "video" ? tag : "background", path: describe(el) });
    }
    if (!paints(cs)) continue;
    // An inline element broken across lines paints each of its line fragments.
    const rects =
      el === canvasFrom
        ? [{ x: 0, y: 0, w: pageW, h: pageH }]
        : cs.display === "inline"
          ? [...el.getClientRects()].filter(visibleBox).map(box)
          : visibleBox(r)
            ? [box(r)]
            : [];
    for (const b of rects) {
      boxes.push({
        ...b,
        color: transparent(cs.backgroundColor) ? null : cs.backgroundColor,
        gradients: cs.backgroundImage === "none" ? [] : splitTop(cs.backgroundImage).filter((l) => /gradient\(/.test(l)),
        path: describe(el),
      });
    }
  }
  return { texts, images, boxes, width: pageW, height: pageH };

  function splitTop(s) {
    const out = [];
    let depth = 0;
    let start = 0;
    for (let i = 0; i < s.length; i++) {
      if (s[i] === "(") depth++;
      else if (s[i] === ")") depth--;
      else if (s[i] === "," && depth === 0) {
        out.push(s.slice(start, i).trim());
        start = i + 1;
      }
    }
    out.push(s.slice(start).trim());
    return out;
  }

  function describe(el) {
    const parts = [];
    for (let e = el; e && e !== document.documentElement; e = e.parentElement) {
      let p = e.tagName.toLowerCase();
      if (e.id) p += `#${e.id}`;
      else if (e.classList.length) p += `.${e.classList[0]}`;
      parts.unshift(p);
      if (p.startsWith("body")) break;
    }
    return parts.join(" > ") || "html";
  }
}
