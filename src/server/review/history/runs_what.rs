//! Files that decide what a later command runs: a package manifest's scripts, a build file's
//! recipes, a CI workflow, a git hook, a shell's start-up file, any script. An edit of one has
//! no subject for the history reviewer, so it always goes to the person: five approved edits
//! of `package.json` say nothing of the sixth, which may write a new `"test"` script that the
//! `npm test` approved five times then runs (the red-team's pairing of `edit` and `exec`).
//!
//! Matched by name and folder, case-insensitively (a Windows or macOS file system opens
//! `MAKEFILE` as `Makefile`), on the whole file name: `package.json.md` and
//! `docs/Makefile.txt` are not what `npm` or `make` read, so they keep their subject.

/// File names read whole (lower case) that decide what runs: package manifests and their
/// lockfiles (what gets installed runs its own install scripts), build files, CI files,
/// hooks' configuration, shell and tool start-up files, test set-up code run on its own.
const NAMES: &[&str] = &[
    // Package manifests and lockfiles.
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "bun.lockb",
    "cargo.toml",
    "cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "noxfile.py",
    "conftest.py",
    "pytest.ini",
    "pipfile",
    "pipfile.lock",
    "poetry.lock",
    "requirements.txt",
    "gemfile",
    "gemfile.lock",
    "rakefile",
    "composer.json",
    "composer.lock",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "build.sbt",
    "go.mod",
    "go.sum",
    // Build files.
    "makefile",
    "gnumakefile",
    "build.rs",
    "cmakelists.txt",
    "meson.build",
    "justfile",
    ".justfile",
    "taskfile.yml",
    "taskfile.yaml",
    "procfile",
    "compose.yml",
    "compose.yaml",
    "vagrantfile",
    // CI and hooks.
    ".gitlab-ci.yml",
    ".travis.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    "jenkinsfile",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".gitmodules",
    // Shell and tool start-up.
    ".envrc",
    ".env.sh",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
];

/// Endings of a file name (lower case) that make it a script or a build file.
const ENDINGS: &[&str] = &[
    ".sh", ".bash", ".zsh", ".fish", ".ps1", ".psm1", ".bat", ".cmd", ".mk", ".cmake",
];

/// Starts of a file name (lower case): `Dockerfile`, `Dockerfile.dev`, `docker-compose.yml`,
/// `docker-compose.override.yaml`.
const STARTS: &[&str] = &["dockerfile", "docker-compose"];

/// Folders (lower case) everything beneath which decides what runs: CI workflows and hooks,
/// the repository's own git folder (its hooks and config), a dev container's set-up, and any
/// `scripts/` or `bin/` folder (its files are run by name).
const FOLDERS: &[&str] = &[
    ".github",
    ".circleci",
    ".git",
    ".githooks",
    ".husky",
    ".devcontainer",
    "scripts",
    "bin",
];

/// Whether `path` (normalized, `/`-separated; relative or absolute) names a file that
/// decides what a later command runs.
pub fn decides_what_runs(path: &str) -> bool {
    let lower = path.to_lowercase();
    let segments: Vec<&str> = lower.split('/').filter(|s| !s.is_empty()).collect();
    let Some((name, folders)) = segments.split_last() else {
        return false;
    };
    let config_of = |folder: &str, file: &dyn Fn(&str) -> bool| {
        folders.last().is_some_and(|f| *f == folder) && file(name)
    };
    NAMES.contains(name)
        || ENDINGS.iter().any(|end| name.ends_with(end))
        || STARTS.iter().any(|start| name.starts_with(start))
        || is_tool_config(name)
        || folders.iter().any(|f| FOLDERS.contains(f))
        || config_of(".cargo", &|n| n.starts_with("config"))
        || config_of(".vscode", &|n| n == "tasks.json")
}

/// A JavaScript tool's configuration, which is code the tool runs (`vite.config.ts`,
/// `eslint.config.js`, `jest.config.mjs`).
fn is_tool_config(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        stem.ends_with(".config") && ["js", "cjs", "mjs", "ts", "cts", "mts"].contains(&ext)
    })
}

#[cfg(test)]
mod tests {
    use super::decides_what_runs;

    #[test]
    fn files_that_decide_what_runs_are_known() {
        for path in [
            "package.json",
            "web/package.json",
            "/home/me/app/package.json",
            "Cargo.toml",
            "CARGO.TOML",
            "Cargo.lock",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "tox.ini",
            "noxfile.py",
            "Gemfile",
            "Rakefile",
            "composer.json",
            "pom.xml",
            "build.gradle",
            "build.gradle.kts",
            "go.mod",
            "Makefile",
            "makefile",
            "GNUmakefile",
            "rules.mk",
            "build.rs",
            "crates/core/build.rs",
            "CMakeLists.txt",
            "cmake/deps.cmake",
            "meson.build",
            "justfile",
            "Justfile",
            "Taskfile.yml",
            "Taskfile.yaml",
            "Dockerfile",
            "Dockerfile.dev",
            "docker-compose.yml",
            "docker-compose.override.yaml",
            "Procfile",
            ".github/workflows/ci.yml",
            "/home/me/app/.github/actions/x/action.yml",
            ".gitlab-ci.yml",
            ".circleci/config.yml",
            ".git/hooks/pre-commit",
            ".git/config",
            ".husky/pre-commit",
            ".pre-commit-config.yaml",
            "lefthook.yml",
            ".envrc",
            ".bashrc",
            ".zshrc",
            ".profile",
            ".bash_profile",
            "/home/me/.bashrc",
            ".npmrc",
            ".cargo/config.toml",
            ".cargo/config",
            ".vscode/tasks.json",
            "deploy.sh",
            "x.bash",
            "x.zsh",
            "x.ps1",
            "x.bat",
            "x.cmd",
            "scripts/check.py",
            "tools/scripts/release",
            "bin/run",
            "src/bin/tool.rs",
            "vite.config.ts",
            "eslint.config.js",
        ] {
            assert!(decides_what_runs(path), "{path}");
        }
    }

    /// Look-alikes are not what a build tool reads, and ordinary source files are ordinary.
    #[test]
    fn look_alikes_and_source_files_are_not() {
        for path in [
            "package.json.md",
            "docs/Makefile.txt",
            "docs/package.json.example",
            "src/main.rs",
            "src/server/review/history.rs",
            "README.md",
            "notes/scripts.md",
            "src/binary.rs",
            "src/shell.rs",
            "config/settings.json",
            ".vscode/settings.json",
            "cargo/config.toml",
            "src/config.ts",
            "",
        ] {
            assert!(!decides_what_runs(path), "{path}");
        }
    }

    /// RED TEAM (fails today): files that decide what a routinely approved command runs and
    /// are not in the list, so five approved edits of one approve a sixth that adds code the
    /// next `./gradlew build`, `dotnet test`, `grunt`, `pnpm install`, `deno task`, `bun test`,
    /// `yarn`, `mix test`, `zig build`, `bazel test`, `nix develop`, `jest`, `karma` … runs
    /// (after `wrote_lately`'s 24 hours, which only runs_what closes for good).
    #[test]
    fn redteam_more_files_decide_what_runs() {
        let missing: Vec<&str> = [
            "gradlew",
            "mvnw",
            "gradle/wrapper/gradle-wrapper.properties",
            ".mvn/wrapper/maven-wrapper.properties",
            "App.csproj",
            "Directory.Build.props",
            "Directory.Build.targets",
            "Gruntfile.js",
            "gulpfile.js",
            ".pnpmfile.cjs",
            "deno.json",
            "deno.jsonc",
            "bunfig.toml",
            ".yarn/releases/yarn-4.1.0.cjs",
            ".babelrc",
            "babel.config.json",
            ".eslintrc.js",
            "jest.config.json",
            "karma.conf.js",
            "mix.exs",
            "x.cabal",
            "stack.yaml",
            "build.zig",
            "BUILD.bazel",
            "WORKSPACE",
            "MODULE.bazel",
            ".bazelrc",
            "flake.nix",
            "shell.nix",
            "default.nix",
            "configure",
            "configure.ac",
            "Makefile.am",
            "SConstruct",
            "Tiltfile",
            "Earthfile",
            "Snakefile",
            "x.gemspec",
            "uv.lock",
            "pdm.lock",
            ".tool-versions",
            "mise.toml",
            "sitecustomize.py",
            "x.pth",
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".codex/config.toml",
            ".gemini/settings.json",
            ".gitattributes",
        ]
        .into_iter()
        .filter(|p| !decides_what_runs(p))
        .collect();
        assert!(
            missing.is_empty(),
            "not read as deciding what runs: {missing:?}"
        );
    }
}
