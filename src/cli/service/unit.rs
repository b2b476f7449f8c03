//! The systemd unit `service install` writes, and the same command line for machines without
//! systemd.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// What the unit and the plain command line are made from.
#[derive(Clone, Debug)]
pub struct Launch {
    pub user: String,
    pub binary: PathBuf,
    pub data_dir: PathBuf,
    pub workspace: PathBuf,
    pub listen: SocketAddr,
    /// The web UI's files, when they were installed.
    pub site_root: Option<PathBuf>,
}

impl Launch {
    /// `countersign serve …` as words (every path was checked to need no quoting).
    pub fn serve_words(&self) -> Vec<String> {
        vec![
            self.binary.display().to_string(),
            "serve".into(),
            "--data-dir".into(),
            self.data_dir.display().to_string(),
            "--addr".into(),
            self.listen.to_string(),
            "--workspace".into(),
            self.workspace.display().to_string(),
        ]
    }

    /// The environment the server needs besides its flags.
    fn environment(&self) -> Vec<String> {
        self.site_root
            .iter()
            .map(|site| format!("COUNTERSIGN_SITE_ROOT={}", site.display()))
            .collect()
    }

    /// The command line that runs the server as its user where systemd does not.
    pub fn runuser_line(&self) -> String {
        let mut words = vec![
            "runuser".to_owned(),
            "-u".into(),
            self.user.clone(),
            "--".into(),
        ];
        let env = self.environment();
        if !env.is_empty() {
            words.push("env".into());
            words.extend(env);
        }
        words.extend(self.serve_words());
        words.join(" ")
    }

    /// The same with `setpriv` (which execs in place, for supervisors that signal the child).
    pub fn setpriv_line(&self) -> String {
        let mut words = vec![
            "setpriv".to_owned(),
            format!("--reuid={}", self.user),
            format!("--regid={}", self.user),
            "--init-groups".into(),
            "--".into(),
        ];
        let env = self.environment();
        if !env.is_empty() {
            words.push("env".into());
            words.extend(env);
        }
        words.extend(self.serve_words());
        words.join(" ")
    }

    /// The unit file: the server as its own user, with the system read-only around it.
    pub fn unit(&self) -> String {
        let home_protection = if under_homes(&self.workspace) {
            "read-only"
        } else {
            "yes"
        };
        let environment: String = self
            .environment()
            .iter()
            .map(|e| format!("Environment={e}\n"))
            .collect();
        format!(
            "# Written by `countersign service install`; `countersign service uninstall` removes it.
[Unit]
Description=Countersign, as its own user (apart from the agents it answers for)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User={user}
Group={user}
ExecStart={exec}
{environment}UMask=0077
Restart=on-failure
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome={home_protection}
ReadWritePaths={data} {workspace}
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
LockPersonality=yes
CapabilityBoundingSet=
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
SystemCallArchitectures=native

[Install]
WantedBy=multi-user.target
",
            user = self.user,
            exec = self.serve_words().join(" "),
            data = self.data_dir.display(),
            workspace = self.workspace.display(),
        )
    }
}

/// Whether `path` is under the folders `ProtectHome=yes` would hide.
fn under_homes(path: &Path) -> bool {
    ["/home", "/root", "/run/user"]
        .iter()
        .any(|home| path.starts_with(home))
}

/// Whether `path` can go into a unit and a command line as it is: absolute, and no character
/// that systemd or a shell would read as something else.
pub fn plain_path(path: &Path) -> bool {
    let Some(text) = path.to_str() else {
        return false;
    };
    path.is_absolute()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_' | '+' | ','))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(workspace: &str) -> Launch {
        Launch {
            user: "countersign".into(),
            binary: "/usr/local/bin/countersign".into(),
            data_dir: "/var/lib/countersign".into(),
            workspace: workspace.into(),
            listen: "127.0.0.1:8080".parse().unwrap(),
            site_root: Some("/usr/local/share/countersign/site".into()),
        }
    }

    #[test]
    fn the_unit_runs_the_server_as_its_user_with_the_system_read_only() {
        let unit = launch("/var/lib/countersign/workspace").unit();
        for line in [
            "User=countersign",
            "Group=countersign",
            "ExecStart=/usr/local/bin/countersign serve --data-dir /var/lib/countersign --addr 127.0.0.1:8080 --workspace /var/lib/countersign/workspace",
            "Environment=COUNTERSIGN_SITE_ROOT=/usr/local/share/countersign/site",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ProtectHome=yes",
            "ReadWritePaths=/var/lib/countersign /var/lib/countersign/workspace",
            "PrivateTmp=yes",
            "UMask=0077",
            "WantedBy=multi-user.target",
        ] {
            assert!(unit.lines().any(|l| l == line), "no {line:?} in\n{unit}");
        }
        // The sandbox makes PID namespaces for each tool call: not forbidden here.
        assert!(!unit.contains("RestrictNamespaces"));
    }

    #[test]
    fn a_workspace_under_home_stays_reachable() {
        let unit = launch("/home/ada/project").unit();
        assert!(unit.contains("ProtectHome=read-only\n"), "{unit}");
        assert!(unit.contains("ReadWritePaths=/var/lib/countersign /home/ada/project\n"));
    }

    #[test]
    fn the_plain_lines_run_the_same_command_as_the_user() {
        let l = launch("/srv/ws");
        assert_eq!(
            l.runuser_line(),
            "runuser -u countersign -- env COUNTERSIGN_SITE_ROOT=/usr/local/share/countersign/site \
             /usr/local/bin/countersign serve --data-dir /var/lib/countersign --addr 127.0.0.1:8080 \
             --workspace /srv/ws"
        );
        assert!(
            l.setpriv_line().starts_with(
                "setpriv --reuid=countersign --regid=countersign --init-groups -- env "
            )
        );
    }

    #[test]
    fn only_plain_absolute_paths_go_into_a_unit() {
        assert!(plain_path(Path::new("/var/lib/countersign")));
        assert!(plain_path(Path::new("/srv/cs-1.0/data_x")));
        for bad in [
            "relative",
            "/with space",
            "/per%cent",
            "/quo\"te",
            "/new\nline",
            "/back\\slash",
            "/semi;colon",
            "/$HOME",
        ] {
            assert!(!plain_path(Path::new(bad)), "{bad:?}");
        }
    }
}
