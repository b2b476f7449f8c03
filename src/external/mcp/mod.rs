//! `countersign mcp`: an MCP server on stdio whose tools ask a person through Countersign —
//! `approval_prompt` (Claude Code's `--permission-prompt-tool`) and `request_approval` (any
//! host). Every call answers, even when Countersign cannot be reached: a tool must.

pub mod answers;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt,
    handler::server::wrapper::Parameters,
    model::{
        CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ProgressToken,
        ServerCapabilities, ServerConfig,
    },
    schemars,
    service::RequestContext,
    tool, tool_handler, tool_router,
    transport::stdio,
};
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use crate::external::gates_client::{
    ApprovalId, Capabilities, ClientError, GateState, GateTool, GatesClient, OpenGate,
};
use crate::external::hook::DEFAULT_TIMEOUT_SECS;
use crate::external::key::idempotency_key;
use crate::external::remote::CountersignRemote;
use crate::external::verdict::Verdict;
use crate::text::error_chain;

pub const SOURCE: &str = crate::protocol::MCP_SOURCE;
/// How often a waiting call tells the host it is still alive (Claude Code's stdio idle limit is
/// 30 min; other hosts are stricter).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(15);
const WHY_CLIENT_GONE: &str = "agent_gone";
const WHY_TIMEOUT: &str = "timeout";

/// `countersign mcp`
#[derive(Args, Debug, Clone)]
pub struct McpArgs {
    #[command(flatten)]
    pub remote: CountersignRemote,
    /// Seconds each call waits for an answer before it is denied.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

/// The entry point the main binary calls for `countersign mcp`. Logs go to stderr only: stdout
/// is the protocol.
pub async fn run(args: McpArgs) -> ExitCode {
    let client = match args.remote.client() {
        Ok(client) => client,
        Err(e) => {
            eprintln!("countersign: {e}");
            return ExitCode::from(2);
        }
    };
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let server = CountersignMcp::new(client, McpOptions::new(cwd, args.timeout));
    let service = match server.serve(stdio()).await {
        Ok(service) => service,
        Err(e) => {
            eprintln!("countersign: the MCP handshake failed: {}", error_chain(&e));
            return ExitCode::from(1);
        }
    };
    match service.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("countersign: the MCP server stopped: {}", error_chain(&e));
            ExitCode::from(1)
        }
    }
}

/// What a server instance is told.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// One Countersign session per server process.
    pub external_session: String,
    pub cwd: String,
    pub timeout_secs: u64,
    pub progress_every: Duration,
}

impl McpOptions {
    pub fn new(cwd: String, timeout_secs: u64) -> McpOptions {
        McpOptions {
            external_session: uuid::Uuid::new_v4().to_string(),
            cwd,
            timeout_secs,
            progress_every: PROGRESS_EVERY,
        }
    }
}

/// `approval_prompt`'s arguments (Claude Code's permission-prompt-tool contract).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ApprovalPromptArgs {
    /// Name of the tool the agent wants to run
    pub tool_name: String,
    /// The tool's input
    pub input: Value,
    /// The agent's tool use id
    #[serde(default)]
    pub tool_use_id: Option<String>,
}

/// `request_approval`'s arguments.
#[derive(Debug, Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct RequestApprovalArgs {
    /// What needs approving, in one line
    pub title: String,
    /// Details for the person, as Markdown
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details_markdown: Option<String>,
    /// What kind of request this is (free text, e.g. "deploy")
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// The MCP server.
#[derive(Clone)]
pub struct CountersignMcp {
    client: Arc<GatesClient>,
    options: Arc<McpOptions>,
}

#[tool_router]
impl CountersignMcp {
    pub fn new(client: GatesClient, options: McpOptions) -> CountersignMcp {
        CountersignMcp {
            client: Arc::new(client),
            options: Arc::new(options),
        }
    }

    #[tool(
        description = "Ask a person in Countersign whether a tool call may run (Claude Code's \
                       --permission-prompt-tool). Answers JSON text {behavior, updatedInput} or \
                       {behavior, message}."
    )]
    async fn approval_prompt(
        &self,
        Parameters(args): Parameters<ApprovalPromptArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let gate = self.gate(args.tool_name.clone(), args.input.clone(), None, None, true);
        let call_id = args
            .tool_use_id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let key = idempotency_key(&[SOURCE, &self.options.external_session, &call_id]);
        let verdict = self.ask(&gate, &key, &ctx).await?;
        Ok(text(answers::approval_prompt_text(&verdict, &args.input)))
    }

    #[tool(
        description = "Ask a person in Countersign to approve something. Answers JSON text \
                       {approved, reason?, revised?}."
    )]
    async fn request_approval(
        &self,
        Parameters(args): Parameters<RequestApprovalArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let input = serde_json::to_value(&args).unwrap_or_default();
        let gate = self.gate(
            "request_approval".into(),
            input,
            Some(args.title.clone()),
            args.details_markdown.clone(),
            false,
        );
        let key = idempotency_key(&[
            SOURCE,
            &self.options.external_session,
            &uuid::Uuid::new_v4().to_string(),
        ]);
        let verdict = self.ask(&gate, &key, &ctx).await?;
        Ok(text(answers::request_approval_text(&verdict)))
    }
}

impl CountersignMcp {
    fn gate(
        &self,
        name: String,
        input: Value,
        title: Option<String>,
        reason: Option<String>,
        always: bool,
    ) -> OpenGate {
        OpenGate {
            source: SOURCE.into(),
            external_session: self.options.external_session.clone(),
            cwd: self.options.cwd.clone(),
            tool: GateTool { name, input },
            title,
            reason,
            agent_says: None,
            capabilities: Capabilities {
                edit: true,
                always,
                deny_reason: true,
            },
            timeout_secs: Some(self.options.timeout_secs),
        }
    }

    /// Opens the gate and waits, telling the host about progress; a deny when Countersign
    /// cannot be asked. An error only when the host cancelled the call.
    async fn ask(
        &self,
        gate: &OpenGate,
        key: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Verdict, McpError> {
        let deadline = Instant::now() + Duration::from_secs(self.options.timeout_secs);
        let opened = tokio::select! {
            opened = self.client.open(gate, Some(key)) => opened,
            () = ctx.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
        };
        let opened = match opened {
            Ok(opened) => opened.state,
            Err(e) => return Ok(no_answer(&e)),
        };
        if opened.is_resolved() {
            return Ok(Verdict::from_state(&opened));
        }
        let mut progress = Progress::new(ctx, &opened);
        let wait = self.client.wait(&opened.approval_id, deadline);
        tokio::pin!(wait);
        let mut ticks = tokio::time::interval(self.options.progress_every);
        let waited = loop {
            tokio::select! {
                waited = &mut wait => break waited,
                _ = ticks.tick() => progress.send().await,
                () = ctx.ct.cancelled() => {
                    self.cancel(&opened.approval_id, WHY_CLIENT_GONE).await;
                    return Err(McpError::internal_error("cancelled by the client", None));
                }
            }
        };
        Ok(match waited {
            Ok(state) => Verdict::from_state(&state),
            Err(ClientError::Deadline { .. }) => {
                self.cancel(&opened.approval_id, WHY_TIMEOUT).await;
                Verdict::timed_out(self.options.timeout_secs)
            }
            Err(e) => no_answer(&e),
        })
    }

    async fn cancel(&self, approval_id: &ApprovalId, why: &str) {
        if let Err(e) = self.client.cancel(approval_id, why).await {
            tracing::warn!("cancelling gate {approval_id}: {}", error_chain(&e));
        }
    }
}

/// The deny for a gate that got no decision: MCP's tools always answer, so a refusal of
/// Countersign's own and not reaching it are both a deny, each saying which.
fn no_answer(e: &ClientError) -> Verdict {
    if e.reached_countersign() {
        Verdict::refused(&error_chain(e))
    } else {
        Verdict::unreachable(&error_chain(e))
    }
}

/// Progress notifications for one waiting call (none when the host sent no progress token).
struct Progress<'a> {
    ctx: &'a RequestContext<RoleServer>,
    token: Option<ProgressToken>,
    message: String,
    count: u32,
}

impl<'a> Progress<'a> {
    fn new(ctx: &'a RequestContext<RoleServer>, opened: &GateState) -> Progress<'a> {
        Progress {
            ctx,
            token: ctx.meta.get_progress_token(),
            message: match opened.url.as_str() {
                "" => "waiting for a person in Countersign".into(),
                url => format!("waiting for a person in Countersign: {url}"),
            },
            count: 0,
        }
    }

    async fn send(&mut self) {
        let Some(token) = &self.token else {
            return;
        };
        self.count += 1;
        let param = ProgressNotificationParam::new(token.clone(), f64::from(self.count))
            .with_message(&self.message);
        if let Err(e) = self.ctx.peer.notify_progress(param).await {
            tracing::debug!("progress notification failed: {e}");
        }
    }
}

fn text(body: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(body)])
}

#[tool_handler]
impl ServerHandler for CountersignMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "countersign",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Ask a person before consequential actions: approval_prompt for tool calls \
                 (Claude Code's --permission-prompt-tool), request_approval for anything else.",
            )
    }
}
