//! `search`: plain substring search through the text files under a workspace path.

use std::io::{BufRead, BufReader};

use tokio_util::sync::CancellationToken;
use walkdir::WalkDir;

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use std::time::Duration;

use super::beneath::Access;
use super::confine::{self, Resolved};
use super::output::cap_text;
use super::reader::{self, Guard};
use super::{
    CardText, CheckEnv, Refusal, Subject, Tool, ToolContext, ToolError, ToolOutput, files,
    non_empty, parse, spec::spec_for,
};
use crate::protocol::ToolClass;
use crate::server::conversation::ToolSpec;

pub struct Search;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Exact text to look for.
    pattern: String,
    /// File or directory to search, relative to the workspace; defaults to `.`.
    #[serde(default)]
    #[schemars(with = "String")]
    path: Option<String>,
}

/// The pattern and the path (default `.`), checked for shape.
fn args(value: &Value) -> Result<(String, String), ToolError> {
    let args: Args = parse(value)?;
    non_empty("pattern", &args.pattern)?;
    let path = args.path.unwrap_or_else(|| ".".into());
    non_empty("path", &path)?;
    Ok((args.pattern, path))
}

#[async_trait]
impl Tool for Search {
    fn name(&self) -> &'static str {
        "search"
    }

    fn class(&self) -> ToolClass {
        ToolClass::Read
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Find lines containing a plain-text pattern (not a regex) in the workspace's text files, shown as `file:line: text`.",
            self.class(),
        )
    }

    fn check(&self, value: &Value, env: &CheckEnv<'_>) -> Result<(), Refusal> {
        confine::resolve(env.workspace, &args(value)?.1)?;
        Ok(())
    }

    fn subject_kind(&self) -> Option<super::SubjectKind> {
        Some(super::SubjectKind::Path)
    }

    fn subject(&self, value: &Value) -> Option<Subject> {
        files::path_subject(value, true)
    }

    fn card(&self, value: &Value, env: &super::CardEnv<'_>) -> CardText {
        files::reading_card(self.name(), value, env, true)
    }

    /// Where its path really leads, so an approved floor card reads the file it named.
    fn binds(&self, value: &Value, env: &super::CardEnv<'_>) -> Option<String> {
        Some(files::real_path_binding(value, env.workspace, true))
    }

    fn hidden(&self, value: &Value, workspace: &Path) -> Vec<super::Hidden> {
        files::hidden_of(value, workspace, true)
    }

    async fn run(&self, value: &Value, ctx: &ToolContext) -> ToolOutput {
        let found = async {
            let (pattern, path) = args(value)?;
            search(ctx, path, pattern).await
        };
        ToolOutput::from_result(found.await)
    }
}

/// Enough to locate things; a model wanting more should narrow the pattern or the path.
const MAX_MATCHES: usize = 200;
/// Longer matching lines (minified files) are clipped so a few can't fill the output.
const MAX_LINE_BYTES: usize = 300;
/// How long a whole search may take (it walks a tree; one file operation has `FS_LIMIT`).
const SEARCH_LIMIT: Duration = Duration::from_secs(60);
/// How many skipped files the result names.
const NAMED_SKIPS: usize = 5;

async fn search(ctx: &ToolContext, path: String, pattern: String) -> Result<ToolOutput, ToolError> {
    let (workspace, guard, cancel) = (ctx.workspace.clone(), ctx.guard.clone(), ctx.cancel.clone());
    let shown = confine::display_form(&path);
    let scan = reader::blocking(&shown, SEARCH_LIMIT, Some(&ctx.cancel), move || {
        let target = confine::resolve(&workspace, &path)?;
        // Checked first so a typo reads as "does not exist", not as "no matches".
        std::fs::symlink_metadata(&target.abs)
            .map_err(|e| ToolError::io("search", &target.shown, e))?;
        Ok(scan(&target, &pattern, &guard, &cancel))
    })
    .await?;
    if scan.cancelled {
        return Err(ToolError::Cancelled);
    }
    let mut text = if scan.lines.is_empty() {
        "no matches".to_owned()
    } else {
        let mut lines = scan.lines;
        // One match past the limit was collected only to know whether there are more.
        let more = lines.len() > MAX_MATCHES;
        lines.truncate(MAX_MATCHES);
        let mut text = lines.join("\n");
        if more {
            text.push_str(&format!("\n…[stopped at {MAX_MATCHES} matches]"));
        }
        text
    };
    if let Some(note) = skipped_note(&scan.skipped) {
        text.push_str(&note);
    }
    Ok(ToolOutput::ok(cap_text(&text, ctx.output_limit)))
}

/// Says which files the search did not read because they are on the safety floor.
fn skipped_note(skipped: &[String]) -> Option<String> {
    let (first, rest) = match skipped {
        [] => return None,
        [..] if skipped.len() > NAMED_SKIPS => skipped.split_at(NAMED_SKIPS),
        _ => (skipped, &[][..]),
    };
    let more = if rest.is_empty() {
        String::new()
    } else {
        format!(" and {} more", rest.len())
    };
    Some(format!(
        "\n…[not searched: {} on the safety floor (by path, or as files with other hard links): {}{more}; read_file asks for one]",
        files::plural(skipped.len(), "file"),
        first.join(", ")
    ))
}

struct Scan {
    lines: Vec<String>,
    /// Files left out because they are on the floor, by the path shown.
    skipped: Vec<String>,
    cancelled: bool,
}

/// Walks without following symlinks (so nothing outside the workspace is read), skipping `.git`
/// and, unless a person approved this search on a floor card, every file on the floor.
fn scan(target: &Resolved, pattern: &str, guard: &Guard, cancel: &CancellationToken) -> Scan {
    let mut found = Scan {
        lines: Vec::new(),
        skipped: Vec::new(),
        cancelled: false,
    };
    let walk = WalkDir::new(&target.abs)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git");
    for entry in walk {
        if cancel.is_cancelled() {
            found.cancelled = true;
            return found;
        }
        // Unreadable entries are skipped: a search reports what it can see.
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_file() {
            continue;
        }
        let shown = entry
            .path()
            .strip_prefix(&target.root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        let file = Resolved {
            root: target.root.clone(),
            abs: entry.path().to_owned(),
            shown,
        };
        match reader::open(&file, Access::Read, guard) {
            Ok(opened) => search_file(opened, &file.shown, pattern, &mut found.lines),
            Err(ToolError::OnFloor { .. }) => found.skipped.push(file.shown),
            // Not a regular file (any more), gone, unreadable: nothing to search.
            Err(_) => {}
        }
        if found.lines.len() > MAX_MATCHES {
            break;
        }
    }
    found
}

/// The most of one line a search holds in memory; the rest of a longer line is skipped (a
/// 20 GB file of one line must not become a 20 GB buffer).
const MAX_SCANNED_LINE: usize = 64 * 1024;

/// Reads one line into `buf`, keeping at most `cap` bytes of it and skipping the rest; the
/// number of bytes the line had (0 at the end of the file).
fn read_line_capped(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (line, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => (&chunk[..=at], true),
            None => (chunk, false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&line[..line.len().min(room)]);
        let used = line.len();
        total += used;
        reader.consume(used);
        if done {
            return Ok(total);
        }
    }
}

/// Appends `file:line: text` for each matching line; binary files (a NUL early on) are skipped.
fn search_file(file: std::fs::File, shown: &str, pattern: &str, lines: &mut Vec<String>) {
    let mut reader = BufReader::new(file);
    match reader.fill_buf() {
        Ok(head) if !head.contains(&0) => {}
        _ => return,
    }
    let mut buf = Vec::new();
    let mut number = 0usize;
    while lines.len() <= MAX_MATCHES {
        buf.clear();
        match read_line_capped(&mut reader, &mut buf, MAX_SCANNED_LINE) {
            Ok(0) | Err(_) => return,
            Ok(_) => number += 1,
        }
        let line = String::from_utf8_lossy(&buf);
        if line.contains(pattern) {
            let line = line.trim_end_matches(['\n', '\r']);
            lines.push(format!(
                "{shown}:{number}: {}",
                crate::text::truncate_bytes(line, MAX_LINE_BYTES)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{ctx, run};
    use crate::protocol::ToolStatus;
    use serde_json::json;
    use std::fs;

    #[tokio::test]
    async fn finds_file_and_line_skipping_git_and_binary_files() {
        let ws = tempfile::tempdir().unwrap();
        fs::create_dir_all(ws.path().join("src")).unwrap();
        fs::create_dir_all(ws.path().join(".git")).unwrap();
        fs::write(ws.path().join("src/lib.rs"), "fn a() {}\nfn needle() {}\n").unwrap();
        fs::write(ws.path().join("notes.md"), "a needle here\r\nnone\n").unwrap();
        fs::write(ws.path().join(".git/config"), "needle\n").unwrap();
        fs::write(ws.path().join("blob.bin"), b"needle\0\x01").unwrap();
        let c = ctx(ws.path(), 10_000);

        let out = run(&c, "search", json!({"pattern": "needle"})).await;
        assert_eq!(out.status, ToolStatus::Ok);
        assert_eq!(
            out.output,
            "notes.md:1: a needle here\nsrc/lib.rs:2: fn needle() {}"
        );

        let out = run(&c, "search", json!({"pattern": "needle", "path": "src"})).await;
        assert_eq!(out.output, "src/lib.rs:2: fn needle() {}");

        let out = run(&c, "search", json!({"pattern": "n.edle"})).await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Ok, "no matches")
        );

        let out = run(&c, "search", json!({"pattern": "x", "path": "nowhere"})).await;
        assert_eq!(out.status, ToolStatus::Error);
    }

    #[test]
    fn a_huge_line_is_held_only_up_to_the_cap() {
        let text = format!("{}needle\nsecond\n", "a".repeat(200_000));
        let mut reader = std::io::BufReader::with_capacity(4096, text.as_bytes());
        let mut buf = Vec::new();
        let n = super::read_line_capped(&mut reader, &mut buf, 1000).unwrap();
        assert_eq!((n, buf.len()), (200_007, 1000));
        buf.clear();
        super::read_line_capped(&mut reader, &mut buf, 1000).unwrap();
        assert_eq!(buf, b"second\n");
    }

    #[tokio::test]
    async fn stops_at_the_match_limit() {
        let ws = tempfile::tempdir().unwrap();
        fs::write(ws.path().join("many.txt"), "hit\n".repeat(1000)).unwrap();
        let c = ctx(ws.path(), 1_000_000);

        let out = run(&c, "search", json!({"pattern": "hit"})).await;
        let lines: Vec<&str> = out.output.lines().collect();
        assert_eq!(lines.len(), super::MAX_MATCHES + 1);
        assert_eq!(lines.last(), Some(&"…[stopped at 200 matches]"));

        // Exactly at the limit nothing was left out, so there is no note.
        fs::write(ws.path().join("many.txt"), "hit\n".repeat(200)).unwrap();
        let out = run(&c, "search", json!({"pattern": "hit"})).await;
        assert_eq!(out.output.lines().count(), super::MAX_MATCHES);
        assert!(!out.output.contains("stopped"));
    }
}
