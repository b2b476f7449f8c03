//! Wire types of named tokens and outside agents' gates (`/api/v1/tokens`, `/api/v1/gates`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::{Display, EnumString, IntoStaticStr, VariantArray, VariantNames};

use super::spelled::spelled;
use super::{AnsweredBy, ApprovalId, Decision, Rule, SessionId, Stored, Timestamp};

// A status this build does not know reads as `GateStatus::Unknown`.
spelled!(Scope, GateStatus or Unknown);

/// The source Countersign's own MCP server (`countersign mcp`) opens its gates with. Only its
/// `request_approval` is a decision card (a question with nothing to run); a tool of that name
/// reported by an agent's hook is the agent's own tool, read like any other.
pub const MCP_SOURCE: &str = "mcp";

/// What a credential may do.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything (the startup token, and a browser logged in with it).
    Admin,
    /// Read sessions, feeds, the inbox, rules and the audit, and decide gates; not the
    /// configuration, not tokens.
    Approve,
    /// Open outside agents' gates, and read or cancel its own; nothing else. An agent holding
    /// it can never answer a gate.
    Gates,
    /// Read sessions, feeds, the inbox, rules and the audit; answer nothing, change nothing
    /// (a person with the `viewer` role, a read-only dashboard's token).
    View,
}

impl Scope {
    /// Whether it may answer a gate.
    pub fn decides(self) -> bool {
        matches!(self, Scope::Admin | Scope::Approve)
    }

    /// Whether it may read what a person sees (sessions, the inbox, the audit).
    pub fn reads(self) -> bool {
        self != Scope::Gates
    }

    /// How much it may do, for capping one scope by another: `gates` < `view` < `approve` <
    /// `admin` (each may do all that the ones before it may).
    fn rank(self) -> u8 {
        match self {
            Scope::Gates => 0,
            Scope::View => 1,
            Scope::Approve => 2,
            Scope::Admin => 3,
        }
    }

    /// This scope, but never more than `ceiling`: a token is capped by its maker's roles.
    pub fn at_most(self, ceiling: Scope) -> Scope {
        if self.rank() <= ceiling.rank() {
            self
        } else {
            ceiling
        }
    }
}

/// A named token as listed: never its secret.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TokenInfo {
    pub name: String,
    /// As stored; a scope this build does not know is listed as written and never honoured.
    pub scope: Stored<Scope>,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    /// **[ext]** The outside agents' names (`source`) this token claimed by opening their
    /// first gate: no other token may open gates under them while it lives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// Who made it (issue 41): a person's email, or `admin` (the startup token, a login
    /// link's browser, the local CLI; every token made before tokens kept their maker).
    #[serde(default = "admin_owner")]
    pub owner: String,
}

/// How a token the admin made names its owner.
pub const TOKEN_OWNER_ADMIN: &str = "admin";

fn admin_owner() -> String {
    TOKEN_OWNER_ADMIN.to_owned()
}

/// A token just created: the one time its secret is shown.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CreatedToken {
    pub name: String,
    /// `Stored`, so a client older than the server still reads the answer (and the secret,
    /// shown this once) when the scope is one it does not know.
    pub scope: Stored<Scope>,
    pub token: String,
    pub created_at: Timestamp,
    /// Set on a `gates` token when Countersign shares its OS user with the agents it answers
    /// for (it is not running as a user of its own, or an agent connected as its user): what
    /// that means and what to do. Absent when the OS boundary holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_user_warning: Option<String>,
    /// Who made it: the person's email, or `admin` (as `TokenInfo::owner`).
    #[serde(default = "admin_owner")]
    pub owner: String,
}

/// A phone's way in to a new `approve` token: a login link, good once for 15 minutes (it
/// carries a single-use code, never the token's secret), and a QR code of exactly that link.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PhoneLogin {
    pub link: String,
    /// The QR code as an SVG element, drawn by the server from `link`.
    pub qr_svg: String,
}

/// `GET /api/v1/gates/os-user`: whether the process that asked runs as Countersign's own OS
/// user (`None`: the server cannot tell, e.g. the request did not come over loopback).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentOsUser {
    pub same_user: Option<bool>,
}

/// The body of `POST /api/v1/gates`: what an adapter writes and the server reads — one type.
///
/// Unknown fields are refused (`invalid_gate`, naming them). A field left out and a field sent
/// as `null` mean the same; the strings the server requires (`source`, `external_session`,
/// `tool.name`) read as empty then, so its checks say in one voice what each must be
/// (`core::external` checks every field before a gate opens).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OpenGate {
    /// `claude-code`, `codex`, `opencode` or `mcp`.
    #[serde(default, deserialize_with = "super::de::null_as_default")]
    pub source: String,
    /// The agent's own session id; gates of one session share one Countersign session.
    #[serde(default, deserialize_with = "super::de::null_as_default")]
    pub external_session: String,
    /// The agent's working directory (names the session); empty when not known.
    #[serde(default, deserialize_with = "super::de::null_as_default")]
    pub cwd: String,
    pub tool: GateTool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Markdown shown on the card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the agent last said before this call (its transcript), shown as "the agent says".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_says: Option<String>,
    #[serde(default, deserialize_with = "super::de::null_as_default")]
    pub capabilities: Capabilities,
    /// The gate's window; the server's `[approvals] timeout_secs` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// The agent's tool name and its input as given (`null` or absent: no input, `{}`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GateTool {
    #[serde(default, deserialize_with = "super::de::null_as_default")]
    pub name: String,
    #[serde(default)]
    pub input: Value,
}

/// Which answers the agent can take back (the card offers only these). Each one left out or
/// `null` takes its default (`Capabilities::default`).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// It can run an edited input instead of its own (offers Edit).
    pub edit: bool,
    /// It understands "always" (the card may offer Allow always).
    pub always: bool,
    /// It passes a deny reason back to its model.
    pub deny_reason: bool,
}

/// What an agent that says nothing of its capabilities gets: no Edit, Allow always offered.
impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            edit: false,
            always: true,
            deny_reason: false,
        }
    }
}

impl<'de> Deserialize<'de> for Capabilities {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The capabilities as sent: each may be left out or `null`.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Sent {
            #[serde(default)]
            edit: Option<bool>,
            #[serde(default)]
            always: Option<bool>,
            #[serde(default)]
            deny_reason: Option<bool>,
        }
        let sent = Sent::deserialize(deserializer)?;
        let default = Capabilities::default();
        Ok(Capabilities {
            edit: sent.edit.unwrap_or(default.edit),
            always: sent.always.unwrap_or(default.always),
            deny_reason: sent.deny_reason.unwrap_or(default.deny_reason),
        })
    }
}

/// Where a gate stands, as an outside agent reads it. The server and the adapters' client
/// share this one type.
#[derive(IntoStaticStr, EnumString, VariantArray, VariantNames, Display)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GateStatus {
    #[default]
    Pending,
    /// Approved, edited or allowed always.
    Approved,
    Denied,
    Expired,
    Cancelled,
    /// A status this client does not know (a newer server); final, so a client does not wait
    /// on it forever. The server never sends it.
    Unknown,
}

/// Where an outside agent's gate stands: what `POST /api/v1/gates` and
/// `GET /api/v1/gates/{id}` answer. The server writes it and the adapters' client
/// (`external::gates_client`) reads it: one type, so the two cannot drift apart.
///
/// **Read leniently where a newer server may say more:** a status this build does not know is
/// `GateStatus::Unknown` (final, a deny), a decision or `answered_by` it does not know is kept
/// as written (`Stored::Unknown`), and a rule in a shape it cannot read is absent. A field
/// the server always sends (`session_id`, `url`, `expires_at`) is required: an answer without
/// one is not this API's: the client refuses it, and the adapter stops waiting on that gate
/// (see `docs/api.md` §11.2 for what each adapter does then).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GateState {
    pub approval_id: ApprovalId,
    pub session_id: SessionId,
    pub status: GateStatus,
    /// The person's or the rule's answer (`approve`, `edit`, `deny`, `allow_always`); `null`
    /// while pending and for a gate that expired or was cancelled (their `status` says so).
    pub decision: Option<Stored<Decision>>,
    /// The replacement input of an `edit`.
    pub updated_input: Option<Value>,
    pub reason: Option<String>,
    /// The standing rule that answered, or that Allow always created.
    #[serde(default, deserialize_with = "super::de::or_none")]
    pub rule: Option<Rule>,
    pub answered_by: Option<Stored<AnsweredBy>>,
    pub actor: Option<String>,
    pub resolved_at: Option<Timestamp>,
    /// The card in the browser.
    pub url: String,
    pub expires_at: Timestamp,
    /// Whether the agent's own permission dialog may answer this call instead of the card
    /// (Claude Code's, raced beside the card): never for a card on the safety floor or one a
    /// passkey must confirm, which only Countersign answers. Absent (an older server): no.
    #[serde(default)]
    pub dialog_may_answer: bool,
}

impl GateState {
    /// Anything but `pending` is final (a status this build does not know included).
    pub fn is_resolved(&self) -> bool {
        self.status != GateStatus::Pending
    }
}
