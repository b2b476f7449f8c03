//! The Security page's section about the OS boundary, as HTML (every value escaped): what the
//! report found, in words, and an alert for the page's top when the boundary does not hold.

use super::{Report, SEE_README};

/// The Security page's section about the boundary, as HTML (every value escaped).
pub fn security_section(report: &Report) -> String {
    let text = escape;
    let mut html = format!(
        "<section id=\"os-boundary\" class=\"os-boundary\" data-testid=\"os-boundary\" data-holds=\"{}\">\n\
         <h2>Outside agents and the OS boundary</h2>\n",
        report.holds
    );
    let status = if report.holds {
        format!(
            "Countersign runs as {}, a user of its own: an outside agent running as you can \
             neither read nor change its data dir, database or config, and reaches it only over \
             HTTP with a <code>gates</code> token.",
            text(&report.assessment.who())
        )
    } else {
        text(
            report
                .warning
                .as_deref()
                .unwrap_or("warning: the OS boundary does not hold")
                .trim_start_matches("warning: "),
        )
    };
    html.push_str(&format!(
        "<p data-testid=\"os-boundary-status\" data-problem=\"{}\">{status}</p>\n",
        !report.holds
    ));
    if !report.reasons.is_empty() {
        html.push_str("<ul data-testid=\"os-boundary-reasons\">");
        for reason in &report.reasons {
            html.push_str(&format!("<li>{}</li>", text(reason)));
        }
        html.push_str("</ul>\n");
    }
    if !report.same_user_agents.is_empty() {
        html.push_str(
            "<p>Outside agents that connected as Countersign's own OS user:</p>\
             <ul data-testid=\"os-boundary-same-user\">",
        );
        for seen in &report.same_user_agents {
            html.push_str(&format!(
                "<li>{} · first {} · last {} · {} request{}</li>",
                text(&seen.credential),
                text(seen.first_seen.as_str()),
                text(seen.last_seen.as_str()),
                seen.requests,
                if seen.requests == 1 { "" } else { "s" }
            ));
        }
        html.push_str("</ul>\n");
    }
    html.push_str(&format!(
        "<p class=\"muted\">{}.</p>\n</section>\n",
        text(SEE_README)
    ));
    html
}

/// The Security page's parts: an alert at its top when the boundary does not hold (a link to
/// the section), and the section. Empty when the report could not be made.
pub fn security_parts(report: Option<&Report>) -> (String, String) {
    let Some(report) = report else {
        return (String::new(), String::new());
    };
    let alert = if report.holds {
        String::new()
    } else {
        "<p class=\"error\" role=\"alert\" data-testid=\"os-boundary-alert\">The OS boundary \
         does not hold: an outside agent may read and change Countersign's files. \
         <a href=\"#os-boundary\">Why, and what to do</a>.</p>"
            .to_owned()
    };
    (alert, security_section(report))
}

/// Text as HTML: the five characters that could end an element or an attribute, written out.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_section_quotes_cannot_become_markup() {
        assert_eq!(
            escape(r#"/tmp/<b>"x" & 'y'"#),
            "/tmp/&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;"
        );
    }
}
