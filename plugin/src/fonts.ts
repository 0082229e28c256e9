// Which font stands in for one Figma cannot load (issue 39, item 6): the nearest member of the
// same family, else Inter at the same weight and italic, so that a heading stays bold and an
// emphasis stays italic. Pure over Figma's font list, so the tests run exactly this code.

/** Every Figma file has Inter; the last resort is its Regular. */
export const FALLBACK_FAMILY = "Inter";
export const FALLBACK_FONT: FontName = { family: FALLBACK_FAMILY, style: "Regular" };

/** A style name read as CSS reads a face: weight, italic, and what else it says (a width). */
export interface Face {
  weight: number;
  italic: boolean;
  /** What is left of the name once weight and slope are taken out ("condensed", or ""). */
  rest: string;
}

// Longest first, so "semibold" is not read as "bold" nor "extralight" as "light".
const WEIGHT_WORDS: [string, number][] = [
  ["extralight", 200],
  ["ultralight", 200],
  ["semibold", 600],
  ["demibold", 600],
  ["extrabold", 800],
  ["ultrabold", 800],
  ["hairline", 100],
  ["regular", 400],
  ["medium", 500],
  ["normal", 400],
  ["black", 900],
  ["heavy", 900],
  ["light", 300],
  ["roman", 400],
  ["thin", 100],
  ["bold", 700],
  ["book", 400],
];

/** "Semi Bold Italic" → 600, italic; "SemiBold Condensed" → 600, upright, "condensed". */
export function parseStyle(style: string): Face {
  let s = style.toLowerCase().replace(/[\s_-]+/g, "");
  const italic = /italic|oblique/.test(s);
  s = s.replace(/italic|oblique/g, "");
  let weight = 400;
  const hit = WEIGHT_WORDS.find(([word]) => s.includes(word));
  if (hit) {
    weight = hit[1];
    s = s.replace(hit[0], "");
  }
  return { weight, italic, rest: s };
}

const INTER_WEIGHTS: [number, string][] = [
  [100, "Thin"],
  [200, "Extra Light"],
  [300, "Light"],
  [400, "Regular"],
  [500, "Medium"],
  [600, "Semi Bold"],
  [700, "Bold"],
  [800, "Extra Bold"],
  [900, "Black"],
];

/** Inter's style for a weight and slope, as Figma names it ("Semi Bold Italic"; "Italic"). */
export function interStyle(weight: number, italic: boolean): string {
  const [, name] = INTER_WEIGHTS.reduce((a, b) => (Math.abs(b[0] - weight) < Math.abs(a[0] - weight) ? b : a));
  if (!italic) return name;
  return name === "Regular" ? "Italic" : `${name} Italic`;
}

/**
 * How far weight `have` is from `want`, in the order CSS Fonts 4 (5.2, font-weight) tries them:
 * from 400 to 500, the heavier up to 500 first, then the lighter, then the heavier; below 400
 * the lighter first; above 500 the heavier first.
 */
function weightRank(want: number, have: number): number {
  const d = Math.abs(have - want);
  if (want >= 400 && want <= 500) {
    if (have >= want && have <= 500) return d;
    return have < want ? 1000 + d : 2000 + d;
  }
  if (want < 400) return have <= want ? d : 1000 + d;
  return have >= want ? d : 1000 + d;
}

/**
 * The face of `candidates` nearest `want`: the same width first, then the same slope, then the
 * nearest weight as CSS picks it. `undefined` when there is none.
 */
export function nearest(want: string, candidates: readonly FontName[]): FontName | undefined {
  const w = parseStyle(want);
  const rank = (f: FontName) => {
    const h = parseStyle(f.style);
    return (h.rest === w.rest ? 0 : 20000) + (h.italic === w.italic ? 0 : 10000) + weightRank(w.weight, h.weight);
  };
  let best: FontName | undefined;
  let bestRank = Infinity;
  for (const f of candidates) {
    const r = rank(f);
    if (r < bestRank) [best, bestRank] = [f, r];
  }
  return best;
}

const same = (a: string, b: string) => a.localeCompare(b, undefined, { sensitivity: "accent" }) === 0;

/**
 * What stands in for `want`, which Figma could not load, given the fonts Figma lists: the
 * nearest other face of its family, else the nearest face of Inter (Inter's own name for that
 * weight and slope when the list has no Inter), else Inter Regular.
 */
export function substitute(want: FontName, available: readonly FontName[]): FontName {
  const others = available.filter((f) => !(f.family === want.family && f.style === want.style));
  const family = nearest(want.style, others.filter((f) => same(f.family, want.family)));
  if (family) return family;
  const inter = nearest(want.style, others.filter((f) => f.family === FALLBACK_FAMILY));
  if (inter) return inter;
  const w = parseStyle(want.style);
  return { family: FALLBACK_FAMILY, style: interStyle(w.weight, w.italic) };
}
