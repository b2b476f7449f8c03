//! The house rule that keeps the code easy to change: no import circles between the project's
//! files, nor between its modules (each one under `server`, and each crate-level one, taken
//! whole), and every import going down the layers. A file depends on another when it names it —
//! `use crate::…`, `use super::…`, or a path in the code. A module's `pub use` of its own
//! children (its public face) is not a dependency, and test-only code (`tests.rs`, a file
//! declared `#[cfg(test)] mod x;`, `#[cfg(test)] mod tests { … }`) does not count. And an
//! invariant is stated once, in ARCHITECTURE.md: module docs point to it by number.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`server::tools::registry`) → file.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let mut parts: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            if parts.last().is_some_and(|p| p == "tests") {
                continue; // test-only files
            }
            out.insert(parts, path);
        }
    }
    let test_only: Vec<Vec<String>> = out
        .iter()
        .flat_map(|(module, file)| {
            test_children(&std::fs::read_to_string(file).unwrap())
                .into_iter()
                .map(move |child| [module.clone(), vec![child]].concat())
        })
        .collect();
    out.retain(|module, _| !test_only.iter().any(|t| module.starts_with(t)));
    out
}

/// The child modules a file declares for tests only (`#[cfg(test)]` then `mod name;`): files
/// of test code under another name than `tests.rs`.
fn test_children(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|pair| pair[0] == "#[cfg(test)]")
        .filter_map(|pair| {
            let line = pair[1].strip_prefix("pub ").unwrap_or(pair[1]);
            Some(line.strip_prefix("mod ")?.strip_suffix(';')?.to_owned())
        })
        .collect()
}

/// The text that counts: without comments, strings and the inline test module.
fn code_of(text: &str) -> String {
    // Test-only items: from the first `#[cfg(test)]` that opens an inline module (`mod x {`,
    // not the declaration `mod x;` of a file, which may come before the code) to the end.
    let test_module = text.match_indices("#[cfg(test)]").find(|(at, _)| {
        text[at + "#[cfg(test)]".len()..]
            .trim_start()
            .lines()
            .next()
            .is_some_and(|l| l.contains("mod ") && !l.trim_end().ends_with(';'))
    });
    let text = match test_module {
        Some((at, _)) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path the code names, with whether it is a `pub use` (re-export).
fn references(module: &[String], code: &str) -> Vec<(Vec<String>, bool)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let (base, skip) = if starts_word && rest.starts_with("crate::") {
            (Vec::new(), "crate::".len())
        } else if starts_word && rest.starts_with("super::") {
            // super::super::… climbs one level each.
            let mut base: Vec<String> = module.to_vec();
            let mut skip = 0;
            while code[i + skip..].starts_with("super::") {
                base.pop();
                skip += "super::".len();
            }
            (base, skip)
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let line_start = code[..i].rfind('\n').map_or(0, |n| n + 1);
        let reexport = code[line_start..i].trim_start().starts_with("pub use");
        let tail: String = code[i + skip..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || *c == '{')
            .collect();
        let mut path = base;
        for part in tail.split("::") {
            let part = part.trim_end_matches('{');
            if part.is_empty() || !part.chars().next().is_some_and(|c| c.is_lowercase()) {
                break;
            }
            path.push(part.to_owned());
        }
        found.push((path, reexport));
        i += skip;
    }
    // `use child::…` of a child module this file declares.
    let children: Vec<&str> = code
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';')
        })
        .collect();
    for line in code.lines() {
        let line = line.trim();
        let (reexport, rest) = match line.strip_prefix("pub use ") {
            Some(rest) => (true, rest),
            None => match line.strip_prefix("use ") {
                Some(rest) => (false, rest),
                None => continue,
            },
        };
        let first = rest.split("::").next().unwrap_or("");
        if children.contains(&first) {
            let mut path = module.to_vec();
            path.push(first.to_owned());
            found.push((path, reexport));
        }
    }
    found
}

/// The longest module prefix of `path` that has a file.
fn resolve(path: &[String], modules: &BTreeMap<Vec<String>, PathBuf>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains_key(p))
}

fn graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let targets = edges.entry(module.clone()).or_default();
        for (path, reexport) in references(module, &code) {
            let Some(target) = resolve(&path, &modules) else {
                continue;
            };
            let own_child = target.len() > module.len() && target.starts_with(module);
            if target == *module || (reexport && own_child) {
                continue;
            }
            targets.insert(target);
        }
    }
    edges
}

/// Strongly connected components with more than one file (Tarjan).
fn circles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.found
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let edges = graph();
    assert!(edges.len() > 50, "the source tree was not found: {edges:?}");
    let found = circles(&edges);
    let mut report = String::new();
    for circle in &found {
        report.push_str(&format!("circle: {}\n", circle.join("  <->  ")));
        for (from, targets) in &edges {
            if !circle.contains(&from.join("::")) {
                continue;
            }
            for to in targets.iter().filter(|t| circle.contains(&t.join("::"))) {
                report.push_str(&format!("    {} -> {}\n", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "import circles between files (each circle with its edges):\n{report}"
    );
}

#[test]
fn the_checker_sees_a_circle() {
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let a = vec!["a".to_owned()];
    let b = vec!["b".to_owned()];
    edges.entry(a.clone()).or_default().insert(b.clone());
    edges.entry(b.clone()).or_default().insert(a.clone());
    assert_eq!(circles(&edges), vec![vec!["a".to_owned(), "b".to_owned()]]);
    let refs = references(
        &["server".into(), "x".into()],
        "use super::hub::Hub;\npub use crate::server::tools::{self, get};",
    );
    let expected: Vec<(Vec<String>, bool)> = vec![
        (vec!["server".into(), "hub".into()], false),
        (vec!["server".into(), "tools".into()], true),
    ];
    assert_eq!(refs, expected);
    // A test file declared before the code neither hides the code nor counts itself.
    let declared = "#[cfg(test)]\nmod openai_tests;\nuse crate::server::conversation::Message;\n";
    assert!(code_of(declared).contains("crate::server::conversation"));
    assert_eq!(test_children(declared), vec!["openai_tests".to_owned()]);
    assert!(test_children("pub mod demo;\n#[cfg(test)]\nmod tests {").is_empty());
}

/// The module a file belongs to at the granularity the layers speak of: the first segment under
/// `server` (`server::gate::floor::scan` → `server::gate`), else the crate-level module
/// (`ui::feed` → `ui`); `server`'s own `mod.rs` and the crate root stand for themselves.
fn module_of(file: &[String]) -> Vec<String> {
    let depth = if file.first().is_some_and(|f| f == "server") {
        2
    } else {
        1
    };
    file[..file.len().min(depth)].to_vec()
}

/// The file graph folded onto modules: `a -> b` when some file of `a` names some file of `b`.
fn module_graph(
    files: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, targets) in files {
        let from = module_of(from);
        let mine = edges.entry(from.clone()).or_default();
        for to in targets.iter().map(|t| module_of(t)) {
            if to != from {
                mine.insert(to);
            }
        }
    }
    edges
}

/// Each circle with the file-level edges that close it, for a failure message one can act on.
fn circle_report(
    found: &[Vec<String>],
    modules: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    files: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> String {
    let mut report = String::new();
    for circle in found {
        report.push_str(&format!("circle: {}\n", circle.join("  <->  ")));
        let inside = |m: &Vec<String>| circle.contains(&m.join("::"));
        for (from, targets) in modules.iter().filter(|(from, _)| inside(from)) {
            for to in targets.iter().filter(|t| inside(t)) {
                report.push_str(&format!("    {} -> {}:\n", from.join("::"), to.join("::")));
                for (file, named) in files.iter().filter(|(f, _)| module_of(f) == *from) {
                    for target in named.iter().filter(|t| module_of(t) == *to) {
                        report.push_str(&format!(
                            "        {} names {}\n",
                            file.join("::"),
                            target.join("::")
                        ));
                    }
                }
            }
        }
    }
    report
}

/// The module circles not broken yet, each exactly as it stands; the test fails when one grows
/// or shrinks or another appears, so this list only gets shorter. (The last, between the doors,
/// went when the server functions took their `Need` from `principal`, their status from the
/// core's error, their id reading from `core::ids`, and the page its policy from `server::csp`.)
const KNOWN_CIRCLES: &[&[&str]] = &[];

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let files = graph();
    let modules = module_graph(&files);
    assert!(
        modules.len() > 30,
        "the source tree was not found: {modules:?}"
    );
    let mut found = circles(&modules);
    found.sort();
    let known: Vec<Vec<String>> = KNOWN_CIRCLES
        .iter()
        .map(|c| c.iter().map(|m| (*m).to_owned()).collect())
        .collect();
    assert!(
        found == known,
        "import circles between modules (each circle, its arrows and the files behind them; \
         known and not yet broken: {known:?}):\n{}",
        circle_report(&found, &modules, &files)
    );
}

#[test]
fn the_checker_sees_a_circle_between_modules() {
    let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
    // No two files name each other, yet `gate` and `tools` do.
    let mut files: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    files
        .entry(path("server::gate::floor"))
        .or_default()
        .insert(path("server::tools::registry"));
    files
        .entry(path("server::tools::shell"))
        .or_default()
        .insert(path("server::gate::policy"));
    files
        .entry(path("ui::feed"))
        .or_default()
        .insert(path("protocol::event"));
    assert!(circles(&files).is_empty(), "no circle between files");
    let modules = module_graph(&files);
    assert_eq!(
        modules.keys().cloned().collect::<Vec<_>>(),
        vec![path("server::gate"), path("server::tools"), path("ui")]
    );
    assert_eq!(
        circles(&modules),
        vec![vec!["server::gate".to_owned(), "server::tools".to_owned()]]
    );
    let report = circle_report(&circles(&modules), &modules, &files);
    assert!(
        report.contains("server::tools::shell names server::gate::policy"),
        "{report}"
    );
    assert_eq!(module_of(&path("server")), path("server"));
    assert_eq!(module_of(&[]), Vec::<String>::new());
}

/// The layers ARCHITECTURE.md states, top (doors) to bottom (shared leaves), by module path
/// prefix; the longest prefix that matches decides. A file may use its own layer and the ones
/// below it, never one above.
const LAYERS: &[(&str, u8)] = &[
    // 1. Doors: requests in, statuses out.
    ("main", 1),
    ("cli", 1),
    ("bench", 1),
    ("external", 1),
    ("api", 1),
    ("app", 1),
    ("ui", 1),
    ("server", 1),
    ("server::http", 1),
    ("server::state", 1),
    ("server::credentials", 1),
    ("server::settings", 1),
    // 2. Core: every operation a person can ask for.
    ("server::core", 2),
    // 3. Agent: the turns.
    ("server::agent", 3),
    // 4. The configuration in force: built from the schema into the floor, the sandbox and the
    //    provider, so above all three; the agent and the core read it.
    ("server::live", 4),
    // 5. Policy and telling the person: the gate decides a call over its tool's own check;
    //    the notifier tells the person, by webhook or through push.
    ("server::gate", 5),
    // The reviewer: a second opinion on a card, below the gate that carries its prediction.
    ("server::review", 5),
    ("server::notifier", 5),
    // 6. What a decision reaches: the tools, the model providers, Web Push, passkeys.
    ("server::tools", 6),
    ("server::provider", 6),
    ("server::push", 6),
    ("server::passkey", 6),
    ("server::oidc", 6),
    // 7. Live state and the log, and the configuration's schema.
    ("server::hub", 7),
    ("server::store", 7),
    ("server::config", 7),
    ("server::conversation", 7),
    ("server::audit", 7),
    ("server::digest", 7),
    ("server::markdown", 7),
    ("server::retry", 7),
    ("server::principal", 7),
    ("server::csp", 7),
    ("server::logins", 7),
    ("server::secret", 7),
    ("server::os_user", 7),
    // 8. Shared leaves.
    ("server::shell_syntax", 8),
    ("protocol", 8),
    ("shown", 8),
    ("text", 8),
    ("timeline", 8),
    ("lib", 8),
];

/// The layer of a module: its longest listed prefix (the crate root is a door); `None` when
/// nothing lists it.
fn layer_of(module: &[String]) -> Option<u8> {
    if module.is_empty() {
        return Some(1);
    }
    // `server` itself (its `mod.rs`, which starts everything) is a door; a file under it
    // must be listed on its own, so a new one is placed on purpose, not by default.
    let shortest = if module[0] == "server" && module.len() > 1 {
        2
    } else {
        1
    };
    (shortest..=module.len()).rev().find_map(|n| {
        let prefix = module[..n].join("::");
        LAYERS.iter().find(|(p, _)| *p == prefix).map(|(_, l)| *l)
    })
}

/// Every file against the layer table: the edges that go up, and the files no layer lists.
fn layer_breaches(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let mut found = Vec::new();
    for (from, targets) in edges {
        let Some(own) = layer_of(from) else {
            found.push(format!("{} is in no layer", from.join("::")));
            continue;
        };
        for to in targets {
            match layer_of(to) {
                Some(theirs) if theirs < own => found.push(format!(
                    "{} (layer {own}) -> {} (layer {theirs})",
                    from.join("::"),
                    to.join("::")
                )),
                _ => {}
            }
        }
    }
    found
}

#[test]
fn every_import_goes_down_the_layers() {
    let edges = graph();
    assert!(edges.len() > 50, "the source tree was not found");
    let found = layer_breaches(&edges);
    assert!(
        found.is_empty(),
        "imports against the layer order (ARCHITECTURE.md, \"Layers\"):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checker_sees_an_import_going_up() {
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let store = vec!["server".to_owned(), "store".to_owned(), "sqlite".to_owned()];
    let core = vec!["server".to_owned(), "core".to_owned()];
    edges.entry(core.clone()).or_default().insert(store.clone());
    assert!(layer_breaches(&edges).is_empty(), "core may use the store");
    edges.entry(store).or_default().insert(core);
    assert_eq!(
        layer_breaches(&edges),
        vec!["server::store::sqlite (layer 7) -> server::core (layer 2)".to_owned()]
    ); // The gate decides over the tools' checks: never the other way round.
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let shell_disk = vec![
        "server".to_owned(),
        "tools".to_owned(),
        "shell_disk".to_owned(),
    ];
    let rules = vec!["server".to_owned(), "gate".to_owned(), "rules".to_owned()];
    edges.entry(shell_disk).or_default().insert(rules);
    assert_eq!(
        layer_breaches(&edges),
        vec!["server::tools::shell_disk (layer 6) -> server::gate::rules (layer 5)".to_owned()]
    );
}

/// Whether `code` names `word` as a whole identifier.
fn names(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// The log is the only way in: outside the store and the hub no file names the event log's
/// trait or the whole store, so an event can only be written by the hub's commit (which
/// publishes it) and every other layer holds one narrow repository.
#[test]
fn only_the_hub_holds_the_event_log() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (module, file) in modules(&src) {
        let inside =
            |prefix: &[&str]| module.len() >= prefix.len() && module[..prefix.len()] == *prefix;
        if inside(&["server", "store"]) || inside(&["server", "hub"]) {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for word in ["EventLog", "Store"] {
            if names(&code, word) {
                found.push(format!("{} names {word}", module.join("::")));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    assert!(names("x: Arc<dyn EventLog>,", "EventLog"));
    assert!(!names("SqliteStore::open", "Store"));
}

/// The numbers of ARCHITECTURE.md's `## Invariants` list: each item is a line starting `N. `
/// at the left margin, up to the next `## ` heading.
fn invariant_numbers(architecture: &str) -> BTreeSet<u32> {
    let Some((_, list)) = architecture.split_once("\n## Invariants\n") else {
        return BTreeSet::new();
    };
    let list = list.split("\n## ").next().unwrap_or_default();
    list.lines()
        .filter_map(|line| line.split_once(". "))
        .filter_map(|(number, _)| number.parse().ok())
        .collect()
}

/// What is wrong with a file's invariant lines. An invariant is stated once, in
/// ARCHITECTURE.md; a module doc only points to it, in one form:
/// `//! **Invariant N** ([ARCHITECTURE.md](<up>ARCHITECTURE.md#invariants)): reminder.`
/// (`**Invariants N, M**` for several), `up` being the `../`s from the file to the repo root.
/// Any other `**Invariant…` in a `//!` line (the old `**Invariant:** the rule…`) restates one.
fn invariant_pointer_problems(
    file: &str,
    up: usize,
    text: &str,
    known: &BTreeSet<u32>,
) -> Vec<String> {
    let link = format!(
        "** ([ARCHITECTURE.md]({}ARCHITECTURE.md#invariants)): ",
        "../".repeat(up)
    );
    let mut problems = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let Some(doc) = line.trim_start().strip_prefix("//!") else {
            continue;
        };
        if !doc.contains("**Invariant") {
            continue;
        }
        let at = format!("{file}:{}", index + 1);
        let pointer = doc
            .strip_prefix(" **Invariants ")
            .or_else(|| doc.strip_prefix(" **Invariant "))
            .and_then(|rest| rest.split_once(&link));
        let Some((numbers, reminder)) = pointer else {
            problems.push(format!(
                "{at}: restates an invariant; state it in ARCHITECTURE.md and point to it"
            ));
            continue;
        };
        if reminder.trim().is_empty() {
            problems.push(format!("{at}: a pointer without its reminder"));
        }
        for number in numbers.split(", ") {
            match number.parse::<u32>() {
                Ok(n) if known.contains(&n) => {}
                _ => problems.push(format!("{at}: no invariant `{number}` in ARCHITECTURE.md")),
            }
        }
    }
    problems
}

/// Every `.rs` file under a folder.
fn rust_files(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// An invariant is stated once, in ARCHITECTURE.md's list; a module doc points to it by a
/// number that exists there, never restates it in its own words (which drift apart).
#[test]
fn module_docs_point_to_invariants_and_never_restate_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let known = invariant_numbers(&architecture);
    assert!(known.len() > 60, "the invariant list was not found");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let (mut problems, mut pointers) = (Vec::new(), 0);
    for file in files {
        let relative = file.strip_prefix(root).unwrap();
        let up = relative.components().count() - 1;
        let text = std::fs::read_to_string(&file).unwrap();
        let name = relative.display().to_string();
        pointers += text
            .lines()
            .filter(|l| l.trim_start().starts_with("//! **Invariant"))
            .count();
        problems.extend(invariant_pointer_problems(&name, up, &text, &known));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        pointers >= 30,
        "only {pointers} module docs point to an invariant"
    );
}

#[test]
fn the_checker_sees_a_restated_or_dangling_invariant() {
    let architecture = "# A\n\n## Invariants\n\n1. One rule.\n2. Another,\n   on two lines.\n\n## Next\n\n3. Not an invariant.\n";
    let known = invariant_numbers(architecture);
    assert_eq!(known, BTreeSet::from([1, 2]));
    let check = |up, text: &str| invariant_pointer_problems("x.rs", up, text, &known);
    let good = "//! Intro.\n//!\n//! **Invariant 2** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): a short reminder.\nfn f() {}\n";
    assert!(check(2, good).is_empty(), "{:?}", check(2, good));
    let several =
        "//! **Invariants 1, 2** ([ARCHITECTURE.md](../ARCHITECTURE.md#invariants)): both.\n";
    assert!(check(1, several).is_empty());
    assert_eq!(
        check(1, good).len(),
        1,
        "the link must climb to the repo root"
    );
    let dangling =
        "//! **Invariants 2, 3** ([ARCHITECTURE.md](../ARCHITECTURE.md#invariants)): gone.\n";
    assert_eq!(check(1, dangling).len(), 1);
    assert_eq!(
        check(1, "//! **Invariant:** a gate resolves once.\n").len(),
        1
    );
    assert_eq!(check(1, "//! **Invariants:**\n//! - one\n").len(), 1);
    assert_eq!(
        check(1, "//! **Invariants** (ARCHITECTURE.md, \"Step-up\"):\n").len(),
        1
    );
    assert!(check(1, "// **Invariant:** not a doc line\nlet x = 1;\n").is_empty());
}
