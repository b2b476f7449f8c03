//! Sessions: create, list, snapshots, delete, the remembered mode, messages (which start
//! turns) and cancel.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{Core, Error, MAX_MESSAGE_CHARS, RECENT_EVENTS, pending_in};
use crate::protocol::{
    EventBody, Mode, ModeSource, Session, SessionId, Snapshot, Timestamp, TurnId,
};
use crate::server::principal::Principal;
use crate::server::store::{Commit, LeaseStep, NewEvent, SessionRow};

const MAX_TITLE_CHARS: usize = 200;
use crate::protocol::DEFAULT_SESSION_TITLE as DEFAULT_TITLE;

impl Core {
    fn session_view(
        &self,
        row: &SessionRow,
        pending_approvals: u64,
        elsewhere: &HashMap<SessionId, TurnId>,
    ) -> Session {
        Session {
            id: row.id.clone(),
            title: row.title.clone(),
            created_at: row.created_at.clone(),
            approval_mode: row.mode(),
            running_turn_id: self
                .hub
                .running_turn_id(&row.id)
                .or_else(|| elsewhere.get(&row.id).cloned()),
            pending_approvals,
            source: row.source.clone(),
        }
    }

    /// The session's row, or `unknown_session` (the id was read at the door; whether it
    /// names a session is said here).
    pub(super) async fn session_row(&self, id: &SessionId) -> Result<SessionRow, Error> {
        self.hub
            .session(id)
            .await?
            .ok_or_else(|| Error::UnknownSession(id.as_str().to_owned()))
    }

    /// The id of an existing session, or `unknown_session`.
    pub async fn existing_session_id(&self, id: &SessionId) -> Result<SessionId, Error> {
        Ok(self.session_row(id).await?.id)
    }

    /// A new session; `owner` is the person whose it is (`Principal::person_email`), whom a
    /// route's `owner` names.
    pub async fn create_session(
        &self,
        title: Option<String>,
        mode: Option<Mode>,
        owner: Option<&str>,
    ) -> Result<Session, Error> {
        let mode = match mode {
            Some(mode) => self.mode_allowed(mode).map(|()| mode)?,
            None => self.config().config.approvals.default_mode,
        };
        let title = match title.as_deref().map(str::trim) {
            None | Some("") => DEFAULT_TITLE.to_owned(),
            Some(t) if t.chars().count() > MAX_TITLE_CHARS => {
                return Err(Error::InvalidTitle(format!(
                    "title must be at most {MAX_TITLE_CHARS} characters"
                )));
            }
            Some(t) => t.to_owned(),
        };
        let row = SessionRow {
            id: uuid::Uuid::new_v4().to_string().into(),
            title,
            created_at: Timestamp::now(),
            approval_mode: mode.into(),
            last_seq: 0,
            pre_plan_mode: None,
            plan_execution_mode: None,
            source: None,
            owner: owner.map(crate::protocol::email_key),
        };
        self.hub.create_session(&row).await?;
        Ok(self.session_view(&row, 0, &HashMap::new()))
    }

    pub async fn list_sessions(&self) -> Result<Vec<Session>, Error> {
        let rows = self.hub.sessions().await?;
        let pending = self.repos.gates.pending_gates(None).await?;
        let count = |id: &str| pending.iter().filter(|g| g.body.session_id == id).count() as u64;
        let elsewhere = self.turns_elsewhere().await?;
        Ok(rows
            .iter()
            .map(|r| self.session_view(r, count(r.id.as_str()), &elsewhere))
            .collect())
    }

    /// The session page's snapshot: only the recent turns (those holding the last
    /// `RECENT_EVENTS` events, whole), so a long session opens as fast as a short one; the
    /// running turn, and with it every pending gate, is always inside. Older turns are paged
    /// with `older_events`. Seqs are gapless from 1, so "older exist" is "first seq > 1".
    pub async fn recent_snapshot(&self, session_id: &SessionId) -> Result<Snapshot, Error> {
        let row = self.session_row(session_id).await?;
        let from = row.last_seq.saturating_sub(RECENT_EVENTS) + 1;
        let start = self.turn_start(&row.id, from).await?;
        self.snapshot_from(row, start).await
    }

    /// The session with its events from seq `start` on. Pending cards come from the same read
    /// as the events, so they always agree.
    async fn snapshot_from(&self, row: SessionRow, start: u64) -> Result<Snapshot, Error> {
        let events = self.hub.events_since(&row.id, start.max(1) - 1).await?;
        let cursor = events.last().and_then(|e| e.seq).unwrap_or(row.last_seq);
        let pending = pending_in(&events);
        let elsewhere = self.turns_elsewhere().await?;
        Ok(Snapshot {
            session: self.session_view(&row, pending.len() as u64, &elsewhere),
            events,
            pending,
            cursor,
        })
    }

    /// The whole turns before `before` that hold about `RECENT_EVENTS` events, oldest first
    /// (empty at the start of the log).
    pub async fn older_events(
        &self,
        session_id: &SessionId,
        before: u64,
    ) -> Result<Vec<crate::protocol::Event>, Error> {
        let id = self.existing_session_id(session_id).await?;
        if before <= 1 {
            return Ok(Vec::new());
        }
        let from = before.saturating_sub(RECENT_EVENTS).max(1);
        let start = self.turn_start(&id, from).await?.min(before);
        let count = (before - start).min(u64::from(u32::MAX)) as u32;
        Ok(self.hub.events_after(&id, start - 1, count).await?)
    }

    /// Where the turn holding `seq` starts (1 before the first message).
    async fn turn_start(&self, session_id: &SessionId, seq: u64) -> Result<u64, Error> {
        Ok(self
            .hub
            .turn_start_at_or_before(session_id, seq)
            .await?
            .unwrap_or(1)
            .max(1))
    }

    pub async fn snapshot(&self, session_id: &SessionId) -> Result<Snapshot, Error> {
        let row = self.session_row(session_id).await?;
        self.snapshot_from(row, 1).await
    }

    pub async fn delete_session(&self, session_id: &SessionId) -> Result<(), Error> {
        let row = self.session_row(session_id).await?;
        if !self
            .hub
            .cancel_and_wait(&row.id, Duration::from_secs(10))
            .await
        {
            tracing::warn!(session = %row.id, "turn did not stop within 10 s; deleting anyway");
        }
        // A turn running on another instance is told too; its writes fail once the session
        // is gone either way.
        if let Some(coordination) = &self.repos.coordination {
            coordination.request_cancel(&row.id).await?;
        }
        self.hub.delete_session(&row.id).await?;
        self.hub.forget(&row.id);
        Ok(())
    }

    /// Renames a session (a person's title, kept over the one made from the first message).
    pub async fn rename_session(
        &self,
        session_id: &SessionId,
        title: &str,
    ) -> Result<Session, Error> {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::InvalidTitle("title must not be empty".into()));
        }
        if title.chars().count() > MAX_TITLE_CHARS {
            return Err(Error::InvalidTitle(format!(
                "title must be at most {MAX_TITLE_CHARS} characters"
            )));
        }
        if crate::text::has_hidden(title) {
            return Err(Error::InvalidTitle(
                "title must not hold invisible or direction-changing characters".into(),
            ));
        }
        let row = self.session_row(session_id).await?;
        if !self.hub.rename_session(&row.id, title, None).await? {
            return Err(Error::UnknownSession(row.id.into_string()));
        }
        let pending = self
            .repos
            .gates
            .pending_gates(Some(row.id.as_str()))
            .await?
            .len() as u64;
        let row = SessionRow {
            title: title.to_owned(),
            ..row
        };
        Ok(self.session_view(&row, pending, &self.turns_elsewhere().await?))
    }

    /// A session still called "New session" takes its first message's first line as its
    /// title — unless someone renamed it meanwhile. A title that cannot be set is only logged:
    /// the message stands either way.
    async fn title_from_first_message(&self, row: &SessionRow, text: &str) {
        if row.title != DEFAULT_TITLE {
            return;
        }
        let Some(title) = crate::text::title_from(text) else {
            return;
        };
        if let Err(err) = self
            .hub
            .rename_session(&row.id, &title, Some(DEFAULT_TITLE))
            .await
        {
            tracing::warn!(session = %row.id, error = %err, "could not title the session");
        }
    }

    /// Whether a request may put a session in `mode`: with `approvals.require_passkey = "all"`
    /// every card needs a passkey, so no credential may choose a mode that opens no card
    /// (`auto_edit`, `yolo`); that is the config file's to change.
    pub(super) fn mode_allowed(&self, mode: Mode) -> Result<(), Error> {
        let step_up = self.config().config.approvals.require_passkey;
        if step_up.effective_mode(mode) != mode {
            return Err(Error::Forbidden(format!(
                "approvals.require_passkey = \"all\": every card is answered with a passkey, so a session cannot be put in `{}`",
                mode.as_str()
            )));
        }
        Ok(())
    }

    /// Sets the session's remembered mode; returns `(previous, current)`.
    pub async fn set_mode(
        &self,
        id: &SessionId,
        mode: Mode,
        who: &Principal,
    ) -> Result<(Mode, Mode), Error> {
        self.mode_allowed(mode)?;
        // No read before the lock: the row read under it checks the session exists.
        let session = self.hub.enter(id);
        let _serial = session.serial().await;
        let row = self.session_row(id).await?;
        let previous = row.mode();
        if previous != mode {
            let event = NewEvent::new(
                None,
                EventBody::ModeChanged {
                    previous,
                    next: mode,
                    source: ModeSource::User,
                    actor: Some(who.actor()),
                },
            );
            self.hub.append(&row.id, vec![event], Some(mode)).await?;
        }
        Ok((previous, mode))
    }

    /// Records the message and starts a turn; returns its id at once (the turn runs on).
    pub async fn send_message(
        self: &Arc<Self>,
        id: &SessionId,
        text: &str,
        requested: Option<Mode>,
        who: &Principal,
    ) -> Result<TurnId, Error> {
        if let Some(mode) = requested {
            self.mode_allowed(mode)?;
        }
        check_message(text)?;
        // No read before the lock: the row read under it checks the session exists.
        let session = self.hub.enter(id);
        let _serial = session.serial().await;
        let row = self.session_row(id).await?;
        crate::timeline::mark("message: session read");
        if let Some(source) = &row.source {
            return Err(Error::NotAllowed(format!(
                "this session holds {source}'s gates: answer its cards here, and talk to {source} where it runs"
            )));
        }
        if self.shutdown.is_cancelled() {
            return Err(Error::ShuttingDown);
        }
        let turn_id = TurnId::new(uuid::Uuid::new_v4().to_string());
        let lease = self
            .hub
            .try_start(&row.id, &turn_id)
            .ok_or(Error::TurnInProgress)?;
        let previous = row.mode();
        let mode = requested.unwrap_or(previous);
        let events = message_events(&turn_id, text, previous, mode, who);
        // The turn's lease comes with its message (on a shared store: a turn running on
        // another instance makes this a `turn_in_progress`).
        let commit = Commit {
            set_mode: (mode != previous).then_some(mode),
            lease: Some(LeaseStep::Claim(turn_id.clone())),
            ..Commit::default()
        };
        if let Err(err) = self.hub.commit(&row.id, events, commit, || ()).await {
            self.hub.finish(&row.id, &turn_id);
            return Err(err.into());
        }
        self.agent.start(lease, mode);
        crate::timeline::mark("message: turn started");
        self.title_from_first_message(&row, text).await;
        Ok(turn_id)
    }

    /// Cancels the session's turn wherever it runs (on a shared store, another instance's turn
    /// gets the request through the database).
    pub async fn cancel(&self, session_id: &SessionId) -> Result<TurnId, Error> {
        let row = self.session_row(session_id).await?;
        if let Some(turn_id) = self.hub.cancel(&row.id) {
            return Ok(turn_id);
        }
        let Some(coordination) = &self.repos.coordination else {
            return Err(Error::NoTurnRunning);
        };
        coordination
            .request_cancel(&row.id)
            .await?
            .ok_or(Error::NoTurnRunning)
    }

    /// The turns running on other instances, by session (empty unless the store is shared).
    async fn turns_elsewhere(&self) -> Result<HashMap<SessionId, TurnId>, Error> {
        let Some(coordination) = &self.repos.coordination else {
            return Ok(HashMap::new());
        };
        Ok(coordination.leased_turns().await?.into_iter().collect())
    }
}

/// A message a turn may start from: not empty, not longer than a person writes.
fn check_message(text: &str) -> Result<(), Error> {
    let chars = text.chars().count();
    if chars == 0 || text.trim().is_empty() {
        return Err(Error::InvalidMessage("text must not be empty".into()));
    }
    if chars > MAX_MESSAGE_CHARS {
        return Err(Error::InvalidMessage(format!(
            "text must be at most {MAX_MESSAGE_CHARS} characters (got {chars})"
        )));
    }
    Ok(())
}

/// What a message records: the mode it changes first (when it does), then the message.
fn message_events(
    turn_id: &TurnId,
    text: &str,
    previous: Mode,
    mode: Mode,
    who: &Principal,
) -> Vec<NewEvent> {
    let mut events = Vec::with_capacity(2);
    if mode != previous {
        events.push(NewEvent::new(
            Some(turn_id),
            EventBody::ModeChanged {
                previous,
                next: mode,
                source: ModeSource::Message,
                actor: Some(who.actor()),
            },
        ));
    }
    events.push(NewEvent::new(
        Some(turn_id),
        EventBody::UserMessage {
            text: text.to_owned(),
            approval_mode: mode,
        },
    ));
    events
}
