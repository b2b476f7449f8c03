//! `countersign hook …`: the command Claude Code's and Codex's permission hooks run, and
//! `hook install` that registers it. Everything runs over [`run_with`], which takes stdin and the
//! environment as values and returns what to print, so tests need no process or global state.

mod boundary;
pub mod claude_code;
pub mod claude_dialog;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod install;
pub mod qwen;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::external::gates_client::{
    ApprovalId, Capabilities, ClientError, DEFAULT_OPEN_BUDGET, GateTool, GatesClient, OpenGate,
};
use crate::external::key::idempotency_key;
use crate::external::remote::CountersignRemote;
use crate::external::verdict::Verdict;
use crate::text::error_chain;

/// The agent's hook timeout by default (Countersign's default gate window).
pub const DEFAULT_TIMEOUT_SECS: u64 = 1800;
/// How long before the agent's hook timeout the hook gives up and answers: the agent drops an
/// answer that comes after it, and cancelling the gate takes a moment.
const ANSWER_MARGIN: Duration = Duration::from_secs(10);
/// How many earlier asks of the same call a hook walks past before asking anew.
const MAX_ASKED_BEFORE: usize = 50;
/// The `why` sent when the hook's own deadline cancels its gate.
const WHY_TIMEOUT: &str = "timeout";
/// The cancel reason when the agent stopped the hook (it answered in its own prompt, the person
/// pressed Esc, the agent quit): nobody waits for this card any more.
pub const WHY_AGENT_GONE: &str = "agent_gone";
/// The cancel reason when the person answered the agent's own prompt first (Claude Code's
/// dialog, which races the card): the call went on without the card.
pub const WHY_ANSWERED_ELSEWHERE: &str = "answered_elsewhere";
/// How long the hook's card may go without a poll of it waiting before the server takes the
/// hook for dead and closes the card: well above the client's longest pause between polls (5 s
/// of backoff while Countersign restarts).
const WATCH_LAPSE: Duration = Duration::from_secs(15);
/// How long a stopped hook may spend closing its card before it exits anyway.
const CLOSE_ON_STOP: Duration = Duration::from_secs(3);

/// `countersign hook …`
#[derive(Args, Debug, Clone)]
pub struct HookArgs {
    #[command(subcommand)]
    pub command: HookCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum HookCommand {
    /// Answer a Claude Code `PermissionRequest` or `PreToolUse` hook (JSON on stdin).
    ClaudeCode(GateHookArgs),
    /// Answer a Codex `PermissionRequest` hook (JSON on stdin).
    Codex(GateHookArgs),
    /// Answer a Gemini CLI `BeforeTool` hook (JSON on stdin).
    Gemini(GateHookArgs),
    /// Answer a Qwen Code `PreToolUse` hook (JSON on stdin).
    Qwen(GateHookArgs),
    /// Answer a GitHub Copilot CLI `preToolUse` hook (JSON on stdin).
    Copilot(GateHookArgs),
    /// Register the hook in an agent's settings.
    Install(install::InstallArgs),
}

/// Flags of the hooks that open a gate.
#[derive(Args, Debug, Clone)]
pub struct GateHookArgs {
    #[command(flatten)]
    pub remote: CountersignRemote,
    /// The agent's timeout for this hook, in seconds: the hook answers (a deny, if nobody
    /// has) 10 s before it passes.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, value_parser = timeout_secs)]
    pub timeout: u64,
    /// Do not send the agent's last words from its transcript with the gate (the card then
    /// shows the call and, when the agent gave one, its own `description`).
    #[arg(long)]
    pub no_transcript: bool,
    /// What to answer when Countersign cannot be reached at all (no connection, a timeout, a
    /// proxy's 502-504, the server stopping, no token set): `ask` leaves the call to the
    /// agent's own prompt where that asks a person (where the agent would run it unasked, a
    /// deny); `deny` refuses it. An answer Countersign sent (a wrong token, too many cards, its
    /// storage down, an error) is always a deny.
    #[arg(long, value_enum, default_value_t = Unreachable::Ask)]
    pub if_unreachable: Unreachable,
}

/// The shortest and longest hook timeout. The hook answers [`ANSWER_MARGIN`] before the
/// agent's timeout and may then spend [`CLOSE_ON_STOP`] closing its card, opening included in
/// the wait: under 12 s it could not answer before the agent gives up on it (and Gemini, Qwen
/// and Copilot then run the call). Over a week, Countersign refuses the gate (and Node's timers
/// overflow past ~24 days: Gemini ran a call at once with a longer one).
pub const TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 12..=7 * 24 * 3600;

/// `--timeout`, within [`TIMEOUT_RANGE`].
pub fn timeout_secs(raw: &str) -> Result<u64, String> {
    let secs: u64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("`{raw}` is not a whole number of seconds"))?;
    if TIMEOUT_RANGE.contains(&secs) {
        Ok(secs)
    } else {
        Err(format!(
            "must be {} to {} seconds",
            TIMEOUT_RANGE.start(),
            TIMEOUT_RANGE.end()
        ))
    }
}

/// A hook's answer when Countersign cannot be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Unreachable {
    /// The agent asks in its own prompt (Gemini CLI waits forever on that in `-p`); where the
    /// agent's "ask" would run the call with nobody asked, a deny (see [`AgentAsk`]).
    Ask,
    /// The call is refused, saying why.
    Deny,
}

/// What a hook run needs from the outside world, passed in so tests can supply their own.
#[derive(Clone, Debug)]
pub struct HookContext {
    /// `$HOME`, for `install --user` and `install codex`.
    pub home: Option<PathBuf>,
    /// The directory the hook runs in (default for `install claude-code`; a payload without
    /// `cwd`).
    pub cwd: PathBuf,
    /// How long opening a gate retries an unreachable Countersign.
    pub open_budget: Duration,
    /// Write stderr lines as they are said (the real process: "waiting for an answer: <url>"
    /// shows while it waits), not only in [`HookOutcome::stderr`] at the end.
    pub live_stderr: bool,
    /// The agent says a person attends its session and can answer its own permission dialog
    /// (Claude Code sets `CLAUDE_CODE_SESSION_ATTENDED=1` for its hooks in its interactive
    /// terminal, `0` under `-p` and the SDK, where a hook's "ask" is a refusal).
    pub agent_attended: bool,
}

impl HookContext {
    /// The real process's context.
    pub fn from_env() -> HookContext {
        HookContext {
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            open_budget: DEFAULT_OPEN_BUDGET,
            live_stderr: true,
            agent_attended: std::env::var("CLAUDE_CODE_SESSION_ATTENDED").as_deref() == Ok("1"),
        }
    }
}

/// What the process prints and how it exits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookOutcome {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
    /// Lines were already written to the process's stderr as they were said.
    live: bool,
}

impl HookOutcome {
    /// An outcome that writes its stderr lines at once when the context says so.
    fn new(ctx: &HookContext) -> HookOutcome {
        HookOutcome {
            live: ctx.live_stderr,
            ..HookOutcome::default()
        }
    }

    fn say(&mut self, line: impl AsRef<str>) {
        if self.live {
            eprintln!("countersign: {}", line.as_ref());
        }
        self.stderr.push_str("countersign: ");
        self.stderr.push_str(line.as_ref());
        self.stderr.push('\n');
    }

    fn failed(line: impl AsRef<str>) -> HookOutcome {
        let mut outcome = HookOutcome {
            code: 1,
            ..HookOutcome::default()
        };
        outcome.say(line);
        outcome
    }
}

/// The entry point the main binary calls for `countersign hook …`.
pub async fn run(args: HookArgs) -> ExitCode {
    let mut stdin = Vec::new();
    if !matches!(args.command, HookCommand::Install(_))
        && let Err(e) = tokio::io::stdin().read_to_end(&mut stdin).await
    {
        // As with input that cannot be parsed: blocked (exit 2), never waved through, since
        // the agent's own prompt may never come.
        eprintln!("countersign: cannot read the hook's input: {e}; the call is not allowed");
        return ExitCode::from(2);
    }
    let outcome = run_with(args, &stdin, &HookContext::from_env()).await;
    let mut out = std::io::stdout().lock();
    // A closed stdout leaves nothing useful to do; the exit code still tells.
    let _ = out
        .write_all(outcome.stdout.as_bytes())
        .and_then(|()| out.flush());
    if !outcome.live {
        eprint!("{}", outcome.stderr);
    }
    ExitCode::from(outcome.code)
}

/// `countersign hook …` with its input as values.
pub async fn run_with(args: HookArgs, stdin: &[u8], ctx: &HookContext) -> HookOutcome {
    match args.command {
        HookCommand::ClaudeCode(flags) => claude_code::answer(&flags, stdin, ctx).await,
        HookCommand::Codex(flags) => codex::answer(&flags, stdin, ctx).await,
        HookCommand::Gemini(flags) => {
            answer_always::<gemini::GeminiHookInput>(&flags, stdin, ctx).await
        }
        HookCommand::Qwen(flags) => answer_always::<qwen::QwenHookInput>(&flags, stdin, ctx).await,
        HookCommand::Copilot(flags) => {
            answer_always::<copilot::CopilotHookInput>(&flags, stdin, ctx).await
        }
        HookCommand::Install(install) => {
            let mut out = install::install(&install, ctx);
            if out.code == 0 {
                boundary::warn(&mut out, ctx).await;
            }
            out
        }
    }
}

/// The gate a hook opens for the agent's `tool_name` and `tool_input`; `cwd` falls back to the
/// hook's own directory. `edit`: whether the agent can run an edited input.
pub(crate) fn hook_gate(
    source: &str,
    session_id: &str,
    cwd: &str,
    tool: (&str, &serde_json::Value),
    edit: bool,
    ctx: &HookContext,
    timeout_secs: u64,
) -> OpenGate {
    OpenGate {
        source: source.into(),
        external_session: session_id.to_owned(),
        cwd: if cwd.is_empty() {
            ctx.cwd.display().to_string()
        } else {
            cwd.to_owned()
        },
        tool: GateTool {
            name: tool.0.to_owned(),
            input: tool.1.clone(),
        },
        title: None,
        reason: None,
        agent_says: None,
        capabilities: Capabilities {
            edit,
            always: true,
            deny_reason: true,
        },
        timeout_secs: Some(timeout_secs),
    }
}

/// The idempotency key of one hook call.
#[derive(Clone, Debug, PartialEq)]
pub struct GateKey {
    pub key: String,
    /// The key names one tool use (Claude Code's `tool_use_id`): a gate already answered under
    /// it answered this very call. Otherwise the key is a hash of the request, which the agent
    /// may make again later, and an answered gate under it was an earlier ask (see [`decide`]).
    pub names_one_call: bool,
}

/// What came of asking Countersign about one call.
#[derive(Debug)]
pub(crate) enum Asked {
    /// Countersign's answer: a person's, a rule's, the mode's or the floor's decision, the hook's
    /// own deadline, or a refusal of Countersign's own, which is a deny (see
    /// [`ClientError::reached_countersign`]).
    Answered(Verdict),
    /// Countersign could not be reached at all, or the hook has no token to ask it with: what
    /// `--if-unreachable` names decides (see [`fallback`]). Says why.
    Unreachable(String),
    /// The agent stopped waiting for this call (it answered in its own prompt, dropped the call
    /// or stopped the hook): the card is closed, and nobody reads an answer.
    Gone,
}

/// What an agent does with its own "ask", the answer a hook gives when Countersign cannot be
/// reached and `--if-unreachable ask` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AgentAsk {
    /// It puts the call before a person in its own prompt (or refuses it where none can answer).
    Prompts,
    /// It may run the call with nobody asked: the text says where, for the deny given instead.
    MayRun(String),
}

/// The answer when Countersign cannot be reached: `--if-unreachable deny` denies; `ask` is the
/// agent's own "ask" (`None`) only where that puts the call before a person, a deny elsewhere,
/// saying how to go on without Countersign.
pub(crate) fn fallback(flags: &GateHookArgs, why: &str, ask: &AgentAsk) -> Option<Verdict> {
    let message = match (flags.if_unreachable, ask) {
        (Unreachable::Ask, AgentAsk::Prompts) => return None,
        (Unreachable::Ask, AgentAsk::MayRun(place)) => format!(
            "Countersign could not be reached ({why}). The agent's own prompt would not ask \
             anyone here ({place}), so the call is denied: start Countersign again, work where \
             the agent asks you, or remove Countersign's hook to work without it"
        ),
        (Unreachable::Deny, _) => format!(
            "Countersign could not be reached ({why}), and this hook denies when it cannot ask"
        ),
    };
    Some(Verdict::Deny { message })
}

/// Opens the gate and waits for its answer, also closing the card when `dropped` resolves.
///
/// A repeated hook call with the same request finds the same gate while it is pending (a
/// retry, or the hook restarted). If the gate under a request-hash key was already answered,
/// that answer was for an earlier ask of the same call and is not reused: the hook asks anew,
/// under a key chained to the answered gate, so concurrent retries of this ask still share
/// one gate.
pub(crate) async fn decide(
    flags: &GateHookArgs,
    gate: &OpenGate,
    key: &GateKey,
    ctx: &HookContext,
    out: &mut HookOutcome,
    dropped: Option<Dropped>,
) -> Asked {
    // Listening from before the card opens: a stop that comes while it is being opened is
    // kept, and acted on (the card closed) as soon as the wait begins.
    let mut stop = Stop::listen();
    match open_card(flags, gate, key, ctx, out).await {
        Opened::Answered(verdict) => Asked::Answered(verdict),
        Opened::Unreachable(why) => Asked::Unreachable(why),
        Opened::Pending(card) => wait(&card, (&mut stop, dropped), out).await,
    }
}

/// A sign, other than a signal, that the agent is done with the call the hook waits on
/// (Gemini CLI's "Request cancelled." in its transcript, the call's result in Claude Code's):
/// the card is closed when it comes, with the reason it names.
pub(crate) type Dropped = std::pin::Pin<Box<dyn Future<Output = Why> + Send>>;

/// Why a card is closed when its [`Dropped`] comes, and what the hook says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Why {
    pub reason: &'static str,
    pub said: &'static str,
}

impl Why {
    /// The agent dropped the call (Esc in Gemini CLI or Qwen Code).
    pub const DROPPED: Why = Why {
        reason: WHY_AGENT_GONE,
        said: "the agent dropped the call",
    };
    /// The person answered the agent's own prompt first, and the call went on.
    pub const ANSWERED_IN_AGENT: Why = Why {
        reason: WHY_ANSWERED_ELSEWHERE,
        said: "the call was answered in the agent's own prompt",
    };
}

/// A card waiting for a person, and how long the hook may wait on it.
pub(crate) struct PendingCard {
    pub client: GatesClient,
    pub state: crate::external::gates_client::GateState,
    deadline: Instant,
    timeout_secs: u64,
}

/// What opening a hook's card came to.
pub(crate) enum Opened {
    /// A card waits for a person.
    Pending(Box<PendingCard>),
    /// Countersign answered at once (a rule, the mode, the floor, an earlier answer of this
    /// very call), would not put the call on a card, or refused the hook: a deny.
    Answered(Verdict),
    /// Countersign could not be reached, or was not asked (no token): says why.
    Unreachable(String),
}

/// Opens the hook's card (or finds it: see [`decide`]), without waiting on it.
pub(crate) async fn open_card(
    flags: &GateHookArgs,
    gate: &OpenGate,
    key: &GateKey,
    ctx: &HookContext,
    out: &mut HookOutcome,
) -> Opened {
    let timeout = Duration::from_secs(flags.timeout);
    let wait_for = timeout
        .saturating_sub(ANSWER_MARGIN)
        .max(Duration::from_secs(1));
    if flags
        .remote
        .token
        .as_deref()
        .is_none_or(|t| t.trim().is_empty())
    {
        // Countersign would only refuse a request without a token: it is not asked at all.
        out.say(NO_TOKEN);
        return Opened::Unreachable(NO_TOKEN.into());
    }
    let client = match flags.remote.client() {
        // Opening may not eat the time the answer needs: the agent stops waiting at its timeout.
        Ok(client) => client
            .with_open_budget(ctx.open_budget.min(wait_for))
            .with_watch(WATCH_LAPSE),
        Err(e) => {
            out.say(format!("{e}; Countersign was not asked"));
            return Opened::Unreachable(e.to_string());
        }
    };
    let deadline = Instant::now() + wait_for;
    let state = match open_this_ask(&client, gate, key, out).await {
        Ok(state) => state,
        Err(early) => return early,
    };
    if state.is_resolved() {
        return Opened::Answered(Verdict::from_state(&state));
    }
    if !state.url.is_empty() {
        out.say(format!("waiting for an answer: {}", state.url));
    }
    Opened::Pending(Box::new(PendingCard {
        client,
        state,
        deadline,
        timeout_secs: wait_for.as_secs(),
    }))
}

/// Why a hook without a token does not ask.
pub(crate) const NO_TOKEN: &str = "COUNTERSIGN_TOKEN (a `gates` token) is not set in the \
                                   environment the agent runs its hooks with, so Countersign was \
                                   not asked";

/// The gate of this very ask: under `key`, or — past answers of earlier asks of the same call
/// under a request-hash key — under a key chained to the last of them.
async fn open_this_ask(
    client: &GatesClient,
    gate: &OpenGate,
    key: &GateKey,
    out: &mut HookOutcome,
) -> Result<crate::external::gates_client::GateState, Opened> {
    let mut key_now = key.key.clone();
    for _ in 0..=MAX_ASKED_BEFORE {
        let opened = match client.open(gate, Some(&key_now)).await {
            Ok(opened) => opened,
            Err(e) => return Err(not_opened(&e, out)),
        };
        let earlier_ask = opened.replayed && opened.state.is_resolved() && !key.names_one_call;
        if !earlier_ask {
            return Ok(opened.state);
        }
        key_now = idempotency_key(&[&key_now, opened.state.approval_id.as_str()]);
    }
    // Never the answer of an earlier ask: something keeps answering this key's chain.
    Err(Opened::Answered(Verdict::Deny {
        message: format!(
            "Countersign found {MAX_ASKED_BEFORE} earlier answers of this same call and would \
             not reuse one; ask again"
        ),
    }))
}

/// What a failed open comes to. Whatever Countersign itself answered is its answer, and it is
/// no: it read the call and would not put it on a card (too large, not readable, a reused key),
/// or it refused the token, has too many cards waiting, could not store the card, or failed.
/// Only not reaching it at all leaves the call to `--if-unreachable`: else an agent able to
/// make Countersign refuse (64 waiting cards answer `429`) could make every call run unasked
/// where the agent's own "ask" asks nobody.
fn not_opened(e: &ClientError, out: &mut HookOutcome) -> Opened {
    let said = error_chain(e);
    if !e.reached_countersign() {
        out.say(format!("{said}; Countersign was not reached"));
        return Opened::Unreachable(said);
    }
    out.say(format!("Countersign refused this call: {said}"));
    Opened::Answered(match e {
        ClientError::Api {
            status: 400 | 409 | 413 | 422,
            code,
            message,
        } => Verdict::Deny {
            message: format!(
                "Countersign could not put this call on a card ({code}: {message}); it is not allowed"
            ),
        },
        _ => Verdict::refused(&said),
    })
}

/// A hook for an agent that runs a call whose hook prints nothing (Gemini CLI, Qwen Code,
/// Copilot CLI): its input, its gate and key, its own sign of a dropped call, its output.
pub(crate) trait AlwaysAnswer: serde::de::DeserializeOwned {
    /// The agent's name in messages.
    const AGENT: &'static str;
    /// `Some(event)` when the input is of another hook event than this one answers.
    fn other_event(&self) -> Option<&str>;
    fn gate(&self, ctx: &HookContext, timeout_secs: u64) -> OpenGate;
    fn key(&self) -> GateKey;
    /// The agent's sign that it dropped the call (it leaves the hook running).
    fn dropped(&self) -> Option<Dropped> {
        None
    }
    /// Why the call cannot be read as the agent will run it, if it cannot (it is then
    /// refused, never put on a card that shows something else).
    fn unreadable(&self) -> Option<String> {
        None
    }
    /// What the agent does with its own "ask" (see [`fallback`]).
    fn agent_ask(&self) -> AgentAsk {
        AgentAsk::Prompts
    }
    /// The agent's answer for a verdict; `None` asks in the agent's own prompt.
    fn render(verdict: Option<&Verdict>) -> serde_json::Value;
}

/// Runs such a hook: parse, open a gate, wait, and always print an answer (another event's
/// input is answered "ask").
pub(crate) async fn answer_always<I: AlwaysAnswer>(
    flags: &GateHookArgs,
    stdin: &[u8],
    ctx: &HookContext,
) -> HookOutcome {
    let input: I = match parse_input(stdin, I::AGENT, ctx) {
        Ok(input) => input,
        Err(outcome) => return outcome,
    };
    let mut out = HookOutcome::new(ctx);
    if let Some(event) = input.other_event() {
        out.say(format!(
            "`{event}` is not the hook event this answers for {}; asking there",
            I::AGENT
        ));
        out.stdout = I::render(None).to_string();
        return out;
    }
    if let Some(why) = input.unreadable() {
        out.say(format!("{why}; the call is not allowed"));
        out.stdout = I::render(Some(&Verdict::Deny {
            message: format!("Countersign could not read this call ({why}); it is not allowed"),
        }))
        .to_string();
        out.code = 2;
        return out;
    }
    let gate = input.gate(ctx, flags.timeout);
    let verdict = match decide(flags, &gate, &input.key(), ctx, &mut out, input.dropped()).await {
        Asked::Answered(verdict) => Some(verdict),
        Asked::Unreachable(why) => fallback(flags, &why, &input.agent_ask()),
        // The agent no longer reads an answer; its "ask" is printed all the same.
        Asked::Gone => None,
    };
    out.stdout = I::render(verdict.as_ref()).to_string();
    out
}

/// Waits on `card` until it is answered, the hook's deadline passes, or the agent stops
/// waiting (`stop`, or `dropped` when given), closing the card in the last two cases. A card
/// the hook loses while it waits (Countersign answers that it is gone, or something that is not
/// its state) is a deny: a call already before Countersign is never handed back to the agent's
/// own prompt, which may not ask anyone (or, beside Claude Code's dialog, may approve what
/// only the card may).
pub(crate) async fn wait(
    card: &PendingCard,
    (stop, dropped): (&mut Stop, Option<Dropped>),
    out: &mut HookOutcome,
) -> Asked {
    let (client, approval_id) = (&card.client, &card.state.approval_id);
    let dropped = dropped.unwrap_or_else(|| Box::pin(std::future::pending()));
    let waited = tokio::select! {
        waited = client.wait(approval_id, card.deadline) => waited,
        gone = async {
            tokio::select! {
                signal = stop.stopped() => (WHY_AGENT_GONE, format!("stopped by {signal}")),
                why = dropped => (why.reason, why.said.to_owned()),
            }
        } => {
            // The agent stopped asking (SIGTERM, SIGINT or SIGHUP, or its transcript says the
            // call was dropped or answered in its own prompt): its card must not stay open for
            // an answer nobody will act on, or be audited as a decision later.
            let (why, said) = gone;
            out.say(format!("{said}; closing the card"));
            close(client, approval_id, why, out).await;
            return Asked::Gone;
        }
    };
    match waited {
        Ok(state) => Asked::Answered(Verdict::from_state(&state)),
        Err(ClientError::Deadline { .. }) => {
            // The agent is told no; the card should not stay open for an answer nobody reads.
            // Bounded: the no must reach the agent before its own timeout does.
            close(client, approval_id, WHY_TIMEOUT, out).await;
            Asked::Answered(Verdict::timed_out(card.timeout_secs))
        }
        Err(e) => {
            // Not reaching Countersign is retried until the deadline: this is its own answer.
            let said = error_chain(&e);
            out.say(format!(
                "lost gate {approval_id}: {said}; the call is not allowed"
            ));
            Asked::Answered(Verdict::refused(&format!("its card was lost: {said}")))
        }
    }
}

/// Cancels the card with `why`, within [`CLOSE_ON_STOP`].
async fn close(client: &GatesClient, approval_id: &ApprovalId, why: &str, out: &mut HookOutcome) {
    match tokio::time::timeout(CLOSE_ON_STOP, client.cancel(approval_id, why)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => out.say(format!(
            "could not close gate {approval_id} (answered meanwhile?): {e}"
        )),
        Err(_) => out.say(format!("could not close gate {approval_id} in time")),
    }
}

/// The signals by which an agent stops its hook, listened for from the start of a decision
/// (a signal that comes before the wait is kept until the wait reads it).
pub(crate) struct Stop {
    signals: Option<[(tokio::signal::unix::Signal, &'static str); 3]>,
}

impl Stop {
    pub(crate) fn listen() -> Stop {
        use tokio::signal::unix::{SignalKind, signal};
        let signals = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(term), Ok(int), Ok(hup)) => {
                Some([(term, "SIGTERM"), (int, "SIGINT"), (hup, "SIGHUP")])
            }
            _ => None,
        };
        Stop { signals }
    }

    /// Resolves when the process is asked to stop, naming the signal; never, where signals
    /// cannot be listened for.
    async fn stopped(&mut self) -> &'static str {
        let Some([(term, t), (int, i), (hup, h)]) = self.signals.as_mut() else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => t,
            _ = int.recv() => i,
            _ = hup.recv() => h,
        }
    }
}

/// Parses the hook's stdin, or says why not. Input that cannot be read is not waved
/// through: the hook exits 2 (the agent blocks the call and reads why), because the agent's
/// own prompt may never come (Claude Code's `auto` and `bypassPermissions` modes ask nobody).
/// A lone UTF-16 surrogate escape (which JavaScript's `JSON.stringify` writes) is read as
/// U+FFFD first, so such input still reaches a card.
pub(crate) fn parse_input<T: serde::de::DeserializeOwned>(
    stdin: &[u8],
    agent: &str,
    ctx: &HookContext,
) -> Result<T, HookOutcome> {
    let parsed = serde_json::from_slice(stdin).or_else(|first| {
        let text = String::from_utf8_lossy(stdin);
        serde_json::from_str(&without_lone_surrogates(&text)).map_err(|_| first)
    });
    parsed.map_err(|e| {
        let mut outcome = HookOutcome::new(ctx);
        outcome.say(format!(
            "the {agent} hook input on stdin could not be read ({e}); the call is not allowed"
        ));
        outcome.code = 2;
        outcome
    })
}

/// A field the agent may send as `null` where this hook reads text or a list (Codex's
/// `transcript_path` is `string | null` in its published schema): read as empty, never as
/// input that cannot be read (which the hook refuses, exit 2).
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    use serde::Deserialize;
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// `\uD800`-style escapes of a surrogate with no partner, replaced by `\uFFFD`.
pub(crate) fn without_lone_surrogates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let hex_at = |at: usize| -> Option<u32> {
        let digits = text.get(at..at + 4)?;
        u32::from_str_radix(digits, 16).ok()
    };
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'u') {
            if let Some(unit) = hex_at(i + 2) {
                let high = (0xD800..0xDC00).contains(&unit);
                let low = (0xDC00..0xE000).contains(&unit);
                let paired = high
                    && bytes.get(i + 6) == Some(&b'\\')
                    && bytes.get(i + 7) == Some(&b'u')
                    && hex_at(i + 8).is_some_and(|next| (0xDC00..0xE000).contains(&next));
                if paired {
                    out.push_str(&text[i..i + 12]);
                    i += 12;
                    continue;
                }
                if high || low {
                    out.push_str("\\uFFFD");
                    i += 6;
                    continue;
                }
            }
            // Any other escape is kept as it is (an escaped backslash included).
            out.push_str(&text[i..i + 2]);
            i += 2;
            continue;
        }
        let c = text[i..].chars().next().unwrap_or('\u{FFFD}');
        out.push(c);
        i += c.len_utf8();
    }
    out
}
