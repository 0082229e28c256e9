//! A paragraph's lines: a TEXT node of fixed width (`textAutoResize` `HEIGHT` or `NONE`) is a
//! text box whose lines Figma breaks at its width, as Chromium broke the page's paragraph. The
//! characters are shaped with harfrust in the faces fontdb picks (those resvg draws), and broken
//! as CSS `white-space: pre-wrap; overflow-wrap: break-word` breaks them: at every "\n", after a
//! run of spaces (which hang past the line's end), after a hyphen or dash between letters, and
//! inside a word only when the word alone is wider than the box.

use std::collections::HashMap;

use harfrust::{ShaperData, UnicodeBuffer};
use resvg::usvg::fontdb;

/// A run of characters in one face: up to `end` (a char index, exclusive).
#[derive(Debug, Clone)]
pub struct Run {
    pub end: usize,
    pub face: Option<fontdb::ID>,
    pub size: f64,
    /// Added after every character, in px (CSS `letter-spacing`).
    pub spacing: f64,
}

/// Shaping data per face, made once per preview.
#[derive(Default)]
pub struct Shapers(HashMap<fontdb::ID, ShaperData>);

/// Chromium lays lines out in LayoutUnits (1/64 px): a line that fits to within one still fits.
const SLACK: f64 = 1.0 / 64.0;

/// Each line of `chars` as a char range [start, end): the "\n" ending a line is in neither.
/// The first line of each paragraph starts `indent` px in (Figma's `paragraphIndent`), so it
/// has that much less room.
pub fn break_lines(
    db: &fontdb::Database,
    shapers: &mut Shapers,
    chars: &[char],
    runs: &[Run],
    (width, indent): (f64, f64),
) -> Vec<(usize, usize)> {
    let advances = advances(db, shapers, chars, runs);
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in chars.iter().enumerate().chain([(chars.len(), &'\n')]) {
        if *c == '\n' {
            wrap(chars, &advances, (start, i), (width, indent), &mut out);
            start = i + 1;
        }
    }
    out
}

/// Greedy breaking of chars[from..to] (no "\n" within) into lines of at most `width`, the
/// first `indent` narrower; an empty hard line is one empty line.
fn wrap(
    chars: &[char],
    adv: &[f64],
    (from, to): (usize, usize),
    (width, indent): (f64, f64),
    out: &mut Vec<(usize, usize)>,
) {
    if from == to {
        out.push((from, to));
        return;
    }
    let mut start = from;
    while start < to {
        let room = if start == from { width - indent } else { width };
        let end = line_end(chars, adv, start, to, room);
        out.push((start, end));
        start = end;
    }
}

/// Where the line starting at `start` ends: after the last break opportunity that fits, or
/// (a word wider than the box) after the last character that fits, at least one. Spaces hang:
/// the width is measured at each other character, the spaces before it included.
fn line_end(chars: &[char], adv: &[f64], start: usize, to: usize, width: f64) -> usize {
    let mut last_fit = None;
    let mut x = 0.0;
    for i in start..to {
        x += adv[i];
        if chars[i] != ' ' && x > width + SLACK {
            return last_fit.unwrap_or(i.max(start + 1));
        }
        if can_break_after(chars, i + 1, to) {
            last_fit = Some(after_spaces(chars, i + 1, to));
        }
    }
    to
}

fn after_spaces(chars: &[char], mut at: usize, to: usize) -> usize {
    while at < to && chars[at] == ' ' {
        at += 1;
    }
    at
}

/// A break opportunity between chars[at - 1] and chars[at] (UAX #14, the cases text has):
/// after spaces, after a hyphen or dash that follows a letter or digit, after a zero-width
/// space, and around ideographs.
fn can_break_after(chars: &[char], at: usize, to: usize) -> bool {
    if at >= to {
        return false;
    }
    let (prev, next) = (chars[at - 1], chars[at]);
    if next == ' ' {
        return false;
    }
    if prev == ' ' || prev == '\u{200b}' {
        return true;
    }
    let dash = matches!(prev, '-' | '\u{2010}' | '\u{2013}' | '\u{2014}');
    let before = if at >= 2 { chars[at - 2] } else { ' ' };
    if dash && before.is_alphanumeric() && !next.is_ascii_digit() {
        return true;
    }
    ideograph(prev) || ideograph(next)
}

fn ideograph(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff)
}

/// Each character's advance in px: its cluster's advance on its first character, letter
/// spacing after each.
fn advances(db: &fontdb::Database, shapers: &mut Shapers, chars: &[char], runs: &[Run]) -> Vec<f64> {
    let mut out = vec![0.0; chars.len()];
    let mut start = 0;
    for run in runs {
        let end = run.end.min(chars.len());
        if end <= start {
            continue;
        }
        // Shaped by hard line, as Chromium shapes no run across a line break.
        let mut from = start;
        for i in start..=end {
            if i == end || chars[i] == '\n' {
                shape(db, shapers, &chars[from..i], run, &mut out[from..i]);
                from = i + 1;
            }
        }
        for a in &mut out[start..end] {
            *a += run.spacing;
        }
        start = end;
    }
    out
}

fn shape(db: &fontdb::Database, shapers: &mut Shapers, chars: &[char], run: &Run, out: &mut [f64]) {
    let Some(id) = run.face else { return };
    if chars.is_empty() {
        return;
    }
    let text: String = chars.iter().collect();
    // Byte offset → char index of the run.
    let mut at = HashMap::with_capacity(chars.len());
    for (i, (b, _)) in text.char_indices().enumerate() {
        at.insert(b as u32, i);
    }
    db.with_face_data(id, |data, index| {
        let Ok(font) = read_fonts::FontRef::from_index(data, index) else { return };
        let upm = f64::from(read_fonts::TableProvider::head(&font).map_or(1000, |h| h.units_per_em()).max(1));
        let shaper_data = shapers.0.entry(id).or_insert_with(|| ShaperData::new(&font));
        let shaper = shaper_data.shaper(&font).build();
        let mut buffer = UnicodeBuffer::new();
        buffer.push_str(&text);
        buffer.guess_segment_properties();
        let glyphs = shaper.shape(buffer, harfrust::ShapeOptions::new());
        let scale = run.size / upm;
        for (info, pos) in glyphs.glyph_infos().iter().zip(glyphs.glyph_positions()) {
            if let Some(&i) = at.get(&info.cluster) {
                out[i] += f64::from(pos.x_advance) * scale;
            }
        }
    });
}
