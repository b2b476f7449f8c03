//! `bench --compare`: figures 1, 2 and 4 with the same client and counts against Countersign
//! with `synchronous = FULL`, then with `synchronous = NORMAL`, then against the in-memory peer
//! of the seed's shape (`peer.rs`: a registry of futures, nothing durable), side by side —
//! what an fsync per commit costs, and what everything Countersign keeps costs against
//! keeping nothing, on the machine it runs on, repeatable by anyone with one command.

use std::process::ExitCode;

use serde_json::json;

use super::error::Result;
use super::harness::{BenchServer, TempRoot};
use super::{
    Counts, Figure, SyncLevel, common_conditions, figures_1_2_4, fmt_value, group_a, profile,
    set_sync_level,
};

/// The levels compared, in the order they run.
pub const LEVELS: [SyncLevel; 2] = [SyncLevel::Full, SyncLevel::Normal];

/// What one column of the comparison measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contender {
    Countersign(SyncLevel),
    /// The in-memory peer of the seed's shape.
    Peer,
}

impl Contender {
    pub fn label(self) -> String {
        match self {
            Contender::Countersign(level) => format!("synchronous = {}", level.as_str()),
            Contender::Peer => "in-memory peer".to_owned(),
        }
    }
}

/// Runs figures 1, 2 and 4 once per level, each on a server of its own, then on the peer.
pub async fn run(
    root: &TempRoot,
    counts: Counts,
    note: &impl Fn(&str),
) -> Result<Vec<(Contender, Vec<Figure>)>> {
    let mut runs = Vec::new();
    for level in LEVELS {
        set_sync_level(level);
        note(&format!(
            "compare: figures 1, 2, 4 with synchronous = {}",
            level.as_str()
        ));
        let dir = format!("compare-{}", level.as_str());
        runs.push((
            Contender::Countersign(level),
            group_a(root, &dir, counts, note).await?,
        ));
    }
    set_sync_level(SyncLevel::Full);
    note("compare: figures 1, 2, 4 on the in-memory peer");
    let peer = BenchServer::start_peer(&root.dir("compare-peer")).await?;
    let figures = figures_1_2_4(&peer, counts, note).await;
    peer.stop().await?;
    // Its figures were measured by the same code; only what served them differs.
    let ours = common_conditions();
    let figures = figures?
        .into_iter()
        .map(|mut figure| {
            figure.conditions = figure.conditions.replace(
                &ours,
                &format!("{}, the in-memory peer (no store) on loopback", profile()),
            );
            figure
        })
        .collect();
    runs.push((Contender::Peer, figures));
    Ok(runs)
}

/// Countersign's figure against the peer's, as "peer's time / ours" for times (above 1:
/// Countersign is faster) and "ours / peer's" for rates; `None` when either is missing.
pub fn ratios(runs: &[(Contender, Vec<Figure>)]) -> Vec<String> {
    let value = |who: Contender, id: u8, label: &str| {
        runs.iter()
            .find(|(c, _)| *c == who)
            .and_then(|(_, figures)| figures.iter().find(|f| f.id == id))
            .and_then(|f| f.values.iter().find(|(l, _, _)| *l == label))
            .map(|(_, v, _)| *v)
    };
    let ours = Contender::Countersign(SyncLevel::Full);
    let mut out = Vec::new();
    for (id, label, what, rate) in [
        (1, "p50", "gate round trip p50", false),
        (2, "p50", "suspend p50", false),
        (4, "rate", "decision throughput", true),
    ] {
        if let (Some(us), Some(peer)) = (value(ours, id, label), value(Contender::Peer, id, label))
            && us > 0.0
            && peer > 0.0
        {
            let ratio = if rate { us / peer } else { peer / us };
            out.push(format!(
                "[{id}] {what}: Countersign (synchronous = full) is {ratio:.2}x the peer's speed"
            ));
        }
    }
    out
}

/// Runs the comparison and prints it (a table, or one JSON object); non-zero when a run failed.
pub async fn report(
    root: &TempRoot,
    counts: Counts,
    as_json: bool,
    note: &impl Fn(&str),
) -> ExitCode {
    match run(root, counts, note).await {
        Ok(runs) if as_json => {
            let out = json!({
                "build": profile(),
                "compare": runs
                    .iter()
                    .map(|(contender, figures)| json!({
                        "against": contender.label(),
                        "figures": figures.iter().map(Figure::to_json).collect::<Vec<_>>(),
                    }))
                    .collect::<Vec<_>>(),
                "ratios": ratios(&runs),
            });
            println!("{out:#}");
            ExitCode::SUCCESS
        }
        Ok(runs) => {
            for (_, figures) in &runs {
                for figure in figures {
                    println!("{}", figure.line());
                }
            }
            println!(
                "\nsame client, same counts, one run per column:\n{}",
                table(&runs)
            );
            for line in ratios(&runs) {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAILED compare: {e}");
            ExitCode::from(1)
        }
    }
}

/// The runs side by side: one row per value of each figure, one column per contender.
pub fn table(runs: &[(Contender, Vec<Figure>)]) -> String {
    let mut out = String::from("| figure |");
    for (contender, _) in runs {
        out.push_str(&format!(" {} |", contender.label()));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(runs.len()));
    let Some((_, first)) = runs.first() else {
        return out;
    };
    for figure in first {
        for (label, _, unit) in &figure.values {
            out.push_str(&format!("\n| [{}] {} {label} |", figure.id, figure.name));
            for (_, figures) in runs {
                let value = figures
                    .iter()
                    .find(|f| f.id == figure.id)
                    .and_then(|f| f.values.iter().find(|(l, _, _)| l == label));
                match value {
                    Some((_, v, _)) => out.push_str(&format!(" {} {unit} |", fmt_value(*v))),
                    None => out.push_str(" — |"),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(id: u8, value: f64) -> Figure {
        Figure {
            id,
            name: "gate round trip",
            values: vec![("p50", value, "ms")],
            target: "",
            met: None,
            conditions: String::new(),
        }
    }

    #[test]
    fn the_table_puts_each_level_in_its_column() {
        let runs = vec![
            (
                Contender::Countersign(SyncLevel::Full),
                vec![figure(1, 3.0)],
            ),
            (
                Contender::Countersign(SyncLevel::Normal),
                vec![figure(1, 1.5)],
            ),
            (Contender::Peer, vec![figure(1, 6.0)]),
        ];
        assert_eq!(
            table(&runs),
            "| figure | synchronous = full | synchronous = normal | in-memory peer |\n\
             |---|---|---|---|\n\
             | [1] gate round trip p50 | 3.000 ms | 1.500 ms | 6.000 ms |"
        );
        assert_eq!(
            ratios(&runs),
            vec![
                "[1] gate round trip p50: Countersign (synchronous = full) is 2.00x the peer's speed"
            ]
        );
    }
}
