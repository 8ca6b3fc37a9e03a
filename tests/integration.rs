//! The integration tests, one binary: each file beside this one is a module of it, as they were
//! test crates of their own before (their paths unchanged). One binary links once instead of
//! fourteen times, and its tests share the harness's threads instead of running file after file
//! (issue 34: `make test`'s build and its Rust tests, BENCHMARKS.md §7). One file's tests:
//! `cargo test --test integration access::`.
//!
//! Not here: `architecture` (its own, so that `cargo test --test architecture` names it), and the
//! two terminal trials, which run under a harness of their own (libtest-mimic).

mod access;
mod acp_agents;
mod anthropic_api;
mod attachments;
mod bad_input;
mod claude_cli;
mod claude_crash;
mod claude_transcripts;
mod full_disk;
mod load;
mod mock_anthropic_selftest;
mod push;
mod resume_crash;
mod support;
mod team;
