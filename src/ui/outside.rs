//! Outside agents (Claude Code, Codex, opencode, MCP hosts) as the UI shows them: the name a
//! person knows each by, the badge that tells their sessions from the built-in agent's, and
//! the note that stands where the composer would (the server refuses messages there).

use leptos::prelude::*;

/// The outside agent whose gates the shown session holds, if any. Cards read it to show
/// their source; a signal because the inbox learns it only when the session list loads.
#[derive(Clone, Copy)]
pub struct SessionSource(pub Signal<Option<String>>);

/// The name a person knows an outside agent by (`claude-code` → `Claude Code`); a source
/// nobody listed is shown as sent.
pub fn source_label(source: &str) -> String {
    match source {
        "claude-code" => "Claude Code".to_owned(),
        "codex" => "Codex".to_owned(),
        "opencode" => "opencode".to_owned(),
        "mcp" => "MCP".to_owned(),
        other => other.to_owned(),
    }
}

/// What replaces the composer in an outside agent's session: answer here, talk there.
pub fn outside_note(source: &str) -> String {
    let place = match source {
        "claude-code" | "codex" | "opencode" => "in its terminal",
        _ => "where it runs",
    };
    format!(
        "This session holds {}'s requests: answer its cards here; talk to it {place}.",
        source_label(source)
    )
}

/// A small badge naming the outside agent.
#[component]
pub fn SourceBadge(source: String) -> impl IntoView {
    let label = source_label(&source);
    view! {
        <span class="agent-badge" data-testid="source-badge" data-source=source
            title=format!("Requests from {label}, an outside agent")>{label.clone()}</span>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_agents_get_their_own_names_and_others_stay_as_sent() {
        assert_eq!(source_label("claude-code"), "Claude Code");
        assert_eq!(source_label("codex"), "Codex");
        assert_eq!(source_label("opencode"), "opencode");
        assert_eq!(source_label("mcp"), "MCP");
        assert_eq!(source_label("my-bot"), "my-bot");
    }

    #[test]
    fn the_note_says_where_to_talk_to_the_agent() {
        assert_eq!(
            outside_note("claude-code"),
            "This session holds Claude Code's requests: answer its cards here; talk to it in its terminal."
        );
        assert!(outside_note("mcp").starts_with("This session holds MCP's requests"));
        assert!(outside_note("mcp").ends_with("talk to it where it runs."));
    }
}
