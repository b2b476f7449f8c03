//! `countersign hook install claude-code|codex|gemini|qwen|copilot`: merge the hook into the agent's settings file,
//! keeping everything already there; running it twice adds one entry.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use crate::external::hook::{DEFAULT_TIMEOUT_SECS, HookContext, HookOutcome, timeout_secs};

const STATUS_MESSAGE: &str = "Waiting for approval in Countersign";

/// `countersign hook install …`
#[derive(Args, Debug, Clone)]
pub struct InstallArgs {
    #[command(subcommand)]
    pub agent: InstallAgent,
}

#[derive(Subcommand, Debug, Clone)]
pub enum InstallAgent {
    /// Add the PermissionRequest hook to `.claude/settings.json` (or `~/.claude/settings.json`).
    ClaudeCode {
        /// The project whose `.claude/settings.json` gets the hook (default: this directory).
        #[arg(long, conflicts_with = "user")]
        project: Option<PathBuf>,
        /// Install for every project: `~/.claude/settings.json`.
        #[arg(long)]
        user: bool,
        /// Show the snippet instead of writing it.
        #[arg(long)]
        print: bool,
        /// The hook's wait for an answer, in seconds.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_parser = timeout_secs)]
        timeout: u64,
    },
    /// Add the PermissionRequest hook to `~/.codex/hooks.json`.
    Codex {
        /// Show the snippet instead of writing it.
        #[arg(long)]
        print: bool,
        /// The hook's wait for an answer, in seconds.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_parser = timeout_secs)]
        timeout: u64,
    },
    /// Add the BeforeTool hook to `.gemini/settings.json` (or `~/.gemini/settings.json`).
    Gemini {
        /// The project whose `.gemini/settings.json` gets the hook (default: this directory).
        #[arg(long, conflicts_with = "user")]
        project: Option<PathBuf>,
        /// Install for every project: `~/.gemini/settings.json`.
        #[arg(long)]
        user: bool,
        /// Show the snippet instead of writing it.
        #[arg(long)]
        print: bool,
        /// The hook's wait for an answer, in seconds.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_parser = timeout_secs)]
        timeout: u64,
    },
    /// Add the PreToolUse hook to `.qwen/settings.json` (or `~/.qwen/settings.json`).
    Qwen {
        /// The project whose `.qwen/settings.json` gets the hook (default: this directory).
        #[arg(long, conflicts_with = "user")]
        project: Option<PathBuf>,
        /// Install for every project: `~/.qwen/settings.json`.
        #[arg(long)]
        user: bool,
        /// Show the snippet instead of writing it.
        #[arg(long)]
        print: bool,
        /// The hook's wait for an answer, in seconds.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_parser = timeout_secs)]
        timeout: u64,
    },
    /// Add the preToolUse hook to `~/.copilot/hooks/countersign.json` (or a repository's
    /// `.github/hooks/countersign.json`).
    Copilot {
        /// The repository whose `.github/hooks/countersign.json` gets the hook (Copilot loads a
        /// repository's hooks only in a folder it trusts); default: every repository.
        #[arg(long)]
        project: Option<PathBuf>,
        /// Show the snippet instead of writing it.
        #[arg(long)]
        print: bool,
        /// The hook's wait for an answer, in seconds.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_parser = timeout_secs)]
        timeout: u64,
    },
}

/// Which agent a hook is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
    Qwen,
    Copilot,
}

impl Agent {
    fn subcommand(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Qwen => "qwen",
            Agent::Copilot => "copilot",
        }
    }

    /// The hook events the hook answers for this agent. Claude Code's `PermissionRequest` is
    /// asked only when Claude would prompt, which its `auto` and `bypassPermissions` modes
    /// never do; `PreToolUse` is asked before every tool call in every mode, so every call
    /// reaches Countersign whatever mode Claude starts in. Where Claude shows its own dialog,
    /// `PermissionRequest` is what waits on the card beside it (see
    /// [`super::claude_dialog`]), and it answers prompts Claude raises on its own.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Agent::ClaudeCode => &["PreToolUse", "PermissionRequest"],
            Agent::Codex => &["PermissionRequest"],
            Agent::Gemini => &["BeforeTool"],
            Agent::Qwen => &["PreToolUse"],
            Agent::Copilot => &["preToolUse"],
        }
    }

    /// What `--print` tells the person to do with the snippet.
    fn where_to_merge(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "merge this into .claude/settings.json or ~/.claude/settings.json",
            Agent::Codex => "merge this into ~/.codex/hooks.json, then trust it in Codex's /hooks",
            Agent::Gemini => "merge this into .gemini/settings.json or ~/.gemini/settings.json",
            Agent::Qwen => "merge this into .qwen/settings.json or ~/.qwen/settings.json",
            Agent::Copilot => {
                "save this as ~/.copilot/hooks/countersign.json (or a repository's \
                 .github/hooks/countersign.json)"
            }
        }
    }
}

/// Runs `hook install`.
pub fn install(args: &InstallArgs, ctx: &HookContext) -> HookOutcome {
    let (agent, print, timeout) = match &args.agent {
        InstallAgent::ClaudeCode { print, timeout, .. } => (Agent::ClaudeCode, *print, *timeout),
        InstallAgent::Codex { print, timeout } => (Agent::Codex, *print, *timeout),
        InstallAgent::Gemini { print, timeout, .. } => (Agent::Gemini, *print, *timeout),
        InstallAgent::Qwen { print, timeout, .. } => (Agent::Qwen, *print, *timeout),
        InstallAgent::Copilot { print, timeout, .. } => (Agent::Copilot, *print, *timeout),
    };
    let handler = handler(agent, timeout);
    if print {
        return printed(agent, handler);
    }
    let path = match settings_path(&args.agent, ctx) {
        Ok(path) => path,
        Err(message) => return HookOutcome::failed(message),
    };
    let mut out = HookOutcome::default();
    match merge_into_file(&path, agent, handler) {
        Ok(true) => out.say(format!(
            "added the {} hook to {}",
            agent.events().join(" and "),
            path.display()
        )),
        Ok(false) => out.say(format!(
            "{} already has the hook; nothing changed",
            path.display()
        )),
        Err(message) => return HookOutcome::failed(message),
    }
    tell_what_comes_next(&mut out, agent, &path, ctx);
    out
}

/// `--print`: the snippet to merge by hand, and where.
fn printed(agent: Agent, handler: Value) -> HookOutcome {
    let mut snippet = json!({});
    // A fresh object always takes the hook.
    let _ = merge_hook(&mut snippet, agent, handler);
    let mut out = HookOutcome {
        stdout: pretty(&snippet),
        ..HookOutcome::default()
    };
    out.say(agent.where_to_merge());
    out
}

/// What the person must know once the hook is in: where it reads its credential from, and
/// what the agent itself needs so that the hook is the one prompt.
fn tell_what_comes_next(out: &mut HookOutcome, agent: Agent, path: &Path, ctx: &HookContext) {
    match agent {
        Agent::ClaudeCode => out.say(
            "the hook reads COUNTERSIGN_URL and COUNTERSIGN_TOKEN (a `gates` token) from the \
             environment Claude Code starts in; Claude Code runs hooks only in folders whose \
             trust dialog was accepted. Every tool call now asks Countersign first \
             (PreToolUse), whatever permission mode Claude runs in: keep both hooks, and do \
             not set disableAllHooks. In Claude's terminal in default, acceptEdits or plan \
             mode, Claude's own dialog shows beside the card and the first answer counts",
        ),
        Agent::Codex => tell_codex(out, path, ctx),
        Agent::Gemini => out.say(
            "the hook reads COUNTERSIGN_URL and COUNTERSIGN_TOKEN (a `gates` token) from the \
             environment Gemini CLI starts in. Gemini runs hooks only in a trusted folder, and \
             a hook's allow does not skip Gemini's own prompt: start Gemini with \
             `--approval-mode yolo` so Countersign is the one prompt",
        ),
        Agent::Qwen => out.say(
            "the hook reads COUNTERSIGN_URL and COUNTERSIGN_TOKEN (a `gates` token) from the \
             environment Qwen Code starts in. Qwen asks this hook after its own approval \
             step: start Qwen with `--approval-mode yolo` so Countersign is the one prompt",
        ),
        Agent::Copilot => out.say(
            "the hook reads COUNTERSIGN_URL and COUNTERSIGN_TOKEN (a `gates` token) from the \
             environment Copilot CLI starts in; its answer replaces Copilot's own prompt",
        ),
    }
}

/// Codex: keys its `hooks.json` refuses, trusting the hook, and the daemon's environment.
fn tell_codex(out: &mut HookOutcome, path: &Path, ctx: &HookContext) {
    if let Some(extra) = codex_extra_keys(path) {
        out.say(format!(
            "warning: Codex refuses a hooks.json whose top level has keys other than \
             `hooks` and `description` (found {extra}); remove them"
        ));
    }
    out.say(
        "Codex runs a new or changed hook only once you trust it: at its next start \
         choose \"Trust all and continue\" (or trust `countersign hook codex` in \
         /hooks). The hook reads COUNTERSIGN_URL and COUNTERSIGN_TOKEN (a `gates` \
         token) from Codex's background server (app-server daemon), which keeps the \
         environment of the Codex that started it",
    );
    let shell = |key| std::env::var(key).ok();
    if let Some(home) = &ctx.home
        && let Some(warning) = super::codex::daemon_warning(
            home,
            shell("COUNTERSIGN_URL").as_deref(),
            shell("COUNTERSIGN_TOKEN").as_deref(),
        )
    {
        out.say(warning);
    }
}

/// Top-level keys Codex's `deny_unknown_fields` would reject (left alone: they are the
/// person's, but they are told).
fn codex_extra_keys(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let settings: Value = serde_json::from_str(&text).ok()?;
    let extra: Vec<String> = settings
        .as_object()?
        .keys()
        .filter(|k| !matches!(k.as_str(), "hooks" | "description"))
        .map(|k| format!("`{k}`"))
        .collect();
    (!extra.is_empty()).then(|| extra.join(", "))
}

/// The handler entry: the agent's timeout for the hook is the same number the hook is told
/// (`--timeout`), and the hook answers 10 s before it passes — not a minute before a longer
/// one the hook knows nothing of.
///
/// Each agent's own units: Gemini CLI counts milliseconds; Qwen Code counts seconds but reads a
/// number from 1000 up as milliseconds, so milliseconds are what it is given; Copilot CLI's
/// field is `timeoutSec`.
pub fn handler(agent: Agent, timeout: u64) -> Value {
    let mut command = format!("countersign hook {}", agent.subcommand());
    if timeout != DEFAULT_TIMEOUT_SECS {
        command.push_str(&format!(" --timeout {timeout}"));
    }
    let millis = timeout.saturating_mul(1000);
    match agent {
        Agent::ClaudeCode | Agent::Codex => json!({
            "type": "command",
            "command": command,
            "timeout": timeout,
            "statusMessage": STATUS_MESSAGE,
        }),
        Agent::Gemini => json!({
            "type": "command",
            "name": "countersign",
            "command": command,
            "timeout": millis,
        }),
        // Qwen runs the call when its hook's command is missing or fails without a word on
        // stderr; this one says why and exits 2, which Qwen reads as a block.
        Agent::Qwen => json!({
            "type": "command",
            "name": "countersign",
            "command": format!(
                "{command} || {{ echo 'countersign hook qwen failed or is not on PATH; the call is blocked' >&2; exit 2; }}"
            ),
            "timeout": millis,
            "statusMessage": STATUS_MESSAGE,
        }),
        Agent::Copilot => json!({
            "type": "command",
            "bash": command,
            "timeoutSec": timeout,
        }),
    }
}

/// A project folder as given (relative to where the command runs), which must exist.
fn project_dir(project: &Option<PathBuf>, ctx: &HookContext) -> Result<PathBuf, String> {
    let dir = project.clone().unwrap_or_else(|| ctx.cwd.clone());
    let dir = if dir.is_absolute() {
        dir
    } else {
        ctx.cwd.join(dir)
    };
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    Ok(dir)
}

fn settings_path(agent: &InstallAgent, ctx: &HookContext) -> Result<PathBuf, String> {
    let home = || {
        ctx.home
            .clone()
            .ok_or_else(|| "HOME is not set; cannot find the user's settings".to_owned())
    };
    Ok(match agent {
        InstallAgent::ClaudeCode { user: true, .. } => home()?.join(".claude/settings.json"),
        InstallAgent::ClaudeCode { project, .. } => {
            project_dir(project, ctx)?.join(".claude/settings.json")
        }
        InstallAgent::Codex { .. } => home()?.join(".codex/hooks.json"),
        InstallAgent::Gemini { user: true, .. } => home()?.join(".gemini/settings.json"),
        InstallAgent::Gemini { project, .. } => {
            project_dir(project, ctx)?.join(".gemini/settings.json")
        }
        InstallAgent::Qwen { user: true, .. } => home()?.join(".qwen/settings.json"),
        InstallAgent::Qwen { project, .. } => {
            project_dir(project, ctx)?.join(".qwen/settings.json")
        }
        InstallAgent::Copilot { project, .. } => match project {
            Some(_) => project_dir(project, ctx)?.join(".github/hooks/countersign.json"),
            None => home()?.join(".copilot/hooks/countersign.json"),
        },
    })
}

/// Reads the settings (a missing or empty file is `{}`), merges, and writes back only when
/// something was added. `Ok(false)`: the hook was already there. A file that is not a JSON
/// object is left untouched.
pub fn merge_into_file(path: &Path, agent: Agent, handler: Value) -> Result<bool, String> {
    let mut settings = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => json!({}),
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not valid JSON ({e}); left it untouched — fix it or use --print",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let added = merge_hook(&mut settings, agent, handler)
        .map_err(|e| format!("{}: {e}; left it untouched", path.display()))?;
    if added {
        write_atomically(path, &pretty(&settings))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(added)
}

/// Adds `{"matcher": "*", "hooks": [handler]}` under each of the agent's hook events
/// ([`Agent::events`]) that has no handler running the same `countersign hook <agent>` yet.
/// `Ok(true)` when anything was added; nothing is changed when a shape is wrong.
pub fn merge_hook(settings: &mut Value, agent: Agent, handler: Value) -> Result<bool, String> {
    if agent == Agent::Copilot {
        return merge_copilot_hook(settings, handler);
    }
    let command = handler["command"].as_str().unwrap_or_default().to_owned();
    let mut merged = settings.clone();
    let root = merged
        .as_object_mut()
        .ok_or("the file's top level is not a JSON object")?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`hooks` is not a JSON object")?;
    let mut added = false;
    for event in agent.events() {
        let groups = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a JSON array"))?;
        let installed = groups
            .iter()
            .filter_map(|group| group["hooks"].as_array())
            .flatten()
            .filter_map(|h| h["command"].as_str())
            .any(|existing| same_hook(existing, &command));
        if !installed {
            groups.push(json!({ "matcher": "*", "hooks": [handler.clone()] }));
            added = true;
        }
    }
    *settings = merged;
    Ok(added)
}

/// Copilot CLI's hook file: `{"version": 1, "hooks": {"preToolUse": [handler, …]}}`, its
/// handlers listed directly (no matcher groups), the command under `bash`.
fn merge_copilot_hook(settings: &mut Value, handler: Value) -> Result<bool, String> {
    let command = handler["bash"].as_str().unwrap_or_default().to_owned();
    let mut merged = settings.clone();
    let root = merged
        .as_object_mut()
        .ok_or("the file's top level is not a JSON object")?;
    match root.get("version") {
        None => {
            root.insert("version".into(), json!(1));
        }
        Some(v) if v == &json!(1) => {}
        Some(other) => return Err(format!("`version` is {other}, not 1")),
    }
    let handlers = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`hooks` is not a JSON object")?
        .entry("preToolUse")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("`hooks.preToolUse` is not a JSON array")?;
    let installed = handlers
        .iter()
        .filter_map(|h| h["bash"].as_str())
        .any(|existing| same_hook(existing, &command));
    if installed {
        return Ok(false);
    }
    handlers.push(handler);
    *settings = merged;
    Ok(true)
}

/// The same program (any path to `countersign`) and subcommand, whatever the flags.
fn same_hook(existing: &str, ours: &str) -> bool {
    let words = |c: &str| -> Vec<String> {
        c.split_whitespace()
            .take(3)
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    Path::new(w)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                } else {
                    w.to_owned()
                }
            })
            .collect()
    };
    words(existing) == words(ours)
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Write to a sibling file and rename it over the original, keeping its permissions: a crash
/// never leaves half a settings file.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".countersign-tmp");
    let tmp = path.with_file_name(tmp_name);
    std::fs::write(&tmp, text)?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(&tmp, meta.permissions())?;
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_file_gets_the_fixture_shape() {
        let mut settings = json!({});
        assert_eq!(
            merge_hook(
                &mut settings,
                Agent::ClaudeCode,
                handler(Agent::ClaudeCode, 1800)
            ),
            Ok(true)
        );
        let group = json!([{"matcher": "*", "hooks": [{
            "type": "command", "command": "countersign hook claude-code", "timeout": 1800,
            "statusMessage": "Waiting for approval in Countersign"}]}]);
        assert_eq!(
            settings,
            json!({"hooks": {"PreToolUse": group, "PermissionRequest": group}})
        );
        // A settings file with only the PermissionRequest hook (an older install) gets the
        // PreToolUse one added, once.
        let mut older = json!({"hooks": {"PermissionRequest": group}});
        let h = handler(Agent::ClaudeCode, 1800);
        assert_eq!(
            merge_hook(&mut older, Agent::ClaudeCode, h.clone()),
            Ok(true)
        );
        assert_eq!(older, settings);
        assert_eq!(merge_hook(&mut older, Agent::ClaudeCode, h), Ok(false));
    }

    #[test]
    fn the_same_hook_with_other_flags_or_path_counts_as_installed() {
        assert!(same_hook(
            "/usr/local/bin/countersign hook codex --timeout 60",
            "countersign hook codex"
        ));
        assert!(!same_hook(
            "countersign hook codex",
            "countersign hook claude-code"
        ));
        assert!(!same_hook("echo hi", "countersign hook codex"));
    }

    #[test]
    fn wrong_shapes_are_refused() {
        let h = handler(Agent::Codex, 1800);
        let codex = Agent::Codex;
        assert!(merge_hook(&mut json!([]), codex, h.clone()).is_err());
        assert!(merge_hook(&mut json!({"hooks": []}), codex, h.clone()).is_err());
        let mut bad = json!({"hooks": {"PermissionRequest": {}}});
        assert!(merge_hook(&mut bad, codex, h).is_err());
    }

    #[test]
    fn each_agent_gets_its_own_units_and_shape() {
        assert_eq!(handler(Agent::Gemini, 1800)["timeout"], 1_800_000, "ms");
        // Qwen reads 1000 and up as milliseconds: 1800 s written as seconds would be 1.8 s.
        assert_eq!(handler(Agent::Qwen, 1800)["timeout"], 1_800_000);
        assert_eq!(handler(Agent::Copilot, 1800)["timeoutSec"], 1800);
        let mut copilot = json!({});
        assert!(merge_hook(&mut copilot, Agent::Copilot, handler(Agent::Copilot, 1800)).unwrap());
        assert_eq!(copilot["version"], 1);
        assert_eq!(
            copilot["hooks"]["preToolUse"][0]["bash"],
            "countersign hook copilot"
        );
        assert!(!merge_hook(&mut copilot, Agent::Copilot, handler(Agent::Copilot, 60)).unwrap());
        let mut wrong = json!({"version": 2});
        assert!(merge_hook(&mut wrong, Agent::Copilot, handler(Agent::Copilot, 60)).is_err());
        let mut gemini = json!({"theme": "dark"});
        assert!(merge_hook(&mut gemini, Agent::Gemini, handler(Agent::Gemini, 1800)).unwrap());
        assert_eq!(gemini["theme"], "dark");
        assert_eq!(
            gemini["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
            "countersign hook gemini"
        );
    }

    #[test]
    fn a_custom_timeout_goes_into_the_command() {
        let h = handler(Agent::Codex, 600);
        assert_eq!(h["command"], "countersign hook codex --timeout 600");
        assert_eq!(
            h["timeout"], 600,
            "the agent waits exactly as long as the hook was told"
        );
    }
}
