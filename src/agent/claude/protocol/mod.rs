//! The Claude Code CLI's stream-json control protocol, as serde types that match the wire
//! (captured from CLI 2.1.332; see `../shared/protocol/claude-cli.md`): what the host writes
//! (`to_cli.rs`: messages, requests, and the answers in the CLI's form) and what it reads
//! (`from_cli.rs`).

mod from_cli;
mod to_cli;
#[cfg(test)]
pub(crate) mod traces;

pub use from_cli::{
    ApiEvent, ApiMessage, ApiUsage, AssistantMessage, CanUseTool, CliInfo, CliRequest, CompactMetadata, ContentBlock,
    Delta, EchoContent, FromCli, HookCallback, Init, ResultMessage, Status, StreamEvent, StreamMessage, SystemMessage,
    TOLD_ON_HOOK_EOF, TOLD_WHEN_KILLED, UserEcho,
};
pub use to_cli::{
    ControlResponse, HookDecision, HookOutput, HostRequest, PermissionReply, PreToolUse, Reply, ToCli, UserContent,
    allow, deny, hook_allow, hook_defer, hook_deny, input_with_answers, permission_request_reply, question_hooks,
};
