//! Who may answer a card (issue 41): the approvers an `[[approvals.route]]` names, the route a
//! card snapshots when it is made, and the one eligibility check the server (`decide`) and the
//! page (which buttons to show) both run, so they cannot disagree.

use std::fmt;

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr, VariantArray, VariantNames};

use super::spelled::spelled;
use super::{Role, Timestamp, email_key};

spelled!(RouteWhen);

/// Which cards a route is for: the safety floor's, a class's, or any.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteWhen {
    /// A card on the safety floor (whatever its class).
    Floor,
    Exec,
    Edit,
    Config,
    /// A checkpoint or a plan.
    Decision,
    Any,
}

/// The longest group name (as the people routes allow).
const MAX_GROUP_CHARS: usize = 64;

/// One entry of a route's `approvers` (or `escalate_to`): who it lets answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Approver {
    /// `group:<name>`: anyone in that group (groups compare exactly, as they are stored).
    Group(String),
    /// `role:<role>`: anyone with that role; `role:admin` is also the admin's own credentials.
    Role(Role),
    /// `person:<email>`: that person (the address lowercased in ASCII, as people are keyed).
    Person(String),
    /// `owner`: the person whose session it is.
    Owner,
}

/// Why an approver's spelling was refused (the config error names the entry with it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("approver `{entry}` {problem}")]
pub struct BadApprover {
    pub entry: String,
    pub problem: &'static str,
}

impl Approver {
    /// Reads `group:<name>`, `role:<role>`, `person:<email>` or `owner`, exactly (no spaces,
    /// no other case for the kind or the role).
    pub fn parse(entry: &str) -> Result<Approver, BadApprover> {
        let bad = |problem| BadApprover {
            entry: entry.chars().take(120).collect(),
            problem,
        };
        if entry == "owner" {
            return Ok(Approver::Owner);
        }
        let Some((kind, rest)) = entry.split_once(':') else {
            return Err(bad(
                "must be `group:<name>`, `role:<admin|approver|viewer>`, `person:<email>` or `owner`",
            ));
        };
        match kind {
            "group" if plain_group(rest) => Ok(Approver::Group(rest.to_owned())),
            "group" => Err(bad(
                "names no group: a group is 1 to 64 letters, digits, `-`, `_` or `.`",
            )),
            "role" => Role::parse(rest)
                .map(Approver::Role)
                .ok_or_else(|| bad("names no role: roles are admin, approver and viewer")),
            "person" if plain_email(rest) => Ok(Approver::Person(email_key(rest))),
            "person" => Err(bad("names no email address (person:name@example.com)")),
            _ => Err(bad(
                "must start with `group:`, `role:` or `person:`, or be `owner`",
            )),
        }
    }

    /// How a card says it: "group maintainers", "alice@example.com", "the session's owner".
    pub fn label(&self) -> String {
        match self {
            Approver::Group(name) => format!("group {name}"),
            Approver::Role(role) => format!("role {role}"),
            Approver::Person(email) => email.clone(),
            Approver::Owner => "the session's owner".into(),
        }
    }
}

fn plain_group(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_GROUP_CHARS
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn plain_email(email: &str) -> bool {
    email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
        })
}

impl fmt::Display for Approver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Approver::Group(name) => write!(f, "group:{name}"),
            Approver::Role(role) => write!(f, "role:{role}"),
            Approver::Person(email) => write!(f, "person:{email}"),
            Approver::Owner => f.write_str("owner"),
        }
    }
}

impl Serialize for Approver {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Approver {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Approver::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// The most approvals a route may ask for.
pub const MAX_QUORUM: u32 = 10;

/// The route a card matched, as it was when the card was made (a later config change does
/// not move a waiting card): who may answer it, how many, and when it goes to more people.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CardRoute {
    pub approvers: Vec<Approver>,
    /// How many distinct people must approve the same digest (1: the first approval).
    pub quorum: u32,
    /// Who it goes to also once `escalate_at` passes unanswered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate_to: Vec<Approver>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_at: Option<Timestamp>,
    /// The person whose session it is (their email), whom `owner` names; `None` for a session
    /// the admin's own credentials made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The last edit an approver made while the card waited for its quorum: what runs if it
    /// is approved. The card's `digest` is then the edit's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<CardEdit>,
}

/// An approver's edit of a card that needs several approvals: it changes the card (a new
/// digest, shown to the others) and counts as its author's approval of the change, so the
/// count starts again.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CardEdit {
    /// Replacement arguments (a call) or the revised proposal (text).
    pub edits: serde_json::Value,
    /// What the edit changed against what the agent proposed, as a unified diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_diff: Option<String>,
    /// The digest of the card as edited.
    pub digest: String,
    /// Who edited it (and so approved it), and when.
    pub by: GivenApproval,
}

impl CardEdit {
    /// The card as this edit leaves it: the edit's digest, the edit on its route.
    pub fn apply(&self, card: &mut super::ApprovalRequestBody) {
        card.digest = self.digest.clone();
        if let Some(route) = card.route.as_mut() {
            route.edit = Some(self.clone());
        }
    }
}

/// Who is answering, for the eligibility check: the admin's own credentials (the startup
/// token, its browser login, tokens no person owns), or a person with their roles and groups
/// as the people store has them now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answerer<'a> {
    Admin,
    Person {
        email: &'a str,
        roles: &'a [Role],
        groups: &'a [String],
    },
}

impl Answerer<'_> {
    /// How approvals count this answerer (distinct people): their email, or `admin`.
    pub fn key(&self) -> String {
        match self {
            Answerer::Admin => "admin".into(),
            Answerer::Person { email, .. } => email_key(email),
        }
    }
}

/// Whether one approver entry names `who`. The admin matches `role:admin` only; a person
/// must also be one who answers at all (admin or approver: a viewer answers nothing).
pub fn names(approver: &Approver, who: &Answerer<'_>, owner: Option<&str>) -> bool {
    let Answerer::Person {
        email,
        roles,
        groups,
    } = who
    else {
        return *approver == Approver::Role(Role::Admin);
    };
    if !roles
        .iter()
        .any(|r| matches!(r, Role::Admin | Role::Approver))
    {
        return false;
    }
    match approver {
        Approver::Group(name) => groups.iter().any(|g| g == name),
        Approver::Role(role) => roles.contains(role),
        Approver::Person(wanted) => email_key(email) == *wanted,
        Approver::Owner => owner.is_some_and(|o| email_key(o) == email_key(email)),
    }
}

impl CardRoute {
    /// Everyone it is routed to now: its approvers, and `escalate_to` once `escalated`.
    pub fn routed_to(&self, escalated: bool) -> impl Iterator<Item = &Approver> {
        let more: &[Approver] = if escalated { &self.escalate_to } else { &[] };
        self.approvers.iter().chain(more)
    }

    /// Whether `who` may answer this card (the one check, on the server and on the page).
    pub fn may_answer(&self, who: &Answerer<'_>, escalated: bool) -> bool {
        self.routed_to(escalated)
            .any(|a| names(a, who, self.owner.as_deref()))
    }

    /// The card's line: "Needs 2 of: group maintainers, alice@example.com".
    pub fn needs(&self, escalated: bool) -> String {
        let who: Vec<String> = self.routed_to(escalated).map(Approver::label).collect();
        match self.quorum {
            1 => format!("Needs one of: {}", who.join(", ")),
            n => format!("Needs {n} of: {}", who.join(", ")),
        }
    }
}

/// Where a waiting routed card stands: the approvals given so far (on any digest; those on
/// the card's current digest count), and whether it went also to `escalate_to`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RouteState {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<GivenApproval>,
    #[serde(default)]
    pub escalated: bool,
}

impl RouteState {
    /// The approvals that count toward the card as it is now (its `digest`).
    pub fn counted<'a>(&'a self, digest: &'a str) -> impl Iterator<Item = &'a GivenApproval> {
        self.approvals.iter().filter(move |a| a.digest == digest)
    }
}

/// One approval counted toward a card's quorum: who (email or `admin`), their name as the
/// people store has it, when, and the digest they approved.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GivenApproval {
    pub who: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub at: Timestamp,
    pub digest: String,
}

/// Who reads the page, as far as a routed card's buttons go: the signed-in person's email,
/// roles and groups (as the server read them for this page), or nobody named (the admin's own
/// credentials: `email` empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageApprover {
    pub email: String,
    pub roles: Vec<Role>,
    pub groups: Vec<String>,
}

impl PageApprover {
    pub fn answerer(&self) -> Answerer<'_> {
        if self.email.is_empty() {
            return Answerer::Admin;
        }
        Answerer::Person {
            email: &self.email,
            roles: &self.roles,
            groups: &self.groups,
        }
    }

    /// `data-roles`: the roles' names, space-separated.
    pub fn roles_attr(&self) -> String {
        let names: Vec<&str> = self.roles.iter().map(|r| r.as_str()).collect();
        names.join(" ")
    }

    /// `data-groups`: the groups, space-separated (a group name holds no space).
    pub fn groups_attr(&self) -> String {
        self.groups.join(" ")
    }

    /// Read back from `data-person`, `data-roles` and `data-groups`.
    pub fn parse(email: &str, roles: &str, groups: &str) -> PageApprover {
        PageApprover {
            email: email.to_owned(),
            roles: roles.split_whitespace().filter_map(Role::parse).collect(),
            groups: groups.split_whitespace().map(str::to_owned).collect(),
        }
    }
}

/// The longest display name a card shows (a provider's `name` claim is anyone's to choose).
const MAX_SHOWN_NAME_CHARS: usize = 64;

impl GivenApproval {
    /// How a card names who gave it: their name *and* their email ("Alice Example
    /// (alice@example.com)"), since a display name is whatever its owner typed at the provider
    /// and could read as another approver; the email alone without a name; "the admin" for the
    /// admin's own credentials. The name is one line, cut to `MAX_SHOWN_NAME_CHARS`.
    pub fn shown_name(&self) -> String {
        if self.who == "admin" {
            return "the admin".to_owned();
        }
        let name: String = self
            .name
            .as_deref()
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(MAX_SHOWN_NAME_CHARS)
            .collect();
        let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
        if name.is_empty() || name.eq_ignore_ascii_case(&self.who) {
            self.who.clone()
        } else {
            format!("{name} ({})", self.who)
        }
    }
}

/// How a resolved routed card names its approvers: "by Alice Example (alice@…), and by
/// bob@…" (`GivenApproval::shown_name`).
pub fn by_each(approvals: &[GivenApproval]) -> String {
    let names: Vec<String> = approvals
        .iter()
        .map(|a| format!("by {}", a.shown_name()))
        .collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(entry: &str) -> Result<Approver, BadApprover> {
        Approver::parse(entry)
    }

    #[test]
    fn approvers_read_their_four_forms_and_write_them_back() {
        for entry in [
            "group:maintainers",
            "role:admin",
            "role:approver",
            "person:alice@example.com",
            "owner",
        ] {
            assert_eq!(parse(entry).unwrap().to_string(), entry);
        }
        assert_eq!(
            parse("person:ALICE@Example.COM").unwrap(),
            Approver::Person("alice@example.com".into())
        );
    }

    /// Spellings that would name nobody (or everybody) are refused, each naming the entry.
    #[test]
    fn spellings_that_name_nobody_are_refused() {
        for entry in [
            "group:",
            "group: maintainers",
            "group:a b",
            "role:",
            "role:Admin",
            "role:root",
            "role:approvers",
            "person:",
            "person:alice",
            "person:@example.com",
            "person: alice@example.com",
            "Owner",
            "owner ",
            "",
            "maintainers",
            "groups:maintainers",
            "GROUP:maintainers",
            "*",
        ] {
            let err = parse(entry).expect_err(entry);
            assert!(err.to_string().contains(&format!("`{entry}`")), "{err}");
        }
    }

    fn route(approvers: &[&str], quorum: u32) -> CardRoute {
        CardRoute {
            approvers: approvers.iter().map(|a| parse(a).unwrap()).collect(),
            quorum,
            escalate_to: vec![parse("person:carol@example.com").unwrap()],
            escalate_at: None,
            owner: Some("Bob@Example.com".into()),
            edit: None,
        }
    }

    #[test]
    fn who_may_answer_follows_the_route() {
        let groups = vec!["maintainers".to_owned()];
        let approver = [Role::Approver];
        let alice = Answerer::Person {
            email: "alice@example.com",
            roles: &approver,
            groups: &groups,
        };
        let bob = Answerer::Person {
            email: "bob@example.com",
            roles: &approver,
            groups: &[],
        };
        let carol = Answerer::Person {
            email: "CAROL@example.com",
            roles: &approver,
            groups: &[],
        };
        let r = route(&["group:maintainers"], 2);
        assert!(r.may_answer(&alice, false));
        assert!(!r.may_answer(&bob, false));
        assert!(!r.may_answer(&Answerer::Admin, false));
        assert!(!r.may_answer(&carol, false));
        assert!(r.may_answer(&carol, true), "escalation adds escalate_to");
        assert!(route(&["owner"], 1).may_answer(&bob, false));
        assert!(!route(&["owner"], 1).may_answer(&alice, false));
        assert!(route(&["role:admin"], 1).may_answer(&Answerer::Admin, false));
        assert!(!route(&["role:approver"], 1).may_answer(&Answerer::Admin, false));
        assert!(!route(&["owner"], 1).may_answer(&Answerer::Admin, false));
    }

    /// A viewer answers nothing, whatever group they are in or however they are named.
    #[test]
    fn a_viewer_answers_nothing() {
        let groups = vec!["maintainers".to_owned()];
        let viewer = Answerer::Person {
            email: "vic@example.com",
            roles: &[Role::Viewer],
            groups: &groups,
        };
        for approvers in [
            &["group:maintainers"][..],
            &["role:viewer"],
            &["person:vic@example.com"],
        ] {
            assert!(!route(approvers, 1).may_answer(&viewer, false));
        }
    }

    #[test]
    fn a_resolved_card_names_each_approver() {
        let given = |who: &str, name: Option<&str>| GivenApproval {
            who: who.into(),
            name: name.map(str::to_owned),
            at: Timestamp::from("2026-01-01T00:00:00.000Z"),
            digest: "d".into(),
        };
        assert_eq!(
            by_each(&[given("alice@x.io", Some("Alice")), given("bob@x.io", None)]),
            "by Alice (alice@x.io), and by bob@x.io"
        );
        assert_eq!(
            by_each(&[
                given("a@x.io", Some("A")),
                given("admin", None),
                given("c@x.io", Some("C"))
            ]),
            "by A (a@x.io), by the admin, and by C (c@x.io)"
        );
        // A name chosen to read as another approver, or as page text, shows whose it is.
        assert_eq!(
            given("dave@x.io", Some("bob@x.io")).shown_name(),
            "bob@x.io (dave@x.io)"
        );
        assert_eq!(
            given("dave@x.io", Some("the admin\nand by Bob")).shown_name(),
            "the admin and by Bob (dave@x.io)"
        );
        assert_eq!(given("admin", Some("Alice")).shown_name(), "the admin");
        assert_eq!(given("e@x.io", Some(" E@X.io ")).shown_name(), "e@x.io");
        assert_eq!(
            given("f@x.io", Some(&"F".repeat(500))).shown_name(),
            format!("{} (f@x.io)", "F".repeat(64))
        );
    }

    #[test]
    fn the_page_reads_back_who_it_is_for() {
        let page = PageApprover::parse("alice@x.io", "approver nonsense", "maintainers ops");
        assert_eq!(page.roles, vec![Role::Approver]);
        assert_eq!(page.groups_attr(), "maintainers ops");
        assert_eq!(PageApprover::parse("", "", "").answerer(), Answerer::Admin);
    }

    #[test]
    fn the_card_says_who_may_answer() {
        assert_eq!(
            route(&["group:maintainers", "person:alice@example.com"], 2).needs(false),
            "Needs 2 of: group maintainers, alice@example.com"
        );
        assert_eq!(
            route(&["owner"], 1).needs(true),
            "Needs one of: the session's owner, carol@example.com"
        );
    }
}
