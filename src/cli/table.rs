//! Terminal formatting for the remote commands: aligned columns, short ids, relative times,
//! and text made safe to print (no control characters from agent-written strings).

use crate::protocol::Timestamp;
use serde_json::Value;

/// Columns padded to their widest cell, two spaces apart; the last column is not padded.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let widths = self.widths();
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|row| render_row(row, &widths))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.header.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(width(cell));
                }
            }
        }
        widths
    }
}

fn render_row(row: &[String], widths: &[usize]) -> String {
    let last = row.len().saturating_sub(1);
    let mut line = String::new();
    for (i, cell) in row.iter().enumerate() {
        line.push_str(cell);
        if i < last {
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(width(cell));
            line.push_str(&" ".repeat(pad + 2));
        }
    }
    line.trim_end().to_owned()
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Text on one line as `crate::shown` writes an agent's (`shown::line`): a line break is `⏎`,
/// a run of spaces one space, and every character that could hide, reorder or pass for a
/// quote or a space (a bidi control, an escape, `U+3000`, a lookalike quote) written out as
/// `⟨U+202E⟩`. Every string the CLI prints from the server goes through it.
pub fn clean(s: &str) -> String {
    crate::shown::line(s)
}

/// [`clean`], cut at `max` characters (`shown::line_within`: after the spaces are made one,
/// so padding cannot push the rest out of the cut, and never through a written-out character).
pub fn clean_within(s: &str, max: usize) -> String {
    crate::shown::line_within(s, max)
}

/// Pretty JSON for `--json`.
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// "in 29m", "3s ago", "just now" from `now_ms` (Unix milliseconds); the raw text when it is
/// not a time.
pub fn relative(at: &Timestamp, now_ms: i64) -> String {
    let Some(t) = at.unix_ms() else {
        return clean(at.as_str());
    };
    let secs = (t - now_ms) / 1000;
    match secs {
        0 => "just now".to_owned(),
        s if s > 0 => format!("in {}", span(s)),
        s => format!("{} ago", span(-s)),
    }
}

/// A time as `2026-01-02 15:04:05` (UTC); the raw text when it is not a time.
pub fn utc(at: &Timestamp) -> String {
    clean(&at.second())
}

/// A positive number of seconds in the largest sensible units: 45s, 29m, 1h 5m, 2d 3h.
pub fn span(secs: i64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{m}m"),
        s if s < 86_400 && m == 0 => format!("{h}h"),
        s if s < 86_400 => format!("{h}h {m}m"),
        _ if h == 0 => format!("{d}d"),
        _ => format!("{d}d {h}h"),
    }
}
