//! What the file tools share: reading, listing, writing and editing on paths `confine`
//! already resolved and opened through `beneath` (so a path swapped for a symlink meanwhile
//! cannot lead outside), their path subject, and the before/after of a change for its card.

use std::io::{self, Read};
use std::path::Path;

use serde_json::Value;

use super::beneath::{self, Access};
use super::confine::{self, Resolved};
use super::output::{cap_bytes, cap_text};
use super::reader::{self, Guard, Hidden};
use super::{CardEnv, CardText, Subject, ToolContext, ToolError, ToolOutput};

pub const PATH_DOC: &str = "Path relative to the workspace.";
pub const DIR_DOC: &str = "Directory relative to the workspace; defaults to `.`.";

/// The largest file a card diffs; above it the card says so instead of reading the file.
pub const MAX_DIFF_BYTES: u64 = 1024 * 1024;

/// A file tool's `path`, lexically normalized (`.` when a listing or search names none).
pub fn path_subject(args: &Value, defaults_to_workspace: bool) -> Option<Subject> {
    let path = match args.get("path") {
        None | Some(Value::Null) if defaults_to_workspace => {
            return Some(Subject::Path(".".into()));
        }
        None => return None,
        Some(path) => path.as_str()?,
    };
    Some(Subject::Path(confine::display_form(path)))
}

/// A card that says only which tool on which subject (for tools that are never gated).
pub fn plain_card(title: &str, tool: &str, args: &Value) -> CardText {
    let subject = super::subject(tool, args).unwrap_or_default();
    CardText {
        title: title.to_owned(),
        summary: format!("{tool} {subject}").trim().to_owned(),
        diff: None,
        bound: None,
    }
}

/// What a file the call names holds now, for the diff an approval card shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileNow {
    /// Absent, or outside the workspace.
    Missing,
    Text(String),
    /// Larger than the card diffs (its size in bytes); not read.
    TooLarge(u64),
    /// Not read, and why: on the safety floor (by its real path or as a file with other
    /// names), not a regular file, or the file system did not answer.
    Withheld(String),
}

impl FileNow {
    /// What the card binds: the content it was made from (its SHA-256), or why there was none.
    /// An answer to the card is taken only while the file still gives the same (`tools::binds`).
    pub fn fingerprint(&self) -> String {
        match self {
            FileNow::Missing => "absent".into(),
            FileNow::Text(text) => format!("sha256:{}", crate::server::digest::sha256_hex(text)),
            FileNow::TooLarge(bytes) => format!("large:{bytes}"),
            FileNow::Withheld(why) => format!("withheld:{why}"),
        }
    }
}

/// Reads a file through the one reader, never past `limit` bytes and never a floor file
/// (whatever card it is for: its content is not copied into the log). Blocking: call it off
/// the async threads.
pub fn current_file(workspace: &Path, raw_path: &str, limit: u64, guard: &Guard) -> FileNow {
    let Ok(target) = confine::resolve(workspace, raw_path) else {
        return FileNow::Missing;
    };
    let file = match reader::open(&target, Access::Read, guard) {
        Ok(file) => file,
        Err(ToolError::NotFound(_)) => return FileNow::Missing,
        Err(e @ (ToolError::OnFloor { .. } | ToolError::NotRegular { .. })) => {
            return FileNow::Withheld(e.to_string());
        }
        Err(e) => return FileNow::Withheld(e.to_string()),
    };
    let size = file.metadata().map(|m| m.len()).ok();
    let mut bytes = Vec::new();
    match file.take(limit + 1).read_to_end(&mut bytes) {
        Ok(n) if n as u64 > limit => FileNow::TooLarge(size.unwrap_or(n as u64)),
        Ok(_) => FileNow::Text(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => FileNow::Withheld(format!("could not read it: {e}")),
    }
}

/// The file a card is about, read once (capped, never a floor file).
pub fn file_now(args: &Value, env: &CardEnv<'_>) -> FileNow {
    match args.get("path").and_then(Value::as_str) {
        Some(path) => current_file(env.workspace, path, MAX_DIFF_BYTES, &env.card_guard()),
        None => FileNow::Missing,
    }
}

/// Where a file tool's path really leads (after every symlink), as the card bound it: an
/// answer to a floor card opens the file the card named, not one a symlink swapped in later.
pub fn real_path_binding(args: &Value, workspace: &Path, defaults_to_workspace: bool) -> String {
    let raw = match args.get("path").and_then(Value::as_str) {
        Some(path) => path,
        None if defaults_to_workspace => ".",
        None => return "real:?".into(),
    };
    match confine::resolve(workspace, raw) {
        Ok(target) => match target.abs.strip_prefix(&target.root) {
            Ok(rel) => format!("real:{}", rel.display()),
            Err(_) => "real:?".into(),
        },
        Err(e) => format!("real:? ({e})"),
    }
}

/// The card of a tool that only reads: which tool on which path, binding where the path leads
/// (`whole_workspace`: no path means the workspace).
pub fn reading_card(
    tool: &str,
    args: &Value,
    env: &CardEnv<'_>,
    whole_workspace: bool,
) -> CardText {
    CardText {
        bound: Some(real_path_binding(args, env.workspace, whole_workspace)),
        ..plain_card("Tool", tool, args)
    }
}

/// What a write's or an edit's card binds: where the path leads and what the file held.
pub fn change_binding(args: &Value, env: &CardEnv<'_>, now: &FileNow) -> String {
    format!(
        "{} {}",
        real_path_binding(args, env.workspace, false),
        now.fingerprint()
    )
}

/// What a file tool's call would find on disk beyond its path's spelling (for the floor).
pub fn hidden_of(args: &Value, workspace: &Path, defaults_to_workspace: bool) -> Vec<Hidden> {
    match args.get("path").and_then(Value::as_str) {
        Some(path) => reader::hidden(workspace, path),
        None if defaults_to_workspace => reader::hidden(workspace, "."),
        None => Vec::new(),
    }
}

/// How long a card's diff may take: past it the diff is still right, only less minimal (a
/// large file rewritten whole must not keep a thread busy).
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// A unified diff from `before` to `after` of the file shown as `shown`: `a/` and `b/` before
/// a workspace path, as git writes them; an absolute path (an outside agent's file) as it is,
/// never `a//home/…`.
pub fn unified_diff(shown: &str, before: &str, after: &str) -> String {
    let (old, new) = if shown.starts_with('/') {
        (shown.to_owned(), shown.to_owned())
    } else {
        (format!("a/{shown}"), format!("b/{shown}"))
    };
    similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string()
}

/// `text` ending in a newline, so a diff of one line reads `-old` / `+new` and not a
/// "no newline at end of file" note.
pub fn with_newline(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}

pub fn line_count(text: &str) -> usize {
    text.lines().count().max(usize::from(!text.is_empty()))
}

pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

pub fn size_words(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Runs one file operation of a call as one blocking task (a thread hop per file operation
/// would cost more than the operations themselves on the gate's hot path): the path is
/// resolved and opened there, through the one reader, within the file-system time limit.
async fn on_file<T: Send + 'static>(
    ctx: &ToolContext,
    raw: &str,
    work: impl FnOnce(&Resolved, &Guard) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let (workspace, raw_path, guard) = (ctx.workspace.clone(), raw.to_owned(), ctx.guard.clone());
    let shown = confine::display_form(raw);
    reader::blocking(&shown, reader::FS_LIMIT, Some(&ctx.cancel), move || {
        let target = confine::resolve(&workspace, &raw_path)?;
        work(&target, &guard)
    })
    .await
}

pub(crate) async fn read_file(ctx: &ToolContext, raw: &str) -> Result<ToolOutput, ToolError> {
    let limit = ctx.output_limit;
    on_file(ctx, raw, move |target, guard| {
        read_file_now(target, guard, limit)
    })
    .await
}

fn read_file_now(target: &Resolved, guard: &Guard, limit: usize) -> Result<ToolOutput, ToolError> {
    let fail = |e| ToolError::io("read", &target.shown, e);
    let file = reader::open(target, Access::Read, guard)?;
    let meta = file.metadata().map_err(fail)?;
    // Only the part that will be shown is read, however large the file.
    let mut kept = Vec::new();
    file.take(u64::try_from(limit).unwrap_or(u64::MAX))
        .read_to_end(&mut kept)
        .map_err(fail)?;
    let total = usize::try_from(meta.len())
        .unwrap_or(usize::MAX)
        .max(kept.len());
    if total == 0 {
        return Ok(ToolOutput::ok("(empty file)"));
    }
    Ok(ToolOutput::ok(cap_bytes(&kept, total, limit)))
}

pub(crate) async fn list_files(ctx: &ToolContext, raw: &str) -> Result<ToolOutput, ToolError> {
    let limit = ctx.output_limit;
    on_file(ctx, raw, move |target, guard| {
        list_files_now(target, guard, limit)
    })
    .await
}

fn list_files_now(target: &Resolved, guard: &Guard, limit: usize) -> Result<ToolOutput, ToolError> {
    let fail = |e| ToolError::io("list", &target.shown, e);
    let dir = reader::open(target, Access::ReadDir, guard)?;
    let mut names = Vec::new();
    for entry in beneath::read_dir(&dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        // Not following symlinks: a link is listed as itself, not as what it points to.
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            name.push('/');
        }
        names.push(name);
    }
    if names.is_empty() {
        return Ok(ToolOutput::ok("(empty directory)"));
    }
    names.sort();
    Ok(ToolOutput::ok(cap_text(&names.join("\n"), limit)))
}

pub(crate) async fn write_file(
    ctx: &ToolContext,
    raw: &str,
    content: &str,
) -> Result<ToolOutput, ToolError> {
    let text = content.to_owned();
    on_file(ctx, raw, move |target, guard| {
        write_file_now(target, guard, &text)
    })
    .await
}

fn write_file_now(
    target: &Resolved,
    guard: &Guard,
    content: &str,
) -> Result<ToolOutput, ToolError> {
    let shown = target.shown.as_str();
    let existed = match std::fs::symlink_metadata(&target.abs) {
        Ok(meta) if meta.is_dir() => return Err(ToolError::IsADirectory(shown.to_owned())),
        Ok(_) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(ToolError::io("write", shown, e)),
    };
    beneath::create_parents(target)
        .map_err(|e| ToolError::io("create the directories for", shown, e))?;
    let file = reader::open(target, Access::Write, guard)?;
    beneath::replace(file, content.as_bytes()).map_err(|e| ToolError::io("write", shown, e))?;
    let how = if existed { "replaced" } else { "new file" };
    Ok(ToolOutput::ok(format!(
        "wrote {} bytes to {shown} ({how})",
        content.len(),
    )))
}

pub(crate) async fn edit_file(
    ctx: &ToolContext,
    raw: &str,
    old: &str,
    new: &str,
) -> Result<ToolOutput, ToolError> {
    let (old, new) = (old.to_owned(), new.to_owned());
    on_file(ctx, raw, move |target, guard| {
        edit_file_now(target, guard, &old, &new)
    })
    .await
}

/// The largest file `edit_file` reads whole (a replace needs all of it in memory).
const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

fn edit_file_now(
    target: &Resolved,
    guard: &Guard,
    old: &str,
    new: &str,
) -> Result<ToolOutput, ToolError> {
    let file = reader::open(target, Access::Read, guard)?;
    let size = file
        .metadata()
        .map_err(|e| ToolError::io("read", &target.shown, e))?
        .len();
    if size > MAX_EDIT_BYTES {
        return Err(ToolError::InvalidArgs(format!(
            "`{}` is {} — too large to edit in place; write_file replaces a file whole",
            target.shown,
            size_words(size)
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io("read", &target.shown, e))?;
    let text = String::from_utf8(bytes).map_err(|_| ToolError::NotText(target.shown.clone()))?;
    match occurrences(&text, old) {
        0 => {
            return Err(ToolError::EditMismatch(format!(
                "`old` text not found in {}",
                target.shown
            )));
        }
        1 => {}
        n => {
            return Err(ToolError::EditMismatch(format!(
                "`old` text occurs {n} times in {}; make it unique",
                target.shown
            )));
        }
    }
    let file = reader::open(target, Access::Write, guard)?;
    beneath::replace(file, text.replacen(old, new, 1).as_bytes())
        .map_err(|e| ToolError::io("write", &target.shown, e))?;
    Ok(ToolOutput::ok(format!(
        "edited {} (1 replacement)",
        target.shown
    )))
}

/// Counts overlapping occurrences too: `aa` in `aaa` is ambiguous, so it counts as two.
fn occurrences(text: &str, needle: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(|rest| rest.find(needle)) {
        count += 1;
        let start = from + at;
        let step = text
            .get(start..)
            .and_then(|rest| rest.chars().next())
            .map_or(1, char::len_utf8);
        from = start + step;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::super::testing::{ctx, run};
    use super::occurrences;
    use crate::protocol::ToolStatus;
    use serde_json::json;
    use std::fs;

    #[test]
    fn occurrences_count_overlaps() {
        assert_eq!(occurrences("aaa", "aa"), 2);
        assert_eq!(occurrences("é-é", "é"), 2);
        assert_eq!(occurrences("abc", "x"), 0);
    }

    #[tokio::test]
    async fn read_file_returns_text_and_truncates() {
        let ws = tempfile::tempdir().unwrap();
        fs::write(ws.path().join("short.txt"), "hello\n").unwrap();
        fs::write(ws.path().join("long.txt"), "x".repeat(5000)).unwrap();
        let c = ctx(ws.path(), 100);

        let out = run(&c, "read_file", json!({"path": "short.txt"})).await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Ok, "hello\n")
        );

        let out = run(&c, "read_file", json!({"path": "long.txt"})).await;
        assert_eq!(out.status, ToolStatus::Ok);
        assert_eq!(
            out.output,
            format!("{}\n…[truncated, 5000 bytes total]", "x".repeat(100))
        );

        let out = run(&c, "read_file", json!({"path": "missing.txt"})).await;
        assert_eq!(out.status, ToolStatus::Error);
        assert_eq!(out.output, "`missing.txt` does not exist");
    }

    #[tokio::test]
    async fn list_files_is_sorted_flat_and_marks_directories() {
        let ws = tempfile::tempdir().unwrap();
        fs::create_dir_all(ws.path().join("src/deep")).unwrap();
        fs::write(ws.path().join("b.txt"), "").unwrap();
        fs::write(ws.path().join("a.txt"), "").unwrap();
        fs::write(ws.path().join("src/main.rs"), "").unwrap();
        let c = ctx(ws.path(), 10_000);

        let out = run(&c, "list_files", json!({})).await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Ok, "a.txt\nb.txt\nsrc/")
        );
        let out = run(&c, "list_files", json!({"path": "src"})).await;
        assert_eq!(out.output, "deep/\nmain.rs");
        let out = run(&c, "list_files", json!({"path": "a.txt"})).await;
        assert_eq!(out.status, ToolStatus::Error);
    }

    #[tokio::test]
    async fn write_file_creates_directories_and_reports_new_or_replaced() {
        let ws = tempfile::tempdir().unwrap();
        let c = ctx(ws.path(), 10_000);

        let out = run(
            &c,
            "write_file",
            json!({"path": "a/b/notes.md", "content": "hello"}),
        )
        .await;
        assert_eq!(out.output, "wrote 5 bytes to a/b/notes.md (new file)");
        let out = run(
            &c,
            "write_file",
            json!({"path": "./a/b/notes.md", "content": "hi"}),
        )
        .await;
        assert_eq!(out.output, "wrote 2 bytes to a/b/notes.md (replaced)");
        assert_eq!(
            fs::read_to_string(ws.path().join("a/b/notes.md")).unwrap(),
            "hi"
        );

        let out = run(&c, "write_file", json!({"path": "a", "content": "x"})).await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Error, "`a` is a directory, not a file")
        );
    }

    #[tokio::test]
    async fn edit_file_replaces_exactly_one_occurrence() {
        let ws = tempfile::tempdir().unwrap();
        let file = ws.path().join("notes.md");
        fs::write(&file, "one two three").unwrap();
        let c = ctx(ws.path(), 10_000);

        let out = run(
            &c,
            "edit_file",
            json!({"path": "notes.md", "old": "two", "new": "2"}),
        )
        .await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Ok, "edited notes.md (1 replacement)")
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "one 2 three");
    }

    #[tokio::test]
    async fn edit_file_refuses_absent_ambiguous_and_empty_old_text() {
        let ws = tempfile::tempdir().unwrap();
        let file = ws.path().join("notes.md");
        let original = "x y x z x";
        fs::write(&file, original).unwrap();
        let c = ctx(ws.path(), 10_000);

        let out = run(
            &c,
            "edit_file",
            json!({"path": "notes.md", "old": "nope", "new": "-"}),
        )
        .await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Error, "`old` text not found in notes.md")
        );

        let out = run(
            &c,
            "edit_file",
            json!({"path": "notes.md", "old": "x", "new": "-"}),
        )
        .await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (
                ToolStatus::Error,
                "`old` text occurs 3 times in notes.md; make it unique"
            )
        );

        let out = run(
            &c,
            "edit_file",
            json!({"path": "notes.md", "old": "", "new": "-"}),
        )
        .await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Error, "invalid arguments: `old` is empty")
        );

        assert_eq!(fs::read_to_string(&file).unwrap(), original);
    }
}
