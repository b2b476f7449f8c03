//! The sandbox as a command sees it, on this machine's kernel (Landlock is required here: CI
//! and the development machines have it, and these tests must fail where it is missing).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::protocol::ToolStatus;
use crate::server::config::{NetworkAccess, SandboxConfig, SandboxMode, ToolsConfig};
use crate::server::tools::testing::run;
use crate::server::tools::{ToolContext, ToolOutput};

/// A server's folders as `serve` lays them out: a data dir holding the token, the config and
/// the database, and a workspace elsewhere.
struct Layout {
    _root: tempfile::TempDir,
    places: Places,
}

impl Layout {
    fn new() -> Layout {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let data_dir = base.join("data");
        let workspace = base.join("ws");
        std::fs::create_dir_all(&data_dir).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(data_dir.join("token"), "the-secret-token").unwrap();
        std::fs::write(data_dir.join("config.toml"), "# secret config\n").unwrap();
        std::fs::write(data_dir.join("countersign.db"), "SQLite secret").unwrap();
        let places = Places {
            workspace,
            config_file: data_dir.join("config.toml"),
            database_file: Some(data_dir.join("countersign.db")),
            database_url: None,
            data_dir,
        };
        Layout {
            _root: root,
            places,
        }
    }

    fn context(&self, config: &ToolsConfig, support: Support) -> ToolContext {
        let sandbox = Sandbox::build_with(config, &self.places, support).unwrap();
        ToolContext {
            workspace: self.places.workspace.clone(),
            shell_timeout: std::time::Duration::from_secs(30),
            output_limit: 64 * 1024,
            cancel: tokio_util::sync::CancellationToken::new(),
            sandbox: Arc::new(sandbox),
            settings: None,
            guard: crate::server::tools::Guard::Cleared,
        }
    }

    fn confined(&self) -> ToolContext {
        let support = rules::support();
        assert!(
            matches!(support, Support::Available(_)),
            "these tests need Linux Landlock (kernel 5.13+ with it enabled)"
        );
        self.context(&ToolsConfig::default(), support)
    }
}

async fn shell(ctx: &ToolContext, command: &str) -> ToolOutput {
    run(ctx, "shell", json!({ "command": command })).await
}

fn q(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[tokio::test]
async fn a_confined_command_cannot_touch_the_servers_files_even_as_root() {
    let layout = Layout::new();
    let ctx = layout.confined();
    let data = &layout.places.data_dir;
    for (what, command) in [
        ("the token", format!("cat {}", q(&data.join("token")))),
        (
            "the config",
            format!("cat {}", q(&data.join("config.toml"))),
        ),
        (
            "the database",
            format!("cat {}", q(&data.join("countersign.db"))),
        ),
        ("the data dir", format!("ls {}", q(data))),
        (
            "a new file in the data dir",
            format!("echo x > {}", q(&data.join("evil"))),
        ),
        ("the token, relatively", "cat ../data/token".to_owned()),
        (
            "outside the workspace",
            "echo x > ../outside.txt".to_owned(),
        ),
        (
            "the server's environment",
            format!("cat /proc/{}/environ", std::process::id()),
        ),
        (
            "the server's command line",
            format!("cat /proc/{}/cmdline", std::process::id()),
        ),
        ("/proc at all", "cat /proc/self/status".to_owned()),
        ("/root", "ls /root".to_owned()),
        ("/etc/shadow", "cat /etc/shadow".to_owned()),
        // By its host pid: inside the command's PID namespace the server has none (`$PPID`
        // is 0 there), and Landlock's scope refuses a signal out of the sandbox anyway.
        (
            "a signal to the server",
            format!("kill -0 {}", std::process::id()),
        ),
    ] {
        let out = shell(&ctx, &command).await;
        assert_eq!(
            out.status,
            ToolStatus::Error,
            "{what}: `{command}` → {out:?}"
        );
        assert!(
            out.output.contains("denied")
                || out.output.contains("not permitted")
                || out.output.contains("No such process"),
            "{what}: `{command}` → {}",
            out.output
        );
        assert!(
            !out.output.contains("secret"),
            "{what} leaked: {}",
            out.output
        );
    }
    assert!(!data.join("evil").exists());
    assert!(
        !layout
            .places
            .workspace
            .parent()
            .unwrap()
            .join("outside.txt")
            .exists()
    );
}

#[tokio::test]
async fn a_confined_command_works_in_the_workspace_and_its_private_folders() {
    let layout = Layout::new();
    let ctx = layout.confined();
    let out = shell(
        &ctx,
        "echo made > made.txt && mkdir -p sub && mv made.txt sub/ && cat sub/made.txt \
         && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo h > \"$HOME/.h\" && cat \"$HOME/.h\" \
         && ls /usr/bin >/dev/null && cat /etc/hostname >/dev/null && head -c 4 /dev/urandom | wc -c",
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.output);
    assert_eq!(out.output, "made\nt\nh\n4\n");
    assert!(layout.places.workspace.join("sub/made.txt").is_file());
    let private = layout.places.private_dir();
    assert!(private.join("tmp/t").is_file() && private.join("home/.h").is_file());
}

#[tokio::test]
async fn tools_see_only_the_minimal_environment() {
    let layout = Layout::new();
    let config = ToolsConfig {
        env_passthrough: vec!["CARGO_MANIFEST_DIR".into()],
        ..ToolsConfig::default()
    };
    let ctx = layout.context(&config, rules::support());
    let out = shell(&ctx, "env | cut -d= -f1 | sort").await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.output);
    // sh itself adds PWD (and some shells SHLVL, _); nothing comes from the server.
    let names: Vec<&str> = out
        .output
        .lines()
        .filter(|n| !matches!(*n, "PWD" | "SHLVL" | "_" | "OLDPWD"))
        .collect();
    assert_eq!(
        names,
        [
            "CARGO_MANIFEST_DIR",
            "HOME",
            "LANG",
            "PATH",
            "TERM",
            "TMPDIR"
        ]
    );
    let home = shell(&ctx, "echo \"$HOME|$TMPDIR\"").await.output;
    let private = layout.places.private_dir();
    assert_eq!(
        home.trim(),
        format!(
            "{}|{}",
            private.join("home").display(),
            private.join("tmp").display()
        )
    );
}

#[tokio::test]
async fn network_off_stops_tcp_connections() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let layout = Layout::new();
    let connect = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected'");

    let on = layout.confined();
    let out = shell(&on, &connect).await;
    assert_eq!(
        (out.status, out.output.as_str()),
        (ToolStatus::Ok, "connected\n")
    );

    let config = ToolsConfig {
        sandbox: SandboxConfig {
            network: NetworkAccess::Off,
            ..SandboxConfig::default()
        },
        ..ToolsConfig::default()
    };
    let off = layout.context(&config, rules::support());
    let out = shell(&off, &connect).await;
    assert_eq!(out.status, ToolStatus::Error, "{}", out.output);
    assert!(out.output.contains("denied"), "{}", out.output);
}

#[tokio::test]
async fn without_landlock_shell_calls_are_refused_never_run_unconfined() {
    let layout = Layout::new();
    let ctx = layout.context(&ToolsConfig::default(), Support::Missing);
    let out = shell(&ctx, "touch ran.txt").await;
    assert_eq!(out.status, ToolStatus::Refused);
    assert!(out.output.contains("no Linux Landlock"), "{}", out.output);
    assert!(
        out.output.contains("mode = \"off\""),
        "says how to opt out: {}",
        out.output
    );
    assert!(!layout.places.workspace.join("ran.txt").exists());

    let config = ToolsConfig {
        sandbox: SandboxConfig {
            network: NetworkAccess::Off,
            ..SandboxConfig::default()
        },
        ..ToolsConfig::default()
    };
    let old = layout.context(&config, Support::Available(3));
    let out = shell(&old, "touch ran.txt").await;
    assert_eq!(out.status, ToolStatus::Refused);
    assert!(out.output.contains("ABI 4"), "{}", out.output);
    assert!(!layout.places.workspace.join("ran.txt").exists());
}

#[tokio::test]
async fn mode_off_is_an_explicit_choice_that_runs_unconfined() {
    let layout = Layout::new();
    let config = ToolsConfig {
        sandbox: SandboxConfig {
            mode: SandboxMode::Off,
            ..SandboxConfig::default()
        },
        ..ToolsConfig::default()
    };
    let ctx = layout.context(&config, Support::Missing);
    assert!(ctx.sandbox.is_off());
    let token = layout.places.data_dir.join("token");
    let out = shell(&ctx, &format!("cat {}", q(&token))).await;
    assert_eq!(
        (out.status, out.output.as_str()),
        (ToolStatus::Ok, "the-secret-token")
    );
    // Even unconfined, the server's variables stay out.
    let out = shell(&ctx, "env | cut -d= -f1").await;
    assert!(!out.output.contains("CARGO"), "{}", out.output);
}

#[test]
fn a_workspace_holding_the_data_dir_or_config_is_refused() {
    let layout = Layout::new();
    let mut places = layout.places.clone();
    places.workspace = places.data_dir.parent().unwrap().to_owned();
    let err = Sandbox::build(&ToolsConfig::default(), &places).unwrap_err();
    assert!(err.contains("contains the data directory"), "{err}");

    let mut places = layout.places.clone();
    places.config_file = places.workspace.join("countersign.toml");
    let err = places.check_workspace().unwrap_err();
    assert!(err.contains("contains the config file"), "{err}");

    // The default layout — the workspace inside the data dir — is fine: only the workspace
    // is granted, never the folder around it.
    let mut places = layout.places.clone();
    places.workspace = places.data_dir.join("workspace");
    std::fs::create_dir_all(&places.workspace).unwrap();
    assert_eq!(places.check_workspace(), Ok(()));
}

#[test]
fn a_granted_folder_holding_a_secret_is_granted_around_it() {
    let layout = Layout::new();
    let base: PathBuf = layout.places.data_dir.parent().unwrap().to_owned();
    std::fs::create_dir_all(base.join("shared/docs")).unwrap();
    let config = SandboxConfig {
        extra_read: vec![base.display().to_string()],
        ..SandboxConfig::default()
    };
    let private = layout.places.private_dir();
    std::fs::create_dir_all(private.join("home")).unwrap();
    std::fs::create_dir_all(private.join("tmp")).unwrap();
    let grants = rules::Grants::new(
        &layout.places,
        &config,
        &private.join("home"),
        &private.join("tmp"),
    )
    .unwrap();
    assert!(grants.read.contains(&base.join("shared")), "{grants:?}");
    assert!(grants.read.contains(&base.join("ws")), "{grants:?}");
    assert!(
        !grants.read.iter().any(
            |g| g.starts_with(&layout.places.data_dir) || layout.places.data_dir.starts_with(g)
        ),
        "nothing holds or is inside the data dir: {grants:?}"
    );
    assert!(
        !grants.read.iter().any(|g| g.starts_with("/proc")),
        "{grants:?}"
    );
    assert!(
        !grants.read.contains(&PathBuf::from("/etc")),
        "/etc is granted around its secrets: {grants:?}"
    );
    assert!(
        grants.read.contains(&PathBuf::from("/etc/hostname"))
            || !Path::new("/etc/hostname").exists()
    );
}
