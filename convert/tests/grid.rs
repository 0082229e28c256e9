//! CSS grid as Figma's GRID (issue 39, item 2): the tracks as laid out, gaps, padding, each
//! item's cell and span; only where every item fills its cells, as Figma's grid would draw it.
//! Against real Chromium.

mod common;

use common::{renderer, runtime};

use code2des_convert::doc::{GridTrack, GridTrackType, LayoutMode};
use code2des_convert::{convert, Node, Output};

fn run(body: &str) -> Output {
    let html = format!(
        "<!DOCTYPE html><html><head><style>body {{ margin: 0 }} .g {{ display: grid; width: 620px; \
         padding: 10px; gap: 20px 10px; background: #eee }} .g > div {{ background: #9cf; min-height: 40px }}</style>\
         </head><body>{body}</body></html>"
    );
    runtime().block_on(convert(renderer(), html.as_bytes(), false)).expect("converts")
}

fn grid(out: &Output) -> Option<&Node> {
    out.document.walk().map(|(n, _)| n).find(|n| n.layout_mode == Some(LayoutMode::GRID))
}

#[test]
fn a_grid_of_equal_columns_and_a_spanning_item_is_a_figma_grid() {
    let out = run("<div class=g style=\"grid-template-columns: repeat(3, 1fr)\">\
         <div id=wide style=\"grid-column: span 2\">a</div><div>b</div><div>c</div><div>d</div><div>e</div></div>");
    let g = grid(&out).expect("a GRID frame");
    assert_eq!((g.grid_column_count, g.grid_row_count), (Some(3), Some(2)));
    assert_eq!((g.grid_column_gap, g.grid_row_gap), (Some(10.0), Some(20.0)));
    let flex = GridTrack { kind: GridTrackType::FLEX, value: Some(1.0) };
    assert_eq!(g.grid_column_sizes.as_deref(), Some(&[flex.clone(), flex.clone(), flex][..]), "1fr columns are FLEX");
    assert!(g.grid_row_sizes.as_ref().unwrap().iter().all(|t| t.kind == GridTrackType::FIXED));
    assert_eq!((g.padding_left, g.padding_top), (Some(10.0), Some(10.0)));
    let cells: Vec<(u32, u32, u32, u32)> = g
        .children
        .iter()
        .flatten()
        .map(|k| {
            let at = |v: Option<u32>| v.expect("placed in a cell");
            (at(k.grid_row_anchor_index), at(k.grid_column_anchor_index), at(k.grid_row_span), at(k.grid_column_span))
        })
        .collect();
    assert_eq!(cells, [(0, 0, 1, 2), (0, 2, 1, 1), (1, 0, 1, 1), (1, 1, 1, 1), (1, 2, 1, 1)]);
}

#[test]
fn fixed_tracks_stay_fixed_and_an_item_not_filling_its_cell_keeps_absolute_positions() {
    let out = run("<div class=g style=\"grid-template-columns: 100px 200px\"><div>a</div><div>b</div></div>");
    let g = grid(&out).expect("a GRID frame");
    let sizes: Vec<(GridTrackType, Option<f64>)> =
        g.grid_column_sizes.iter().flatten().map(|t| (t.kind, t.value)).collect();
    assert_eq!(sizes, [(GridTrackType::FIXED, Some(100.0)), (GridTrackType::FIXED, Some(200.0))]);
    // An item aligned to the start of a taller row does not fill its cell: Figma's grid would
    // not put it there, so the container keeps absolute positions.
    let out = run("<div class=g style=\"grid-template-columns: 1fr 1fr; align-items: start\">\
         <div style=\"height: 80px\">tall</div><div>short</div></div>");
    assert!(grid(&out).is_none());
}
