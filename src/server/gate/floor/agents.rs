//! The agents' own hook and permission settings, on the floor whatever `[safety]` says.
//!
//! A hook is what sends an outside agent's calls to Countersign; a settings file that loses it
//! (or gains an `allow` list, a policy, a plugin that answers first) disarms every later card
//! of that agent. Writing one is as consequential as `countersign config set`, so these paths
//! are built in, not defaults the config could drop, and they are matched like every floor
//! path (at any depth, case-folded for outside agents). The built-in agent's floor carries
//! them too: a workspace `.claude/settings.json` it wrote would disarm an outside agent's hook
//! in the same repository.
//!
//! Shell startup files are built in beside them (`SHELL_STARTUP`): what they set
//! (`COUNTERSIGN_URL`, `COUNTERSIGN_TOKEN`, `PATH`) is the environment of every later command
//! of every agent, Countersign's CLI included. And a folder that holds any of these (`.claude`,
//! `.github`, `~/.config`) is on the floor itself: moving or deleting it takes them along.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Each agent's settings, as floor globs, with what they are.
pub const AGENT_SETTINGS: &[(&str, &str)] = &[
    // Claude Code: settings (hooks, permissions), the user file, managed policy, plugins.
    ("**/.claude/settings*.json", "Claude Code's settings"),
    ("**/.claude/hooks/**", "Claude Code's hook scripts"),
    ("**/.claude/plugins/**", "Claude Code's plugins"),
    ("**/.claude.json", "Claude Code's user settings"),
    // What Claude Code sources before every command it runs, and keeps of its sessions.
    (
        "**/.claude/shell-snapshots/**",
        "Claude Code's shell snapshots (sourced before each command)",
    ),
    (
        "**/.claude/session-env/**",
        "Claude Code's session environment",
    ),
    (
        "**/claude-code/managed-settings*.json",
        "Claude Code's managed settings",
    ),
    (
        "**/ClaudeCode/managed-settings*.json",
        "Claude Code's managed settings",
    ),
    // Codex: its whole home (config.toml, hooks.json, rules, requirements) and the system's.
    ("**/.codex/**", "Codex's settings"),
    ("**/etc/codex/**", "Codex's managed settings"),
    // Gemini CLI and Qwen Code: settings, policies, extensions (which may carry hooks).
    ("**/.gemini/settings.json", "Gemini CLI's settings"),
    // Loaded into the environment the agent (and so its hooks) run with.
    ("**/.gemini/.env", "Gemini CLI's environment"),
    ("**/.gemini/policies/**", "Gemini CLI's policies"),
    ("**/.gemini/extensions/**", "Gemini CLI's extensions"),
    (
        "**/gemini-cli/*settings*.json",
        "Gemini CLI's system settings",
    ),
    ("**/gemini-cli/policies/**", "Gemini CLI's system policies"),
    ("**/.qwen/settings.json", "Qwen Code's settings"),
    ("**/.qwen/.env", "Qwen Code's environment"),
    ("**/.qwen/extensions/**", "Qwen Code's extensions"),
    (
        "**/qwen-code/*settings*.json",
        "Qwen Code's system settings",
    ),
    // Copilot CLI: its home (config, settings, hooks, permissions, plugins) and a repo's.
    ("**/.copilot/**", "Copilot CLI's settings"),
    ("**/.github/copilot/**", "Copilot CLI's repository settings"),
    ("**/.github/hooks/**", "Copilot CLI's repository hooks"),
    // opencode: project and user config, its folder of agents, commands and plugins.
    ("**/opencode.json", "opencode's settings"),
    ("**/opencode.jsonc", "opencode's settings"),
    ("**/.opencode/**", "opencode's settings"),
    ("**/.config/opencode/**", "opencode's settings"),
];

/// Shell startup files and the system's environment files, as floor globs.
pub const SHELL_STARTUP: &[(&str, &str)] = &[
    ("**/.bashrc", "a shell's startup file"),
    ("**/.bash_profile", "a shell's startup file"),
    ("**/.bash_login", "a shell's startup file"),
    ("**/.profile", "a shell's startup file"),
    ("**/.zshrc", "a shell's startup file"),
    ("**/.zshenv", "a shell's startup file"),
    ("**/.zprofile", "a shell's startup file"),
    ("**/.zlogin", "a shell's startup file"),
    ("**/.kshrc", "a shell's startup file"),
    ("**/.mkshrc", "a shell's startup file"),
    ("**/.config/fish/**", "fish's startup files"),
    ("**/.pam_environment", "the login environment"),
    ("**/.config/environment.d/**", "the session's environment"),
    ("**/.ssh/environment", "the login environment"),
    ("**/etc/environment", "the system's environment"),
    ("**/etc/profile", "the system's startup file"),
    ("**/etc/profile.d/**", "the system's startup files"),
    ("**/etc/bash.bashrc", "the system's startup file"),
    ("**/etc/bashrc", "the system's startup file"),
    ("**/etc/zsh/**", "the system's startup files"),
    ("**/etc/zshenv", "the system's startup file"),
    ("**/etc/zshrc", "the system's startup file"),
];

/// Every built-in glob, with what it is and the reason's words.
fn built_in() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    AGENT_SETTINGS
        .iter()
        .map(|(glob, what)| (*glob, *what, "an agent's hooks and permissions"))
        .chain(
            SHELL_STARTUP
                .iter()
                .map(|(glob, what)| (*glob, *what, "it sets every later command's environment")),
        )
}

/// The compiled globs of [`AGENT_SETTINGS`] and [`SHELL_STARTUP`].
pub struct AgentSettings {
    set: GlobSet,
    globs: Vec<(&'static str, &'static str, &'static str)>,
    /// Each glob's segments before its last (compiled, case-folded), by the glob's index: the
    /// folders on its way.
    ways: Vec<Vec<globset::GlobMatcher>>,
}

impl AgentSettings {
    pub fn new() -> AgentSettings {
        let mut builder = GlobSetBuilder::new();
        let mut globs = Vec::new();
        for (pattern, what, why) in built_in() {
            // Compiled at every start and checked by the tests: a typo fails them all.
            if let Ok(glob) = Glob::new(pattern) {
                builder.add(glob);
                globs.push((pattern, what, why));
            }
        }
        let ways = globs
            .iter()
            .map(|(pattern, _, _)| {
                let parts: Vec<&str> = pattern.trim_start_matches("**/").split('/').collect();
                parts[..parts.len().saturating_sub(1)]
                    .iter()
                    .filter_map(|part| {
                        globset::GlobBuilder::new(part)
                            .literal_separator(true)
                            .case_insensitive(true)
                            .build()
                            .ok()
                            .map(|g| g.compile_matcher())
                    })
                    .collect()
            })
            .collect();
        AgentSettings {
            set: builder.build().unwrap_or_else(|_| GlobSet::empty()),
            globs,
            ways,
        }
    }

    /// What `path` is, in words, when it is an agent's settings or a shell's startup file.
    pub fn hit(&self, path: &str) -> Option<String> {
        let index = self.set.matches(path).into_iter().next()?;
        let (pattern, what, why) = self.globs.get(index)?;
        Some(format!(
            "touches {path}, {what} (`{pattern}`, built in: {why})"
        ))
    }

    /// What a folder holds, in words, when a built-in glob could match something inside it:
    /// its last segments are a glob's leading ones and the glob goes on past them (`.claude`
    /// for `**/.claude/settings*.json`, `.github` for `**/.github/hooks/**`).
    pub fn holds(&self, folder: &str) -> Option<String> {
        let folder = folder.trim_end_matches('/');
        let segments: Vec<&str> = folder.split('/').filter(|s| !s.is_empty()).collect();
        // `/etc` holds everything of the system's; only its named folders count.
        if segments
            .last()
            .is_some_and(|s| s.eq_ignore_ascii_case("etc"))
        {
            return None;
        }
        self.ways.iter().zip(&self.globs).find_map(|(way, (pattern, what, why))| {
            (1..=way.len()).find_map(|k| {
                let tail = segments.len().checked_sub(k).map(|at| &segments[at..])?;
                let fits = tail.iter().zip(&way[..k]).all(|(name, part)| part.is_match(name));
                fits.then(|| {
                    format!(
                        "touches the folder {folder}, which holds {what} (`{pattern}`, built in: {why})"
                    )
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_glob_compiles() {
        for (pattern, _) in AGENT_SETTINGS {
            Glob::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        }
        for (pattern, _) in SHELL_STARTUP {
            Glob::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        }
        assert_eq!(
            AgentSettings::new().set.len(),
            AGENT_SETTINGS.len() + SHELL_STARTUP.len(),
            "one glob each"
        );
    }

    #[test]
    fn each_agents_settings_are_hit_and_neighbours_are_not() {
        let settings = AgentSettings::new();
        for path in [
            ".claude/settings.json",
            "/w/app/.claude/settings.local.json",
            "/home/me/.claude/settings.json",
            "/home/me/.claude.json",
            "/etc/claude-code/managed-settings.json",
            "/home/me/.codex/hooks.json",
            "/home/me/.codex/config.toml",
            "/w/app/.codex/config.toml",
            "/etc/codex/requirements.toml",
            "/w/app/.gemini/settings.json",
            "/home/me/.gemini/policies/mine.toml",
            "/etc/gemini-cli/settings.json",
            "/w/app/.qwen/settings.json",
            "/home/me/.copilot/config.json",
            "/home/me/.copilot/hooks/countersign.json",
            "/w/app/.github/hooks/countersign.json",
            "/w/app/.github/copilot/settings.local.json",
            "/w/app/opencode.json",
            "/w/app/opencode.jsonc",
            "/w/app/.opencode/plugin/x.ts",
            "/home/me/.config/opencode/opencode.json",
        ] {
            assert!(settings.hit(path).is_some(), "{path}");
        }
        for path in [
            "/w/app/src/settings.json",
            "/w/app/.github/workflows/ci.yml",
            "/w/app/claude.md",
            "/home/me/.gemini/GEMINI.md",
            "/w/app/docs/opencode.md",
            "/w/app/src/profile.rs",
            "/home/me/.config/environment.json",
        ] {
            assert!(settings.hit(path).is_none(), "{path}");
        }
    }

    #[test]
    fn shell_startup_files_are_hit() {
        let settings = AgentSettings::new();
        for path in [
            "/home/me/.bashrc",
            "~/.profile",
            "/home/me/.zshenv",
            "/etc/environment",
            "/etc/profile.d/countersign.sh",
            "/home/me/.config/environment.d/10-cs.conf",
            "/home/me/.config/fish/config.fish",
        ] {
            assert!(settings.hit(path).is_some(), "{path}");
        }
    }

    #[test]
    fn a_folder_that_holds_settings_is_a_holder() {
        let settings = AgentSettings::new();
        for folder in [
            ".claude",
            "/home/me/.claude",
            "/w/app/.github",
            "/home/me/.gemini",
            "/home/me/.config",
            "/home/me/.config/opencode",
            "/etc/codex",
            "/etc/profile.d",
            "/w/app/.opencode",
        ] {
            assert!(settings.holds(folder).is_some(), "{folder}");
        }
        for folder in [
            "/w/app/.github/workflows",
            "/w/app/src",
            "/home/me/.cache",
            "/home/me",
            "/etc",
            "/w/app/.claude-old",
        ] {
            assert!(settings.holds(folder).is_none(), "{folder}");
        }
    }
}
