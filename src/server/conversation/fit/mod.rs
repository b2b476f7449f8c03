//! What is sent to the model: the conversation fitted to a token budget (its context window
//! less room for the answer). The log and the page keep everything; only the request is cut.
//!
//! In this order, each step only while the request is still too big:
//! 1. tool outputs are trimmed to their first and last 2 KiB, oldest first (so the newest
//!    results stay whole where that is enough), the cut part replaced by a line the model
//!    reads: `[output trimmed by Countersign: 61,440 of 65,536 bytes omitted]`;
//! 2. the oldest turns are dropped whole, then the oldest steps of the current turn, and a
//!    message says how many were left out. Never dropped: the system prompt, the latest user
//!    message, the newest step; an assistant message is dropped with its tool results, never
//!    apart (OpenAI refuses a tool message whose call it was not sent);
//! 3. what is left of the tool outputs is trimmed to 512 bytes.
//!
//! Nothing is summarized: what is dropped is gone from the model's view, and the marker
//! tells it so — except the person's answers in it (a denial and its reason, a checkpoint
//! approved with changes, a card left unanswered), which the marker carries, first lines,
//! up to [`MAX_ANSWERS_BYTES`]: the model must never act on a plan the person turned down
//! because the turning down was cut.
//!
//! **Invariant 9** ([ARCHITECTURE.md](../../../../ARCHITECTURE.md#invariants)): the model hears the person only from the log's resolutions.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use super::history::Answers;
use super::tokens::{self, REPLY_PRIMING, Tokenizer};
use super::{ChatMessage, ToolSpec};
use crate::text::thousands;

/// Bytes of a trimmed tool output that are kept (half from its start, half from its end).
pub const KEEP_BYTES: usize = 4096;
/// What step 3 keeps of each output.
const TIGHT_KEEP_BYTES: usize = 512;
/// An output is trimmed only when that saves more than the marker costs.
const WORTH_TRIMMING: usize = 256;
/// How much of the person's answers one marker carries.
pub const MAX_ANSWERS_BYTES: usize = 2048;

/// The request's messages as sent, and what fitting them did.
#[derive(Debug)]
pub struct Fitted {
    pub messages: Vec<Arc<ChatMessage>>,
    /// What the request costs as counted (messages, tools and the reply's priming).
    pub tokens: u64,
    /// Tool outputs trimmed.
    pub trimmed: usize,
    /// Messages left out.
    pub dropped: usize,
    /// Whether `tokens` is within the budget.
    pub fits: bool,
}

impl Fitted {
    pub fn changed(&self) -> bool {
        self.trimmed > 0 || self.dropped > 0
    }
}

/// What fitting remembers from one request of a turn to the next (`agent::context`).
#[derive(Default)]
pub struct Fitting {
    /// What each message was counted at (out while a count runs on the blocking pool).
    pub counter: Option<Counter>,
    /// A budget a refusal for length taught: the model's window is smaller than configured.
    pub learned: Option<u64>,
}

/// Counts messages with one tokenizer, remembering what each shared message cost: a turn asks
/// about the same messages at every model call, and only the new ones need counting.
pub struct Counter {
    tokenizer: Tokenizer,
    /// Keyed by the message's address; holding the `Arc` keeps that address its own.
    memo: HashMap<usize, (Arc<ChatMessage>, u64)>,
    /// The tools last offered (by name) and what they cost.
    tools: Option<(Vec<&'static str>, u64)>,
}

impl Counter {
    pub fn new(tokenizer: Tokenizer) -> Self {
        Counter {
            tokenizer,
            memo: HashMap::new(),
            tools: None,
        }
    }

    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    fn shared(&mut self, message: &Arc<ChatMessage>) -> u64 {
        let key = Arc::as_ptr(message) as usize;
        if let Some((_, cost)) = self.memo.get(&key) {
            return *cost;
        }
        let cost = self.fresh(message);
        self.memo.insert(key, (Arc::clone(message), cost));
        cost
    }

    fn fresh(&self, message: &ChatMessage) -> u64 {
        let tokenizer = self.tokenizer;
        tokens::message_cost(message, |text| tokenizer.count(text))
    }

    /// Forgets the messages not in `messages` (each model call's system prompt is new).
    fn keep_only(&mut self, messages: &[Arc<ChatMessage>]) {
        let live: std::collections::HashSet<usize> =
            messages.iter().map(|m| Arc::as_ptr(m) as usize).collect();
        self.memo.retain(|key, _| live.contains(key));
    }

    fn tools(&mut self, tools: &[ToolSpec]) -> u64 {
        let names: Vec<&'static str> = tools.iter().map(|t| t.name).collect();
        if let Some((known, cost)) = &self.tools
            && *known == names
        {
            return *cost;
        }
        let tokenizer = self.tokenizer;
        let cost = tokens::tools_cost(tools, |text| tokenizer.count(text));
        self.tools = Some((names, cost));
        cost
    }
}

/// Whether the request is within `budget` by a bound that counts nothing (a BPE token is at
/// least a byte): the usual case, which needs no tokenizer at all.
pub fn surely_fits(
    messages: &[Arc<ChatMessage>],
    tools: &[ToolSpec],
    budget: u64,
    tokenizer: Tokenizer,
) -> bool {
    let bound = |text: &str| tokenizer.at_most(text);
    let total = messages
        .iter()
        .map(|m| tokens::message_cost(m, bound))
        .fold(
            REPLY_PRIMING + tokens::tools_cost(tools, bound),
            u64::saturating_add,
        );
    total <= budget
}

/// The messages to send (the system prompt first, as given) within `budget` tokens where that
/// can be done; see the module's doc for how.
pub fn fit(
    messages: &[Arc<ChatMessage>],
    tools: &[ToolSpec],
    budget: u64,
    counter: &mut Counter,
    answers: &Answers,
) -> Fitted {
    let fixed = REPLY_PRIMING + counter.tools(tools);
    let costs: Vec<u64> = messages.iter().map(|m| counter.shared(m)).collect();
    counter.keep_only(messages);
    let total = costs.iter().fold(fixed, |sum, c| sum.saturating_add(*c));
    let mut plan = Plan {
        original: messages,
        answers,
        current: messages.to_vec(),
        kept: vec![true; messages.len()],
        costs,
        total,
        budget,
        trimmed: vec![false; messages.len()],
        marker_cost: counter.fresh(&marker(usize::MAX, &["x".repeat(MAX_ANSWERS_BYTES)])),
    };
    if !plan.fits() {
        plan.trim_outputs(KEEP_BYTES, counter);
    }
    if !plan.fits() {
        plan.drop_oldest();
    }
    if !plan.fits() {
        plan.trim_outputs(TIGHT_KEEP_BYTES, counter);
    }
    plan.finish(counter)
}

/// The request being cut down.
struct Plan<'a> {
    original: &'a [Arc<ChatMessage>],
    /// The person's answers as the log records them: what a marker may carry.
    answers: &'a Answers,
    /// The messages as they will be sent (trimmed ones replaced).
    current: Vec<Arc<ChatMessage>>,
    kept: Vec<bool>,
    costs: Vec<u64>,
    /// Of what is kept, with a marker's cost for each run of dropped messages.
    total: u64,
    budget: u64,
    trimmed: Vec<bool>,
    /// What a marker costs at most.
    marker_cost: u64,
}

impl Plan<'_> {
    fn fits(&self) -> bool {
        self.total <= self.budget
    }

    /// Trims the kept tool outputs to `keep` bytes, oldest first, until the request fits.
    fn trim_outputs(&mut self, keep: usize, counter: &Counter) {
        for i in 0..self.original.len() {
            if self.fits() {
                return;
            }
            let ChatMessage::Tool { call_id, output } = &*self.original[i] else {
                continue;
            };
            if !self.kept[i] {
                continue;
            }
            let Some(output) = trimmed_output(output, keep) else {
                continue;
            };
            let message = ChatMessage::Tool {
                call_id: call_id.clone(),
                output,
            };
            let cost = counter.fresh(&message);
            if cost >= self.costs[i] {
                continue;
            }
            self.total = self.total.saturating_sub(self.costs[i] - cost);
            self.costs[i] = cost;
            self.current[i] = Arc::new(message);
            self.trimmed[i] = true;
        }
    }

    /// Drops whole turns before the latest user message, oldest first, then the steps of the
    /// current turn after it, oldest first, keeping the newest step, until the request fits.
    fn drop_oldest(&mut self) {
        let start = usize::from(matches!(
            self.original.first().map(|m| &**m),
            Some(ChatMessage::System(_))
        ));
        let units = units(&self.original[start..], start);
        let Some(last) = units.len().checked_sub(1) else {
            return;
        };
        let latest_user = units.iter().rposition(|u| self.is_user(u.start));
        let before = latest_user.unwrap_or(0);
        let after = latest_user.map_or(0, |u| u + 1);
        let mut candidates: Vec<Range<usize>> = Vec::new();
        // Whole turns first: each starts at a user message.
        let mut turn: Option<Range<usize>> = None;
        for unit in &units[..before] {
            match turn.as_mut() {
                Some(t) if !self.is_user(unit.start) => t.end = unit.end,
                _ => {
                    candidates.extend(turn.take());
                    turn = Some(unit.clone());
                }
            }
        }
        candidates.extend(turn);
        candidates.extend(units[after.min(last)..last].iter().cloned());
        for range in candidates {
            if self.fits() {
                return;
            }
            self.drop_range(range);
        }
    }

    fn is_user(&self, i: usize) -> bool {
        matches!(&*self.original[i], ChatMessage::User(_))
    }

    fn drop_range(&mut self, range: Range<usize>) {
        let opens_run = range.start == 0 || self.kept[range.start - 1];
        let closes_run = self.kept.get(range.end).is_none_or(|k| *k);
        // A run's marker is counted once: added when a run opens, taken back when two merge.
        match (opens_run, closes_run) {
            (true, true) => self.total += self.marker_cost,
            (false, false) => self.total = self.total.saturating_sub(self.marker_cost),
            _ => {}
        }
        for i in range {
            if self.kept[i] {
                self.kept[i] = false;
                self.total = self.total.saturating_sub(self.costs[i]);
            }
        }
    }

    fn finish(self, counter: &Counter) -> Fitted {
        let mut messages = Vec::with_capacity(self.current.len() + 2);
        let mut dropped = 0;
        let mut total = self.total;
        let mut run = 0;
        let mut answers: Vec<String> = Vec::new();
        for (i, message) in self.current.into_iter().enumerate() {
            if !self.kept[i] {
                run += 1;
                answers.extend(persons_answer(&self.original[i], self.answers));
                continue;
            }
            if run > 0 {
                let note = marker(run, &std::mem::take(&mut answers));
                // Counted at its largest while planning; now at its real size.
                total = total.saturating_sub(self.marker_cost) + counter.fresh(&note);
                messages.push(Arc::new(note));
                dropped += run;
                run = 0;
            }
            messages.push(message);
        }
        if run > 0 {
            // Not reached (the newest step is never dropped), but never lose count of a run.
            let note = marker(run, &answers);
            total = total.saturating_sub(self.marker_cost) + counter.fresh(&note);
            messages.push(Arc::new(note));
            dropped += run;
        }
        Fitted {
            messages,
            tokens: total,
            trimmed: self.trimmed.iter().filter(|t| **t).count(),
            dropped,
            fits: total <= self.budget,
        }
    }
}

/// The history's units from `offset` on: a user message, or an assistant message with the
/// tool results that follow it (dropped together or not at all).
fn units(messages: &[Arc<ChatMessage>], offset: usize) -> Vec<Range<usize>> {
    let mut units: Vec<Range<usize>> = Vec::new();
    // Whether the last unit may still take tool results.
    let mut open = false;
    for (i, message) in messages.iter().enumerate() {
        let i = i + offset;
        match (&**message, units.last_mut()) {
            (ChatMessage::Tool { .. }, Some(unit)) if open => unit.end = i + 1,
            // A system message inside the history is never dropped: it ends the unit before.
            (ChatMessage::System(_), _) => open = false,
            _ => {
                units.push(i..i + 1);
                open = true;
            }
        }
    }
    units
}

/// What stands in for `n` dropped messages, with the person's answers among them.
fn marker(n: usize, answers: &[String]) -> ChatMessage {
    let what = if n == 1 {
        "1 earlier message".to_owned()
    } else {
        format!("{} earlier messages", thousands(n))
    };
    let mut text = format!(
        "[Countersign left out {what} of this conversation here to fit the model's context window. \
         The person still sees them.]"
    );
    if !answers.is_empty() {
        text.push_str("\nThe person's answers in them, which still hold:");
        let mut room = MAX_ANSWERS_BYTES;
        for answer in answers {
            let line = format!("\n- {answer}");
            if line.len() > room {
                let cut = line.floor_char_boundary(room);
                text.push_str(&line[..cut]);
                break;
            }
            room -= line.len();
            text.push_str(&line);
        }
    }
    ChatMessage::User(text)
}

/// The person's answer to the call a tool result is for, as the log records it (never read
/// from the result's text).
fn persons_answer(message: &ChatMessage, answers: &Answers) -> Option<String> {
    let ChatMessage::Tool { call_id, .. } = message else {
        return None;
    };
    answers.get(call_id).cloned()
}

/// `output` cut to `keep` bytes (its start and its end) around a line saying what was cut;
/// `None` when that would not save enough to be worth it.
pub fn trimmed_output(output: &str, keep: usize) -> Option<String> {
    if output.len() <= keep + WORTH_TRIMMING {
        return None;
    }
    let head = output.floor_char_boundary(keep / 2);
    let tail = output.ceil_char_boundary(output.len() - keep / 2);
    Some(format!(
        "{}\n[output trimmed by Countersign: {} of {} bytes omitted]\n{}",
        &output[..head],
        thousands(tail - head),
        thousands(output.len()),
        &output[tail..],
    ))
}

#[cfg(test)]
mod tests;
