//! Paths under `/proc` and `/dev/fd` that lead somewhere else: `/proc/self/root/…` is `/…`
//! (as `/proc/<pid>/root/…` and `/proc/thread-self/root/…` are), and `/proc/<pid>/cwd/…`,
//! `…/fd/…` and `…/map_files/…` open whatever a process has open or sits in, which no spelling
//! tells. A path through one is read as what it leads to, or asks.

/// What a normalized absolute path is, read through `/proc`.
#[derive(Debug, PartialEq, Eq)]
pub enum Proc {
    /// Not a path through `/proc` that leads elsewhere.
    Plain,
    /// Through a process's root: the path from `/` it names.
    Root(String),
    /// Through what a process has open or the folder it sits in: unknown.
    Opaque(String),
}

/// How many `…/root/` hops are followed before the path counts as unknown.
const MAX_HOPS: usize = 8;

/// Reads `path` (normalized, absolute, as written) through `/proc`.
pub fn read(path: &str) -> Proc {
    let mut current = path.to_owned();
    let mut moved = false;
    for _ in 0..MAX_HOPS {
        match step(&current) {
            Step::Plain if moved => return Proc::Root(current),
            Step::Plain => return Proc::Plain,
            Step::Opaque => return Proc::Opaque(current),
            Step::Root(rest) => {
                current = if rest.is_empty() {
                    "/".to_owned()
                } else {
                    rest
                };
                moved = true;
            }
        }
    }
    Proc::Opaque(current)
}

enum Step {
    Plain,
    Root(String),
    Opaque,
}

/// One `/proc/<process>[/task/<thread>]/<entry>/…` or `/dev/fd/<n>` hop.
fn step(path: &str) -> Step {
    let lower = path.to_ascii_lowercase();
    if let Some(fd) = lower.strip_prefix("/dev/fd/") {
        return if standard_stream(fd) {
            Step::Plain
        } else {
            Step::Opaque
        };
    }
    let Some(rest) = lower.strip_prefix("/proc/") else {
        return Step::Plain;
    };
    let mut parts = rest.split('/');
    let Some(process) = parts.next() else {
        return Step::Plain;
    };
    if !(is_process(process)) {
        return Step::Plain;
    }
    let mut entry = parts.next().unwrap_or("");
    if entry == "task" {
        let thread = parts.next().unwrap_or("");
        if !thread.chars().all(|c| c.is_ascii_digit()) || thread.is_empty() {
            return Step::Plain;
        }
        entry = parts.next().unwrap_or("");
    }
    let after: Vec<&str> = parts.collect();
    match entry {
        "root" => {
            // The rest, in the path's own spelling (it may not be lowercase).
            let skip = path.len() - after.join("/").len();
            let tail = if after.is_empty() { "" } else { &path[skip..] };
            Step::Root(if tail.is_empty() {
                String::new()
            } else {
                format!("/{}", tail.trim_start_matches('/'))
            })
        }
        "cwd" | "map_files" => Step::Opaque,
        "fd" | "fdinfo" => match after.first() {
            None => Step::Opaque,
            Some(fd) if standard_stream(fd) && after.len() == 1 => Step::Plain,
            Some(_) => Step::Opaque,
        },
        _ => Step::Plain,
    }
}

/// `self`, `thread-self`, or a process id.
fn is_process(name: &str) -> bool {
    matches!(name, "self" | "thread-self")
        || (!name.is_empty() && name.chars().all(|c| c.is_ascii_digit()))
}

/// A process's own standard input, output or error: not a way elsewhere.
fn standard_stream(fd: &str) -> bool {
    matches!(fd, "0" | "1" | "2")
}

/// The process id a normalized absolute path names under `/proc` (`/proc/<n>/…`, also
/// `/proc/<m>/task/<n>/…`: both ids), if any.
pub fn process_ids(path: &str) -> Vec<u64> {
    let Some(rest) = path.strip_prefix("/proc/") else {
        return Vec::new();
    };
    let mut parts = rest.split('/');
    let mut ids: Vec<u64> = parts
        .next()
        .and_then(|p| p.parse().ok())
        .into_iter()
        .collect();
    if parts.next() == Some("task")
        && let Some(thread) = parts.next().and_then(|t| t.parse().ok())
    {
        ids.push(thread);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_root_is_the_root_and_what_it_has_open_is_unknown() {
        assert_eq!(
            read("/proc/self/root/home/me/.local/share/countersign/token"),
            Proc::Root("/home/me/.local/share/countersign/token".into())
        );
        assert_eq!(
            read("/proc/thread-self/root/proc/1/root/etc/Countersign.toml"),
            Proc::Root("/etc/Countersign.toml".into())
        );
        assert_eq!(read("/proc/412/task/413/root"), Proc::Root("/".into()));
        for opaque in [
            "/proc/self/cwd/token",
            "/proc/77/cwd",
            "/proc/self/fd/3",
            "/proc/thread-self/fd",
            "/proc/9/map_files/7f00-7f10",
            "/dev/fd/5",
            "/proc/self/root/proc/self/cwd/x",
        ] {
            assert!(matches!(read(opaque), Proc::Opaque(_)), "{opaque}");
        }
        for plain in [
            "/proc/cpuinfo",
            "/proc/self/status",
            "/proc/self/fd/0",
            "/dev/fd/1",
            "/home/me/proc/self/cwd",
            "/dev/null",
        ] {
            assert_eq!(read(plain), Proc::Plain, "{plain}");
        }
        assert_eq!(process_ids("/proc/12/task/13/environ"), [12, 13]);
        assert_eq!(process_ids("/proc/self/environ"), Vec::<u64>::new());
    }
}
