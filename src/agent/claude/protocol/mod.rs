//! The Claude Code CLI's stream-json control protocol, as serde types that match the wire
//! (captured from CLI 2.1.332; see `../shared/protocol/claude-cli.md`): what the host writes
//! (`to_cli.rs`: messages, requests, and the answers in the CLI's form) and what it reads
//! (`from_cli.rs`). The Messages API objects inside its lines are `agent::messages_api`'s.

mod from_cli;
mod to_cli;
#[cfg(test)]
pub(crate) mod traces;

pub use from_cli::{
    AssistantMessage, CanUseTool, CliInfo, CliRequest, CompactMetadata, EchoContent, FromCli, HookCallback, Init,
    ResultMessage, Status, StreamEvent, SystemMessage, TOLD_ON_HOOK_EOF, TOLD_WHEN_KILLED, UserEcho,
};
pub use to_cli::{
    ControlResponse, HookDecision, HookOutput, HostRequest, PermissionReply, PreToolUse, Reply, ToCli, UserContent,
    allow, deny, hook_allow, hook_defer, hook_deny, input_with_answers, permission_request_reply, question_hooks,
};
