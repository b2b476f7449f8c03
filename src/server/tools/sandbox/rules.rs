//! The Landlock rules for tool processes, built once per configuration in the server and applied
//! in each child between fork and exec.
//!
//! Only async-signal-safe system calls run in the child (the server is multithreaded): the
//! ruleset and every path in it are opened beforehand, and `pre_exec` makes a handful of raw
//! syscalls — drop capabilities, `no_new_privs`, `landlock_restrict_self` — with no allocation.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::Places;
use crate::server::config::SandboxConfig;

/// The Landlock ABI these rules were written and tested against (never taken from the running
/// kernel, as the crate advises): V6 adds signal and abstract-socket scoping; older kernels get
/// what they support (best effort), except where a setting needs more (see `Support`).
const ABI_TARGET: landlock::ABI = landlock::ABI::V6;

/// Folders every program needs to read and run. `/bin`, `/lib*` are often links into `/usr`.
const SYSTEM_READ: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Device files programs expect to read and write (git needs urandom, many tools /dev/null).
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Shared memory for Python's multiprocessing and the like.
const SHM: &str = "/dev/shm";

/// Never granted, whatever a folder above them is granted for: the machine's own secrets, and
/// `/proc` (other processes' command lines — where a `--token` flag would show — and, for
/// root, their environments).
fn always_avoided() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        "/proc",
        "/etc/shadow",
        "/etc/shadow-",
        "/etc/gshadow",
        "/etc/gshadow-",
        "/etc/sudoers",
        "/etc/sudoers.d",
        "/etc/ssl/private",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    // The machine's SSH host keys (the public halves may be read).
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("ssh_host_") && !name.ends_with(".pub") {
                paths.push(entry.path());
            }
        }
    }
    paths
}

/// What the kernel offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Landlock with this ABI version.
    Available(i32),
    /// No Landlock: an old kernel, not enabled, or not Linux.
    Missing,
}

/// The kernel's Landlock ABI, asked once without restricting anything.
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute, zero size and the VERSION flag the call only returns
        // the ABI version (or -1): it creates nothing and restricts nothing.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        match i32::try_from(version) {
            Ok(v) if v >= 1 => Support::Available(v),
            _ => Support::Missing,
        }
    })
}

impl Support {
    /// Why shell calls must be refused on this kernel, in words (`None`: they can run).
    pub fn refusal(self, network: bool) -> Option<String> {
        match self {
            Support::Missing => Some(
                "Shell commands are refused: this system has no Linux Landlock (kernel 5.13 or \
later with Landlock enabled), so a command could not be confined to the workspace. To run \
commands without a sandbox, set `mode = \"off\"` under [tools.sandbox] in the config file."
                    .to_owned(),
            ),
            Support::Available(abi) if !network && abi < 4 => Some(format!(
                "Shell commands are refused: `network = \"off\"` needs Landlock ABI 4 (Linux \
6.7 or later) and this kernel has ABI {abi}. Set `network = \"on\"` under [tools.sandbox] in \
the config file, or upgrade the kernel."
            )),
            Support::Available(_) => None,
        }
    }
}

/// The paths a tool's process may use.
#[derive(Debug, Default)]
pub struct Grants {
    /// Read and execute (folders or files).
    pub read: Vec<PathBuf>,
    /// Read, write, create, remove (folders).
    pub write: Vec<PathBuf>,
    /// Read and write (device files).
    pub devices: Vec<PathBuf>,
}

impl Grants {
    /// Grants for the workspace, the private `home` and `tmp`, the system folders and the
    /// configured extras — each checked against the server's secrets.
    pub fn new(
        places: &Places,
        config: &SandboxConfig,
        home: &Path,
        tmp: &Path,
    ) -> Result<Grants, String> {
        let mut avoid = places.secrets();
        avoid.extend(always_avoided());
        let private = canonical(&places.private_dir()).unwrap_or_else(|| places.private_dir());
        let mut grants = Grants::default();
        for root in SYSTEM_READ
            .iter()
            .map(PathBuf::from)
            .chain(config.extra_read.iter().map(PathBuf::from))
        {
            around(&root, &avoid, &private, &mut grants.read);
        }
        // A resolver file that links elsewhere (systemd keeps it under /run).
        if let Some(resolv) = canonical(Path::new("/etc/resolv.conf"))
            && !grants.read.iter().any(|g| resolv.starts_with(g))
        {
            around(&resolv, &avoid, &private, &mut grants.read);
        }
        grants.write.push(places.workspace.clone());
        for dir in [home, tmp] {
            grants
                .write
                .push(canonical(dir).unwrap_or_else(|| dir.to_owned()));
        }
        for root in config.extra_write.iter().map(PathBuf::from) {
            around(&root, &avoid, &private, &mut grants.write);
        }
        grants.devices = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect();
        Ok(grants)
    }
}

fn canonical(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// Grants `root` — or, when something to avoid lies inside it, each of its entries the same
/// way, so everything but what must be avoided is granted. Paths inside the private folder
/// are never avoided (it lives in the data dir on purpose).
fn around(root: &Path, avoid: &[PathBuf], private: &Path, out: &mut Vec<PathBuf>) {
    let Some(real) = canonical(root) else {
        return; // absent on this system
    };
    if !real.starts_with(private) && avoid.iter().any(|a| real.starts_with(a)) {
        return;
    }
    let holds_avoided = avoid.iter().any(|a| a.starts_with(&real));
    if !holds_avoided || !real.is_dir() {
        if !out.contains(&real) {
            out.push(real);
        }
        return;
    }
    if let Ok(entries) = std::fs::read_dir(&real) {
        for entry in entries.flatten() {
            around(&entry.path(), avoid, private, out);
        }
    }
}

/// A built ruleset, shared by every process it confines.
pub struct Rules {
    fd: OwnedFd,
    /// The highest capability number (capabilities are dropped in the child, up to it).
    cap_last: libc::c_ulong,
    summary: String,
}

fn err(what: &str) -> impl Fn(&dyn std::fmt::Display) -> String + '_ {
    move |e| format!("cannot build the sandbox ({what}): {e}")
}

/// A rule opening `path` with `dir_access`; a file's rule carries only file rights.
fn path_rule(
    path: &Path,
    dir_access: BitFlags<AccessFs>,
    file: BitFlags<AccessFs>,
) -> Result<PathBeneath<PathFd>, String> {
    let fd = PathFd::new(path).map_err(|e| err(&path.display().to_string())(&e))?;
    let access = if path.is_dir() {
        dir_access
    } else {
        dir_access & file
    };
    Ok(PathBeneath::new(fd, access))
}

/// What the sandbox holds, in one line for the log and the Config page.
fn summary(grants: &Grants, network: bool) -> String {
    let abi = match support() {
        Support::Available(v) => v,
        Support::Missing => 0,
    };
    format!(
        "sandbox: Landlock ABI {abi}; tools write only in {}; read {} system and extra paths; network {}",
        grants
            .write
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        grants.read.len(),
        if network { "on" } else { "off (no TCP)" },
    )
}

impl Rules {
    pub fn build(grants: &Grants, network: bool) -> Result<Rules, String> {
        let all = AccessFs::from_all(ABI_TARGET);
        let read = AccessFs::from_read(ABI_TARGET);
        let file = AccessFs::from_file(ABI_TARGET);
        let no_devices: BitFlags<AccessFs> = AccessFs::MakeChar | AccessFs::MakeBlock;
        let write_dir = all & !no_devices;
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .map_err(|e| err("file access")(&e))?;
        if !network {
            // Handled with no port allowed: no TCP connect or bind at all.
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI_TARGET))
                .map_err(|e| err("network")(&e))?;
        }
        let mut created = ruleset
            .scope(Scope::from_all(ABI_TARGET))
            .map_err(|e| err("scopes")(&e))?
            .create()
            .map_err(|e| err("create")(&e))?;
        let mut granted: Vec<(&Path, BitFlags<AccessFs>, &str)> = Vec::new();
        granted.extend(grants.read.iter().map(|p| (p.as_path(), read, "read rule")));
        granted.extend(
            grants
                .write
                .iter()
                .map(|p| (p.as_path(), write_dir, "write rule")),
        );
        granted.extend(
            grants
                .devices
                .iter()
                .map(|p| (p.as_path(), file & !AccessFs::Execute, "device rule")),
        );
        if Path::new(SHM).is_dir() {
            granted.push((
                Path::new(SHM),
                write_dir & !AccessFs::Execute,
                "shared memory rule",
            ));
        }
        for (path, access, what) in granted {
            created = created
                .add_rule(path_rule(path, access, file)?)
                .map_err(|e| err(what)(&e))?;
        }
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| "Landlock is not enforced on this kernel".to_owned())?;
        let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63);
        Ok(Rules {
            fd,
            cap_last,
            summary: summary(grants, network),
        })
    }

    pub fn describe(&self) -> String {
        self.summary.clone()
    }

    /// Makes `command`'s process confine itself before it runs the program.
    pub fn confine(self: &Arc<Self>, command: &mut tokio::process::Command) {
        let rules = Arc::clone(self);
        // SAFETY: the hook runs in the forked child before exec. It only makes raw system calls
        // on values prepared here (no allocation, no locks), which is what a child of a
        // multithreaded process may do.
        unsafe {
            command.pre_exec(move || restrict_child(rules.fd.as_raw_fd(), rules.cap_last));
        }
    }
}

/// In the child: no capabilities (root included), no new privileges, then the ruleset.
/// Any failure aborts the spawn: a command never runs unconfined by accident.
fn restrict_child(ruleset_fd: libc::c_int, cap_last: libc::c_ulong) -> std::io::Result<()> {
    use std::io::Error;
    // SAFETY: plain system calls with integer arguments and stack-allocated structs.
    unsafe {
        // Root keeps no capability past exec: with CAP_SYS_ADMIN or CAP_PERFMON it could read
        // other processes' /proc entries around Landlock's checks; without the rest it cannot
        // chown, mknod or raw-socket its way around either. Fails harmlessly for non-root.
        for cap in 0..=cap_last {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        clear_inheritable_caps();
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0u32) != 0 {
            return Err(Error::last_os_error());
        }
    }
    Ok(())
}

/// Empties the inheritable capability set, so root's exec gains nothing from it.
unsafe fn clear_inheritable_caps() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget/capset with a version-3 header read and write two `Data` entries.
    unsafe {
        if libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        ) == 0
        {
            data[0].inheritable = 0;
            data[1].inheritable = 0;
            libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr());
        }
    }
}
