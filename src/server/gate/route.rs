//! Which `[[approvals.route]]` a card matches (first match wins), and the route it snapshots
//! when it is made: a later config change does not move a waiting card.

use crate::protocol::{
    ApprovalRequestBody, CardRoute, Decision, GateKind, GateReason, RouteWhen, ToolClass,
};
use crate::server::config::route::{BUILT_IN_SOURCE, RouteConfig};

/// What a route looks at in a call: whether it is on the floor, its class, its agent.
#[derive(Clone, Copy, Debug)]
struct Facts<'a> {
    floor: bool,
    class: ToolClass,
    decision: bool,
    /// `None`: the built-in agent.
    source: Option<&'a str>,
}

impl<'a> Facts<'a> {
    fn of(card: &'a ApprovalRequestBody) -> Facts<'a> {
        Facts {
            floor: card.reason == GateReason::SafetyFloor,
            class: card.class,
            decision: card.kind == GateKind::Decision,
            source: card.source.as_deref(),
        }
    }
}

/// Whether `when` covers the call: the floor by its reason, the others by the class.
fn when_covers(when: RouteWhen, facts: Facts<'_>) -> bool {
    match when {
        RouteWhen::Any => true,
        RouteWhen::Floor => facts.floor,
        RouteWhen::Exec => facts.class == ToolClass::Exec,
        RouteWhen::Edit => facts.class == ToolClass::Edit,
        RouteWhen::Config => facts.class == ToolClass::Config,
        RouteWhen::Decision => facts.decision || facts.class == ToolClass::Decision,
    }
}

/// The first route that covers the call (its `when`, and its `source` when it names one).
fn first<'a>(routes: &'a [RouteConfig], facts: Facts<'_>) -> Option<&'a RouteConfig> {
    let source = facts.source.unwrap_or(BUILT_IN_SOURCE);
    routes.iter().find(|route| {
        when_covers(route.when, facts) && route.source.as_deref().is_none_or(|s| s == source)
    })
}

/// The route a card matches.
pub fn matching<'a>(
    routes: &'a [RouteConfig],
    card: &ApprovalRequestBody,
) -> Option<&'a RouteConfig> {
    first(routes, Facts::of(card))
}

/// Whether a call off the floor, of `class` from `source` (`None`: the built-in agent), is
/// routed to more than one person: then no rule, grant, mode or reviewer answers it (a card
/// on the floor is asked anyway). Asked before the pipeline decides.
pub fn held_for_people(routes: &[RouteConfig], class: ToolClass, source: Option<&str>) -> bool {
    let facts = Facts {
        floor: false,
        class,
        decision: class == ToolClass::Decision,
        source,
    };
    first(routes, facts).is_some_and(|route| route.quorum > 1)
}

/// Whether a card's route takes standing answers away: more than one person must answer.
pub fn needs_people(card: &ApprovalRequestBody) -> bool {
    card.route.as_ref().is_some_and(|r| r.quorum > 1)
}

/// The route the card carries from now on: the matching route's approvers, quorum and
/// escalation (its time from the card's own `created_at`), and the session's owner.
pub fn snapshot(
    routes: &[RouteConfig],
    card: &ApprovalRequestBody,
    owner: Option<&str>,
) -> Option<CardRoute> {
    let route = matching(routes, card)?;
    let escalate_at = route.escalate_after_secs.map(|secs| {
        let ms = i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX);
        card.created_at.plus_ms(ms)
    });
    Some(CardRoute {
        approvers: route.approvers.clone(),
        quorum: route.quorum,
        escalate_to: route.escalate_to.clone(),
        escalate_at,
        owner: owner.map(crate::protocol::email_key),
        edit: None,
    })
}

/// Puts the matching route on a card as it is made. A card several people must approve
/// offers no Allow always: the standing rule would answer the next one for them.
pub fn route_card(routes: &[RouteConfig], card: &mut ApprovalRequestBody, owner: Option<&str>) {
    card.route = snapshot(routes, card, owner);
    if needs_people(card) {
        card.allowed_decisions
            .retain(|d| *d != Decision::AllowAlways);
        card.suggested_rule = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::config::Config;

    fn routes(text: &str) -> Vec<RouteConfig> {
        Config::parse(text, std::path::Path::new("c.toml"))
            .unwrap()
            .approvals
            .route
    }

    fn card(class: ToolClass, reason: GateReason, source: Option<&str>) -> ApprovalRequestBody {
        let mut card =
            crate::server::review::test_cards::card("shell", class, serde_json::json!({}));
        card.reason = reason;
        card.source = source.map(str::to_owned);
        card
    }

    #[test]
    fn the_first_route_that_covers_a_card_wins() {
        let r = routes(
            "[[approvals.route]]\nwhen = \"floor\"\napprovers = [\"group:sec\"]\nquorum = 2\n\
             [[approvals.route]]\nwhen = \"exec\"\nsource = \"codex\"\napprovers = [\"owner\"]\n\
             [[approvals.route]]\nwhen = \"edit\"\nsource = \"countersign\"\napprovers = [\"role:admin\"]\n",
        );
        let floor = card(ToolClass::Edit, GateReason::SafetyFloor, None);
        assert_eq!(snapshot(&r, &floor, None).unwrap().quorum, 2);
        let codex = card(ToolClass::Exec, GateReason::Mode, Some("codex"));
        assert_eq!(
            snapshot(&r, &codex, Some("Bob@Example.com"))
                .unwrap()
                .owner
                .as_deref(),
            Some("bob@example.com")
        );
        assert!(snapshot(&r, &card(ToolClass::Exec, GateReason::Mode, None), None).is_none());
        assert!(snapshot(&r, &card(ToolClass::Edit, GateReason::Mode, None), None).is_some());
        assert!(
            snapshot(
                &r,
                &card(ToolClass::Edit, GateReason::Mode, Some("codex")),
                None
            )
            .is_none()
        );
        assert!(snapshot(&r, &card(ToolClass::Read, GateReason::Mode, None), None).is_none());
    }

    /// A card two people must approve offers no Allow always; one a single approver answers
    /// still does.
    #[test]
    fn a_quorum_card_offers_no_standing_answer() {
        let r = routes(
            "[[approvals.route]]\nwhen = \"exec\"\napprovers = [\"group:maintainers\"]\nquorum = 2\n\
             [[approvals.route]]\nwhen = \"edit\"\napprovers = [\"owner\"]\n",
        );
        let offering = |class| {
            let mut c = card(class, GateReason::Mode, None);
            c.allowed_decisions.push(Decision::AllowAlways);
            c.suggested_rule = Some(crate::protocol::RuleSuggestion {
                tool: "shell".into(),
                pattern: "ls *".into(),
                approved_before: 0,
            });
            c
        };
        let mut exec = offering(ToolClass::Exec);
        route_card(&r, &mut exec, None);
        assert!(!exec.allowed_decisions.contains(&Decision::AllowAlways));
        assert!(exec.suggested_rule.is_none());
        let mut edit = offering(ToolClass::Edit);
        route_card(&r, &mut edit, None);
        assert!(edit.allowed_decisions.contains(&Decision::AllowAlways));
        assert!(held_for_people(&r, ToolClass::Exec, None));
        assert!(!held_for_people(&r, ToolClass::Edit, None));
        assert!(!held_for_people(&r, ToolClass::Read, Some("codex")));
    }

    #[test]
    fn escalation_is_timed_from_the_card() {
        let r = routes(
            "[[approvals.route]]\nwhen = \"any\"\napprovers = [\"owner\"]\nescalate_after_secs = 60\nescalate_to = [\"role:admin\"]\n",
        );
        let c = card(ToolClass::Exec, GateReason::Mode, None);
        let route = snapshot(&r, &c, None).unwrap();
        assert_eq!(route.escalate_at, Some(c.created_at.plus_ms(60_000)));
    }
}
