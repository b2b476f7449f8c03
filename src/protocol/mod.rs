//! Wire types shared by the server and the browser: exactly the JSON of the wire protocol
//! (docs/api.md).
//!
//! A session's and a gate's ids are `SessionId` and `ApprovalId` (`ids.rs`: text on the wire, a
//! type each in the code); the other ids are plain strings; times are `Timestamp` (a string
//! with one parser of its own), so the wasm bundle carries neither `uuid` nor `chrono`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::{Display, EnumString, IntoStaticStr, VariantArray, VariantNames};

mod actor;
mod answer;
mod canonical;
mod changes;
mod de;
mod error_code;
mod floor_diff;
mod gate_meaning;
mod ids;
mod outside;
mod people;
mod review;
mod route;
mod spelled;
mod stats;
mod stored;
mod time;
pub use actor::Actor;
pub use answer::{DecisionRequest, RuleRequest};
pub use canonical::canonical_json;
pub use changes::{Change, ChangeKind};
pub use error_code::ErrorCode;
pub use floor_diff::FloorDiff;
pub use gate_meaning::EditTarget;
pub use ids::{ApprovalId, CallId, RuleId, SessionId, TurnId};
pub use outside::{
    AgentOsUser, Capabilities, CreatedToken, GateState, GateStatus, GateTool, MCP_SOURCE, OpenGate,
    PhoneLogin, Scope, TOKEN_OWNER_ADMIN, TokenInfo,
};
pub use people::{NewPerson, Person, PersonChange, Role, email_key};
pub use review::{
    Answered, ClassStanding, Predicted, RecentPrediction, ResolutionReview, ReviewMode,
    ReviewState, ReviewerKind,
};
pub use route::{
    Answerer, Approver, BadApprover, CardEdit, CardRoute, GivenApproval, MAX_QUORUM, PageApprover,
    RouteState, RouteWhen, by_each,
};
use spelled::spelled;
pub use stats::{DayFigures, DecideBucket, DecisionFigures, DecisionStats};
pub use stored::{Spelling, Stored};

spelled!(
    Mode,
    ModeSource,
    ToolClass,
    Verdict,
    ToolStatus,
    TurnStatus,
    EventKind,
    GateKind,
    GateReason,
    Decision,
    DecisionKind or Other,
    AnsweredBy,
    TimeoutOutcome,
    RuleScope,
    Via,
    ConfigSource,
    ChangeKind or Unknown,
    ReviewMode,
    ReviewerKind,
    Predicted,
    Answered,
);
pub use time::Timestamp;

/// How much the person wants to be asked. Per message; the session remembers the last one.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    Plan,
    #[default]
    Ask,
    AutoEdit,
    Yolo,
}

impl Mode {
    /// What the mode picker shows.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Plan => "Plan",
            Mode::Ask => "Ask",
            Mode::AutoEdit => "Auto-edit",
            Mode::Yolo => "Yolo",
        }
    }

    /// The one-line description shown on hover and focus (ui.md "Modes").
    pub fn description(self) -> &'static str {
        match self {
            Mode::Plan => "reads only; changes nothing",
            Mode::Ask => "asks before every change",
            Mode::AutoEdit => "edits files freely, asks before commands",
            Mode::Yolo => "runs everything except sensitive actions",
        }
    }
}

/// Who changed a session's mode.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeSource {
    User,
    Message,
    Restore,
}

/// What a tool may do to the world; the policy keys on it.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolClass {
    Read,
    Edit,
    Exec,
    Config,
    Decision,
    /// Reads from the network (Claude Code's `WebFetch`, `WebSearch`): nothing changes here,
    /// but what it sends can carry anything out, so it asks in every mode but yolo.
    Network,
}

/// The policy's answer for one tool call.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Run,
    Ask,
    Refuse,
}

#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStatus {
    Ok,
    Error,
    Denied,
    Refused,
    Timeout,
    Cancelled,
    Interrupted,
}

#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnStatus {
    Completed,
    Cancelled,
    Failed,
    Stopped,
}

/// One entry of a session's log. `seq` is absent only on transient events (`assistant_delta`).
/// `Deserialize` is written out in `de.rs` (the derive would buffer the flattened body).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Event {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    #[serde(flatten)]
    pub body: EventBody,
}

impl Event {
    /// The `event:` name on the SSE stream and the `type` field in JSON.
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }
}

/// `Deserialize` is written out in `de.rs` (the derive would buffer the internally tagged body).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    UserMessage {
        text: String,
        approval_mode: Mode,
    },
    ModeChanged {
        previous: Mode,
        next: Mode,
        source: ModeSource,
        /// Who changed it, from the credential (`browser`, `token:<name>`); absent for a
        /// restore and in events written before it existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actor: Option<String>,
    },
    AssistantDelta {
        text: String,
    },
    AssistantMessage {
        text: String,
        html: String,
    },
    ToolCall {
        call_id: CallId,
        tool: String,
        args: Value,
        class: ToolClass,
        verdict: Verdict,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule_id: Option<RuleId>,
        /// The pattern of the rule that let it run, as the rule read then (the row says
        /// "allowed by rule `git status *`" even after the rule is gone).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule_pattern: Option<String>,
    },
    /// A gate opened: the turn waits for a person's answer.
    ApprovalRequest(Box<ApprovalRequestBody>),
    /// A gate's one and only resolution.
    ApprovalResolved(Resolution),
    ToolStarted {
        call_id: CallId,
    },
    ToolResult {
        call_id: CallId,
        tool: String,
        status: ToolStatus,
        output: String,
    },
    TurnFinished {
        status: TurnStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The reviewer escalated a card of a class the person trusts it with: the card waits for
    /// the person with this concern on it. Committed only while the card waits, never in
    /// `shadow` mode or for an untrusted class (those predictions stay unseen until the answer).
    ReviewConcern {
        approval_id: ApprovalId,
        reason: String,
    },
    /// One person's approval counted toward a routed card's quorum (issue 41): the card waits
    /// for more, and shows who approved so far. (The approval that reaches the quorum is in the
    /// card's `approval_resolved` instead.)
    ApprovalGiven {
        approval_id: ApprovalId,
        approval: GivenApproval,
        /// The approval was an edit: the card as it is from now on (its new digest).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edit: Option<CardEdit>,
    },
    /// A routed card nobody answered by its `escalate_at`: from now on it goes also to its
    /// route's `escalate_to` (issue 41). Its deadline stays.
    ApprovalEscalated {
        approval_id: ApprovalId,
        escalate_to: Vec<Approver>,
    },
}

/// The type of an event: its `type` field and its SSE `event:` name.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    UserMessage,
    ModeChanged,
    AssistantDelta,
    AssistantMessage,
    ToolCall,
    ApprovalRequest,
    ApprovalResolved,
    ToolStarted,
    ToolResult,
    TurnFinished,
    ReviewConcern,
    ApprovalGiven,
    ApprovalEscalated,
}

impl EventBody {
    pub fn event_kind(&self) -> EventKind {
        match self {
            EventBody::UserMessage { .. } => EventKind::UserMessage,
            EventBody::ModeChanged { .. } => EventKind::ModeChanged,
            EventBody::AssistantDelta { .. } => EventKind::AssistantDelta,
            EventBody::AssistantMessage { .. } => EventKind::AssistantMessage,
            EventBody::ToolCall { .. } => EventKind::ToolCall,
            EventBody::ApprovalRequest(_) => EventKind::ApprovalRequest,
            EventBody::ApprovalResolved(_) => EventKind::ApprovalResolved,
            EventBody::ToolStarted { .. } => EventKind::ToolStarted,
            EventBody::ToolResult { .. } => EventKind::ToolResult,
            EventBody::TurnFinished { .. } => EventKind::TurnFinished,
            EventBody::ReviewConcern { .. } => EventKind::ReviewConcern,
            EventBody::ApprovalGiven { .. } => EventKind::ApprovalGiven,
            EventBody::ApprovalEscalated { .. } => EventKind::ApprovalEscalated,
        }
    }

    pub fn kind(&self) -> &'static str {
        self.event_kind().as_str()
    }
}

/// What kind of thing a gate asks about.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateKind {
    Tool,
    Decision,
    Budget,
    /// An outside agent's call (Claude Code, Codex, opencode, an MCP host): `tool` and `args`
    /// are its own tool name and input.
    External,
}

/// Why a call was gated.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateReason {
    Mode,
    SafetyFloor,
    AgentCheckpoint,
    Budget,
}

/// A person's answer to a gate, or what resolved it without one.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    Approve,
    Edit,
    Deny,
    AllowAlways,
    Timeout,
    Cancelled,
}

/// What a decision card (an agent's checkpoint) decides: a closed set the agent picks from.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecisionKind {
    TargetColumn,
    PrepPlan,
    ModelShortlist,
    ExpensiveRun,
    /// Leaving plan mode: only `exit_plan` makes it (approving it changes the mode, which a
    /// checkpoint the agent asks for must never do).
    Plan,
    /// Anything else; a kind this build does not know reads as this.
    Other,
}

impl DecisionKind {
    /// How a person reads it (`prep plan`).
    pub fn label(self) -> String {
        self.as_str().replace('_', " ")
    }
}

impl Decision {
    /// The decisions a person may send (timeout and cancelled are the server's).
    pub fn parse_answer(s: &str) -> Option<Decision> {
        [
            Decision::Approve,
            Decision::Edit,
            Decision::Deny,
            Decision::AllowAlways,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }

    /// Whether the gated action goes ahead under this decision.
    pub fn lets_it_run(self) -> bool {
        matches!(
            self,
            Decision::Approve | Decision::Edit | Decision::AllowAlways
        )
    }
}

#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnsweredBy {
    User,
    Timeout,
    Rule,
    System,
    /// The reviewer, for a class the person trusted it with (issue 40): only ever an approval.
    Reviewer,
}

#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutOutcome {
    Deny,
    ProceedUnapproved,
}

#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleScope {
    Session,
    Workspace,
}

/// Everything an approval card shows, except the turn id (which the event carries).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ApprovalRequestBody {
    pub approval_id: ApprovalId,
    pub session_id: SessionId,
    pub call_id: CallId,
    pub kind: GateKind,
    pub tool: String,
    pub class: ToolClass,
    pub args: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_kind: Option<DecisionKind>,
    pub title: String,
    pub summary: String,
    pub proposal_md: String,
    pub proposal_html: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    pub reason: GateReason,
    /// The reason in words, for the card ("touches .env — always asks, even in Yolo").
    pub reason_detail: String,
    pub allowed_decisions: Vec<Decision>,
    pub digest: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub timeout_outcome: TimeoutOutcome,
    /// The rule Allow always would create by default (tool · pattern), when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_rule: Option<RuleSuggestion>,
    /// A plan card's default execution mode (the mode before plan); the person may pick another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<Mode>,
    /// What the agent itself says it is doing, in its own words: the built-in agent's text
    /// before the call, an outside call's `description`, or the last thing Claude Code or
    /// Codex said (read from its transcript by the hook). Its claim, shown as such — never
    /// instead of the arguments, never part of the digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_says: Option<String>,
    /// Where an outside agent's call runs (its gate's `cwd`): shown on the card, and part of
    /// the reviewer's subject for a command (the same words in another folder are another
    /// command). `None` for the built-in agent, whose calls run in its workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The outside agent that asks (its gate's `source`, which its token claimed): past
    /// answers count for the reviewer only within one agent, whose tool and sandbox they were
    /// given for. `None` for the built-in agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The `[[approvals.route]]` this card matched when it was made (issue 41): who may answer
    /// it and how many must. `None`: any approver, as before routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<CardRoute>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RuleSuggestion {
    pub tool: String,
    pub pattern: String,
    /// How many calls this pattern covers that were approved by hand in this session: from
    /// three on, the card recommends the rule.
    #[serde(default)]
    pub approved_before: u32,
}

/// An ApprovalRequest as listed outside the event stream (snapshot, inbox). `Deserialize` is
/// written out in `de.rs` (the derive would buffer the flattened body).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ApprovalRequest {
    pub turn_id: TurnId,
    #[serde(flatten)]
    pub body: ApprovalRequestBody,
    /// The reviewer's concern on a card it escalated in a class the person trusts it with
    /// (the `review_concern` event's reason), as the pending card is listed; absent otherwise.
    /// An outside agent's gate state never carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_concern: Option<String>,
    /// A routed card's approvals so far and whether it was escalated (issue 41), as the
    /// pending card is listed; absent for a card with no route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_state: Option<RouteState>,
}

/// How a gate was resolved; the `approval_resolved` event and the 409/410 answers carry it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Resolution {
    pub approval_id: ApprovalId,
    pub decision: Decision,
    pub answered_by: AnsweredBy,
    /// Exactly who: `browser`, `token:<name>`, `rule:<id>`, `mode`, `timeout` or `cancel` —
    /// from the credential or the cause, never from a request body. Empty in events written
    /// before it existed.
    #[serde(default)]
    pub actor: String,
    pub resolved_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Replacement arguments (kind tool) or the revised proposal (kind decision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<Value>,
    /// For an edit: what it changed, as a unified diff per changed argument (`--- proposed
    /// command` / `+++ edited command`), so the record shows what ran. Absent when the edit
    /// changed nothing, and in events written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_diff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<RuleId>,
    /// The browser tab that answered, so it can say "you" and others "another tab".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// For a plan card: the mode the session leaves plan mode for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<Mode>,
    /// How a person's answer reached the server when it was not a page or the API: `push`
    /// (a notification's Approve or Deny). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The passkey whose assertion stepped this answer up (its name), when one was needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passkey: Option<String>,
    /// The browser login the answer came through, from the credential (never the body): a
    /// browser's own login (`actor` `browser`) or one made with a named token (a phone's
    /// `token:<name>`). Absent for a bearer's answer (the API, the CLI) and in events written
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<LoginRef>,
    /// What the reviewer predicted for this card (issue 40), when it was shown it: only on an
    /// answered card, never before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ResolutionReview>,
    /// The approvals that made a routed card's quorum (issue 41), oldest first, the last one
    /// this answer's: "Approved by Alice, and by Bob". Absent where one answer resolves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved_by: Vec<GivenApproval>,
}

/// Which browser login did something, and on what device: how a card says "you, in another
/// tab" or "you, on Chrome on Pixel 7", and the audit names a browser login. The id is a
/// digest that grants nothing (not the cookie, nor the hash the server finds it by).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LoginRef {
    pub id: String,
    /// The browser in a few words, from its `User-Agent` when it logged in ("Chrome on
    /// Pixel 7"); empty for a login made before devices were kept.
    #[serde(default)]
    pub device: String,
}

/// The surface an answer came through, where it was not the page or the API.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A push notification's action, with its one-time capability.
    Push,
}

impl Resolution {
    /// What this answer was, the one reading every count uses (the reviewer's record, the
    /// person's figures): the reviewer's own answer, a person's, the deadline's; `None` for
    /// a cancel and for a rule's or the system's answer (a mode switch), which say nothing
    /// of what the person would have done.
    pub fn answered(&self) -> Option<Answered> {
        match self.answered_by {
            AnsweredBy::Reviewer => Some(Answered::Reviewer),
            AnsweredBy::User | AnsweredBy::Timeout => Answered::of(self.decision),
            AnsweredBy::Rule | AnsweredBy::System => None,
        }
    }

    /// A resolution with nothing but who decided what, now (`resolved_at` as given).
    pub fn plain(
        approval_id: &ApprovalId,
        decision: Decision,
        answered_by: AnsweredBy,
        actor: &str,
        resolved_at: Timestamp,
    ) -> Self {
        Resolution {
            approval_id: approval_id.clone(),
            decision,
            answered_by,
            actor: actor.to_owned(),
            resolved_at,
            reason: None,
            edits: None,
            edit_diff: None,
            rule_id: None,
            client_id: None,
            execution_mode: None,
            via: None,
            passkey: None,
            login: None,
            review: None,
            approved_by: Vec::new(),
        }
    }
}

/// A standing rule created by Allow always.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Rule {
    pub id: RuleId,
    pub tool: String,
    pub pattern: String,
    pub scope: RuleScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_approval: Option<ApprovalId>,
    pub uses: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Timestamp>,
    /// When the rule stops applying, if it was given an expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// How many calls the rule may answer (absent: no limit); the approval that made it is
    /// not one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u64>,
    /// Why the rule no longer applies, when it has lapsed (absent while it is in force). The
    /// store sets it as it lists rules, by the clock of that moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lapsed: Option<RuleLapse>,
    /// The outside agent the grant belongs to (`claude-code`, `codex`, …): the source of the
    /// session that made it, stored with the grant; absent for the built-in agent's. A grant
    /// answers only calls of its own agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Why a grant that was not revoked no longer answers calls.
#[derive(IntoStaticStr, VariantArray)]
#[strum(serialize_all = "snake_case")]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RuleLapse {
    /// Its `expires_at` has come.
    Expired,
    /// It answered `max_uses` calls.
    UsedUp,
}

impl Rule {
    /// Why this rule no longer applies at `now_ms`, if it does not: used up first (a count is
    /// final), then expired. An unreadable expiry has passed (fail closed).
    pub fn lapse_at(&self, now_ms: i64) -> Option<RuleLapse> {
        if self.max_uses.is_some_and(|max| self.uses >= max) {
            Some(RuleLapse::UsedUp)
        } else if self
            .expires_at
            .as_ref()
            .is_some_and(|t| t.has_passed(now_ms))
        {
            Some(RuleLapse::Expired)
        } else {
            None
        }
    }

    /// This rule with its `lapsed` set as of `now_ms`.
    pub fn as_of(mut self, now_ms: i64) -> Rule {
        self.lapsed = self.lapse_at(now_ms);
        self
    }
}

/// A passkey assertion as a page sends it: the sealed ceremony it answers and the browser's
/// `PublicKeyCredential` (JSON, base64url fields).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PasskeyAnswer {
    pub ceremony: Option<String>,
    pub credential: Option<Value>,
}

/// What a decision from the UI came to: it stood, or another answer had won the race.
/// `Deserialize` is written out in `de.rs` (the derive would buffer the internally tagged value).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DecideOutcome {
    Decided {
        resolution: Resolution,
    },
    Lost {
        resolution: Resolution,
    },
    /// A routed card that needs several approvals (issue 41): this one was counted, and the
    /// card waits for the rest.
    Counted {
        approval_id: ApprovalId,
        approvals: Vec<GivenApproval>,
        quorum: u32,
    },
}

/// One entry of the append-only, hash-chained audit log.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AuditEntry {
    /// Position in the chain, from 1.
    pub n: u64,
    pub at: Timestamp,
    /// `user:<client id or api>`, `rule:<id>`, `timeout`, `system` or `agent`.
    pub actor: String,
    /// `gate_opened`, `gate_resolved`, `rule_created`, `rule_revoked`, `rule_used`,
    /// `mode_changed` or `config_changed`.
    pub action: String,
    /// What it is about: an approval, rule or session id.
    pub subject: String,
    pub detail: Value,
    pub prev_hash: String,
    /// sha256 over `prev_hash` and the entry's canonical JSON (without `hash`).
    pub hash: String,
}

/// `GET /api/v1/audit/verify`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AuditVerdict {
    pub ok: bool,
    pub entries: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<u64>,
}

/// A session as the API and the sidebar show it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Session {
    pub id: SessionId,
    pub title: String,
    pub created_at: Timestamp,
    pub approval_mode: Mode,
    pub running_turn_id: Option<TurnId>,
    pub pending_approvals: u64,
    /// The outside agent whose gates this session holds (`claude-code`, `codex`, `opencode`,
    /// `mcp`); absent for the built-in agent's sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The title of a session nobody named yet; its first message replaces it.
pub const DEFAULT_SESSION_TITLE: &str = "New session";

/// `GET /api/v1/sessions/{sid}`: everything a page needs to restore a session.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub session: Session,
    pub events: Vec<Event>,
    pub pending: Vec<ApprovalRequest>,
    pub cursor: u64,
}

/// The JSON error body every non-2xx answer carries.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            error: ErrorDetail {
                code,
                message: message.into(),
            },
        }
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error.message)
    }
}

/// Server functions fail with the same JSON error body as the REST routes.
impl leptos::server_fn::error::FromServerFnError for ErrorBody {
    type Encoder = leptos::server_fn::codec::JsonEncoding;

    fn from_server_fn_error(value: leptos::server_fn::error::ServerFnErrorErr) -> Self {
        use leptos::server_fn::error::ServerFnErrorErr as E;
        let code = match &value {
            E::Args(_) | E::MissingArg(_) | E::Deserialization(_) => ErrorCode::InvalidRequest,
            // Never sent. A reply that could not be read is not this: the request may have
            // done its work (an answer recorded), so it must not read "nothing was sent".
            E::Request(_) => ErrorCode::Network,
            E::UnsupportedRequestMethod(_) => ErrorCode::MethodNotAllowed,
            _ => ErrorCode::Internal,
        };
        ErrorBody::new(code, value.to_string())
    }
}

/// `GET /api/v1/config`: the resolved configuration, where each value came from, and whether
/// the file on disk is valid.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ConfigView {
    /// The config file this server reads and writes.
    pub path: String,
    /// Why the file on disk was not applied (the last good config is in force), if it was not.
    #[serde(default)]
    pub error: Option<String>,
    /// `set (masked)` or `not set`: the key itself never leaves the server.
    pub provider_api_key: String,
    pub keys: Vec<ConfigKey>,
}

/// Where a configuration value came from.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// Set in the config file.
    File,
    /// The built-in default.
    Default,
    /// A startup flag (`--addr`, …).
    Flag,
    /// A startup environment variable (`COUNTERSIGN_ADDR`, …).
    Env,
}

/// One key of [`ConfigView`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ConfigKey {
    /// `section.name`, e.g. `tools.shell_timeout_secs`.
    pub key: String,
    pub value: Value,
    #[serde(default)]
    pub default: Option<Value>,
    pub source: ConfigSource,
    /// Refused to the web, the API and the agent; `reason` says why.
    pub protected: bool,
    #[serde(default)]
    pub reason: Option<String>,
    /// Takes effect only after a restart.
    pub restart_required: bool,
    /// What a value means in force, when it does not say (`"auto"`: the number it stands for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The control the Config page edits it with (`server::config::form`).
    #[serde(default)]
    pub input: ConfigInput,
    /// A `choice`'s words; for a `number`, the words it takes besides a number (`auto`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// A `number`'s unit ("seconds", "bytes", "tokens").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// How a config key is edited: its value's kind, as a form control.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ConfigInput {
    /// true or false: a switch.
    Switch,
    /// One of `options`: a select.
    Choice,
    /// A whole number in `unit` (or one of `options`).
    Number,
    /// A list of strings.
    List,
    /// Free text (and whatever this build does not know).
    #[default]
    #[serde(other)]
    Text,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grant lapses used up once its uses reach the limit, expired once its expiry has come
    /// (an unreadable expiry has come: fail closed); `lapsed` is written as the wire spells it.
    #[test]
    fn a_grant_lapses_by_count_or_by_clock() {
        let rule = |uses, max_uses, expires_at: Option<&str>| Rule {
            id: "r".into(),
            tool: "shell".into(),
            pattern: "echo *".into(),
            scope: RuleScope::Workspace,
            session_id: None,
            created_at: Timestamp::from_unix_ms(0),
            created_by_approval: None,
            uses,
            last_used_at: None,
            expires_at: expires_at.map(Timestamp::from),
            max_uses,
            lapsed: None,
            source: None,
        };
        let now = Timestamp::from("2026-12-06T14:00:00.000Z")
            .unix_ms()
            .unwrap_or(0);
        assert_eq!(rule(9, Some(10), None).lapse_at(now), None);
        assert_eq!(
            rule(10, Some(10), None).lapse_at(now),
            Some(RuleLapse::UsedUp)
        );
        assert_eq!(rule(99, None, None).lapse_at(now), None);
        let later = Some("2026-12-06T14:00:00.001Z");
        assert_eq!(rule(0, None, later).lapse_at(now), None);
        let now_exactly = Some("2026-12-06T14:00:00.000Z");
        assert_eq!(
            rule(0, None, now_exactly).lapse_at(now),
            Some(RuleLapse::Expired)
        );
        assert_eq!(
            rule(0, None, Some("soon")).lapse_at(now),
            Some(RuleLapse::Expired)
        );
        let spent = serde_json::to_value(rule(1, Some(1), None).as_of(now)).ok();
        assert_eq!(
            spent.as_ref().map(|v| v["lapsed"].clone()),
            Some("used_up".into())
        );
        let fresh = serde_json::to_value(rule(0, None, None).as_of(now)).ok();
        assert_eq!(fresh.and_then(|v| v.get("lapsed").cloned()), None);
    }

    #[test]
    fn every_event_kind_is_the_type_serde_writes() {
        let samples = [
            EventBody::UserMessage {
                text: "t".into(),
                approval_mode: Mode::Ask,
            },
            EventBody::ModeChanged {
                previous: Mode::Ask,
                next: Mode::Yolo,
                source: ModeSource::User,
                actor: None,
            },
            EventBody::AssistantDelta { text: "t".into() },
            EventBody::AssistantMessage {
                text: "t".into(),
                html: "t".into(),
            },
            EventBody::ToolCall {
                call_id: "c".into(),
                tool: "shell".into(),
                args: Value::Null,
                class: ToolClass::Exec,
                verdict: Verdict::Run,
                rule_id: None,
                rule_pattern: None,
            },
            EventBody::ApprovalResolved(Resolution::plain(
                &"a".into(),
                Decision::Approve,
                AnsweredBy::User,
                "browser",
                Timestamp::default(),
            )),
            EventBody::ToolStarted {
                call_id: "c".into(),
            },
            EventBody::ToolResult {
                call_id: "c".into(),
                tool: "shell".into(),
                status: ToolStatus::Ok,
                output: "o".into(),
            },
            EventBody::TurnFinished {
                status: TurnStatus::Completed,
                error: None,
            },
            EventBody::ReviewConcern {
                approval_id: "a".into(),
                reason: "r".into(),
            },
            EventBody::ApprovalGiven {
                approval_id: "a".into(),
                approval: GivenApproval {
                    who: "alice@example.com".into(),
                    name: Some("Alice".into()),
                    at: Timestamp::from("2026-01-01T00:00:00.000Z"),
                    digest: "d".into(),
                },
                edit: None,
            },
            EventBody::ApprovalEscalated {
                approval_id: "a".into(),
                escalate_to: vec![Approver::Role(Role::Admin)],
            },
        ];
        for body in &samples {
            let json = serde_json::to_value(body).unwrap();
            assert_eq!(json["type"], body.kind());
            assert!(EventKind::ALL.contains(&body.event_kind()));
        }
        let names: std::collections::HashSet<&str> =
            EventKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), EventKind::ALL.len());
    }

    #[test]
    fn events_serialize_flat_with_type_tag() {
        let ev = Event {
            seq: Some(3),
            at: "2026-01-01T00:00:00Z".into(),
            turn_id: Some("t".into()),
            body: EventBody::ToolResult {
                call_id: "c".into(),
                tool: "read_file".into(),
                status: ToolStatus::Ok,
                output: "x".into(),
            },
        };
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["type"], "tool_result");
        assert_eq!(json["seq"], 3);
        assert_eq!(json["status"], "ok");
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, ev);
    }

    #[test]
    fn transient_events_have_no_seq() {
        let ev = Event {
            seq: None,
            at: "t".into(),
            turn_id: None,
            body: EventBody::AssistantDelta { text: "hi".into() },
        };
        let json = serde_json::to_value(&ev).unwrap();
        assert!(json.get("seq").is_none());
        assert!(json.get("turn_id").is_none());
    }

    #[test]
    fn modes_round_trip_their_wire_names() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert_eq!(Mode::parse("auto-edit"), None);
    }

    /// Each closed set stored as text has one table: its wire spelling (serde) is the one the
    /// database holds and `Stored` reads back.
    #[test]
    fn stored_spellings_are_the_wire_spellings() {
        for m in Mode::ALL {
            assert_eq!(Stored::<Mode>::read(m.as_str()), Stored::Known(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.spelling());
        }
        for s in Scope::ALL {
            assert_eq!(Stored::<Scope>::read(s.as_str()), Stored::Known(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.spelling());
        }
        for r in RuleScope::ALL {
            assert_eq!(RuleScope::from_spelling(r.as_str()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.spelling());
        }
        for d in Decision::ALL {
            assert_eq!(Stored::<Decision>::read(d.as_str()), Stored::Known(d));
            assert_eq!(serde_json::to_value(d).unwrap(), d.spelling());
        }
        for a in AnsweredBy::ALL {
            assert_eq!(Stored::<AnsweredBy>::read(a.as_str()), Stored::Known(a));
            assert_eq!(serde_json::to_value(a).unwrap(), a.spelling());
        }
        assert_eq!(Stored::<Mode>::read("auto-edit").or(Mode::Ask), Mode::Ask);
    }
}
