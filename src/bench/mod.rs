//! `countersign bench`: starts real in-process servers (SQLite in a temp dir, the demo agent),
//! drives them over HTTP + SSE and prints the performance figures of issue 7 with their
//! conditions. Timings are reported, never asserted.

mod bundle;
mod capacity;
mod compare;
mod error;
mod fanout;
mod flood;
mod harness;
mod idle;
mod peer;
mod push;
mod recovery;
mod restore;
mod review;
mod round_trip;
mod sse;
mod suspend;
mod throughput;
mod timeline;

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

pub use error::{BenchError, Result};
pub use harness::{BenchServer, TempRoot};

/// Command-line options of `countersign bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Small counts (seconds, for CI); figures are then indicative only.
    #[arg(long)]
    pub short: bool,
    /// Print one JSON object instead of one line per figure.
    #[arg(long)]
    pub json: bool,
    /// Run only these figure groups (by any figure number in them: 1/2/4, 3/7, 5/6, 8, 9, 10, 11, 12), e.g.
    /// `--only 1,5`; useful for profiling one figure.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<u8>,
    /// Override the number of sequential gates of figures 1 and 2.
    #[arg(long)]
    pub gates: Option<usize>,
    /// Override the number of SSE subscribers of figure 5.
    #[arg(long)]
    pub subscribers: Option<usize>,
    /// SQLite synchronous level of the servers: full (the default) or normal.
    #[arg(long, value_enum, default_value = "full")]
    pub synchronous: SyncLevel,
    /// Where the built browser bundle is (figure 8).
    #[arg(long, default_value = "target/site/pkg")]
    pub site_pkg: std::path::PathBuf,
    /// Instead of the figures: run 1, 2 and 4 with `synchronous = FULL` and then `NORMAL`
    /// (same client, same counts) and print them side by side.
    #[arg(long, conflicts_with_all = ["only", "synchronous", "database_url"])]
    pub compare: bool,
    /// Run the servers on this database instead of a SQLite file each, e.g. a throwaway
    /// `postgres://…` database (the runs leave their sessions in it).
    #[arg(long)]
    pub database_url: Option<String>,
    /// Also print where the time of figures 1 and 2 goes: the median time to each step of a
    /// gate round trip and of a suspend (the server marks them; off otherwise).
    #[arg(long, conflicts_with = "compare")]
    pub timeline: bool,
}

impl BenchArgs {
    /// Whether the group holding any of `figures` was asked for.
    fn wants(&self, figures: &[u8]) -> bool {
        self.only.is_empty() || self.only.iter().any(|f| figures.contains(f))
    }
}

/// `--synchronous`: the `[storage] synchronous` the benchmark servers run with.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncLevel {
    Full,
    Normal,
}

impl SyncLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncLevel::Full => "full",
            SyncLevel::Normal => "normal",
        }
    }
}

static SYNC_LEVEL: std::sync::Mutex<SyncLevel> = std::sync::Mutex::new(SyncLevel::Full);

static DATABASE_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The database this run's servers use, when not their own SQLite files.
pub fn database_url() -> Option<String> {
    DATABASE_URL.get().cloned()
}

/// The synchronous level this run's servers use.
pub fn sync_level() -> SyncLevel {
    *SYNC_LEVEL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sets the synchronous level the next servers start with.
fn set_sync_level(level: SyncLevel) {
    *SYNC_LEVEL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = level;
}

/// The counts each figure runs with.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// Figure 1 and 2: gates decided one after another on one session.
    pub gates: usize,
    /// Figure 4: gates decided concurrently, and the number of clients.
    pub throughput_gates: usize,
    pub clients: usize,
    /// Figures 3 and 7: parked gates, and gates per session.
    pub parked: usize,
    pub per_session: usize,
    /// Figure 3: round trips measured while the parked gates are held.
    pub loaded_gates: usize,
    /// Figure 5: SSE subscribers on one session.
    pub subscribers: usize,
    /// Figure 6: events in the restored session, and page loads measured.
    pub restore_events: usize,
    pub page_loads: usize,
    /// Longest time spent creating parked gates before settling for fewer.
    pub creation_cap: Duration,
    /// Figure 9: sessions left idle after one turn each.
    pub idle_sessions: usize,
}

impl Counts {
    fn new(short: bool) -> Self {
        if short {
            Counts {
                gates: 50,
                throughput_gates: 100,
                clients: 8,
                parked: 100,
                per_session: 10,
                loaded_gates: 20,
                subscribers: 50,
                restore_events: 500,
                page_loads: 10,
                creation_cap: Duration::from_secs(60),
                idle_sessions: 200,
            }
        } else {
            Counts {
                gates: 2000,
                throughput_gates: 2000,
                clients: 32,
                parked: 10_000,
                per_session: 10,
                loaded_gates: 200,
                subscribers: 1000,
                restore_events: 10_000,
                page_loads: 50,
                creation_cap: Duration::from_secs(180),
                idle_sessions: 3_000,
            }
        }
    }
}

/// One measured figure: values, the target, whether it was met, and the conditions.
#[derive(Debug, Clone)]
pub struct Figure {
    pub id: u8,
    pub name: &'static str,
    /// (label, value, unit)
    pub values: Vec<(&'static str, f64, &'static str)>,
    pub target: &'static str,
    pub met: Option<bool>,
    pub conditions: String,
}

impl Figure {
    fn line(&self) -> String {
        let values = self
            .values
            .iter()
            .map(|(label, value, unit)| format!("{label} {} {unit}", fmt_value(*value)))
            .collect::<Vec<_>>()
            .join(", ");
        let verdict = match self.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not comparable: counts below the target's",
        };
        format!(
            "[{}] {}: {} | target {} ({}) | {}",
            self.id, self.name, values, self.target, verdict, self.conditions
        )
    }

    fn to_json(&self) -> Value {
        let values: serde_json::Map<String, Value> = self
            .values
            .iter()
            .map(|(label, value, unit)| {
                ((*label).to_owned(), json!({ "value": value, "unit": unit }))
            })
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "values": values,
            "target": self.target,
            "met": self.met,
            "conditions": self.conditions,
        })
    }
}

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Nearest-rank percentile of milliseconds (sorts a copy); 0 for no samples.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Milliseconds, as f64.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The build profile this binary was compiled with.
pub fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug build"
    } else {
        "release build"
    }
}

/// Conditions shared by every figure.
pub fn common_conditions() -> String {
    let storage = match database_url() {
        Some(url) if url.starts_with("postgres") => "PostgreSQL".to_owned(),
        _ => format!(
            "SQLite WAL synchronous={}",
            sync_level().as_str().to_uppercase()
        ),
    };
    format!(
        "{}, {storage}, in-process server on loopback, demo agent, {} cores",
        profile(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    )
}

/// This process's resident set size in MiB (from /proc/self/status VmRSS), if readable.
pub fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// This process's CPU time (user + system, all threads) and context switches (voluntary and
/// not) so far: read before and after a loop, they say what one iteration costs in CPU and in
/// hand-offs between threads, the profile beside a latency figure.
pub fn cpu_and_switches() -> (f64, u64) {
    // SAFETY: getrusage only writes the struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return (0.0, 0);
        }
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu_ms = (secs(usage.ru_utime) + secs(usage.ru_stime)) * 1000.0;
    let switches = usage.ru_nvcsw.saturating_add(usage.ru_nivcsw);
    (cpu_ms, u64::try_from(switches).unwrap_or(0))
}

/// Raises the soft open-file limit to the hard one (the fan-out figure holds many sockets).
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Runs every figure in turn; a failing figure is reported and the others still run.
pub async fn run(args: BenchArgs) -> ExitCode {
    let counts = prepare(&args);
    let root = match TempRoot::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot create a temp dir: {e}");
            return ExitCode::from(1);
        }
    };
    let progress = !args.json;
    let note = |s: &str| {
        if progress {
            eprintln!("bench: {s}");
        }
    };
    if !args.json {
        println!(
            "countersign bench ({} mode): {}",
            if args.short { "short" } else { "full" },
            common_conditions()
        );
    }
    if args.compare {
        return compare::report(&root, counts, args.json, &note).await;
    }
    let (mut figures, failures) = run_figures(&args, &root, counts, &note).await;
    figures.sort_by_key(|f| f.id);
    compare_loaded_round_trip(&mut figures);
    report(&args, &figures, &failures)
}

/// The process and the figures' sizes as the arguments ask.
fn prepare(args: &BenchArgs) -> Counts {
    raise_fd_limit();
    set_sync_level(args.synchronous);
    if args.timeline {
        timeline::want();
    }
    if let Some(url) = &args.database_url {
        let _ = DATABASE_URL.set(url.clone());
    }
    let mut counts = Counts::new(args.short);
    if let Some(gates) = args.gates {
        counts.gates = gates;
    }
    if let Some(subscribers) = args.subscribers {
        counts.subscribers = subscribers;
    }
    counts
}

/// Every figure asked for, each group on a server of its own; the figures, and what failed.
async fn run_figures(
    args: &BenchArgs,
    root: &TempRoot,
    counts: Counts,
    note: &impl Fn(&str),
) -> (Vec<Figure>, Vec<String>) {
    let mut figures: Vec<Figure> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut take = |what: &str, result: std::result::Result<Vec<Figure>, String>| match result {
        Ok(fs) => {
            for f in fs {
                if !args.json {
                    println!("{}", f.line());
                }
                figures.push(f);
            }
        }
        Err(e) => failures.push(format!("{what}: {e}")),
    };
    let one = |r: Result<Figure>| r.map(|f| vec![f]).map_err(|e| e.to_string());
    let many = |r: Result<Vec<Figure>>| r.map_err(|e| e.to_string());
    // Figure 9 first, on a server of its own: its RSS baseline is this fresh process's.
    if args.wants(&[9]) {
        note("figure 9: idle sessions");
        take("figure 9", one(group_d(root, counts).await));
    }
    // Figures 1, 2 and 4 on one server.
    if args.wants(&[1, 2, 4]) {
        note("figures 1 and 2: gate cycles on one session");
        take(
            "figures 1, 2, 4",
            many(group_a(root, "a", counts, note).await),
        );
    }
    // Figures 3 and 7 on a second server (restarted for 7).
    if args.wants(&[3, 7]) {
        note("figures 3 and 7: parked gates, restart");
        take("figures 3, 7", many(group_b(root, counts, note).await));
    }
    // Figures 5 and 6 on a third.
    if args.wants(&[5, 6]) {
        note("figures 5 and 6: fan-out, restore");
        take("figures 5, 6", many(group_c(root, counts, note).await));
    }
    // Figure 10 on a server of its own: the flood's sockets must not slow the others.
    if args.wants(&[10]) {
        note("figure 10: decisions under a loopback flood");
        take("figure 10", one(group_e(root, counts).await));
    }
    // Figure 11 on a server of its own, with a push service on loopback.
    if args.wants(&[11]) {
        note("figure 11: the human round trip through a push");
        take("figure 11", one(group_f(root, counts).await));
    }
    for (what, result) in figures_without_server(args) {
        take(what, result);
    }
    (figures, failures)
}

/// Figures 8 (the bundle's size, read from the built site) and 12 (a replayed week of cards
/// through the reviewer), which need no server.
fn figures_without_server(
    args: &BenchArgs,
) -> Vec<(&'static str, std::result::Result<Vec<Figure>, String>)> {
    let mut out = Vec::new();
    if args.wants(&[8]) {
        out.push(("figure 8", bundle_figure(&args.site_pkg)));
    }
    if args.wants(&[12]) {
        out.push(("figure 12", Ok(vec![review::figure()])));
    }
    out
}

/// Figure 8, the bundle's size, read from the built site (not a server's).
fn bundle_figure(site_pkg: &std::path::Path) -> std::result::Result<Vec<Figure>, String> {
    bundle::run(site_pkg).map(|f| vec![f]).map_err(|e| {
        format!(
            "no bundle at {} ({e}); build it with scripts/lib.sh build_site",
            site_pkg.display()
        )
    })
}

/// Prints the figures (as lines already, or as one JSON document) and what failed.
fn report(args: &BenchArgs, figures: &[Figure], failures: &[String]) -> ExitCode {
    let timelines = timeline::taken();
    if args.json {
        let out = json!({
            "mode": if args.short { "short" } else { "full" },
            "build": profile(),
            "synchronous": sync_level().as_str(),
            "conditions": common_conditions(),
            "figures": figures.iter().map(Figure::to_json).collect::<Vec<_>>(),
            "failures": failures,
            "timelines": timelines.iter().map(timeline::Timeline::to_json).collect::<Vec<_>>(),
        });
        println!("{out:#}");
    } else {
        for t in &timelines {
            println!("\n{}", t.text());
        }
        for f in failures {
            println!("FAILED {f}");
        }
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Figure 3's second target: the round trip under load within 2x of figure 1's.
fn compare_loaded_round_trip(figures: &mut [Figure]) {
    let p50_of = |f: &Figure, label: &str| {
        f.values
            .iter()
            .find(|(l, _, _)| *l == label)
            .map(|(_, v, _)| *v)
    };
    let base = figures
        .iter()
        .find(|f| f.id == 1)
        .and_then(|f| p50_of(f, "p50"));
    if let (Some(base), Some(fig3)) = (base, figures.iter_mut().find(|f| f.id == 3)) {
        let loaded = p50_of(fig3, "round trip p50 at load");
        if let (Some(met), Some(loaded)) = (fig3.met, loaded) {
            fig3.met = Some(met && loaded <= 2.0 * base);
            fig3.conditions.push_str(&format!(
                "; round trip p50 at load / figure 1 p50 = {:.2}",
                loaded / base
            ));
        }
    }
}

async fn group_d(root: &TempRoot, counts: Counts) -> Result<Figure> {
    let server = BenchServer::start(&root.dir("d"), None).await?;
    let result = idle::run(&server, counts.idle_sessions).await;
    server.stop().await?;
    result
}

async fn group_e(root: &TempRoot, counts: Counts) -> Result<Figure> {
    let server = BenchServer::start(&root.dir("e"), None).await?;
    let decisions = (counts.gates / 10).clamp(5, 50);
    let result = flood::run(&server, decisions).await;
    server.stop().await?;
    result
}

async fn group_f(root: &TempRoot, counts: Counts) -> Result<Figure> {
    // Its push service is on loopback, which only this setting allows.
    let server = BenchServer::start(
        &root.dir("f"),
        Some("[notify]\npush_test_endpoints = true\n"),
    )
    .await?;
    let gates = (counts.gates / 5).clamp(10, 400);
    let result = push::run(&server, gates).await;
    server.stop().await?;
    result
}

async fn group_a(
    root: &TempRoot,
    dir: &str,
    counts: Counts,
    note: &impl Fn(&str),
) -> Result<Vec<Figure>> {
    let server = BenchServer::start(&root.dir(dir), None).await?;
    let result = figures_1_2_4(&server, counts, note).await;
    server.stop().await?;
    result
}

/// Figures 1, 2 and 4 on a running server (Countersign's, or the in-memory peer).
async fn figures_1_2_4(
    server: &BenchServer,
    counts: Counts,
    note: &impl Fn(&str),
) -> Result<Vec<Figure>> {
    let cycles = round_trip::gate_cycles(server, counts.gates, timeline::IDLE).await?;
    let mut out = vec![
        round_trip::figure(&cycles, counts.gates),
        suspend::figure(&cycles, counts.gates),
    ];
    note("figure 4: decision throughput");
    out.push(throughput::run(server, counts).await?);
    Ok(out)
}

async fn group_b(root: &TempRoot, counts: Counts, note: &impl Fn(&str)) -> Result<Vec<Figure>> {
    let dir = root.dir("b");
    let baseline = rss_mib();
    let server = BenchServer::start(&dir, None).await?;
    let parked = match capacity::park(&server, counts).await {
        Ok(p) => p,
        Err(e) => {
            server.stop().await?;
            return Err(e);
        }
    };
    note(&format!(
        "parked {} gates in {:.1} s",
        parked.gates.len(),
        parked.create_secs
    ));
    let fig3 = capacity::measure(&server, &parked, baseline, counts).await;
    server.stop().await?;
    note("figure 7: restart and re-park");
    let fig7 = recovery::run(&dir, &parked).await;
    Ok(vec![fig3?, fig7?])
}

async fn group_c(root: &TempRoot, counts: Counts, note: &impl Fn(&str)) -> Result<Vec<Figure>> {
    let server = BenchServer::start(&root.dir("c"), None).await?;
    let result = async {
        let fig5 = fanout::run(&server, counts.subscribers).await?;
        note("figure 6: restore page");
        let fig6 = restore::run(&server, counts).await?;
        Ok(vec![fig5, fig6])
    }
    .await;
    server.stop().await?;
    result
}
