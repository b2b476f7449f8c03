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
    "uv.lock",
    "pdm.lock",
    "deno.json",
    "deno.jsonc",
    "deno.lock",
    "bunfig.toml",
    "bun.lock",
    ".pnpmfile.cjs",
    "mix.exs",
    "mix.lock",
    "stack.yaml",
    "cabal.project",
    "package.swift",
    "podfile",
    "brewfile",
    "directory.build.props",
    "directory.build.targets",
    "directory.packages.props",
    "global.json",
    "nuget.config",
    "turbo.json",
    "nx.json",
    "lerna.json",
    // Wrappers that fetch and run a build tool, and what they fetch.
    "gradlew",
    "mvnw",
    "gradle-wrapper.properties",
    "gradle-wrapper.jar",
    "gradle.properties",
    // Python runs these on every start.
    "sitecustomize.py",
    "usercustomize.py",
    // Which tool version runs.
    ".tool-versions",
    "mise.toml",
    ".mise.toml",
    ".python-version",
    ".node-version",
    ".nvmrc",
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
    "build.zig",
    "build.zig.zon",
    "build.bazel",
    "workspace.bazel",
    "module.bazel",
    ".bazelrc",
    ".bazelversion",
    "flake.nix",
    "flake.lock",
    "configure",
    "configure.ac",
    "configure.in",
    "makefile.am",
    "makefile.in",
    "sconstruct",
    "sconscript",
    "tiltfile",
    "earthfile",
    "snakefile",
    "dangerfile",
    "babel.config.json",
    ".lintstagedrc",
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
    // Filters and diff drivers git runs (with `.git/config`).
    ".gitattributes",
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

/// Bazel's file names, matched as written: in lower case they are words of ordinary
/// commands (`cargo build`, `yarn workspace web test`), which an argument naming a file that
/// decides what runs would leave without a subject.
const CASED_NAMES: &[&str] = &["BUILD", "WORKSPACE"];

/// Endings of a file name (lower case) that make it a script or a build file.
const ENDINGS: &[&str] = &[
    ".sh",
    ".bash",
    ".zsh",
    ".fish",
    ".ps1",
    ".psm1",
    ".bat",
    ".cmd",
    ".mk",
    ".cmake",
    // .NET projects and their imports, Haskell, Ruby, Nix, Bazel, Gradle, Elixir scripts.
    ".csproj",
    ".fsproj",
    ".vbproj",
    ".sln",
    ".props",
    ".targets",
    ".cabal",
    ".gemspec",
    ".nix",
    ".bzl",
    ".bazel",
    ".gradle",
    ".gradle.kts",
    ".exs",
    // A `.pth` file in site-packages runs its `import` lines on every Python start.
    ".pth",
    // Test runners' code configuration (`karma.conf.js`, `protractor.conf.ts`).
    ".conf.js",
    ".conf.cjs",
    ".conf.mjs",
    ".conf.ts",
];

/// Starts of a file name (lower case): `Dockerfile`, `Dockerfile.dev`, `docker-compose.yml`,
/// `docker-compose.override.yaml`, and the ones below.
const STARTS: &[&str] = &[
    "dockerfile",
    "docker-compose",
    // Task files (`Gruntfile.js`, `gulpfile.babel.js`) and tools' configuration that loads
    // plugins or is code (`.eslintrc.js`, `.babelrc`, `.prettierrc.cjs`, `.mocharc.yml`).
    "gruntfile.",
    "gulpfile.",
    ".eslintrc",
    ".babelrc",
    ".prettierrc",
    ".stylelintrc",
    ".mocharc",
    ".lintstagedrc.",
    ".swcrc",
];

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
    // Build tools' wrappers, what they fetch, and the packaged tool they run.
    ".mvn",
    ".yarn",
    // Coding agents' own settings: their hooks and allowed commands.
    ".claude",
    ".codex",
    ".gemini",
    ".qwen",
    ".opencode",
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
        || path
            .rsplit('/')
            .next()
            .is_some_and(|written| CASED_NAMES.contains(&written))
        || ENDINGS.iter().any(|end| name.ends_with(end))
        || STARTS.iter().any(|start| name.starts_with(start))
        || is_tool_config(name)
        || folders.iter().any(|f| FOLDERS.contains(f))
        || config_of(".cargo", &|n| n.starts_with("config"))
        || config_of(".vscode", &|n| n == "tasks.json")
}

/// A JavaScript tool's configuration, which is code the tool runs (`vite.config.ts`,
/// `eslint.config.js`, `jest.config.mjs`) or names the code it loads (`jest.config.json`'s
/// set-up files, `babel.config.json`'s plugins).
fn is_tool_config(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        stem.ends_with(".config")
            && [
                "js", "cjs", "mjs", "ts", "cts", "mts", "json", "jsonc", "json5", "yaml", "yml",
                "toml",
            ]
            .contains(&ext)
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
            // Bazel's names only as written: in lower case they are ordinary command words.
            "build",
            "workspace",
            "",
        ] {
            assert!(!decides_what_runs(path), "{path}");
        }
    }

    /// Files that decide what a routinely approved command runs (found by the red team) are
    /// known, so five approved edits of one never approve a sixth that adds code the next
    /// `./gradlew build`, `dotnet test`, `grunt`, `pnpm install`, `deno task`, `bun test`,
    /// `yarn`, `mix test`, `zig build`, `bazel test`, `nix develop`, `jest`, `karma` … runs
    /// (after `wrote_lately`'s 24 hours, which only runs_what closes for good).
    #[test]
    fn more_files_decide_what_runs() {
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
