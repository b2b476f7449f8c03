//! `bench --compare`: figures 1, 2 and 4 with the same client and counts against Countersign
//! with `synchronous = FULL` and then with `synchronous = NORMAL`, side by side — what an
//! fsync per commit costs on the machine it runs on, repeatable by anyone with one command.

use std::process::ExitCode;

use serde_json::json;

use super::error::Result;
use super::harness::TempRoot;
use super::{Counts, Figure, SyncLevel, fmt_value, group_a, profile, set_sync_level};

/// The levels compared, in the order they run.
pub const LEVELS: [SyncLevel; 2] = [SyncLevel::Full, SyncLevel::Normal];

/// Runs figures 1, 2 and 4 once per level, each on a server of its own.
pub async fn run(
    root: &TempRoot,
    counts: Counts,
    note: &impl Fn(&str),
) -> Result<Vec<(SyncLevel, Vec<Figure>)>> {
    let mut runs = Vec::new();
    for level in LEVELS {
        set_sync_level(level);
        note(&format!(
            "compare: figures 1, 2, 4 with synchronous = {}",
            level.as_str()
        ));
        let dir = format!("compare-{}", level.as_str());
        runs.push((level, group_a(root, &dir, counts, note).await?));
    }
    set_sync_level(SyncLevel::Full);
    Ok(runs)
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
                    .map(|(level, figures)| json!({
                        "synchronous": level.as_str(),
                        "figures": figures.iter().map(Figure::to_json).collect::<Vec<_>>(),
                    }))
                    .collect::<Vec<_>>(),
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
                "\nsame client, same counts, one run per level:\n{}",
                table(&runs)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAILED compare: {e}");
            ExitCode::from(1)
        }
    }
}

/// The runs side by side: one row per value of each figure, one column per level.
pub fn table(runs: &[(SyncLevel, Vec<Figure>)]) -> String {
    let mut out = String::from("| figure |");
    for (level, _) in runs {
        out.push_str(&format!(" synchronous = {} |", level.as_str()));
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
            (SyncLevel::Full, vec![figure(1, 3.0)]),
            (SyncLevel::Normal, vec![figure(1, 1.5)]),
        ];
        assert_eq!(
            table(&runs),
            "| figure | synchronous = full | synchronous = normal |\n|---|---|---|\n\
             | [1] gate round trip p50 | 3.000 ms | 1.500 ms |"
        );
    }
}
