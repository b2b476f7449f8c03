//! `[[approvals.route]]` (issue 41): which cards go to whom, how many must approve, and who
//! is asked also when nobody answers. Read typed (an approver is an `Approver`, `when` a
//! `RouteWhen`), so a typo is a config error naming the entry, never a route that names nobody.

use serde::{Deserialize, Serialize};

use crate::protocol::{Approver, MAX_QUORUM, RouteWhen};

/// One route: the cards it is for (`when`, and `source` when given) and who answers them.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    pub when: RouteWhen,
    /// `countersign` (the built-in agent) or an outside agent's name; absent: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub approvers: Vec<Approver>,
    /// How many distinct people must approve the same digest.
    #[serde(default = "one")]
    pub quorum: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate_to: Vec<Approver>,
}

fn one() -> u32 {
    1
}

/// What a card's `source` is for the built-in agent, as a route spells it.
pub const BUILT_IN_SOURCE: &str = "countersign";

/// The longest `escalate_after_secs` (ten years): far longer than any card waits.
pub const MAX_ESCALATE_AFTER_SECS: u64 = 10 * 365 * 86_400;

/// Each route names someone, asks for 1 to `MAX_QUORUM` approvals it can get, names an agent
/// as agents are named, and escalates with both keys or neither.
pub fn validate(routes: &[RouteConfig]) -> Result<(), (&'static str, &'static str)> {
    const KEY: &str = "approvals.route";
    for route in routes {
        check_route(route).map_err(|why| (KEY, why))?;
    }
    Ok(())
}

/// One route's approvers, quorum and source.
fn check_route(route: &RouteConfig) -> Result<(), &'static str> {
    if route.approvers.is_empty() {
        return Err("needs at least one entry in `approvers`");
    }
    if route.quorum == 0 || route.quorum > MAX_QUORUM {
        return Err("`quorum` must be from 1 to 10");
    }
    if route.quorum > most_people(route) {
        return Err(
            "`quorum` is more than the people its `approvers` and `escalate_to` can name: its cards could never be approved",
        );
    }
    // An agent's name is lowercase letters, digits and `-` (as `POST /api/v1/gates` takes
    // it): a `source` spelled otherwise would match no card, and the route would quietly
    // hold nothing.
    if route.source.as_deref().is_some_and(|s| {
        s.is_empty()
            || !s
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    }) {
        return Err(
            "`source` must name an agent (lowercase letters, digits and `-`, e.g. claude-code), or be left out",
        );
    }
    check_escalation(route)
}

/// `escalate_after_secs` and `escalate_to`: both or neither, and a time a card can hold.
fn check_escalation(route: &RouteConfig) -> Result<(), &'static str> {
    match (route.escalate_after_secs, route.escalate_to.is_empty()) {
        (None, true) | (Some(_), false)
            if route
                .escalate_after_secs
                .is_none_or(|secs| (1..=MAX_ESCALATE_AFTER_SECS).contains(&secs)) =>
        {
            Ok(())
        }
        (Some(0), _) => Err("`escalate_after_secs` must be at least 1"),
        // A card's `escalate_at` is a time of years 0000-9999: past that it could not be
        // read, and an unreadable time has passed (the card would escalate at once).
        (Some(secs), _) if secs > MAX_ESCALATE_AFTER_SECS => {
            Err("`escalate_after_secs` must be at most 315360000 (ten years)")
        }
        _ => Err("`escalate_after_secs` and `escalate_to` go together: set both or neither"),
    }
}

/// The most distinct people who could approve a route's card (approvers and `escalate_to`):
/// any number once a `group:` or an answering `role:` is among them, else its `person:`
/// entries (keyed as people are) and one for `owner`. `role:viewer` names nobody: a viewer
/// answers nothing.
fn most_people(route: &RouteConfig) -> u32 {
    let mut people = std::collections::HashSet::new();
    for approver in route.approvers.iter().chain(&route.escalate_to) {
        match approver {
            Approver::Role(crate::protocol::Role::Viewer) => false,
            Approver::Group(_) | Approver::Role(_) => return u32::MAX,
            Approver::Person(email) => people.insert(email.clone()),
            Approver::Owner => people.insert(String::new()),
        };
    }
    u32::try_from(people.len()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use crate::server::config::Config;
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("c.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_route_reads_typed() {
        let c = parse(
            "[[approvals.route]]\nwhen = \"floor\"\napprovers = [\"group:maintainers\", \"person:Alice@Example.com\"]\nquorum = 2\nescalate_after_secs = 60\nescalate_to = [\"role:admin\"]\n\n[[approvals.route]]\nwhen = \"any\"\nsource = \"codex\"\napprovers = [\"owner\"]\n",
        )
        .unwrap();
        let routes = &c.approvals.route;
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].quorum, 2);
        assert_eq!(
            routes[0].approvers[1],
            crate::protocol::Approver::Person("alice@example.com".into())
        );
        assert_eq!(routes[1].quorum, 1, "quorum defaults to 1");
        assert!(parse("").unwrap().approvals.route.is_empty());
    }

    /// Each way a route could quietly mean something else is refused, naming what is wrong.
    #[test]
    fn bad_routes_are_refused_by_name() {
        let cases = [
            ("when = \"flor\"\napprovers = [\"owner\"]", "flor"),
            ("when = \"Floor\"\napprovers = [\"owner\"]", "Floor"),
            ("approvers = [\"owner\"]", "when"),
            ("when = \"any\"\napprovers = [\"group:\"]", "`group:`"),
            ("when = \"any\"\napprovers = [\"role:root\"]", "`role:root`"),
            (
                "when = \"any\"\napprovers = [\"persn:a@b.c\"]",
                "`persn:a@b.c`",
            ),
            ("when = \"any\"\napprovers = []", "at least one"),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nquorum = 0",
                "quorum",
            ),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nquorum = 11",
                "quorum",
            ),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nquorum = -1",
                "quorum",
            ),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nescalate_after_secs = 5",
                "together",
            ),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nescalate_to = [\"owner\"]",
                "together",
            ),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nescalate_after_secs = 0\nescalate_to = [\"owner\"]",
                "at least 1",
            ),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nsource = \" \"",
                "source",
            ),
            (
                "when = \"any\"\napprovers = [\"owner\"]\nquorums = 2",
                "quorums",
            ),
        ];
        for (body, named) in cases {
            let err = parse(&format!("[[approvals.route]]\n{body}\n")).expect_err(body);
            assert!(err.contains(named), "{body}: {err}");
        }
    }

    /// The web and the API may not change who answers (the file may).
    #[test]
    fn routes_are_not_changed_through_the_api() {
        assert!(crate::server::config::keys::protected("approvals.route").is_some());
    }

    /// Red-team finding 4 (fixed): a route's `source` is compared exactly with the agent's name, and an
    /// agent's name is lowercase letters, digits and `-`. A `source` spelled otherwise
    /// ("Claude-Code", "claude code", " codex") matches no card ever, so the route a person
    /// wrote to hold that agent's calls for two people silently holds nothing: the cards fall
    /// through to a later route or to none (anyone answers, and rules, grants and the mode
    /// answer again). Such a spelling must be refused, as a misspelt `when` is.
    #[test]
    fn rt_a_source_no_agent_can_have_is_refused() {
        for source in [
            "Claude-Code",
            "claude code",
            " codex",
            "codex ",
            "claude_code",
        ] {
            let body = format!(
                "[[approvals.route]]\nwhen = \"any\"\nsource = \"{source}\"\napprovers = [\"group:maintainers\"]\nquorum = 2\n"
            );
            let err = parse(&body).expect_err(source);
            assert!(err.contains("source"), "{source}: {err}");
        }
        // The names agents have (and the built-in agent's) still parse.
        for source in ["claude-code", "codex", "countersign", "mcp2"] {
            let body = format!(
                "[[approvals.route]]\nwhen = \"any\"\nsource = \"{source}\"\napprovers = [\"owner\"]\n"
            );
            parse(&body).expect(source);
        }
    }

    /// Red-team finding 5 (fixed): `escalate_after_secs` had no upper bound. A "never, in
    /// practice" value (a trillion seconds, or `i64::MAX`) put the card's `escalate_at` past
    /// the year 9999, where a time written `YYYY-…` cannot be read back, and an unreadable
    /// time counts as passed: the card escalated the moment it was made, and `escalate_to`
    /// answered it at once. Such a value is refused; the largest allowed stays in the future.
    #[test]
    fn rt_a_huge_escalate_after_secs_does_not_escalate_at_once() {
        for secs in ["999999999999", "9223372036854775807", "315360001"] {
            let body = format!(
                "[[approvals.route]]\nwhen = \"any\"\napprovers = [\"owner\"]\nescalate_after_secs = {secs}\nescalate_to = [\"role:admin\"]\n"
            );
            match parse(&body) {
                Err(err) => assert!(err.contains("escalate_after_secs"), "{secs}: {err}"),
                Ok(c) => {
                    let card = crate::server::review::test_cards::card(
                        "shell",
                        crate::protocol::ToolClass::Exec,
                        serde_json::json!({}),
                    );
                    let route =
                        crate::server::gate::route::snapshot(&c.approvals.route, &card, None)
                            .unwrap();
                    let at = route.escalate_at.unwrap();
                    panic!(
                        "escalate_after_secs = {secs} was taken; escalate_at {at:?} has passed: {}",
                        at.has_passed(crate::protocol::Timestamp::now_ms())
                    );
                }
            }
        }
        let c = parse(
            "[[approvals.route]]\nwhen = \"any\"\napprovers = [\"owner\"]\nescalate_after_secs = 315360000\nescalate_to = [\"role:admin\"]\n",
        )
        .unwrap();
        let card = crate::server::review::test_cards::card(
            "shell",
            crate::protocol::ToolClass::Exec,
            serde_json::json!({}),
        );
        let route = crate::server::gate::route::snapshot(&c.approvals.route, &card, None).unwrap();
        assert!(
            !route
                .escalate_at
                .unwrap()
                .has_passed(crate::protocol::Timestamp::now_ms())
        );
    }
}
