//! A unified diff, coloured by line, collapsed beyond 40 lines with "show all".

use leptos::prelude::*;

const COLLAPSED_LINES: usize = 40;

fn line_class(line: &str) -> &'static str {
    if line.starts_with("+++") || line.starts_with("---") {
        "diff-file"
    } else if line.starts_with("@@") {
        "diff-hunk"
    } else if line.starts_with('+') {
        "diff-add"
    } else if line.starts_with('-') {
        "diff-del"
    } else {
        "diff-ctx"
    }
}

#[component]
pub fn Diff(text: String) -> impl IntoView {
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let total = lines.len();
    let expanded = RwSignal::new(false);
    let shown = move || {
        let limit = if expanded.get() {
            usize::MAX
        } else {
            COLLAPSED_LINES
        };
        lines
            .iter()
            .take(limit)
            .map(|line| {
                let class = line_class(line);
                view! { <span class=class>{line.clone()}"\n"</span> }
            })
            .collect_view()
    };
    view! {
        <div class="diff" data-testid="diff">
            <pre>{shown}</pre>
            <Show when=move || { total > COLLAPSED_LINES && !expanded.get() }>
                <button type="button" class="link" on:click=move |_| expanded.set(true)>
                    {format!("show all {total} lines")}
                </button>
            </Show>
        </div>
    }
}
