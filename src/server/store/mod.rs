//! Persistence behind one trait: sessions and their append-only event logs.
//!
//! SQLite is the default (`sqlite/`); PostgreSQL (`postgres/`) is its sibling behind the same
//! trait, for several instances on one database. The store is split where it is opened
//! (`Opened`): the event log goes to the hub alone; everything else gets one narrow
//! repository (`Repos`), and the instances' coordination exists only on a shared store.

#[cfg(test)]
pub mod conformance;
#[cfg(test)]
pub mod conformance_grants;
#[cfg(test)]
pub mod conformance_people;
#[cfg(test)]
pub mod conformance_quorum;
pub mod passkeys;
pub mod people;
pub mod postgres;
pub mod push;
pub mod quorum;
pub mod review;
pub mod secrets;
pub mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;

use crate::protocol::{
    ApprovalId, ApprovalRequest, AuditEntry, Event, EventBody, GateKind, Mode, Resolution, Rule,
    RuleId, Scope, SessionId, Stored, Timestamp, ToolClass, TurnId,
};

/// A session as stored. A mode this build cannot read stays [`Stored::Unknown`]: a fact about
/// the database the caller decides on (it falls back to `ask`, fail closed).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub id: SessionId,
    pub title: String,
    pub created_at: Timestamp,
    pub approval_mode: Stored<Mode>,
    pub last_seq: u64,
    /// The mode the session had when it entered plan mode (where a plan returns to).
    pub pre_plan_mode: Option<Stored<Mode>>,
    /// The mode an approved plan left plan mode for.
    pub plan_execution_mode: Option<Stored<Mode>>,
    /// The outside agent whose gates this session holds (`claude-code`, `codex`, …); `None`
    /// for the built-in agent's sessions.
    pub source: Option<String>,
    /// The person whose session it is (their email, issue 41): who made it, or whose token
    /// opened an outside agent's; `None` for the admin's own credentials. A route's `owner`.
    pub owner: Option<String>,
}

impl SessionRow {
    /// The session's mode; a stored mode that does not parse is `ask` (fail closed).
    pub fn mode(&self) -> Mode {
        self.approval_mode.or(Mode::Ask)
    }
}

/// An event about to be appended; the store assigns `seq` and `at`.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub turn_id: Option<TurnId>,
    pub body: EventBody,
}

impl NewEvent {
    pub fn new(turn_id: Option<&TurnId>, body: EventBody) -> Self {
        NewEvent {
            turn_id: turn_id.cloned(),
            body,
        }
    }
}

/// The events of one append as every backend stores them: seqs from `first_seq` on, one
/// commit time, and each with its wire JSON (what the `body` column holds).
pub fn stamp(
    session_id: &str,
    events: &[NewEvent],
    first_seq: u64,
) -> Result<Vec<(Event, String)>, StoreError> {
    let at = Timestamp::now();
    events
        .iter()
        .enumerate()
        .map(|(i, new)| {
            let seq = first_seq + i as u64;
            let event = Event {
                seq: Some(seq),
                at: at.clone(),
                turn_id: new.turn_id.clone(),
                body: new.body.clone(),
            };
            let json = serde_json::to_string(&event).map_err(|e| StoreError::Corrupt {
                session_id: session_id.to_owned(),
                seq,
                reason: e.to_string(),
            })?;
            Ok((event, json))
        })
        .collect()
}

/// How durable a commit is before its events are sent. Both survive a crash of the process
/// (`kill -9`): in WAL mode a committed transaction is in the OS's hands either way.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// Every commit is fsynced before it is acknowledged: it also survives a power cut or an
    /// OS crash. The default.
    #[default]
    Full,
    /// No fsync per commit (only at checkpoints): faster, but a power cut or OS crash can lose
    /// the last commits, events that may already have been sent and acted on.
    Normal,
}

/// How long an `Idempotency-Key` names the same gate: the opener's lookup and both backends'
/// "key used for another gate" check read this one window.
pub const IDEMPOTENCY_WINDOW_MS: i64 = 24 * 3600 * 1000;

/// How long a turn's lease lasts without renewal: an instance that stops renewing (dead,
/// paused, cut off) loses its turns this long after its last renewal.
pub const LEASE_TTL: std::time::Duration = std::time::Duration::from_secs(5);
/// How often an instance renews its leases and looks for lapsed ones to take over.
pub const LEASE_RENEW: std::time::Duration = std::time::Duration::from_secs(1);

/// Why text with a NUL character is refused (PostgreSQL's text cannot hold one; SQLite's
/// could, but both backends answer the same).
pub const NUL_REFUSED: &str = "text must not contain NUL characters (U+0000)";

/// Text stored in a column of its own (a name, a title, a key, a pattern) must not hold a
/// NUL. Event bodies may: they are stored as JSON, where a NUL is the escape `\u0000`.
pub fn storable(text: &str) -> Result<(), StoreError> {
    if text.contains('\0') {
        Err(StoreError::Unstorable(NUL_REFUSED.to_owned()))
    } else {
        Ok(())
    }
}

/// `storable` for a session row's own columns.
pub fn check_storable_row(row: &SessionRow) -> Result<(), StoreError> {
    storable(row.id.as_str())?;
    storable(&row.title)?;
    row.source.as_deref().map_or(Ok(()), storable)
}

/// `storable` for what an append stores in columns of their own besides its events.
pub fn check_storable_commit(commit: &Commit) -> Result<(), StoreError> {
    if let Some(GateChange::Resolve {
        new_rule: Some(rule),
        ..
    }) = &commit.gate
    {
        storable(&rule.pattern)?;
        storable(&rule.tool)?;
    }
    if let Some(GateChange::Open(request)) = &commit.gate {
        storable(request.body.approval_id.as_str())?;
        storable(request.turn_id.as_str())?;
    }
    if let Some(external) = &commit.external {
        storable(&external.opened_by)?;
        external
            .idempotency_key
            .as_deref()
            .map_or(Ok(()), storable)?;
    }
    Ok(())
}

/// A change to a gate, committed in the same transaction as the events that announce it.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one short-lived value per commit; boxing buys nothing
pub enum GateChange {
    Open(Box<ApprovalRequest>),
    /// Compare-and-set: succeeds only while the gate is pending; `new_rule` (Allow always) is
    /// stored only if it does.
    Resolve {
        resolution: Resolution,
        new_rule: Option<Rule>,
    },
}

/// What else an append commits atomically with its events.
#[derive(Clone, Debug, Default)]
pub struct Commit {
    /// The session's remembered mode.
    pub set_mode: Option<Mode>,
    pub gate: Option<GateChange>,
    /// With `GateChange::Open` of an outside agent's gate: who opened it and with which key.
    pub external: Option<ExternalGate>,
    /// The turn lease this append claims, holds or releases (a store that only one instance
    /// uses ignores it: its in-memory turn slot is the whole truth).
    pub lease: Option<LeaseStep>,
}

/// What an append does with the lease on its session's turn, in the same transaction as its
/// events. Several instances on one database are fenced this way: an instance that lost the
/// lease (it was paused, another took the turn over) can no longer write for that turn.
#[derive(Clone, Debug, PartialEq)]
pub enum LeaseStep {
    /// A new turn takes the session; `TurnHeld` when another turn holds it.
    Claim(TurnId),
    /// The turn writes: only while this instance still owns its lease (`LeaseLost` otherwise).
    Hold(TurnId),
    /// The turn's last write (`turn_finished`): it hands the session back.
    Release(TurnId),
}

/// A turn's lease as the lease table knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct LeasedTurn {
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// Whether this instance owns it.
    pub mine: bool,
    /// Someone asked (on any instance) to cancel it.
    pub cancel_requested: bool,
}

/// What another instance committed, as a store shared by several instances tells it.
#[derive(Clone, Debug, PartialEq)]
pub enum Signal {
    /// The session's log grew: seqs `first..=last` were committed.
    Appended {
        session_id: SessionId,
        first: u64,
        last: u64,
    },
    /// A cancel was requested for the session's turn.
    CancelRequested { session_id: SessionId },
    /// The channel was interrupted: signals may have been missed, catch up everything.
    Missed,
}

/// Who opened an outside agent's gate, and the `Idempotency-Key` it came with.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternalGate {
    pub approval_id: ApprovalId,
    pub session_id: SessionId,
    /// The opener's actor (`token:<name>`, `browser`): only it (or a deciding credential) may
    /// read or cancel the gate.
    pub opened_by: String,
    pub idempotency_key: Option<String>,
    pub created_at: Timestamp,
}

/// A named token as stored: never the secret, only its hash.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenRow {
    pub name: String,
    /// A scope this build cannot read is never honoured (the token is refused).
    pub scope: Stored<Scope>,
    pub secret_hash: String,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    /// Who made it: a person's id (issue 41), or `None` for the admin (the startup token, a
    /// login link's browser, the local CLI; every token made before owners were kept).
    pub owner: Option<String>,
}

impl Commit {
    pub fn mode(mode: Option<Mode>) -> Self {
        Commit {
            set_mode: mode,
            ..Commit::default()
        }
    }
}

/// A gate as stored: its request and, once resolved, its resolution.
#[derive(Clone, Debug, PartialEq)]
pub struct GateRow {
    pub request: ApprovalRequest,
    pub resolution: Option<Resolution>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("approval {} is already resolved", .0.approval_id)]
    AlreadyResolved(Box<Resolution>),
    #[error("no approval {0} in this session")]
    UnknownApproval(String),
    #[error("unknown session {0}")]
    UnknownSession(String),
    /// The database itself failed in a way Countersign noticed (its writer stopped, a
    /// connection could not be had, an answer it could not read).
    #[error("database error: {0}")]
    Database(String),
    /// The SQLite driver failed (I/O, locked, full, corrupt); the cause is kept.
    #[error("database error: {0}")]
    Sqlite(#[source] rusqlite::Error),
    /// The PostgreSQL driver failed (the connection, I/O, the server); the cause is kept.
    #[error("database error: {0}")]
    Postgres(#[source] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migration(String),
    #[error("stored event {session_id}#{seq} is unreadable: {reason}")]
    Corrupt {
        session_id: String,
        seq: u64,
        reason: String,
    },
    #[error("unsupported database url `{0}` (expected sqlite://… or postgres://…)")]
    UnsupportedUrl(String),
    /// A name that must be unique is taken (a token's name).
    #[error("`{0}` is already taken")]
    Taken(String),
    /// The opener already used this `Idempotency-Key` for the gate named here.
    #[error("the idempotency key was used for gate {0}")]
    KeyUsed(String),
    /// Another turn holds the session (a `LeaseStep::Claim` found its lease taken).
    #[error("another turn is running in session {0}")]
    TurnHeld(String),
    /// This instance no longer owns the turn's lease: another instance took the turn over.
    #[error("the turn in session {0} was taken over by another instance")]
    LeaseLost(String),
    /// Text a database column cannot hold (a NUL character).
    #[error("{0}")]
    Unstorable(String),
    /// What a write stands on went in the same moment: a token's maker removed, a token
    /// revoked while it claimed a name. Checked inside the write's transaction.
    #[error("{0}")]
    Gone(String),
}

/// Why a token is not made: its maker was removed in the same moment.
pub(crate) const MAKER_GONE: &str =
    "the person this token would belong to was removed: it was not made";
/// Why a name is not claimed: the token claiming it was revoked in the same moment.
pub(crate) const CLAIMANT_GONE: &str =
    "this token was revoked while it opened its first gate: nothing was claimed";

impl StoreError {
    /// A failure of the database itself (as opposed to a logical outcome such as a lost
    /// compare-and-set): it answers 503 and spoils a group transaction.
    pub fn is_database_failure(&self) -> bool {
        matches!(
            self,
            StoreError::Database(_) | StoreError::Sqlite(_) | StoreError::Postgres(_)
        )
    }
}

/// Which way a page of the audit log is read: the export and the chain check from the
/// start, the Audit page from the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditOrder {
    /// Entries with `n > after`, oldest first.
    OldestAfter(u64),
    /// Entries with `n < before` (from the newest when `None`), newest first.
    NewestBefore(Option<u64>),
}

impl AuditOrder {
    /// The SQL comparison on `n` and the order, for both backends.
    pub fn sql(self) -> (&'static str, &'static str) {
        match self {
            AuditOrder::OldestAfter(_) => ("n >", "ASC"),
            AuditOrder::NewestBefore(_) => ("n <", "DESC"),
        }
    }

    /// The `n` compared against.
    pub fn n(self) -> u64 {
        match self {
            AuditOrder::OldestAfter(after) => after,
            AuditOrder::NewestBefore(before) => before.unwrap_or(i64::MAX as u64),
        }
    }
}

/// The event log: sessions and their append-only logs. Owned by the hub alone (`Hub::new`),
/// so an append always goes out through the hub's commit (commit, then publish in seq order)
/// and nothing else can write an event the feed would never carry.
#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Whether the store can take writes and answer reads; `Err` says why not, in words.
    async fn health(&self) -> Result<(), String>;

    async fn create_session(&self, row: &SessionRow) -> Result<(), StoreError>;

    /// Newest first.
    async fn list_sessions(&self) -> Result<Vec<SessionRow>, StoreError>;

    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError>;

    /// Removes the session and its log. `false` when it did not exist.
    async fn delete_session(&self, id: &SessionId) -> Result<bool, StoreError>;

    /// Renames the session; with `only_if`, only while its title is still exactly that (so a
    /// title made from the first message never overwrites a person's rename). Whether it
    /// changed.
    async fn set_session_title(
        &self,
        id: &SessionId,
        title: &str,
        only_if: Option<&str>,
    ) -> Result<bool, StoreError>;

    /// Appends `events` in one transaction with consecutive seqs (no gaps: the seq is taken
    /// from the session row inside the same transaction), together with `commit`'s changes,
    /// so e.g. a `mode_changed` event and the mode, or an `approval_resolved` event and the
    /// gate's compare-and-set, can never disagree. A lost compare-and-set appends nothing and
    /// answers `AlreadyResolved` with the winner's resolution.
    async fn append(
        &self,
        session_id: &SessionId,
        events: Vec<NewEvent>,
        commit: Commit,
    ) -> Result<Vec<Event>, StoreError>;

    /// Events with `seq > after`, oldest first, at most `limit`.
    async fn events_after(
        &self,
        session_id: &SessionId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError>;

    /// The seq of the latest `user_message` at or before `seq` (where that turn starts).
    async fn turn_start_at_or_before(
        &self,
        session_id: &SessionId,
        seq: u64,
    ) -> Result<Option<u64>, StoreError>;

    /// Sessions whose last turn has a `user_message` but no `turn_finished` (restart recovery).
    async fn sessions_with_unfinished_turns(&self) -> Result<Vec<SessionId>, StoreError>;
}

/// The gates' rows (written only by the log's commits; read here).
#[async_trait]
pub trait GateRepo: Send + Sync {
    async fn get_gate(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Option<GateRow>, StoreError>;

    /// Pending gates, oldest first; of one session or of all.
    async fn pending_gates(
        &self,
        session_id: Option<&str>,
    ) -> Result<Vec<ApprovalRequest>, StoreError>;

    /// How many gates wait, counted without reading their requests: the caps an outside gate
    /// is checked against before it opens.
    async fn waiting_counts(&self, session_id: &SessionId) -> Result<WaitingCounts, StoreError>;

    /// Gates resolved at or after `since` and before `until`, in the order they were resolved
    /// (then by id), at most `limit` (the caller bounds it: `core::stats::MAX_CARDS`), each
    /// with its session's source: what the person's answering habits are figured from. Read
    /// through the index of resolved gates by time (`approvals_resolved`), never a scan of
    /// every gate ever opened.
    async fn resolved_cards(
        &self,
        since: &Timestamp,
        until: &Timestamp,
        limit: u32,
    ) -> Result<Vec<ResolvedCard>, StoreError>;
}

/// What the answering figures need of a gate's request: read from its JSON, the rest of the
/// request (arguments, proposal) left unread.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct CardEssentials {
    pub approval_id: ApprovalId,
    pub session_id: SessionId,
    pub kind: GateKind,
    pub tool: String,
    pub class: ToolClass,
    pub created_at: Timestamp,
    /// Its deadline: an expired card counts as the person's only when it gave them a fair
    /// chance (`core::stats::figures::FAIR_CHANCE_MS`). Absent: unknown, not counted.
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
}

/// A resolved gate (`GateRepo::resolved_cards`).
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedCard {
    pub card: CardEssentials,
    pub resolution: Resolution,
    /// The session's outside agent (`claude-code`, `codex`, …); `None` for the built-in one.
    pub source: Option<String>,
}

/// Gates waiting for an answer (`GateRepo::waiting_counts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingCounts {
    /// In the session asked about, of every kind.
    pub in_session: u64,
    /// Outside agents' gates, over all sessions.
    pub outside: u64,
}

/// How long a lapsed grant stays listed (30 days after it expired or spent its last use):
/// long enough for the Rules page to say why a grant stopped answering, short enough that
/// the list of short-lived grants does not grow without end. A revoked grant is never listed.
pub const LAPSED_LISTED_MS: i64 = 30 * 86_400_000;

/// The standing rules (made by a commit that resolves a gate with Allow always).
#[async_trait]
pub trait RuleRepo: Send + Sync {
    /// Every grant not revoked, oldest first: those in force and those that lapsed (used up
    /// or expired) within the last [`LAPSED_LISTED_MS`], each with its `lapsed` set as of now,
    /// so the Rules page can say why a grant stopped answering.
    async fn list_rules(&self) -> Result<Vec<Rule>, StoreError>;

    /// Spends one use of a rule, atomically with the checks that it is still in force (not
    /// revoked, uses left, not expired at `now`), and records `now` as its last use. `false`
    /// when it no longer was: the call must then be put to the person. Two callers never both
    /// spend a rule's last use.
    async fn claim_rule_use(&self, rule_id: &RuleId, now: &Timestamp) -> Result<bool, StoreError>;

    /// Whether a rule is still in force at `now` for a call whose use it already spent: not
    /// revoked, not expired (its use count is not looked at — that call's use is the one
    /// counted). Read once more when a call it matched finally starts, so a grant revoked or
    /// expired while the call waited for a slot (or across a restart) no longer runs it.
    async fn rule_in_force(&self, rule_id: &RuleId, now: &Timestamp) -> Result<bool, StoreError>;

    /// Revokes a rule (and audits it as `actor`); `false` when there is no such rule in force.
    async fn revoke_rule(&self, rule_id: &RuleId, actor: &str) -> Result<bool, StoreError>;
}

/// The named tokens: never a secret, only its hash.
#[async_trait]
pub trait TokenRepo: Send + Sync {
    /// Stores a new token (and audits it as `actor`); `Taken` when the name is in use.
    async fn create_token(&self, row: &TokenRow, actor: &str) -> Result<(), StoreError>;

    /// Every token, by name.
    async fn list_tokens(&self) -> Result<Vec<TokenRow>, StoreError>;

    /// The token whose secret hashes to `secret_hash`.
    async fn token_by_hash(&self, secret_hash: &str) -> Result<Option<TokenRow>, StoreError>;

    /// Deletes a token (and audits it as `actor`); `false` when there is none of that name.
    async fn delete_token(&self, name: &str, actor: &str) -> Result<bool, StoreError>;

    /// Records that a token was used.
    async fn touch_token(&self, name: &str, at: &Timestamp) -> Result<(), StoreError>;
}

/// The audit entry of a token made or revoked (`token_created`, `token_revoked`): its actor
/// name and its scope as stored, never its secret or hash.
pub fn token_audit_draft(
    actor: &str,
    action: &'static str,
    name: &str,
    scope: &str,
) -> crate::server::audit::AuditDraft {
    crate::server::audit::AuditDraft {
        actor: actor.to_owned(),
        action,
        subject: crate::protocol::Actor::Token(name).to_string(),
        detail: serde_json::json!({ "scope": scope }),
    }
}

/// Why the reviewer's trust in an agent, and its grants, end when its token is revoked: the
/// next token to open a gate under the freed name would otherwise inherit them.
pub const NAME_FREED: &str =
    "the token that held this agent's name was revoked: what the agent was given ends with it";

/// Why what was given under an agent's name ends when a token first claims it: it was given
/// while no token held the name (an admin's gates, a database from before names were
/// claimed, a card answered after its token was revoked), so it is not this token's.
pub const NAME_CLAIMED: &str =
    "a token claimed this agent's name: what was given under it while no token held it ends";

/// The audit entry of a grant ended with its agent's name (freed or newly claimed: `why`).
pub fn grant_ended_draft(
    actor: &str,
    rule_id: &str,
    source: &str,
    why: &str,
) -> crate::server::audit::AuditDraft {
    crate::server::audit::AuditDraft {
        actor: actor.to_owned(),
        action: "rule_revoked",
        subject: rule_id.to_owned(),
        detail: serde_json::json!({ "source": source, "why": why }),
    }
}

/// The audit entry of an outside agent's name claimed by the credential that first used it.
pub fn source_claim_draft(source: &str, actor: &str) -> crate::server::audit::AuditDraft {
    crate::server::audit::AuditDraft {
        actor: actor.to_owned(),
        action: "source_claimed",
        subject: format!("source:{source}"),
        detail: serde_json::json!({ "source": source }),
    }
}

/// The audit log's chain: entries of their own (config changes) and its pages.
#[async_trait]
pub trait AuditRepo: Send + Sync {
    /// Appends audit entries that belong to no session event (config changes).
    async fn append_audit(
        &self,
        drafts: Vec<crate::server::audit::AuditDraft>,
    ) -> Result<(), StoreError>;

    /// Audit entries with `n > after`, oldest first, optionally of one action or subject.
    async fn audit_after(
        &self,
        after: u64,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError>;

    /// Audit entries with `n < before` (every entry when `None`), newest first, optionally of
    /// one action or subject: the Audit page reads the log from its end.
    async fn audit_before(
        &self,
        before: Option<u64>,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError>;
}

/// The outside agents' sessions and who opened their gates.
#[async_trait]
pub trait OutsideRepo: Send + Sync {
    /// The session holding the gates of `(source, external_session)`, creating it from `row`
    /// when there is none yet; concurrent callers all get the one that was created first.
    async fn external_session(
        &self,
        source: &str,
        external_session: &str,
        row: &SessionRow,
    ) -> Result<SessionId, StoreError>;

    /// The session of `(source, external_session)`, if one was made (never makes one).
    async fn external_session_id(
        &self,
        source: &str,
        external_session: &str,
    ) -> Result<Option<SessionId>, StoreError>;

    /// The credential `source` belongs to: `actor` when no credential had claimed it yet (the
    /// claim is made now, and audited as `source_claimed`), else the one that claimed it
    /// first. A token's claims end with the token.
    async fn claim_source(&self, source: &str, actor: &str) -> Result<String, StoreError>;

    /// Every claimed name, as `(source, actor)`, by name.
    async fn claimed_sources(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// Who opened an outside agent's gate (`None` for other gates).
    async fn external_gate(&self, approval_id: &str) -> Result<Option<ExternalGate>, StoreError>;

    /// The gate `opened_by` opened with this `Idempotency-Key` at or after `since`, with its
    /// session.
    async fn gate_by_idempotency_key(
        &self,
        opened_by: &str,
        key: &str,
        since: &Timestamp,
    ) -> Result<Option<(ApprovalId, SessionId)>, StoreError>;
}

/// What only a store several instances share has: their signals, the turns' leases and
/// cancels across instances. A store one instance owns has none of it (`Repos::coordination`
/// is `None`), rather than a flag and do-nothing defaults.
#[async_trait]
pub trait Coordination: Send + Sync {
    /// What the other instances commit, as it happens.
    async fn listen(&self) -> Result<tokio::sync::mpsc::UnboundedReceiver<Signal>, StoreError>;

    /// Each session's `last_seq`, for the given ids (a sweep that catches up missed signals).
    async fn last_seqs(
        &self,
        session_ids: &[SessionId],
    ) -> Result<Vec<(SessionId, u64)>, StoreError>;

    /// Extends this instance's leases on the turns of `session_ids`; returns the leases those
    /// sessions have now, this instance's or not (one held by another instance for a turn
    /// this one runs was taken over; none at all means the turn is starting or ending).
    async fn renew_leases(&self, session_ids: &[SessionId]) -> Result<Vec<LeasedTurn>, StoreError>;

    /// Takes over turns whose lease lapsed, and this instance's own leases on turns it does
    /// not run (`running`: the sessions whose turns it does run).
    async fn claim_lapsed_turns(
        &self,
        running: &[SessionId],
    ) -> Result<Vec<LeasedTurn>, StoreError>;

    /// Asks whichever instance runs the session's turn to cancel it; the turn's id, or `None`
    /// when no turn holds the session (or it has already decided how it ends).
    async fn request_cancel(&self, session_id: &SessionId) -> Result<Option<TurnId>, StoreError>;

    /// Fixes how the turn ends: afterwards no cancel is accepted; `true` if one was requested.
    async fn seal_turn(&self, session_id: &SessionId, turn_id: &TurnId)
    -> Result<bool, StoreError>;

    /// The turns running anywhere, by session (for a session list on any instance).
    async fn leased_turns(&self) -> Result<Vec<(SessionId, TurnId)>, StoreError>;
}

/// Everything one backend implements. Only `open` and the backends' tests see it whole: the
/// rest of the server holds the log (the hub) or one narrow repository (`Repos`).
pub trait Store:
    EventLog
    + GateRepo
    + RuleRepo
    + TokenRepo
    + AuditRepo
    + OutsideRepo
    + push::PushSubscriptions
    + passkeys::PasskeyRows
    + people::PeopleRepo
    + quorum::QuorumRepo
    + secrets::HashedSecrets
    + review::ReviewRepo
{
}

impl<T> Store for T where
    T: EventLog
        + GateRepo
        + RuleRepo
        + TokenRepo
        + AuditRepo
        + OutsideRepo
        + push::PushSubscriptions
        + passkeys::PasskeyRows
        + people::PeopleRepo
        + quorum::QuorumRepo
        + secrets::HashedSecrets
        + review::ReviewRepo
{
}

/// The narrow repositories, each a view of the one store: what core, the agent and the push
/// layer reach (never the log's append, which is the hub's).
#[derive(Clone)]
pub struct Repos {
    pub gates: Arc<dyn GateRepo>,
    pub rules: Arc<dyn RuleRepo>,
    pub tokens: Arc<dyn TokenRepo>,
    pub audit: Arc<dyn AuditRepo>,
    pub outside: Arc<dyn OutsideRepo>,
    pub push: Arc<dyn push::PushSubscriptions>,
    pub passkeys: Arc<dyn passkeys::PasskeyRows>,
    /// People who sign in with OpenID Connect (issue 41).
    pub people: Arc<dyn people::PeopleRepo>,
    /// Approvals toward a routed card's quorum, and escalations (issue 41).
    pub quorum: Arc<dyn quorum::QuorumRepo>,
    pub secrets: Arc<dyn secrets::HashedSecrets>,
    /// The reviewer's predictions and the classes it is trusted with.
    pub review: Arc<dyn review::ReviewRepo>,
    /// Only on a store several instances share.
    pub coordination: Option<Arc<dyn Coordination>>,
}

/// An opened store, split: the log for the hub, the repositories for everyone else.
#[derive(Clone)]
pub struct Opened {
    pub log: Arc<dyn EventLog>,
    pub repos: Repos,
}

impl Opened {
    /// Splits `store` into its log and its repositories; `coordination` only for a store
    /// several instances share.
    pub fn split<S: Store>(store: Arc<S>, coordination: Option<Arc<dyn Coordination>>) -> Opened {
        Opened {
            log: store.clone(),
            repos: Repos {
                gates: store.clone(),
                rules: store.clone(),
                tokens: store.clone(),
                audit: store.clone(),
                outside: store.clone(),
                push: store.clone(),
                passkeys: store.clone(),
                people: store.clone(),
                quorum: store.clone(),
                review: store.clone(),
                secrets: store,
                coordination,
            },
        }
    }
}

/// Opens the store named by `database_url`, split (`Opened`); `instance` names this instance
/// to the others (it owns its turns' leases under that name).
pub async fn open(
    database_url: &str,
    synchronous: Synchronous,
    instance: &str,
) -> Result<Opened, StoreError> {
    if database_url.starts_with("sqlite:") {
        let store = Arc::new(sqlite::SqliteStore::open(database_url, synchronous).await?);
        Ok(Opened::split(store, None))
    } else if postgres::is_postgres_url(database_url) {
        let store = Arc::new(postgres::PgStore::open_as(database_url, instance).await?);
        let coordination: Arc<dyn Coordination> = store.clone();
        Ok(Opened::split(store, Some(coordination)))
    } else {
        Err(StoreError::UnsupportedUrl(database_url.to_owned()))
    }
}
