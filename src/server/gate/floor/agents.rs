//! The agents' own hook and permission settings, on the floor whatever `[safety]` says.
//!
//! A hook is what sends an outside agent's calls to Countersign; a settings file that loses it
//! (or gains an `allow` list, a policy, a plugin that answers first) disarms every later card
//! of that agent. Writing one is as consequential as `countersign config set`, so these paths
//! are built in, not defaults the config could drop, and they are matched like every floor
//! path (at any depth, case-folded for outside agents). The built-in agent's floor carries
//! them too: a workspace `.claude/settings.json` it wrote would disarm an outside agent's hook
//! in the same repository.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Each agent's settings, as floor globs, with what they are.
pub const AGENT_SETTINGS: &[(&str, &str)] = &[
    // Claude Code: settings (hooks, permissions), the user file, managed policy, plugins.
    ("**/.claude/settings*.json", "Claude Code's settings"),
    ("**/.claude/hooks/**", "Claude Code's hook scripts"),
    ("**/.claude/plugins/**", "Claude Code's plugins"),
    ("**/.claude.json", "Claude Code's user settings"),
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
    ("**/.gemini/policies/**", "Gemini CLI's policies"),
    ("**/.gemini/extensions/**", "Gemini CLI's extensions"),
    (
        "**/gemini-cli/*settings*.json",
        "Gemini CLI's system settings",
    ),
    ("**/gemini-cli/policies/**", "Gemini CLI's system policies"),
    ("**/.qwen/settings.json", "Qwen Code's settings"),
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

/// The compiled globs of [`AGENT_SETTINGS`].
pub struct AgentSettings {
    set: GlobSet,
}

impl AgentSettings {
    pub fn new() -> AgentSettings {
        let mut builder = GlobSetBuilder::new();
        for (pattern, _) in AGENT_SETTINGS {
            // Compiled at every start and checked by the tests: a typo fails them all.
            if let Ok(glob) = Glob::new(pattern) {
                builder.add(glob);
            }
        }
        AgentSettings {
            set: builder.build().unwrap_or_else(|_| GlobSet::empty()),
        }
    }

    /// What `path` is, in words, when it is an agent's settings.
    pub fn hit(&self, path: &str) -> Option<String> {
        let index = self.set.matches(path).into_iter().next()?;
        let (pattern, what) = AGENT_SETTINGS.get(index)?;
        Some(format!(
            "touches {path}, {what} (`{pattern}`, built in: an agent's hooks and permissions)"
        ))
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
        assert_eq!(
            AgentSettings::new().set.len(),
            AGENT_SETTINGS.len(),
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
        ] {
            assert!(settings.hit(path).is_none(), "{path}");
        }
    }
}
