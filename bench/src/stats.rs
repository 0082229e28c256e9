//! Percentiles and plain-text tables.

use std::time::Duration;

/// The `p`-th percentile (0–100) of `xs` by nearest rank; `xs` need not be sorted.
pub fn pct(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

pub fn median(xs: &[f64]) -> f64 {
    pct(xs, 50.0)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A table printed with aligned columns.
pub struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(head: &[&str]) -> Self {
        Self { head: head.iter().map(|s| s.to_string()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn print(&self) {
        let n = self.head.len();
        let mut w = vec![0; n];
        for r in std::iter::once(&self.head).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &Vec<String>| {
            let cells: Vec<String> = r.iter().enumerate().map(|(i, c)| format!("{c:<width$}", width = w[i])).collect();
            println!("| {} |", cells.join(" | "));
        };
        line(&self.head);
        println!("|{}|", w.iter().map(|x| "-".repeat(x + 2)).collect::<Vec<_>>().join("|"));
        for r in &self.rows {
            line(r);
        }
        println!();
    }
}

pub fn f1(x: f64) -> String {
    format!("{x:.1}")
}

pub fn f2(x: f64) -> String {
    format!("{x:.2}")
}
