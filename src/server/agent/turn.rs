//! One turn of the agent loop: ask the model, record what it says, run the tools it calls,
//! feed the results back, until it answers without tool calls, fails, or is cancelled.
//!
//! **Invariant 17** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a tool runs only after `tool_call` and `tool_started` commit.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use super::budget::Budget;
use super::deps::Deps;
use super::{SYSTEM_PROMPT, class_of, tool_result_text};
use crate::protocol::{
    ApprovalRequest, ApprovalRequestBody, CallId, EventBody, GateReason, Mode, RuleId, SessionId,
    ToolClass, ToolStatus, TurnId, TurnStatus, Verdict,
};
use crate::server::gate::evaluate::{self, CheckpointInYolo};
use crate::server::gate::policy::{self, Outcome};
use crate::server::gate::request;
use crate::server::hub::TurnLease;
use crate::server::markdown;
use crate::server::provider::{ChatMessage, CompletionRequest, ProviderError, ToolCallRequest};
use crate::server::store::{Commit, LeaseStep, NewEvent, StoreError};
use crate::server::tools::{
    self, CheckEnv, Checkpoint, GateStyle, Refusal, SettingsAccess, Tool, ToolContext, reader,
};

/// Why a turn ended other than by completing.
#[derive(Debug, thiserror::Error)]
pub(super) enum TurnEnd {
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Failed(String),
    /// The person stopped it at a budget card (or the card timed out).
    #[error("stopped")]
    Stopped,
    /// Another instance took the turn over (this one was cut off or paused past its lease):
    /// it drives the turn now, and this task writes nothing more.
    #[error("taken over by another instance")]
    TakenOver,
}

/// Whether a verdict may rest on a standing rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rules {
    Consulted,
    /// The call's rule lapsed before it started; it is decided as if there were none.
    Ignored,
}

impl From<StoreError> for TurnEnd {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::LeaseLost(_) => TurnEnd::TakenOver,
            err => TurnEnd::Failed(format!("could not record the turn: {err}")),
        }
    }
}

impl From<ProviderError> for TurnEnd {
    fn from(err: ProviderError) -> Self {
        match err {
            ProviderError::Cancelled => TurnEnd::Cancelled,
            other => TurnEnd::Failed(other.to_string()),
        }
    }
}

/// Runs one turn to its end and records how it ended. It owns the lease, so the session is
/// released however it ends (the agent service runs this as a tracked task).
pub(super) async fn run(deps: Arc<Deps>, lease: TurnLease, mode: Mode) {
    crate::timeline::mark("turn: running");
    let session_id = lease.session_id().to_owned();
    let turn = Turn {
        deps: Arc::clone(&deps),
        session_id: session_id.clone(),
        turn_id: lease.turn_id.clone(),
        cancel: lease.cancel.clone(),
        mode: std::sync::Mutex::new(mode),
        waits: Arc::default(),
        exec_slots: tokio::sync::Semaphore::new(deps.config().config.tools.max_parallel.max(1)),
        started_with_answer: std::sync::Mutex::default(),
        said_before_calls: std::sync::Mutex::default(),
        ran_edited: std::sync::Mutex::default(),
        call_order: super::call_order::CallOrder::default(),
    };
    let outcome = turn.drive().await;
    let hub = &deps.hub;
    if matches!(outcome, Err(TurnEnd::TakenOver)) || hub.is_lost(&session_id, &lease.turn_id) {
        tracing::info!(session = %session_id, turn = %lease.turn_id, "another instance took this turn over");
        hub.finish(&session_id, &lease.turn_id);
        return;
    }
    let cancel_requested = hub.seal(&session_id, &lease.turn_id)
        || sealed_with_cancel(deps.coordination.as_deref(), &session_id, &lease.turn_id).await;
    let (status, error) = match outcome {
        Ok(()) if cancel_requested => (TurnStatus::Cancelled, None),
        Ok(()) => (TurnStatus::Completed, None),
        Err(TurnEnd::Cancelled) => (TurnStatus::Cancelled, None),
        Err(TurnEnd::Stopped) => (TurnStatus::Stopped, None),
        // Returned above.
        Err(TurnEnd::TakenOver) => return,
        Err(TurnEnd::Failed(message)) => {
            tracing::warn!(session = %session_id, turn = %lease.turn_id, %message, "turn failed");
            (TurnStatus::Failed, Some(message))
        }
    };
    let finished = NewEvent::new(
        Some(&lease.turn_id),
        EventBody::TurnFinished { status, error },
    );
    let release = || hub.finish(&session_id, &lease.turn_id);
    let commit = Commit {
        lease: Some(LeaseStep::Release(lease.turn_id.clone())),
        ..Commit::default()
    };
    if let Err(err) = hub
        .commit(&session_id, vec![finished], commit, release)
        .await
    {
        tracing::error!(session = %session_id, error = %err, "could not record turn_finished");
        hub.finish(&session_id, &lease.turn_id);
    }
    drop(lease);
}

/// On a shared store, seals the turn in its lease (no cancel from any instance is accepted
/// after this); `true` if one was requested there. A store that cannot answer: `false`.
async fn sealed_with_cancel(
    coordination: Option<&dyn crate::server::store::Coordination>,
    session_id: &SessionId,
    turn_id: &TurnId,
) -> bool {
    let Some(coordination) = coordination else {
        return false;
    };
    coordination
        .seal_turn(session_id, turn_id)
        .await
        .unwrap_or_else(|err| {
            tracing::warn!(session = %session_id, error = %err, "could not seal the turn's lease");
            false
        })
}

pub(super) struct Turn {
    pub(super) deps: Arc<Deps>,
    pub(super) session_id: SessionId,
    pub(super) turn_id: TurnId,
    pub(super) cancel: CancellationToken,
    /// The turn's approval mode; leaving plan mode changes it mid-turn.
    mode: std::sync::Mutex<Mode>,
    /// Time spent waiting for a person, which the wall-clock budget does not count.
    pub(super) waits: Arc<super::budget::WaitClock>,
    /// At most `tools.max_parallel` of a batch's calls execute at once (gates still open side
    /// by side: a permit is taken only to run).
    exec_slots: tokio::sync::Semaphore,
    /// Calls whose `tool_started` was committed with the person's answer (`gate::resolve`).
    started_with_answer: std::sync::Mutex<std::collections::HashSet<CallId>>,
    /// What the model wrote before the calls it is making now: their cards show it as what
    /// the agent says it is doing.
    said_before_calls: std::sync::Mutex<Option<String>>,
    /// Calls a person edited before they ran: what each ran with, which its result tells the
    /// model (taken once, when the batch's results are read).
    ran_edited: std::sync::Mutex<std::collections::HashMap<CallId, serde_json::Value>>,
    /// The batch's calls, recorded in the order the model made them.
    call_order: super::call_order::CallOrder,
}

impl Turn {
    /// The mode this turn acts in: the session's, held to what the step-up allows (a `yolo`
    /// session acts as `ask` while `approvals.require_passkey = "all"`).
    pub(super) fn mode(&self) -> Mode {
        let stored = *self.mode.lock().unwrap_or_else(|p| p.into_inner());
        let step_up = self.deps.live.get().config.approvals.require_passkey;
        step_up.effective_mode(stored)
    }

    pub(super) fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }

    /// Notes that `call_id`'s `tool_started` is already in the log.
    pub(super) fn mark_started(&self, call_id: &CallId) {
        self.started_with_answer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(call_id.clone());
    }

    /// Notes that a person edited `call_id` to run with `args`.
    pub(super) fn note_edited(&self, call_id: &CallId, args: &serde_json::Value) {
        self.ran_edited
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(call_id.clone(), args.clone());
    }

    /// How the result of `call_id` reads to the model: what it ran with first, when a person
    /// edited it (as the history folded from the log writes it).
    fn result_for_model(&self, call_id: &CallId, status: ToolStatus, output: &str) -> String {
        let edited = self
            .ran_edited
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(call_id);
        match edited {
            Some(args) => crate::server::conversation::edited_result_text(&args, status, output),
            None => tool_result_text(status, output),
        }
    }

    /// Whether `call_id`'s `tool_started` is already in the log (and forgets it: it is
    /// recorded once).
    fn take_started(&self, call_id: &CallId) -> bool {
        self.started_with_answer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(call_id)
    }

    pub(super) async fn append(&self, bodies: Vec<EventBody>) -> Result<(), TurnEnd> {
        self.commit(bodies, Commit::default()).await
    }

    pub(super) async fn commit(
        &self,
        bodies: Vec<EventBody>,
        commit: Commit,
    ) -> Result<(), TurnEnd> {
        // A batch's `tool_call`s go into the log in the order the model made the calls, so the
        // page shows them so and the next model call reads them back so.
        let recording = bodies.iter().find_map(|b| match b {
            EventBody::ToolCall { call_id, .. } => Some(call_id.clone()),
            _ => None,
        });
        if let Some(call_id) = &recording {
            self.call_order.wait_for_turn(call_id).await;
        }
        let _recorded = recording.map(|call_id| self.call_order.recorded_on_drop(call_id));
        let events = bodies
            .into_iter()
            .map(|b| NewEvent::new(Some(&self.turn_id), b))
            .collect();
        // Every write of the turn is fenced by its lease (on a shared store).
        let commit = Commit {
            lease: Some(LeaseStep::Hold(self.turn_id.clone())),
            ..commit
        };
        self.deps
            .hub
            .commit(&self.session_id, events, commit, || ())
            .await?;
        // The commit woke the session's feeds; let them send it before the turn goes on (its
        // next step, e.g. building the next model request, is CPU the feed would wait behind:
        // about 0.1 ms of every gate round trip).
        tokio::task::yield_now().await;
        Ok(())
    }

    /// What the model is told and offered in the current mode: the tools the registry offers
    /// in it, and their words for the system prompt.
    fn prompt_and_tools(&self) -> (String, Vec<crate::server::provider::ToolSpec>) {
        let mode = self.mode();
        let mut prompt = SYSTEM_PROMPT.to_owned();
        let mut specs = Vec::new();
        for tool in tools::all().iter().filter(|t| t.offered_in(mode)) {
            prompt.push_str(tool.prompt());
            specs.push(tool.spec());
        }
        (prompt, specs)
    }

    async fn drive(&self) -> Result<(), TurnEnd> {
        // A turn resumed after a restart first finishes the calls it had recorded.
        self.finish_open_calls().await?;
        let mut messages = self
            .deps
            .hub
            .history(&self.session_id, |h| h.messages().to_vec())
            .await?;
        let mut budget = Budget::new(
            self.deps.config().config.budget.clone(),
            Arc::clone(&self.waits),
        );
        let mut fitting = crate::server::conversation::fit::Fitting::default();
        // No fixed cap on model calls: the budget kill-switch (tool calls, tokens, time) is
        // what stops a runaway loop, and the person decides whether it goes on.
        loop {
            if self.cancel.is_cancelled() {
                return Err(TurnEnd::Cancelled);
            }
            if let Some(why) = budget.exceeded() {
                self.budget_gate(&why).await?;
                budget.refresh();
            }
            // Boxed: asking the model only takes memory while it runs.
            let calls = Box::pin(self.model_step(&mut messages, &mut fitting, &mut budget)).await?;
            if calls.is_empty() {
                return Ok(());
            }
            self.run_within_budget(&calls, &mut budget, &mut messages)
                .await?;
            if self.cancel.is_cancelled() {
                return Err(TurnEnd::Cancelled);
            }
        }
    }

    /// One model call on the conversation so far: its words recorded (and streamed as they
    /// come), its message added; the tool calls it asks for.
    async fn model_step(
        &self,
        messages: &mut Vec<Arc<ChatMessage>>,
        fitting: &mut crate::server::conversation::fit::Fitting,
        budget: &mut Budget,
    ) -> Result<Vec<ToolCallRequest>, TurnEnd> {
        let (prompt, tools) = self.prompt_and_tools();
        let mut conversation = Vec::with_capacity(messages.len() + 1);
        conversation.push(Arc::new(ChatMessage::System(prompt)));
        conversation.extend(messages.iter().cloned());
        let request = CompletionRequest {
            messages: conversation,
            tools,
        };
        let sink = |text: &str| {
            self.deps.hub.publish_transient(
                &self.session_id,
                Some(&self.turn_id),
                EventBody::AssistantDelta {
                    text: text.to_owned(),
                },
            )
        };
        let completion = self.ask_model(request, fitting, &sink).await?;
        budget.spend_tokens(completion.tokens);
        if !completion.text.trim().is_empty() {
            let html = markdown::render(&completion.text);
            self.append(vec![EventBody::AssistantMessage {
                text: completion.text.clone(),
                html,
            }])
            .await?;
        }
        messages.push(Arc::new(ChatMessage::Assistant {
            text: completion.text.clone(),
            tool_calls: completion.tool_calls.clone(),
        }));
        if !completion.tool_calls.is_empty() {
            *self
                .said_before_calls
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = crate::text::agent_words(&completion.text);
        }
        Ok(completion.tool_calls)
    }

    /// Runs the calls, charged per call: the calls a batch holds beyond the ceiling wait for
    /// a budget card, and run only if the person lets the turn continue.
    async fn run_within_budget(
        &self,
        calls: &[ToolCallRequest],
        budget: &mut Budget,
        messages: &mut Vec<Arc<ChatMessage>>,
    ) -> Result<(), TurnEnd> {
        let mut rest = calls;
        while !rest.is_empty() {
            let room = budget.calls_left().map_or(rest.len(), |left| {
                usize::try_from(left).unwrap_or(usize::MAX).min(rest.len())
            });
            if room == 0 {
                let why = budget
                    .exceeded()
                    .unwrap_or_else(|| "tool calls used".into());
                self.budget_gate(&why).await?;
                budget.refresh();
                continue;
            }
            let (now, later) = rest.split_at(room);
            budget.spend_calls(now.len());
            let results = self.run_batch(now).await?;
            messages.extend(results.into_iter().map(Arc::new));
            rest = later;
        }
        Ok(())
    }

    /// Runs the batch's calls (in parallel when the model asked for several: several gates
    /// then wait side by side, one card each).
    async fn run_batch(&self, calls: &[ToolCallRequest]) -> Result<Vec<ChatMessage>, TurnEnd> {
        self.call_order.begin(calls.iter().map(|c| c.id.clone()));
        let outcomes = join_all(calls.iter().map(|call| async move {
            // However the call ends, it no longer holds up the calls after it.
            let _done = self.call_order.recorded_on_drop(call.id.clone());
            self.run_one(call).await
        }))
        .await;
        let mut messages = Vec::with_capacity(calls.len());
        for (call, outcome) in calls.iter().zip(outcomes) {
            let (status, output) = outcome?;
            messages.push(ChatMessage::Tool {
                call_id: call.id.clone(),
                output: self.result_for_model(&call.id, status, &output),
            });
        }
        Ok(messages)
    }

    /// One call: checked, then the pipeline decides; a gated call waits for its answer first.
    async fn run_one(&self, call: &ToolCallRequest) -> Result<(ToolStatus, String), TurnEnd> {
        let class = class_of(&call.name);
        let (tool, hidden) = match self.check_call(call).await {
            Ok(checked) => checked,
            // Boxed, like every step but the wait below: a parked call's future (10,000 of
            // them with 10,000 open cards) is as large as its largest step.
            Err((status, why)) => {
                return Box::pin(self.refuse_call(call, class, status, why)).await;
            }
        };
        crate::timeline::mark("turn: call checked");
        let verdict = Box::pin(self.evaluate_call(call, class, &hidden, Rules::Consulted)).await?;
        crate::timeline::mark("turn: rules read");
        match verdict.outcome {
            Outcome::Refuse { why } => {
                Box::pin(self.refuse_call(call, class, ToolStatus::Refused, why)).await
            }
            Outcome::Run { rule_id } => {
                let pattern = verdict.rule.map(|rule| rule.pattern);
                Box::pin(self.run_unasked(call, class, rule_id, pattern)).await
            }
            Outcome::Ask { reason } => {
                let asked = tool_call(call, class, Verdict::Ask, None);
                let floor = verdict.floor.as_deref();
                Box::pin(self.ask(tool, call, reason, floor, Some(asked))).await
            }
        }
    }

    /// Puts a call to the person on a card and acts on the answer. `asked` is the call's
    /// `tool_call` when it is not recorded yet.
    async fn ask(
        &self,
        tool: &'static dyn Tool,
        call: &ToolCallRequest,
        reason: GateReason,
        floor: Option<&str>,
        asked: Option<EventBody>,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        let body = Box::pin(self.card(tool, call, reason, floor)).await?;
        let gate = ApprovalRequest {
            reviewer_concern: None,
            route_state: None,
            turn_id: self.turn_id.clone(),
            body,
        };
        let resolution = self.wait_for_gate(asked, &gate).await?;
        Box::pin(self.after_gate(call, &gate, resolution)).await
    }

    /// Puts the `[[approvals.route]]` the card matches on it, with the session's owner (issue
    /// 41): from now on it says who may answer it.
    pub(super) async fn route_card(&self, body: &mut ApprovalRequestBody) -> Result<(), TurnEnd> {
        let live = self.deps.config();
        let routes = &live.config.approvals.route;
        // No route matches (none configured, or a card that stays the same when rejoined):
        // nothing to read.
        if body.route.is_some() || crate::server::gate::route::matching(routes, body).is_none() {
            return Ok(());
        }
        let owner = self
            .deps
            .hub
            .session(&self.session_id)
            .await?
            .and_then(|row| row.owner);
        crate::server::gate::route::route_card(routes, body, owner.as_deref());
        Ok(())
    }

    /// A call recorded as run by a rule whose rule was revoked or expired before it started:
    /// decided again as if no rule existed (another grant may still cover it; else the mode
    /// decides, which usually means a card), as docs/approvals.md promises.
    async fn decide_again_without_rule(
        &self,
        call: &ToolCallRequest,
        class: ToolClass,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        let (tool, hidden) = match self.check_call(call).await {
            Ok(checked) => checked,
            Err((status, why)) => {
                return self
                    .finish_without_running(call, Vec::new(), status, why)
                    .await;
            }
        };
        let verdict = Box::pin(self.evaluate_call(call, class, &hidden, Rules::Ignored)).await?;
        match verdict.outcome {
            Outcome::Refuse { why } => {
                self.finish_without_running(call, Vec::new(), ToolStatus::Refused, why)
                    .await
            }
            Outcome::Run { .. } => Box::pin(self.execute(call, &call.args, false)).await,
            Outcome::Ask { reason } => {
                let floor = verdict.floor.as_deref();
                Box::pin(self.ask(tool, call, reason, floor, None)).await
            }
        }
    }

    /// Records a call that will not run, with why, as its result.
    async fn refuse_call(
        &self,
        call: &ToolCallRequest,
        class: ToolClass,
        status: ToolStatus,
        why: String,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        let recorded = tool_call(call, class, Verdict::Refuse, None);
        self.finish_without_running(call, vec![recorded], status, why)
            .await
    }

    /// The call's tool, its arguments checked, and what a path in them hides (a link, a
    /// name that leads elsewhere) — or the status and sentence it is refused with. The check
    /// reads the disk (paths are resolved, `config_set` reads the config file): off the async
    /// workers, bounded.
    async fn check_call(
        &self,
        call: &ToolCallRequest,
    ) -> Result<(&'static dyn Tool, Vec<tools::Hidden>), (ToolStatus, String)> {
        if self.cancel.is_cancelled() {
            let why = "the turn was cancelled before this ran";
            return Err((ToolStatus::Cancelled, why.into()));
        }
        let Some(tool) = tools::get(&call.name) else {
            let name = call.name.clone();
            return Err((
                ToolStatus::Error,
                tools::ToolError::UnknownTool { name }.to_string(),
            ));
        };
        let (settings, workspace, args) = (
            self.deps.settings(),
            self.deps.workspace.clone(),
            call.args.clone(),
        );
        let checked = Box::pin(reader::blocking(
            &call.name,
            reader::FS_LIMIT,
            Some(&self.cancel),
            move || {
                let env = CheckEnv {
                    workspace: &workspace,
                    settings: Some(&settings),
                };
                Ok((tool.check(&args, &env), tool.hidden(&args, &workspace)))
            },
        ))
        .await;
        let hidden = match checked {
            Ok((Ok(()), hidden)) => hidden,
            Ok((Err(Refusal::Invalid(err)), _)) => {
                return Err((ToolStatus::Error, err.to_string()));
            }
            Ok((Err(Refusal::Refused(why)), _)) => return Err((ToolStatus::Refused, why)),
            Err(err) => {
                let output = tools::ToolOutput::from_error(err);
                return Err((output.status, output.output));
            }
        };
        match tool.refused_in(self.mode()) {
            Some(why) => Err((ToolStatus::Refused, why)),
            None => Ok((tool, hidden)),
        }
    }

    /// The pipeline's verdict on a checked call. What the built-in agent brings: the floor as
    /// the call's arguments and hidden paths read (an agent checkpoint is never on it), and
    /// rules that cover the path as it leads, not only as it is named.
    async fn evaluate_call(
        &self,
        call: &ToolCallRequest,
        class: ToolClass,
        hidden: &[tools::Hidden],
        rules: Rules,
    ) -> Result<evaluate::Verdict, TurnEnd> {
        let live = self.deps.config();
        let floor = match class {
            ToolClass::Decision => None,
            _ => live
                .floor
                .check(&call.name, &call.args)
                .or_else(|| live.floor.check_hidden(hidden)),
        };
        let input = evaluate::Input {
            stored_mode: *self.mode.lock().unwrap_or_else(|p| p.into_inner()),
            step_up: live.config.approvals.require_passkey,
            class,
            floor,
            unknown_tool: None,
            checkpoint_in_yolo: CheckpointInYolo::Refuse,
            held_for_people: crate::server::gate::route::held_for_people(
                &live.config.approvals.route,
                class,
                None,
            ),
        };
        // A rule is for the path as it leads: one written for `docs/a.md` does not cover the
        // file a symlink of that name points to (checked before its use is spent).
        let leads_where_it_reads = |rule: &crate::protocol::Rule| {
            hidden.iter().all(|h| match h {
                tools::Hidden::LeadsTo(real) => {
                    crate::server::gate::rules::covers_real_path(rule, real)
                }
                _ => true,
            })
        };
        let find_rule = || async {
            if rules == Rules::Ignored {
                return Ok(None);
            }
            crate::server::gate::rules::matching(
                self.deps.rules.as_ref(),
                self.session_id.as_str(),
                &call.name,
                &call.args,
                &leads_where_it_reads,
            )
            .await
        };
        Ok(evaluate::evaluate(input, find_rule).await?)
    }

    /// Records a call the pipeline let run (naming the rule that spared the question, if
    /// one did), then runs it.
    async fn run_unasked(
        &self,
        call: &ToolCallRequest,
        class: ToolClass,
        rule_id: Option<RuleId>,
        rule_pattern: Option<String>,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        // The rule's use was spent as it matched (`rules::matching_subject`).
        let commit = Commit::default();
        let mut recorded = tool_call(call, class, Verdict::Run, rule_id.clone());
        if let (
            EventBody::ToolCall {
                rule_pattern: p, ..
            },
            Some(_),
        ) = (&mut recorded, &rule_id)
        {
            *p = rule_pattern;
        }
        Box::pin(self.commit(vec![recorded], commit)).await?;
        // Boxed (here and in `run_one`): what runs after the wait only takes memory while it
        // runs, not in every parked call's future (10,000 parked gates are 10,000 of them).
        Box::pin(self.execute_unasked(call, class, rule_id.as_ref())).await
    }

    /// The card a gated call is put to the person on, as its tool's gate style says.
    pub(super) async fn card(
        &self,
        tool: &'static dyn Tool,
        call: &ToolCallRequest,
        reason: GateReason,
        floor: Option<&str>,
    ) -> Result<ApprovalRequestBody, TurnEnd> {
        let live = self.deps.config();
        let class = tool.class();
        let mut detail = policy::reason_detail(reason, self.mode(), class, floor);
        // Every exec card says so while commands run unconfined.
        if class == ToolClass::Exec && live.sandbox.is_off() {
            detail.push(' ');
            detail.push_str(tools::sandbox::OFF_WARNING);
        }
        let common = request::Common {
            approval_id: uuid::Uuid::new_v4().to_string().into(),
            session_id: self.session_id.as_str().into(),
            reason,
            reason_detail: detail,
            created_at: crate::protocol::Timestamp::now(),
            timeout: Duration::from_secs(live.config.approvals.timeout_secs),
            agent_says: self
                .said_before_calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        };
        let unreadable = |e: tools::ToolError| TurnEnd::Failed(e.to_string());
        Ok(match tool.gate() {
            GateStyle::Checkpoint => {
                let checkpoint = Checkpoint::parse(&call.args).map_err(unreadable)?;
                let on_timeout = live.config.approvals.decision_timeout;
                request::decision_gate(common, call, &checkpoint, on_timeout)
            }
            GateStyle::Plan => {
                let plan = tools::plan_of(&call.args).map_err(unreadable)?;
                let stored = super::plan::pre_plan_mode(&self.deps.hub, &self.session_id).await;
                // The card offers only a mode the step-up allows: a session stored in yolo
                // before plan mode returns to `ask` while `require_passkey = "all"` holds.
                let step_up = live.config.approvals.require_passkey;
                request::plan_gate(common, call, &plan, step_up.effective_mode(stored))
            }
            GateStyle::Action => self.action_card(common, call, class).await?,
        })
    }

    /// A tool call's card: what it will do, with the file it would change read (capped,
    /// through the one reader) off the async threads, bounded, and given up on Stop.
    async fn action_card(
        &self,
        common: request::Common,
        call: &ToolCallRequest,
        class: ToolClass,
    ) -> Result<ApprovalRequestBody, TurnEnd> {
        let live = self.deps.config();
        let approved = self.approved_before(call).await?;
        crate::timeline::mark("card: earlier approvals counted");
        let (call, workspace) = (call.clone(), self.deps.workspace.clone());
        let floor: Arc<dyn tools::FloorPaths> = live.floor.clone();
        let built = reader::blocking(
            "the card",
            reader::FS_LIMIT,
            Some(&self.cancel),
            move || {
                crate::timeline::mark("card: blocking work begins");
                let env = tools::CardEnv {
                    workspace: &workspace,
                    floor,
                };
                Ok(request::tool_gate(common, &call, class, &env, approved))
            },
        )
        .await;
        match built {
            Ok(body) => Ok(with_value_now(body, &live.config)),
            Err(tools::ToolError::Cancelled) => Err(TurnEnd::Cancelled),
            Err(err) => Err(TurnEnd::Failed(format!("could not build the card: {err}"))),
        }
    }

    /// Records the call and a result without running anything.
    pub(super) async fn finish_without_running(
        &self,
        call: &ToolCallRequest,
        mut events: Vec<EventBody>,
        status: ToolStatus,
        output: String,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        events.push(EventBody::ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status,
            output: output.clone(),
        });
        self.append(events).await?;
        Ok((status, output))
    }

    /// Runs a tool: `tool_started` is committed first (here, or with the answer that let it
    /// run), so a crash leaves evidence. `floor_cleared`: a person approved this call on a
    /// safety-floor card, so its tool may open the floor files the card named.
    pub(super) async fn execute(
        &self,
        call: &ToolCallRequest,
        args: &serde_json::Value,
        floor_cleared: bool,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        // Closed only at shutdown of the turn; a closed semaphore means run unbounded.
        let _slot = self.exec_slots.acquire().await.ok();
        self.execute_in_slot(call, args, floor_cleared).await
    }

    /// Runs a call the policy let run without asking (its class, a standing rule, the mode) —
    /// unless, by the time it has a slot, the policy would now ask (the step-up was turned on
    /// while it waited, or before a restart resumed it): then it is refused, not run, and the
    /// agent may make it again (and get a card). A call its rule let run is run only while
    /// that rule is still in force (one read by id): revoked or expired while it waited (or
    /// before a restart resumed it), the call is decided again without it — a card.
    pub(super) async fn execute_unasked(
        &self,
        call: &ToolCallRequest,
        class: ToolClass,
        rule_id: Option<&RuleId>,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        let _slot = self.exec_slots.acquire().await.ok();
        let step_up = self.deps.live.get().config.approvals.require_passkey;
        let stored = *self.mode.lock().unwrap_or_else(|p| p.into_inner());
        if !evaluate::still_runs(stored, step_up, class, rule_id) {
            let why = "not run: approvals.require_passkey changed before it started, and it now needs a card; make the call again to ask";
            return self
                .finish_without_running(call, Vec::new(), ToolStatus::Refused, why.to_owned())
                .await;
        }
        if let Some(rule_id) = rule_id {
            let now = crate::protocol::Timestamp::now();
            if !self.deps.rules.rule_in_force(rule_id, &now).await? {
                // Revoked or expired while it waited: the slot goes to a call that may run.
                drop(_slot);
                return Box::pin(self.decide_again_without_rule(call, class)).await;
            }
        }
        self.execute_in_slot(call, &call.args, false).await
    }

    /// `execute`'s work once the call holds an execution slot.
    async fn execute_in_slot(
        &self,
        call: &ToolCallRequest,
        args: &serde_json::Value,
        floor_cleared: bool,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        if !self.take_started(&call.id) {
            self.append(vec![EventBody::ToolStarted {
                call_id: call.id.clone(),
            }])
            .await?;
        }
        crate::timeline::mark("tool: started");
        let output = tools::execute(&call.name, args, &self.tool_context(floor_cleared)).await;
        crate::timeline::mark("tool: done");
        self.append(vec![EventBody::ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status: output.status,
            output: output.output.clone(),
        }])
        .await?;
        crate::timeline::mark("turn: result committed");
        Ok((output.status, output.output))
    }

    /// How many calls the suggested rule for `call` would cover were approved by hand in this
    /// session (the card recommends the rule from three on).
    async fn approved_before(&self, call: &ToolCallRequest) -> Result<u32, TurnEnd> {
        let Some(pattern) = crate::server::gate::rules::default_pattern(&call.name, &call.args)
        else {
            return Ok(0);
        };
        Ok(self
            .deps
            .hub
            .history(&self.session_id, |h| {
                h.approved_by_hand(&call.name, &pattern)
            })
            .await?)
    }

    pub(super) fn tool_context(&self, floor_cleared: bool) -> ToolContext {
        let live = self.deps.config();
        let config = &live.config.tools;
        let guard = if floor_cleared {
            tools::Guard::Cleared
        } else {
            tools::Guard::Floor(live.floor.clone())
        };
        ToolContext {
            guard,
            workspace: self.deps.workspace.clone(),
            shell_timeout: Duration::from_secs(config.shell_timeout_secs),
            output_limit: config.output_limit_bytes,
            cancel: self.cancel.clone(),
            sandbox: Arc::clone(&live.sandbox),
            settings: Some(SettingsAccess {
                settings: Arc::new(self.deps.settings()),
                session_id: self.session_id.to_string(),
            }),
        }
    }
}

/// A `config_set` card says what the value is now and what it would become
/// (`tools.shell_timeout_secs: 120 → 60`); other cards are left as they are.
fn with_value_now(
    mut body: ApprovalRequestBody,
    config: &crate::server::config::Config,
) -> ApprovalRequestBody {
    if body.tool != tools::CONFIG_TOOL {
        return body;
    }
    // The key as the tool reads and sets it (trimmed), so "now" is the value it replaces.
    let Ok((key, wanted)) = tools::config_key_and_value(&body.args) else {
        return body;
    };
    let now = crate::server::config::keys::get(config, &key)
        .map(|v| crate::server::config::keys::display(&v))
        .unwrap_or_else(|| "unset".to_owned());
    body.summary = format!("config_set {key}: {now} → {wanted}");
    body
}

/// The `tool_call` event recording a call and the verdict on it.
fn tool_call(
    call: &ToolCallRequest,
    class: ToolClass,
    verdict: Verdict,
    rule_id: Option<RuleId>,
) -> EventBody {
    EventBody::ToolCall {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        args: call.args.clone(),
        class,
        verdict,
        rule_id,
        rule_pattern: None,
    }
}
