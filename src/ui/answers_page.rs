//! `/answers`, "Your answers": the person's own answering habits shown back to them (issue 40,
//! point 2) — headline figures, decisions per day by outcome, time to decide, by tool class
//! and by agent, and a table per credential and device. The plots are inline SVG drawn here
//! (no chart library), coloured by the theme's variables, each with a table beside it as its
//! text alternative. The figures come from the same core operation as
//! `GET /api/v1/stats/decisions`.

use leptos::prelude::*;

use crate::api;
use crate::protocol::{DayFigures, DecisionFigures, DecisionStats, Timestamp};
use crate::ui::browser;
use crate::ui::json;
use crate::ui::sidebar::PageLayout;

/// The periods the picker offers, in days; the page opens on 30 (the API's default).
const PERIODS: [u32; 3] = [7, 30, 90];
/// The plots' drawing box (the SVG scales to its width).
const PLOT_W: f64 = 600.0;
const PLOT_H: f64 = 160.0;
/// Room under the bars for their labels.
const LABEL_H: f64 = 22.0;

/// The outcomes a day's bar stacks, bottom up, with their CSS class and words.
const OUTCOMES: [(&str, &str); 4] = [
    ("approved", "Approved"),
    ("denied", "Denied"),
    ("edited", "Edited"),
    ("expired", "Expired"),
];

#[component]
pub fn AnswersPage() -> impl IntoView {
    view! {
        <PageLayout>
            <Answers/>
        </PageLayout>
    }
}

#[component]
fn Answers() -> impl IntoView {
    Effect::new(|_| browser::set_page_title("Your answers — Countersign"));
    let days = RwSignal::new(30u32);
    let stats = json::resource(move || days.get(), api::your_answers);
    view! {
        <header class="page-header">
            <h1>"Your answers"</h1>
            <p class="muted">"How you answer the cards: how many, how fast, and how long you went on approving."</p>
            <PeriodPicker days/>
        </header>
        <div class="page-body answers">
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match stats.await {
                        Ok(stats) => view! { <Figures stats days=days.get_untracked()/> }.into_any(),
                        Err(err) => view! { <p class="error" role="alert">{api::error_message(&err)}</p> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
}

/// 7 / 30 / 90 days.
#[component]
fn PeriodPicker(days: RwSignal<u32>) -> impl IntoView {
    view! {
        <div class="period-picker" role="group" aria-label="Period">
            {PERIODS.into_iter().map(|n| view! {
                <button type="button" class="small" data-testid="answers-period" data-days=n
                    aria-pressed=move || (days.get() == n).to_string()
                    on:click=move |_| days.set(n)>
                    {format!("{n} days")}
                </button>
            }).collect_view()}
        </div>
    }
}

/// Everything the page shows of one answer: an honest empty state when nothing was decided.
#[component]
fn Figures(stats: DecisionStats, days: u32) -> impl IntoView {
    if stats.total.decisions == 0 {
        return view! {
            <Headline total=stats.total.clone()/>
            <div class="empty-state" data-testid="answers-empty">
                <p>{format!("No decisions in the last {days} days.")}</p>
                <p class="muted">"Cards you approve, deny or edit, and cards that time out, are counted here."</p>
            </div>
        }
        .into_any();
    }
    let classes = bars(&stats.by_class);
    let agents = bars(&stats.by_agent);
    let histogram: Vec<(String, u64)> = stats
        .decide_ms_histogram
        .iter()
        .map(|b| (b.label.clone(), b.count))
        .collect();
    view! {
        <Headline total=stats.total.clone()/>
        {stats.truncated.then(|| view! {
            <p class="muted" data-testid="answers-truncated">"Only the oldest 100 000 cards of this period are counted."</p>
        })}
        <PerDay days=stats.per_day.clone() since=stats.since.clone() until=stats.until.clone()/>
        <BarPlot testid="plot-decide-time" title="Time to decide" unit="answers" bars=histogram/>
        <BarPlot testid="plot-by-class" title="By tool class" unit="decisions" bars=classes/>
        <BarPlot testid="plot-by-agent" title="By agent" unit="decisions" bars=agents/>
        <PersonTable stats=stats.clone()/>
        <DeviceTable stats/>
    }
    .into_any()
}

/// Each group's decisions, as bars.
fn bars(groups: &std::collections::BTreeMap<String, DecisionFigures>) -> Vec<(String, u64)> {
    groups
        .iter()
        .map(|(key, figures)| (key.clone(), figures.decisions))
        .collect()
}

/// The headline figures, each with `data-figure` (and its raw value in `data-value`).
#[component]
fn Headline(total: DecisionFigures) -> impl IntoView {
    let approved_pct = percent(total.approved, total.decisions);
    let median = total
        .median_decide_ms
        .map_or_else(|| "—".to_owned(), duration_words);
    let figures = [
        (
            "decisions",
            "Decisions",
            total.decisions.to_string(),
            total.decisions.to_string(),
        ),
        (
            "approved",
            "Approved",
            approved_pct,
            total.approved.to_string(),
        ),
        (
            "median_decide_ms",
            "Median time to decide",
            median,
            total
                .median_decide_ms
                .map(|ms| ms.to_string())
                .unwrap_or_default(),
        ),
        (
            "fast_approvals",
            "Approved in under 1 s",
            total.fast_approvals.to_string(),
            total.fast_approvals.to_string(),
        ),
        (
            "longest_approve_run",
            "Longest run of approvals",
            total.longest_approve_run.to_string(),
            total.longest_approve_run.to_string(),
        ),
        (
            "expired",
            "Expired unanswered",
            total.expired.to_string(),
            total.expired.to_string(),
        ),
    ];
    view! {
        <dl class="figures" data-testid="answers-total">
            {figures.into_iter().map(|(name, words, shown, value)| view! {
                <div class="figure" data-figure=name data-value=value>
                    <dt>{words}</dt>
                    <dd>{shown}</dd>
                </div>
            }).collect_view()}
        </dl>
    }
}

/// `part` of `whole` in whole percent ("—" of nothing).
fn percent(part: u64, whole: u64) -> String {
    (part * 100 + whole / 2)
        .checked_div(whole)
        .map_or_else(|| "—".to_owned(), |pct| format!("{pct} %"))
}

/// A time to decide in words: "0.4 s", "12 s", "2.5 min", "1.2 h".
fn duration_words(ms: u64) -> String {
    let s = ms as f64 / 1000.0;
    match ms {
        0..10_000 => format!("{s:.1} s"),
        10_000..120_000 => format!("{s:.0} s"),
        120_000..7_200_000 => format!("{:.1} min", s / 60.0),
        _ => format!("{:.1} h", s / 3600.0),
    }
}

/// Decisions per UTC day, stacked by outcome, one slot for every day of the period (so a
/// quiet day shows as a gap), with the first and last day and the busiest day's count on the
/// axes, a legend, and the same numbers as a table.
#[component]
fn PerDay(days: Vec<DayFigures>, since: Timestamp, until: Timestamp) -> impl IntoView {
    let slots = day_slots(&since, &until);
    let most = days.iter().map(day_total).max().unwrap_or(0).max(1);
    let slot = PLOT_W / slots.len().max(1) as f64;
    let width = (slot * 0.7).clamp(1.0, 40.0);
    let summary = format!(
        "Decisions per day from {} to {}: {} days with decisions, at most {most} in a day",
        slots.first().map(String::as_str).unwrap_or_default(),
        slots.last().map(String::as_str).unwrap_or_default(),
        days.len(),
    );
    let columns = days
        .iter()
        .filter_map(|day| {
            let i = slots.iter().position(|d| *d == day.day)?;
            let x = i as f64 * slot + (slot - width) / 2.0;
            Some(view! { <DayColumn day=day.clone() x width most/> })
        })
        .collect_view();
    let (first, last) = (
        slots.first().cloned().unwrap_or_default(),
        slots.last().cloned().unwrap_or_default(),
    );
    view! {
        <section class="plot" data-testid="plot-per-day">
            <h2>"Decisions per day"</h2>
            <svg viewBox=format!("0 0 {PLOT_W} {}", PLOT_H + LABEL_H) role="img" aria-label=summary class="plot-svg">
                <line class="axis" x1="0" y1=PLOT_H x2=PLOT_W y2=PLOT_H/>
                <text class="bar-label" x="2" y="12">{format!("{most} a day")}</text>
                <text class="bar-label" x="0" y=PLOT_H + 16.0>{first}</text>
                <text class="bar-label" x=PLOT_W y=PLOT_H + 16.0 text-anchor="end">{last}</text>
                {columns}
            </svg>
            <ul class="legend">
                {OUTCOMES.map(|(outcome, words)| view! {
                    <li><span class=format!("swatch bar-{outcome}") aria-hidden="true"></span>{words}</li>
                }).into_iter().collect_view()}
            </ul>
            <DayTable days/>
        </section>
    }
}

/// One day's stacked bar: a segment per outcome it had, bottom up.
#[component]
fn DayColumn(day: DayFigures, x: f64, width: f64, most: u64) -> impl IntoView {
    let mut base = PLOT_H;
    let segments = OUTCOMES
        .into_iter()
        .map(|(outcome, _)| (outcome, outcome_count(&day, outcome)))
        .filter(|(_, count)| *count > 0)
        .map(|(outcome, count)| {
            let h = count as f64 / most as f64 * (PLOT_H - 16.0);
            base -= h;
            view! {
                <rect class=format!("bar bar-{outcome}") x=x y=base width=width height=h
                    data-outcome=outcome data-count=count data-day=day.day.clone()/>
            }
        })
        .collect_view();
    view! { <g class="day" data-day=day.day.clone() data-count=day_total(&day)>{segments}</g> }
}

/// Every UTC day from `since`'s to the last one before `until` (`YYYY-MM-DD`), at most 366.
fn day_slots(since: &Timestamp, until: &Timestamp) -> Vec<String> {
    const DAY_MS: i64 = 86_400_000;
    let (Some(from), Some(to)) = (since.unix_ms(), until.unix_ms()) else {
        return Vec::new();
    };
    let last = (to - 1).max(from).div_euclid(DAY_MS);
    (from.div_euclid(DAY_MS)..=last)
        .take(366)
        .map(|day| {
            let at = Timestamp::from_unix_ms(day * DAY_MS);
            at.as_str().get(..10).unwrap_or_default().to_owned()
        })
        .collect()
}

fn day_total(day: &DayFigures) -> u64 {
    day.approved + day.denied + day.edited + day.expired
}

fn outcome_count(day: &DayFigures, outcome: &str) -> u64 {
    match outcome {
        "approved" => day.approved,
        "denied" => day.denied,
        "edited" => day.edited,
        _ => day.expired,
    }
}

/// The per-day plot's numbers, as a table (its text alternative).
#[component]
fn DayTable(days: Vec<DayFigures>) -> impl IntoView {
    view! {
        <details class="plot-table">
            <summary>"As a table"</summary>
            <table class="data-table">
                <thead><tr>
                    <th scope="col">"Day (UTC)"</th>
                    {OUTCOMES.map(|(_, words)| view! { <th scope="col" class="num">{words}</th> }).into_iter().collect_view()}
                </tr></thead>
                <tbody>
                    {days.into_iter().map(|day| view! {
                        <tr>
                            <th scope="row">{day.day.clone()}</th>
                            {OUTCOMES.map(|(outcome, _)| view! { <td class="num">{outcome_count(&day, outcome)}</td> }).into_iter().collect_view()}
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </details>
    }
}

/// One bar per labelled count, the label under it, and the numbers as a table.
#[component]
fn BarPlot(
    testid: &'static str,
    title: &'static str,
    unit: &'static str,
    bars: Vec<(String, u64)>,
) -> impl IntoView {
    let most = bars.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1) as f64;
    let slot = PLOT_W / bars.len().max(1) as f64;
    let width = (slot * 0.6).min(80.0);
    let summary = format!(
        "{title}: {}",
        bars.iter()
            .map(|(label, n)| format!("{label} {n} {unit}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let drawn = bars.iter().enumerate().map(|(i, (label, count))| {
        let x = i as f64 * slot + (slot - width) / 2.0;
        let h = *count as f64 / most * (PLOT_H - 18.0);
        view! {
            <rect class="bar bar-plain" x=x y=PLOT_H - h width=width height=h
                data-label=label.clone() data-count=*count/>
            <text class="bar-value" x=x + width / 2.0 y=PLOT_H - h - 4.0 text-anchor="middle">{*count}</text>
            <text class="bar-label" x=x + width / 2.0 y=PLOT_H + 16.0 text-anchor="middle">{label.clone()}</text>
        }
    }).collect_view();
    view! {
        <section class="plot" data-testid=testid>
            <h2>{title}</h2>
            <svg viewBox=format!("0 0 {PLOT_W} {}", PLOT_H + LABEL_H) role="img" aria-label=summary class="plot-svg">
                <line class="axis" x1="0" y1=PLOT_H x2=PLOT_W y2=PLOT_H/>
                {drawn}
            </svg>
            <details class="plot-table">
                <summary>"As a table"</summary>
                <table class="data-table">
                    <tbody>
                        {bars.into_iter().map(|(label, n)| view! {
                            <tr><th scope="row">{label}</th><td class="num">{n}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </details>
        </section>
    }
}

/// Every figure per credential and device (timeouts on a row of their own).
#[component]
fn DeviceTable(stats: DecisionStats) -> impl IntoView {
    view! {
        <FiguresTable title="By credential and device" first="Credential · device"
            testid="answers-by-device" rows=stats.by_device/>
    }
}

/// Every figure per person (issue 41), each one's answers through all their credentials;
/// nothing when no person answered (the admin's own logins and tokens are no person's).
#[component]
fn PersonTable(stats: DecisionStats) -> impl IntoView {
    (!stats.by_person.is_empty()).then(|| {
        view! {
            <FiguresTable title="By person" first="Person"
                testid="answers-by-person" rows=stats.by_person/>
        }
    })
}

/// One table of figures, a row per group.
#[component]
fn FiguresTable(
    title: &'static str,
    first: &'static str,
    testid: &'static str,
    rows: std::collections::BTreeMap<String, DecisionFigures>,
) -> impl IntoView {
    view! {
        <section class="plot">
            <h2>{title}</h2>
            // Nine columns scroll sideways on a phone: the region takes focus, so a keyboard
            // can scroll it too.
            <div class="table-wrap" tabindex="0" role="region" aria-label=format!("Figures {}", title.to_lowercase())>
                <table class="data-table" data-testid=testid>
                    <thead><tr>
                        <th scope="col">{first}</th>
                        <th scope="col" class="num">"Decisions"</th>
                        <th scope="col" class="num">"Approved"</th>
                        <th scope="col" class="num">"Denied"</th>
                        <th scope="col" class="num">"Edited"</th>
                        <th scope="col" class="num">"Expired"</th>
                        <th scope="col" class="num">"Median"</th>
                        <th scope="col" class="num">"Under 1 s"</th>
                        <th scope="col" class="num">"Longest run"</th>
                    </tr></thead>
                    <tbody>
                        {rows.into_iter().map(|(group, f)| view! {
                            <tr data-device=group.clone()>
                                <th scope="row">{group.clone()}</th>
                                <td class="num">{f.decisions}</td>
                                <td class="num">{f.approved}</td>
                                <td class="num">{f.denied}</td>
                                <td class="num">{f.edited}</td>
                                <td class="num">{f.expired}</td>
                                <td class="num">{f.median_decide_ms.map_or_else(|| "—".to_owned(), duration_words)}</td>
                                <td class="num">{f.fast_approvals}</td>
                                <td class="num">{f.longest_approve_run}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_shares_read_as_words() {
        assert_eq!(duration_words(400), "0.4 s");
        assert_eq!(duration_words(12_400), "12 s");
        assert_eq!(duration_words(150_000), "2.5 min");
        assert_eq!(duration_words(7_200_000), "2.0 h");
        assert_eq!(percent(2, 3), "67 %");
        assert_eq!(percent(0, 0), "—");
    }

    #[test]
    fn every_day_of_the_period_has_a_slot() {
        let slots = day_slots(
            &"2026-11-29T12:00:00.000Z".into(),
            &"2026-12-02T00:00:00.000Z".into(),
        );
        assert_eq!(slots, ["2026-11-29", "2026-11-30", "2026-12-01"]);
        let one = day_slots(
            &"2026-12-06T00:00:00Z".into(),
            &"2026-12-06T00:00:00Z".into(),
        );
        assert_eq!(one, ["2026-12-06"]);
    }
}
