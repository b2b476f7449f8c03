//! Markdown → safe HTML, on the server only (the browser never renders markdown itself).
//!
//! pulldown-cmark passes raw HTML through and keeps `javascript:` links, so before rendering
//! raw HTML becomes text, images become their alt text, and only http(s), mailto and relative
//! links survive; ammonia then sanitizes the result as a second wall.

use std::collections::HashSet;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// Renders `markdown` to sanitized HTML.
pub fn render(markdown: &str) -> String {
    // What a reader cannot see is written out (`⟨U+202E⟩`) before anything is rendered.
    let markdown = &crate::text::reveal_hidden(markdown);
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let mut in_image = 0usize;
    let mut dropped_links = Vec::new();
    let events = Parser::new_ext(markdown, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Image { .. }) => {
            in_image += 1;
            None
        }
        Event::End(TagEnd::Image) => {
            in_image = in_image.saturating_sub(1);
            None
        }
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            if is_safe_url(&dest_url) {
                dropped_links.push(false);
                Some(Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }))
            } else {
                dropped_links.push(true);
                None
            }
        }
        Event::End(TagEnd::Link) => {
            if dropped_links.pop().unwrap_or(false) {
                None
            } else {
                Some(Event::End(TagEnd::Link))
            }
        }
        other => Some(other),
    });
    let mut raw_html = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut raw_html, events);
    sanitize(&raw_html)
}

fn is_safe_url(url: &CowStr<'_>) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
    {
        return true;
    }
    // Relative: no scheme before the first `/`, `?` or `#`.
    let head = lower.split(['/', '?', '#']).next().unwrap_or("");
    !head.contains(':')
}

fn sanitize(raw_html: &str) -> String {
    let schemes: HashSet<&str> = ["http", "https", "mailto"].into_iter().collect();
    ammonia::Builder::default()
        .url_schemes(schemes)
        .rm_tags(["img"])
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(raw_html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn raw_html_becomes_text() {
        let html = render("hi <img src=x onerror=alert(1)> <script>alert(1)</script>");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;img"), "{html}");
    }

    #[test]
    fn javascript_links_are_dropped_and_safe_links_kept() {
        let html = render("[x](javascript:alert(1)) [y](https://example.com) [z](docs/a.md)");
        assert!(!html.contains("javascript"), "{html}");
        assert!(html.contains("href=\"https://example.com\""), "{html}");
        assert!(html.contains("href=\"docs/a.md\""), "{html}");
        assert!(html.contains('x'));
    }

    #[test]
    fn images_are_dropped() {
        let html = render("![alt](https://tracker.example/p.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("tracker"), "{html}");
    }

    #[test]
    fn ordinary_markdown_renders() {
        let html = render("**bold** and `code`\n\n- a\n- b");
        assert!(html.contains("<strong>bold</strong>"));
        assert!(html.contains("<code>code</code>"));
        assert!(html.contains("<li>a</li>"));
    }
}
