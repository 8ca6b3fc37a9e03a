//! Sessions AskBridge does not run (DESIGN §7): a `claude` started in a terminal, the ordinary
//! way, runs the hooks in the user's Claude Code settings, and AskBridge's hooks bring its
//! questions and permission prompts here.
//!
//! - `settings.rs`: AskBridge's hooks added to and removed from `settings.json`, as text edits
//!   that leave every other byte of the file as it was.

pub mod settings;
