//! The fonts a preview is drawn with: the system's, found by fontdb, the one database resvg
//! draws with and the paragraph shaper measures with, so a line is broken with the very font
//! that draws it. A family the machine does not have is drawn in Inter at the same weight and
//! slope, as the plugin substitutes a font Figma cannot load (plugin/src/fonts.ts).

use std::sync::{Arc, OnceLock};

use read_fonts::TableProvider;
use resvg::usvg::fontdb;

/// The plugin's last resort: every Figma file has Inter.
pub const FALLBACK_FAMILY: &str = "Inter";

/// The system's fonts, loaded once per process (a scan of the font directories takes a
/// noticeable fraction of a second, and every preview of a worker uses the same).
pub fn system() -> Arc<fontdb::Database> {
    static DB: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = fontdb::Database::new();
        db.load_system_fonts();
        db.set_sans_serif_family(FALLBACK_FAMILY);
        Arc::new(db)
    })
    .clone()
}

/// A Figma style name read as CSS weight and slope ("Semi Bold Italic" → 600, italic), with
/// the plugin's words (plugin/src/fonts.ts `parseStyle`, longest first).
pub fn parse_style(style: &str) -> (u16, bool) {
    let s: String = style.to_lowercase().chars().filter(|c| !matches!(c, ' ' | '_' | '-')).collect();
    let italic = s.contains("italic") || s.contains("oblique");
    const WORDS: [(&str, u16); 17] = [
        ("extralight", 200),
        ("ultralight", 200),
        ("semibold", 600),
        ("demibold", 600),
        ("extrabold", 800),
        ("ultrabold", 800),
        ("hairline", 100),
        ("regular", 400),
        ("medium", 500),
        ("normal", 400),
        ("black", 900),
        ("heavy", 900),
        ("light", 300),
        ("roman", 400),
        ("thin", 100),
        ("bold", 700),
        ("book", 400),
    ];
    let weight = WORDS.iter().find(|(w, _)| s.contains(w)).map_or(400, |(_, n)| *n);
    (weight, italic)
}

/// The family a document's family is drawn in: itself when the machine has it, else Inter.
pub fn family<'a>(db: &fontdb::Database, name: &'a str) -> &'a str {
    let known = db.faces().any(|f| f.families.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)));
    if known {
        name
    } else {
        FALLBACK_FAMILY
    }
}

/// The face fontdb (and so resvg) picks for a family, weight and slope.
pub fn face(db: &fontdb::Database, family: &str, weight: u16, italic: bool) -> Option<fontdb::ID> {
    let families = [fontdb::Family::Name(family), fontdb::Family::Name(FALLBACK_FAMILY)];
    let style = if italic { fontdb::Style::Italic } else { fontdb::Style::Normal };
    db.query(&fontdb::Query {
        families: &families,
        weight: fontdb::Weight(weight),
        stretch: fontdb::Stretch::Normal,
        style,
    })
}

/// Vertical metrics in ems: where a line's baseline lies in its box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    pub ascender: f64,
    pub descender: f64,
    pub line_gap: f64,
}

/// DejaVu Sans's proportions, for a face that cannot be read (as the benchmark's fonts.mjs).
const TYPICAL: Metrics = Metrics { ascender: 0.928, descender: 0.236, line_gap: 0.0 };

/// hhea's ascender, descender and line gap, or OS/2's typographic ones when the font asks for
/// them (USE_TYPO_METRICS, fsSelection bit 7), as Skia and Figma take them.
pub fn metrics(db: &fontdb::Database, id: Option<fontdb::ID>) -> Metrics {
    let read = |data: &[u8], index: u32| -> Option<Metrics> {
        let font = read_fonts::FontRef::from_index(data, index).ok()?;
        let upm = f64::from(font.head().ok()?.units_per_em().max(1));
        let hhea = font.hhea().ok()?;
        let (mut a, mut d, mut g) = (hhea.ascender().to_i16(), -hhea.descender().to_i16(), hhea.line_gap().to_i16());
        if let Ok(os2) = font.os2() {
            if os2.fs_selection().bits() & 0x80 != 0 || (a == 0 && d == 0) {
                (a, d, g) = (os2.s_typo_ascender(), -os2.s_typo_descender(), os2.s_typo_line_gap());
            }
        }
        Some(Metrics { ascender: f64::from(a) / upm, descender: f64::from(d) / upm, line_gap: f64::from(g) / upm })
    };
    id.and_then(|id| db.with_face_data(id, read).flatten()).unwrap_or(TYPICAL)
}
