//! Helpers shared by the integration tests; each test uses a subset of them.
#![allow(dead_code)]

pub mod claude_code;
pub mod mock_anthropic;
pub mod push_service;
pub mod router;
pub mod server;
pub mod session;
pub mod terminal;
