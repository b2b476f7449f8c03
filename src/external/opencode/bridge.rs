//! The bridge's bookkeeping: one gate per opencode permission, one reply at most, and a gate
//! cancelled when the TUI (or a cascade) answered first. It survives either side restarting.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::external::gates_client::{ApprovalId, ClientError, GateState, GatesClient};
use crate::external::key::idempotency_key;
use crate::external::opencode::client::{OpencodeClient, OpencodeError, ReplyOutcome};
use crate::external::opencode::event::{
    OpencodeEvent, PermissionAsked, SOURCE, open_gate, parse_event, reply_for,
};
use crate::external::verdict::Verdict;
use crate::text::error_chain;

/// The `why` of a gate whose permission was answered in opencode itself.
pub const WHY_ANSWERED_ELSEWHERE: &str = "answered_elsewhere";
const WHY_TIMEOUT: &str = "timeout";
/// opencode sends a heartbeat about every 10 s; this long without any event means the stream
/// is dead even if the socket is not.
const IDLE_LIMIT: Duration = Duration::from_secs(45);
/// Extra time the bridge waits past the gate's own window, so Countersign's expiry answers
/// first.
const WAIT_SLACK: Duration = Duration::from_secs(30);
/// How long a reply keeps being retried while opencode is down.
const REPLY_BUDGET: Duration = Duration::from_secs(60);

/// How the bridge backs off and how long gates stay open.
#[derive(Clone, Debug)]
pub struct BridgeOptions {
    /// The directory gates are said to run in when opencode does not name one.
    pub cwd: String,
    /// Countersign's window for each gate, in seconds.
    pub timeout_secs: u64,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

/// A running bridge between one opencode server and one Countersign.
pub struct Bridge {
    shared: Arc<Shared>,
}

struct Shared {
    gates: GatesClient,
    opencode: OpencodeClient,
    options: BridgeOptions,
    table: Mutex<HashMap<String, Entry>>,
}

/// What the bridge knows about one permission request.
struct Entry {
    approval_id: Option<ApprovalId>,
    /// The bridge sent (or is sending) the reply: a `permission.replied` for it is its own echo.
    replied_by_us: bool,
    /// opencode answered it some other way; the gate is cancelled and never answered.
    answered_elsewhere: bool,
    /// Done, one way or another: nothing more to do for it.
    finished: bool,
    elsewhere: watch::Sender<bool>,
}

impl Bridge {
    pub fn new(gates: GatesClient, opencode: OpencodeClient, options: BridgeOptions) -> Bridge {
        Bridge {
            shared: Arc::new(Shared {
                gates,
                opencode,
                options,
                table: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Follows opencode's event stream forever, reconnecting with backoff when it drops.
    pub async fn run(&self) {
        let options = &self.shared.options;
        let mut backoff = options.first_backoff;
        loop {
            match self.follow_stream().await {
                Ok(()) => {
                    tracing::info!("opencode's event stream ended; reconnecting");
                    backoff = options.first_backoff;
                }
                Err(e) => tracing::warn!("opencode: {}", error_chain(&e)),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(options.max_backoff);
        }
    }

    /// One connection: subscribe, resync from the pending list, then handle events until the
    /// stream ends or goes quiet.
    async fn follow_stream(&self) -> Result<(), OpencodeError> {
        let shared = &self.shared;
        let events = shared.opencode.events().await?;
        futures::pin_mut!(events);
        tracing::info!("following opencode's events at {}", shared.opencode.shown());
        // Subscribed first, listed second: an ask between the two is seen twice, never missed.
        let pending = shared.opencode.pending().await?;
        self.resync(&pending);
        for asked in pending {
            self.asked(asked, None);
        }
        loop {
            let next = tokio::time::timeout(IDLE_LIMIT, events.next()).await;
            let event = match next {
                Err(_) => {
                    tracing::warn!("opencode's event stream went quiet; reconnecting");
                    return Ok(());
                }
                Ok(None) => return Ok(()),
                Ok(Some(Err(e))) => {
                    tracing::warn!("opencode's event stream broke: {e}");
                    return Ok(());
                }
                Ok(Some(Ok(event))) => event,
            };
            match parse_event(&event.data) {
                Ok(envelope) => match envelope.event {
                    OpencodeEvent::Asked(asked) => self.asked(asked, envelope.directory),
                    OpencodeEvent::Replied { request_id, reply } => {
                        self.replied(&request_id, &reply)
                    }
                    OpencodeEvent::Other(kind) => tracing::trace!("opencode event {kind}"),
                },
                Err(e) => tracing::debug!("ignoring an opencode event that did not parse: {e}"),
            }
        }
    }

    /// A permission is waiting: open its gate, unless this one is already being handled.
    pub fn asked(&self, asked: PermissionAsked, directory: Option<String>) {
        let (tx, rx) = watch::channel(false);
        {
            let mut table = self.shared.lock();
            if table.contains_key(&asked.id) {
                return;
            }
            table.insert(
                asked.id.clone(),
                Entry {
                    approval_id: None,
                    replied_by_us: false,
                    answered_elsewhere: false,
                    finished: false,
                    elsewhere: tx,
                },
            );
        }
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let id = asked.id.clone();
            shared.handle(asked, directory, rx).await;
            if let Some(entry) = shared.lock().get_mut(&id) {
                entry.finished = true;
            }
        });
    }

    /// A permission was answered. Unless the bridge answered it, the TUI (or a cascade) did:
    /// the gate is cancelled and will never be answered.
    pub fn replied(&self, request_id: &str, reply: &str) {
        let cancel = {
            let mut table = self.shared.lock();
            let Some(entry) = table.get_mut(request_id) else {
                return;
            };
            if entry.replied_by_us || entry.answered_elsewhere || entry.finished {
                return;
            }
            tracing::info!("permission {request_id} was answered in opencode ({reply})");
            entry.answered_elsewhere = true;
            entry.elsewhere.send_replace(true);
            // Without an id yet, the opening task cancels the gate once it has one.
            entry.approval_id.clone()
        };
        if let Some(approval_id) = cancel {
            let shared = Arc::clone(&self.shared);
            tokio::spawn(async move { shared.cancel(&approval_id, WHY_ANSWERED_ELSEWHERE).await });
        }
    }

    /// After a reconnect: a permission handled here but no longer pending was answered while
    /// the stream was down.
    fn resync(&self, pending: &[PermissionAsked]) {
        let still: HashSet<&str> = pending.iter().map(|p| p.id.as_str()).collect();
        let gone: Vec<String> = self
            .shared
            .lock()
            .iter()
            .filter(|(id, e)| !e.finished && !e.replied_by_us && !still.contains(id.as_str()))
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.replied(&id, "while disconnected");
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock leaves plain data behind; keep going with it.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One permission from ask to reply.
    async fn handle(
        &self,
        asked: PermissionAsked,
        directory: Option<String>,
        mut elsewhere: watch::Receiver<bool>,
    ) {
        let cwd = directory.unwrap_or_else(|| self.options.cwd.clone());
        let gate = open_gate(&asked, &cwd, self.options.timeout_secs);
        // The permission id alone: a restarted bridge finds the gate it opened before.
        let key = idempotency_key(&[SOURCE, &asked.id]);
        let opened = match self.open(&gate, &key, &asked.id, &elsewhere).await {
            Some(Ok(opened)) => opened,
            Some(Err(refusal)) => return self.reply(&asked.id, &refusal).await,
            None => return,
        };
        if self.record_gate(&asked.id, &opened.approval_id) {
            self.cancel(&opened.approval_id, WHY_ANSWERED_ELSEWHERE)
                .await;
            return;
        }
        let verdict = if opened.is_resolved() {
            Verdict::from_state(&opened)
        } else {
            let window = Duration::from_secs(self.options.timeout_secs) + WAIT_SLACK;
            let waited = tokio::select! {
                waited = self.gates.wait(&opened.approval_id, Instant::now() + window) => waited,
                _ = elsewhere.wait_for(|answered| *answered) => return,
            };
            match waited {
                Ok(state) => Verdict::from_state(&state),
                Err(ClientError::Deadline { .. }) => {
                    self.cancel(&opened.approval_id, WHY_TIMEOUT).await;
                    Verdict::timed_out(self.options.timeout_secs)
                }
                Err(e) => {
                    // Not reaching Countersign is retried until the deadline: this is its own
                    // answer, and the permission is not given without a decision.
                    let said = error_chain(&e);
                    tracing::warn!(
                        "lost gate {} for permission {}: {said}; rejecting it",
                        opened.approval_id,
                        asked.id,
                    );
                    Verdict::refused(&format!("its card was lost: {said}"))
                }
            }
        };
        self.reply(&asked.id, &verdict).await;
    }

    /// Notes the permission's gate; `true` when opencode answered it meanwhile (the caller
    /// cancels the gate: [`Bridge::replied`] could not, having no id).
    fn record_gate(&self, id: &str, approval_id: &ApprovalId) -> bool {
        let mut table = self.lock();
        match table.get_mut(id) {
            Some(entry) => {
                entry.approval_id = Some(approval_id.clone());
                entry.answered_elsewhere
            }
            None => true,
        }
    }

    /// Opens the gate, retrying while Countersign is down (the permission waits in opencode
    /// meanwhile), unless opencode answers it first. `Some(Err(deny))` when Countersign refused
    /// (a wrong token, too many cards, an error of its own): the permission is rejected with why,
    /// never left to run on another path. `None` when opencode answered it meanwhile, or
    /// Countersign cannot be reached for good: the permission stays in opencode's own prompt.
    async fn open(
        &self,
        gate: &crate::external::gates_client::OpenGate,
        key: &str,
        id: &str,
        elsewhere: &watch::Receiver<bool>,
    ) -> Option<Result<GateState, Verdict>> {
        let mut backoff = self.options.first_backoff;
        loop {
            match self.gates.open(gate, Some(key)).await {
                Ok(opened) => return Some(Ok(opened.state)),
                Err(e) if e.is_transient() && !*elsewhere.borrow() => {
                    tracing::warn!("permission {id}: {}; retrying", error_chain(&e));
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.options.max_backoff);
                }
                Err(e) if e.reached_countersign() && !*elsewhere.borrow() => {
                    let said = error_chain(&e);
                    tracing::error!("permission {id}: {said}; rejecting it");
                    return Some(Err(Verdict::refused(&said)));
                }
                Err(e) => {
                    tracing::error!(
                        "permission {id}: {}; leaving it to opencode's prompt",
                        error_chain(&e)
                    );
                    return None;
                }
            }
        }
    }

    /// Sends the one reply, unless opencode has been answered meanwhile; a `404` means someone
    /// else got there first, which is fine.
    async fn reply(&self, id: &str, verdict: &Verdict) {
        {
            let mut table = self.lock();
            match table.get_mut(id) {
                Some(entry) if !entry.answered_elsewhere && !entry.replied_by_us => {
                    entry.replied_by_us = true;
                }
                _ => return,
            }
        }
        let reply = reply_for(verdict);
        let give_up = Instant::now() + REPLY_BUDGET;
        let mut backoff = self.options.first_backoff;
        loop {
            match self.opencode.reply(id, &reply).await {
                Ok(ReplyOutcome::Accepted) => {
                    tracing::info!("permission {id}: replied {}", reply.reply);
                    return;
                }
                Ok(ReplyOutcome::AlreadyAnswered) => {
                    tracing::info!("permission {id} was already answered in opencode");
                    return;
                }
                Err(e) if e.is_transient() && Instant::now() + backoff < give_up => {
                    tracing::warn!("permission {id}: {}; retrying the reply", error_chain(&e));
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.options.max_backoff);
                }
                Err(e) => {
                    tracing::error!("permission {id}: the reply failed: {}", error_chain(&e));
                    return;
                }
            }
        }
    }

    /// Best effort, retried briefly: a gate left open only costs a stale card.
    async fn cancel(&self, approval_id: &ApprovalId, why: &str) {
        let mut backoff = self.options.first_backoff;
        for _ in 0..5 {
            match self.gates.cancel(approval_id, why).await {
                Ok(()) => return,
                Err(e) if e.is_transient() => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.options.max_backoff);
                }
                Err(e) => {
                    tracing::warn!("cancelling gate {approval_id}: {}", error_chain(&e));
                    return;
                }
            }
        }
    }
}
