//! opencode's event and reply shapes (captured from opencode 1.18.33), and how an ask becomes a
//! gate and a verdict becomes a reply.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::external::gates_client::{Capabilities, GateTool, OpenGate};
use crate::external::verdict::Verdict;

pub const SOURCE: &str = "opencode";

/// `permission.asked`'s properties, and an entry of `GET /permission`.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
pub struct PermissionAsked {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// opencode's permission key: `bash`, `edit`, `webfetch`, … or an MCP tool name.
    pub permission: String,
    /// What is being asked for (a command, a path relative to the worktree, …).
    #[serde(default)]
    pub patterns: Vec<String>,
    /// bash: `{command}`; edit: `{filepath, diff}`.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// What an `always` reply would allow from now on.
    #[serde(default)]
    pub always: Vec<String>,
}

/// The events the bridge acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum OpencodeEvent {
    Asked(PermissionAsked),
    /// A permission was answered (by the bridge itself or by someone in the TUI; opencode does
    /// not say which).
    Replied {
        request_id: String,
        reply: String,
    },
    /// Anything else (`server.connected`, `server.heartbeat`, messages, …), by type.
    Other(String),
}

/// One event and the directory it belongs to (only `/global/event` names it).
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub directory: Option<String>,
    pub event: OpencodeEvent,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    properties: Value,
}

#[derive(Deserialize)]
struct RawGlobal {
    #[serde(default)]
    directory: Option<String>,
    payload: RawEvent,
}

#[derive(Deserialize)]
struct RawReplied {
    #[serde(rename = "requestID", alias = "permissionID")]
    request_id: String,
    #[serde(alias = "response")]
    reply: String,
}

/// Parses one SSE `data:` line: `/event`'s `{type, properties}` or `/global/event`'s
/// `{directory, payload: {type, properties}}`.
pub fn parse_event(data: &str) -> Result<Envelope, serde_json::Error> {
    let value: Value = serde_json::from_str(data)?;
    let (directory, raw) = if value.get("payload").is_some() {
        let global: RawGlobal = serde_json::from_value(value)?;
        (global.directory, global.payload)
    } else {
        (None, serde_json::from_value::<RawEvent>(value)?)
    };
    let event = match raw.kind.as_str() {
        "permission.asked" => OpencodeEvent::Asked(serde_json::from_value(raw.properties)?),
        "permission.replied" => {
            let replied: RawReplied = serde_json::from_value(raw.properties)?;
            OpencodeEvent::Replied {
                request_id: replied.request_id,
                reply: replied.reply,
            }
        }
        _ => OpencodeEvent::Other(raw.kind),
    };
    Ok(Envelope { directory, event })
}

/// The gate for an ask: the tool is opencode's permission key, the input what opencode shows
/// in its own prompt (the metadata, or the patterns when there is none). No edit: opencode
/// takes no edited input. Allow always makes a standing rule in Countersign, and the reply is
/// still `once` (see [`reply_for`]): opencode's own `always` is its `always` patterns (`echo *`
/// for `echo a > x`, `*` for an edit), for every later session of the project.
pub fn open_gate(asked: &PermissionAsked, cwd: &str, timeout_secs: u64) -> OpenGate {
    let input = if asked.metadata.is_empty() {
        serde_json::json!({ "patterns": asked.patterns })
    } else {
        Value::Object(asked.metadata.clone())
    };
    OpenGate {
        source: SOURCE.into(),
        external_session: asked.session_id.clone(),
        cwd: cwd.to_owned(),
        tool: GateTool {
            name: asked.permission.clone(),
            input,
        },
        title: None,
        reason: reason(asked),
        agent_says: None,
        capabilities: Capabilities {
            edit: false,
            always: true,
            deny_reason: true,
        },
        timeout_secs: Some(timeout_secs),
    }
}

/// The card's note: what is asked, and what opencode's own "always" would have allowed.
fn reason(asked: &PermissionAsked) -> Option<String> {
    let list = |items: &[String]| {
        items
            .iter()
            .map(|i| format!("- {}", code(i)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut parts = Vec::new();
    if !asked.patterns.is_empty() {
        parts.push(format!(
            "opencode asks for `{}`:\n{}",
            asked.permission,
            list(&asked.patterns)
        ));
    }
    if !asked.always.is_empty() {
        parts.push(format!(
            "opencode's own Allow always would allow from now on (Allow always here makes a \
             Countersign rule instead, and opencode is answered `once`):\n{}",
            list(&asked.always)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

fn code(text: &str) -> String {
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// The body of `POST /permission/{id}/reply`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// `once`, `always` or `reject`.
    pub reply: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The reply for a verdict: `always` when a rule was made, `reject` with the reason on a deny.
pub fn reply_for(verdict: &Verdict) -> Reply {
    match verdict {
        Verdict::Allow {
            updated_input: Some(_),
            ..
        } => Reply {
            reply: "reject".into(),
            message: Some(
                "Countersign answered with edited input, which opencode cannot apply; propose \
                 the edited call again."
                    .into(),
            ),
        },
        // Always `once`: opencode's own `always` would apply its patterns (`*` for every
        // edit) and stop asking, out of reach of Countersign's revoke and expiry; Countersign's
        // rule answers the next call like it instead.
        Verdict::Allow { .. } => Reply {
            reply: "once".into(),
            message: None,
        },
        Verdict::Deny { message } => Reply {
            reply: "reject".into(),
            message: Some(message.clone()),
        },
    }
}
