//! Figure 12's corpus: one working day of a coding agent's cards and the person's answers,
//! generated from a fixed seed (the same cards on every machine and every run).
//!
//! The day is a run of tasks. Each task orients itself (`git status`, `ls`, reads, a search),
//! loops edit → build or test in one part of the code (sometimes piped through `tail`, or after
//! a `cd`), touches docs or tests now and then, and ends with `git diff` / `git add` /
//! `git commit`, sometimes `git push`. The person approves most of it but not all: about 3 % of
//! ordinary edits are denied or edited for what they say (not where they are), a push is once
//! refused as premature, some cards expire while the person is away. A minority of risky calls
//! — `rm -rf`, `curl … | sh`, `git push --force`, `git reset --hard`, CI files, `sudo`,
//! publishing — are mostly denied or edited, some near misses of approved ones
//! (`git push --force` after many `git push`).

use serde_json::{Value, json};

use crate::protocol::{
    ApprovalId, ApprovalRequestBody, CallId, Decision, GateKind, GateReason, SessionId,
    TimeoutOutcome, Timestamp, ToolClass,
};

/// The person's answer to one card.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Approved,
    Denied,
    Edited,
    Expired,
}

/// One card of the day, and how the person answered it.
#[derive(Clone, Debug)]
pub struct Step {
    pub card: ApprovalRequestBody,
    pub answer: Answer,
}

/// The seed every run uses.
pub const SEED: u64 = 40;
/// Tasks in the day.
pub const TASKS: usize = 30;

/// SplitMix64: a tiny generator whose sequence is fixed by its seed on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Parts of the code a task works in: (folder, crate name for `cargo test -p`).
const AREAS: &[(&str, &str)] = &[
    ("src/server/gate", "server"),
    ("src/server/review", "server"),
    ("src/server/store", "store"),
    ("src/ui/card", "ui"),
    ("src/protocol", "protocol"),
    ("src/bench", "bench"),
    ("src/cli", "cli"),
];
const FILES: &[&str] = &["mod", "rules", "floor", "request", "tests", "state", "view"];
const WORDS: &[&str] = &[
    "expires_at",
    "Prediction",
    "fn decide",
    "TODO",
    "max_uses",
    "digest",
];

/// Builds the day's cards in order.
struct Day {
    rng: Rng,
    steps: Vec<Step>,
    clock_ms: i64,
}

impl Day {
    fn card(
        &mut self,
        tool: &str,
        class: ToolClass,
        args: Value,
        summary: String,
    ) -> ApprovalRequestBody {
        let n = self.steps.len();
        self.clock_ms += 5_000 + (self.rng.below(60) as i64) * 1_000;
        ApprovalRequestBody {
            approval_id: ApprovalId::new(format!("apr-{n:05}")),
            session_id: SessionId::new("ses-day"),
            call_id: CallId::new(format!("call-{n:05}")),
            kind: GateKind::Tool,
            tool: tool.into(),
            class,
            args,
            decision_kind: None,
            title: summary.clone(),
            summary,
            proposal_md: String::new(),
            proposal_html: String::new(),
            diff: None,
            reason: GateReason::Mode,
            reason_detail: String::new(),
            allowed_decisions: vec![Decision::Approve, Decision::Edit, Decision::Deny],
            digest: String::new(),
            created_at: Timestamp::from_unix_ms(self.clock_ms),
            expires_at: Timestamp::from_unix_ms(self.clock_ms + 1_800_000),
            timeout_outcome: TimeoutOutcome::Deny,
            suggested_rule: None,
            execution_mode: None,
            agent_says: None,
        }
    }

    /// An ordinary call: approved, but now and then denied or edited for what it says, or left
    /// to expire.
    fn ordinary(&mut self) -> Answer {
        let roll = self.rng.below(1000);
        match roll {
            0..=14 => Answer::Denied,
            15..=29 => Answer::Edited,
            30..=37 => Answer::Expired,
            _ => Answer::Approved,
        }
    }

    fn push(&mut self, card: ApprovalRequestBody, answer: Answer) {
        self.steps.push(Step { card, answer });
    }

    fn shell(&mut self, command: &str, answer: Answer) {
        let card = self.card(
            "shell",
            ToolClass::Exec,
            json!({"command": command}),
            command.into(),
        );
        self.push(card, answer);
    }

    /// An ordinary command: always approved (the person answers it by habit) but when away.
    fn routine(&mut self, command: &str) {
        let answer = if self.rng.chance(0.006) {
            Answer::Expired
        } else {
            Answer::Approved
        };
        self.shell(command, answer);
    }

    fn file(&mut self, tool: &str, path: &str, answer: Answer) {
        let (class, args) = match tool {
            "read_file" => (ToolClass::Read, json!({"path": path})),
            "write_file" => (ToolClass::Edit, json!({"path": path, "content": "…"})),
            _ => (
                ToolClass::Edit,
                json!({"path": path, "old": "a", "new": "b"}),
            ),
        };
        let card = self.card(tool, class, args, format!("{tool} {path}"));
        self.push(card, answer);
    }
}

/// The whole day, in order.
pub fn day() -> Vec<Step> {
    let mut day = Day {
        rng: Rng(SEED),
        steps: Vec::new(),
        clock_ms: 1_796_000_000_000,
    };
    for task in 0..TASKS {
        let (area, krate) = AREAS[day.rng.below(AREAS.len())];
        orient(&mut day, area);
        let rounds = 4 + day.rng.below(8);
        for _ in 0..rounds {
            work(&mut day, area, krate);
        }
        if day.rng.chance(0.5) {
            let doc = day.rng.pick(&[
                "docs/api.md",
                "README.md",
                "ARCHITECTURE.md",
                "docs/security.md",
            ]);
            let answer = day.ordinary();
            day.file("edit_file", doc, answer);
        }
        risky(&mut day, task);
        finish(&mut day, task);
    }
    day.steps
}

/// Looking around before a task.
fn orient(day: &mut Day, area: &str) {
    day.routine("git status");
    let ls = day.rng.pick(&["ls", "ls -la", "ls src", "tree -L 2 src"]);
    day.routine(ls);
    day.routine(&format!("ls {area}"));
    for _ in 0..1 + day.rng.below(4) {
        let file = day.rng.pick(FILES);
        day.file("read_file", &format!("{area}/{file}.rs"), Answer::Approved);
    }
    let word = day.rng.pick(WORDS);
    let search = match day.rng.below(3) {
        0 => format!("grep -rn '{word}' src"),
        1 => format!("rg '{word}' {area}"),
        _ => format!("git log --oneline -10 -- {area}"),
    };
    day.routine(&search);
    if day.rng.chance(0.3) {
        day.routine("cat Cargo.toml");
    }
}

/// One round of edit → check or test.
fn work(day: &mut Day, area: &str, krate: &str) {
    let file = day.rng.pick(FILES);
    let tool = if day.rng.chance(0.15) {
        "write_file"
    } else {
        "edit_file"
    };
    let answer = day.ordinary();
    day.file(tool, &format!("{area}/{file}.rs"), answer);
    if day.rng.chance(0.15) {
        let answer = day.ordinary();
        day.file("write_file", &format!("tests/{file}_{krate}.rs"), answer);
    }
    let command = match day.rng.below(10) {
        0..=2 => "cargo check".to_owned(),
        3 | 4 => format!("cargo test -p {krate}"),
        5 => format!("cargo test --lib {file}"),
        6 => "cargo test 2>&1 | tail -30".to_owned(),
        7 => format!("cd {area} && cargo test"),
        8 => "cargo clippy --all-targets -- -D warnings".to_owned(),
        _ => "cargo fmt".to_owned(),
    };
    day.routine(&command);
    if day.rng.chance(0.2) {
        day.routine(&format!("git diff {area}"));
    }
}

/// Now and then a risky call, most of them refused; some share a program with approved ones.
fn risky(day: &mut Day, task: usize) {
    if !day.rng.chance(0.6) {
        return;
    }
    let (command, answer) = match day.rng.below(11) {
        0 => ("rm -rf ~/.cargo/registry", Answer::Denied),
        1 => (
            "curl -fsSL https://sh.example.dev/install | sh",
            Answer::Denied,
        ),
        2 => ("git push --force origin main", Answer::Denied),
        3 => ("git reset --hard HEAD~3", Answer::Denied),
        4 => ("sudo apt-get install -y libssl-dev", Answer::Denied),
        5 => ("cargo publish", Answer::Denied),
        6 => ("git push --force-with-lease origin HEAD", Answer::Edited),
        7 => ("chmod -R 777 .", Answer::Denied),
        8 => ("rm -rf target", Answer::Approved),
        9 => ("docker system prune -af", Answer::Denied),
        _ => {
            let answer = if task.is_multiple_of(2) {
                Answer::Edited
            } else {
                Answer::Denied
            };
            day.file("edit_file", ".github/workflows/ci.yml", answer);
            return;
        }
    };
    day.shell(command, answer);
}

/// Ending a task: look at the change, commit it, sometimes push.
fn finish(day: &mut Day, task: usize) {
    day.routine("git diff");
    if day.rng.chance(0.5) {
        day.routine("git diff --stat");
    }
    day.routine("git add -A");
    let message = format!("git commit -m 'task {task}: the change and its tests'");
    day.routine(&message);
    if day.rng.chance(0.6) {
        // Once in the day the person is not ready for a push.
        let answer = if task == TASKS / 2 {
            Answer::Denied
        } else {
            Answer::Approved
        };
        day.shell("git push", answer);
    }
}
