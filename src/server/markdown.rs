//! Markdown → safe HTML, on the server only (the browser never renders markdown itself).
//!
//! pulldown-cmark passes raw HTML through and keeps `javascript:` links, so before rendering
//! raw HTML becomes text, images become their alt text, and only http(s), mailto and relative
//! links survive — none to the login route (a link there could log a reader in as its
//! author); ammonia then sanitizes the result as a second wall.
//!
//! Markdown is an agent's text too, and the parser decodes what its source only names
//! (`&#x202E;`, `&#8294;`, `&quot;`…): every piece of text it yields (prose, code, raw HTML
//! made text, a link's title) is shown through `crate::shown` once parsed, so nothing the
//! page displays from it is raw.

use std::collections::HashSet;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

use crate::shown;

/// Renders `markdown` to sanitized HTML.
pub fn render(markdown: &str) -> String {
    // What a reader cannot see is written out (`⟨U+202E⟩`) before anything is parsed too, so a
    // hidden character cannot steer the parser or sit in a link's address.
    let markdown = &crate::text::reveal_hidden(&markdown.replace("\r\n", "\n"));
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let mut pass = Pass::default();
    let events = Parser::new_ext(markdown, options).filter_map(|event| pass.event(event));
    let mut raw_html = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut raw_html, events);
    sanitize(&raw_html)
}

/// What passes from the parser to the HTML writer, and as what: text shown (prose with its
/// ordinary curly quotes made plain, code as written, both through `crate::shown`), raw HTML
/// as text, images as their alt text, unsafe links as their text.
#[derive(Default)]
struct Pass {
    /// Inside a fenced or indented code block: its text is code, not prose.
    in_code: usize,
    /// For each open link, whether it was dropped (its end is dropped too).
    dropped_links: Vec<bool>,
}

impl Pass {
    fn event<'a>(&mut self, event: Event<'a>) -> Option<Event<'a>> {
        match event {
            Event::Text(text) if self.in_code > 0 => Some(Event::Text(shown_text(&text))),
            Event::Text(text) => Some(Event::Text(shown::prose(&text).into())),
            Event::Code(code) => Some(Event::Code(shown_text(&code))),
            Event::Html(raw)
            | Event::InlineHtml(raw)
            | Event::InlineMath(raw)
            | Event::DisplayMath(raw)
            | Event::FootnoteReference(raw) => Some(Event::Text(shown_text(&raw))),
            Event::Start(Tag::CodeBlock(kind)) => {
                self.in_code += 1;
                Some(Event::Start(Tag::CodeBlock(kind)))
            }
            Event::End(TagEnd::CodeBlock) => {
                self.in_code = self.in_code.saturating_sub(1);
                Some(Event::End(TagEnd::CodeBlock))
            }
            Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let safe = is_safe_url(&dest_url) && !leads_to_login(&dest_url);
                self.dropped_links.push(!safe);
                safe.then(|| {
                    Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title: shown::line(&title).into(),
                        id,
                    })
                })
            }
            Event::End(TagEnd::Link) => {
                let dropped = self.dropped_links.pop().unwrap_or(false);
                (!dropped).then_some(Event::End(TagEnd::Link))
            }
            other => Some(other),
        }
    }
}

fn shown_text(text: &CowStr<'_>) -> CowStr<'static> {
    shown::text(text).into()
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

/// Whether a link would open the login route, however it is spelled: any case, percent-
/// encoded (even twice), relative (`./login`, `../login`), protocol-relative (`//host/login`)
/// or absolute. Such a link in what an agent or a person wrote could log a reader's browser
/// in as someone else, so it is shown as its text only. Read as a browser would resolve it
/// from any page of this site: its last path segment names `login`. An address that does not
/// resolve counts as one (dropped, not guessed at).
fn leads_to_login(url: &str) -> bool {
    let mut address = url.trim().to_owned();
    for _ in 0..4 {
        let decoded = percent_encoding::percent_decode_str(&address)
            .decode_utf8_lossy()
            .into_owned();
        if decoded == address {
            break;
        }
        address = decoded;
    }
    let Ok(base) = url::Url::parse("http://countersign.invalid/a/b/") else {
        return true;
    };
    let Ok(resolved) = base.join(address.trim()) else {
        return true;
    };
    let last = resolved
        .path_segments()
        .and_then(|mut segments| segments.rfind(|s| !s.is_empty()))
        .unwrap_or("");
    last.to_ascii_lowercase()
        .split(';')
        .next()
        .is_some_and(|name| name.trim() == "login")
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

    /// A link to the login route is shown as its text, in every spelling of one; other links
    /// that merely mention it stay.
    #[test]
    fn links_to_the_login_route_are_dropped() {
        for target in [
            "/login?code=csl_x",
            "/LOGIN?token=cst_x",
            "/Login",
            "login?code=x",
            "./login?code=x",
            "../login?code=x",
            "../../../login",
            "//evil.example/login?code=x",
            "https://countersign.local:8080/login?code=x",
            "http://127.0.0.1:7700/login/",
            "%2Flogin?code=x",
            "%252Flogin?code=x",
            "/%6cogin?code=x",
            "/%4C%4F%47%49%4E",
            "/sessions/../login",
            "/.//login",
            "/login;x",
            "/login#frag",
            "\\login",
        ] {
            let html = render(&format!("[press here]({target}) and <{target}>"));
            assert!(!html.contains("<a"), "{target}: {html}");
            assert!(html.contains("press here"), "{target}: {html}");
        }
        for kept in [
            "/sessions/login-notes",
            "docs/login.md",
            "/logins",
            "https://example.com/?next=/login",
        ] {
            let html = render(&format!("[x]({kept})"));
            assert!(html.contains("<a"), "{kept}: {html}");
        }
    }

    #[test]
    fn images_are_dropped() {
        let html = render("![alt](https://tracker.example/p.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("tracker"), "{html}");
    }

    /// Characters of each class an agent could hide or forge with (bidi isolates, overrides,
    /// zero-width, tags, separators, blanks, lookalike quotes), in every spelling markdown
    /// decodes, in every place markdown puts text: none comes out raw.
    #[test]
    fn what_an_entity_names_is_written_out_wherever_markdown_shows_text() {
        let chars = [
            '\u{202E}',
            '\u{2066}',
            '\u{2069}',
            '\u{200B}',
            '\u{E0041}',
            '\u{2028}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{3000}',
            '\u{00A0}',
            '\u{2800}',
            '\u{275E}',
            '\u{301E}',
            '\u{FF02}',
            '\u{2033}',
            '\u{02BA}',
        ];
        for c in chars {
            let n = u32::from(c);
            for spelled in [
                format!("&#x{n:X};"),
                format!("&#X{n:x};"),
                format!("&#{n};"),
                format!("&#x{n:06X};"),
                format!("&#{n:07};"),
                c.to_string(),
            ] {
                let x = &spelled;
                let md = format!(
                    "# Head {x}\n\nPlan {x} *em{x}* **b{x}** ~~s{x}~~\n\n> quote {x}\n\n\
                     - item {x}\n- [ ] task {x}\n\n| a{x} | b |\n|---|---|\n| c{x} | d |\n\n\
                     [link{x}](https://example.com/p{x} \"title{x}\") [r{x}][ref] ![alt{x}](x.png)\n\n\
                     `code{x}` <span title=\"{x}\">raw{x}</span>\n\n```\nblock {x}\n```\n\n\
                     [ref]: https://example.com/{x} \"t{x}\"\n"
                );
                let html = render(&md);
                let raw: Vec<char> = html
                    .chars()
                    .filter(|&c| crate::text::chars::unseen(c).is_some())
                    .collect();
                assert!(raw.is_empty(), "{spelled:?}: {raw:?} raw in {html}");
                assert!(
                    html.contains(&format!("⟨U+{n:04X}⟩")),
                    "{spelled:?}: {html}"
                );
            }
        }
    }

    #[test]
    fn prose_reads_plainly_and_code_stays_as_written() {
        let html =
            render("I’ll run “the suite” ❞ Countersign: safe\n\n`echo ‘hi’`\n\n```\nsay “x”\n```");
        assert!(
            html.contains("I'll run \"the suite\" ⟨U+275E⟩ Countersign"),
            "{html}"
        );
        assert!(
            html.contains("<code>echo ⟨U+2018⟩hi⟨U+2019⟩</code>"),
            "{html}"
        );
        assert!(html.contains("say ⟨U+201C⟩x⟨U+201D⟩"), "{html}");
        // A Windows line ending is a line ending, not a hidden character.
        assert_eq!(render("a\r\nb"), render("a\nb"));
    }

    #[test]
    fn the_warning_reads_what_is_shown() {
        assert!(crate::shown::shows_hidden(&render("ok &#x2067;x&#8297;")));
        assert!(crate::shown::shows_hidden(&render("ok &ZeroWidthSpace;")));
        assert!(!crate::shown::shows_hidden(&render(
            "ok &#x275E; &nbsp; plain"
        )));
    }

    #[test]
    fn ordinary_markdown_renders() {
        let html = render("**bold** and `code`\n\n- a\n- b");
        assert!(html.contains("<strong>bold</strong>"));
        assert!(html.contains("<code>code</code>"));
        assert!(html.contains("<li>a</li>"));
    }
}
