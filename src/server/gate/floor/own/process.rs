//! The server's own process, which an agent on the same user may signal, stop, trace or read:
//! every thread of it (a thread id is as good as the process id under `/proc` and to `kill`),
//! by id, by name (`pkill`, `killall`), by unit (`systemctl stop`), through a debugger or a
//! tracer (`gdb -p`, `strace -p`), and `ps` forms that print a process's environment.
//!
//! Plain `ps aux`, `pgrep -a` and `top -c` (command lines, not environments) stay off: they
//! are what agents run to see what is running, and the server keeps no secret on its command
//! line that the environment check would not also cover (README, "Outside agents and the OS
//! boundary").

use super::super::pattern::{program_name, same_program};
use crate::server::shell_syntax::Word;

/// The server's process as the floor knows it.
#[derive(Debug, Default)]
pub struct Server {
    pid: u32,
    /// Its names, case-folded: `comm` and its executable's file name.
    names: Vec<String>,
    /// Its command line, case-folded, words joined by spaces.
    cmdline: String,
}

/// Programs that act on a process named by its id (in any argument).
const BY_ID: [&str; 18] = [
    "gdb", "lldb", "strace", "ltrace", "perf", "gcore", "pstack", "eu-stack", "nsenter", "prlimit",
    "taskset", "criu", "reptyr", "py-spy", "rbspy", "bpftrace", "ptrace", "renice",
];

/// `systemctl` verbs that only read.
const SYSTEMCTL_READS: [&str; 11] = [
    "status",
    "show",
    "is-active",
    "is-enabled",
    "is-failed",
    "cat",
    "list-units",
    "list-unit-files",
    "list-dependencies",
    "list-timers",
    "help",
];

impl Server {
    /// The process `pid`, its names and command line read from `/proc`.
    pub fn of(pid: u32) -> Server {
        let proc = std::path::Path::new("/proc").join(pid.to_string());
        let mut names: Vec<String> = Vec::new();
        if let Ok(comm) = std::fs::read_to_string(proc.join("comm")) {
            names.push(comm.trim().to_lowercase());
        }
        if let Ok(exe) = std::fs::read_link(proc.join("exe"))
            && let Some(name) = exe.file_name()
        {
            names.push(name.to_string_lossy().to_lowercase());
        }
        names.retain(|n| !n.is_empty());
        names.dedup();
        let cmdline = std::fs::read(proc.join("cmdline"))
            .map(|raw| {
                String::from_utf8_lossy(&raw)
                    .split('\0')
                    .filter(|w| !w.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_lowercase()
            })
            .unwrap_or_default();
        Server {
            pid,
            names,
            cmdline,
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether `id` is the server's process or one of its threads (its `Tgid` is the server's).
    pub fn owns(&self, id: u64) -> bool {
        if id == u64::from(self.pid) {
            return true;
        }
        let status = std::fs::read_to_string(format!("/proc/{id}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("Tgid:"))
            .and_then(|tgid| tgid.trim().parse::<u64>().ok())
            .is_some_and(|tgid| tgid == u64::from(self.pid))
    }

    /// Why the command `words` (program first) signals, stops, traces or reads the server's
    /// process; `None` when it cannot.
    pub fn command_hit(&self, words: &[Word]) -> Option<String> {
        let (program, args) = words.split_first()?;
        let name = program_name(&program.text);
        let lower = name.to_lowercase();
        let hit = match lower.as_str() {
            "kill" => self.kill_hit(args),
            "pkill" | "skill" | "snice" => self.pkill_hit(args),
            "killall" => self.killall_hit(args),
            "killall5" => Some("signals every process".to_owned()),
            "fuser" => flags(args).any(|f| f.contains('k')).then(|| {
                "kills the processes using a file or port, which may be the server".to_owned()
            }),
            "systemctl" | "service" => unit_hit(&lower, args),
            "loginctl" => args
                .iter()
                .any(|a| a.text.starts_with("terminate-") || a.text.starts_with("kill-"))
                .then(|| "ends a login and every process of it".to_owned()),
            "ps" => prints_environment(args)
                .then(|| "prints processes' environments (the server's included)".to_owned()),
            _ if BY_ID.iter().any(|p| same_program(p, &lower)) => self.id_hit(args),
            _ => None,
        }?;
        Some(format!(
            "runs `{name}`, which {hit}: Countersign's own process (pid {}), built in",
            self.pid
        ))
    }

    /// `kill [-s SIG | -SIG] PID…`: a pid of the server, `-1` (every process) or `0`.
    fn kill_hit(&self, args: &[Word]) -> Option<String> {
        if args.iter().any(|a| a.dynamic) {
            return Some("signals a process only known when it runs".to_owned());
        }
        let mut operands = Vec::new();
        let mut words = args.iter().map(|a| a.text.as_str()).enumerate().peekable();
        let mut options = true;
        while let Some((i, word)) = words.next() {
            match word {
                "--" if options => options = false,
                "-s" | "-n" | "--signal" | "-q" | "--queue" | "--timeout" if options => {
                    words.next();
                }
                // The first word may be the signal (`-9`, `-KILL`); `-1` after it is a pid.
                w if options && i == 0 && w.starts_with('-') => {}
                w if options && w.starts_with("--") => {}
                w => operands.push(w),
            }
        }
        operands.into_iter().find_map(|operand| {
            let id: i64 = operand.parse().ok()?;
            match id {
                -1 => Some("signals every process it may".to_owned()),
                0 => Some("signals its whole process group".to_owned()),
                id if self.owns(id.unsigned_abs()) => Some(format!("signals {id}")),
                _ => None,
            }
        })
    }

    /// `pkill [options] PATTERN`: a pattern that could match the server's name (or, with
    /// `-f`, its command line); criteria alone select the server as well.
    fn pkill_hit(&self, args: &[Word]) -> Option<String> {
        if args.iter().any(|a| a.dynamic) {
            return Some("picks processes only known when it runs".to_owned());
        }
        const WITH_VALUE: [&str; 13] = [
            "-g",
            "-G",
            "-P",
            "-s",
            "-t",
            "-u",
            "-U",
            "-F",
            "--signal",
            "--pidfile",
            "--ns",
            "--nslist",
            "-e",
        ];
        let full = flags(args).any(|f| !f.starts_with("--") && f.contains('f'))
            || args.iter().any(|a| a.text == "--full");
        let patterns = operands_of(args, &WITH_VALUE);
        if patterns.is_empty() {
            return Some("picks processes by owner or group, the server's included".to_owned());
        }
        patterns
            .iter()
            .find(|p| self.pattern_matches(p, full))
            .map(|p| format!("picks processes matching `{p}`"))
    }

    /// `killall [options] NAME…`: the server's name, a regex (`-r`), or every process of a
    /// user (`-u` alone).
    fn killall_hit(&self, args: &[Word]) -> Option<String> {
        if args.iter().any(|a| a.dynamic) {
            return Some("picks processes only known when it runs".to_owned());
        }
        let regex = flags(args).any(|f| !f.starts_with("--") && f.contains('r'))
            || args.iter().any(|a| a.text == "--regexp");
        let names = operands_of(args, &["-u", "--user", "-s", "--signal", "-o", "-y", "-n"]);
        if names.is_empty() {
            return Some("signals processes by owner, the server's included".to_owned());
        }
        names
            .iter()
            .find(|n| {
                let n = n.to_lowercase();
                if regex {
                    self.pattern_matches(&n, false)
                } else {
                    self.names
                        .iter()
                        .any(|own| own == &n || own.starts_with(&n))
                }
            })
            .map(|n| format!("signals processes named `{n}`"))
    }

    /// Whether a `pkill`-style extended regex could match the server: it holds regex syntax
    /// (not read here), or its text is in a name (or the command line).
    fn pattern_matches(&self, pattern: &str, full: bool) -> bool {
        let pattern = pattern.to_lowercase();
        if pattern.contains([
            '.', '*', '[', ']', '(', ')', '|', '^', '$', '+', '?', '{', '\\',
        ]) {
            return true;
        }
        self.names.iter().any(|n| n.contains(&pattern)) || (full && self.cmdline.contains(&pattern))
    }

    /// A debugger, tracer or limiter given the server's id (`-p N`, `--pid=N`, `N`).
    fn id_hit(&self, args: &[Word]) -> Option<String> {
        args.iter().find_map(|arg| {
            let text = arg.text.as_str();
            let value = text
                .rsplit_once('=')
                .map_or(text, |(_, v)| v)
                .trim_start_matches(|c: char| c == '-' || c.is_ascii_alphabetic());
            let id: u64 = value.parse().ok()?;
            self.owns(id).then(|| format!("attaches to process {id}"))
        })
    }
}

/// The option words of a command (not after `--`).
fn flags(args: &[Word]) -> impl Iterator<Item = &str> {
    args.iter()
        .map(|a| a.text.as_str())
        .take_while(|a| *a != "--")
        .filter(|a| a.starts_with('-') && a.len() > 1)
}

/// The operands, skipping options and the values of those in `with_value`.
fn operands_of<'a>(args: &'a [Word], with_value: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut words = args.iter().map(|a| a.text.as_str());
    let mut options = true;
    while let Some(word) = words.next() {
        if options && word == "--" {
            options = false;
        } else if options && with_value.contains(&word) {
            words.next();
        } else if options && word.starts_with('-') && word.len() > 1 {
        } else {
            out.push(word);
        }
    }
    out
}

/// `systemctl [--user] VERB UNIT…` / `service UNIT VERB`: a verb that changes a unit named
/// (or globbed) like Countersign's.
fn unit_hit(program: &str, args: &[Word]) -> Option<String> {
    if args.iter().any(|a| a.dynamic && !a.glob) {
        return Some("acts on units only known when it runs".to_owned());
    }
    let operands = operands_of(
        args,
        &["-t", "--type", "-s", "--signal", "-H", "--host", "-M"],
    );
    let (verb, units): (&str, Vec<&str>) = match program {
        "service" => (
            operands.get(1).copied().unwrap_or("status"),
            operands.iter().take(1).copied().collect(),
        ),
        _ => (
            operands.first().copied().unwrap_or("list-units"),
            operands.iter().skip(1).copied().collect(),
        ),
    };
    if SYSTEMCTL_READS.contains(&verb) {
        return None;
    }
    units
        .iter()
        .find(|unit| {
            let unit = unit.to_lowercase();
            unit.contains("countersign")
                || globset::Glob::new(&unit)
                    .map(|g| g.compile_matcher().is_match("countersign.service"))
                    .unwrap_or(true)
        })
        .map(|unit| format!("runs `{verb}` on the unit `{unit}`"))
}

/// `ps e`, `ps eww`, `ps auxe`, `ps -E`: each process's environment is printed.
fn prints_environment(args: &[Word]) -> bool {
    args.iter().any(|a| {
        let t = a.text.as_str();
        t == "-E"
            || (!t.starts_with('-')
                && !t.is_empty()
                && t.chars().all(|c| c.is_ascii_alphabetic())
                && t.contains('e'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    fn server() -> Server {
        Server {
            pid: std::process::id(),
            names: vec!["countersign".into()],
            cmdline: "countersign serve --addr 127.0.0.1:8080".into(),
        }
    }

    #[test]
    fn signals_tracers_and_units_aimed_at_the_server_ask() {
        let s = server();
        let pid = s.pid;
        // The thread running this test: alive while it runs.
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        let thread: u64 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
        for line in [
            format!("kill {pid}"),
            format!("kill -9 {thread}"),
            format!("kill -s TERM -- -{pid}"),
            "kill -9 -1".to_owned(),
            "/bin/kill 0".to_owned(),
            "pkill countersign".to_owned(),
            "pkill -f serve".to_owned(),
            "pkill -u me".to_owned(),
            "pkill -9 'c.*n'".to_owned(),
            "killall -I Countersign".to_owned(),
            "killall5 -9".to_owned(),
            format!("gdb -p {pid}"),
            format!("strace -f -p{thread}"),
            format!("perf record --pid={pid}"),
            format!("gcore {pid}"),
            "systemctl --user stop countersign".to_owned(),
            "systemctl kill countersign.service".to_owned(),
            "systemctl restart count*".to_owned(),
            "service countersign stop".to_owned(),
            "ps eww".to_owned(),
            "ps auxe".to_owned(),
            "fuser -k 8080/tcp".to_owned(),
        ] {
            assert!(s.command_hit(&words(&line)).is_some(), "{line}");
        }
        for line in [
            "kill %1",
            "kill 999999999",
            "pkill node",
            "killall firefox",
            "systemctl status countersign",
            "systemctl --user restart pipewire",
            "ps aux",
            "ps -ef",
            "pgrep -a countersign",
            "gdb ./a.out",
        ] {
            assert_eq!(s.command_hit(&words(line)), None, "{line}");
        }
    }
}
