//! Which `claude` a hook runs for, and whether it still lives. Claude Code runs its hooks as its
//! own children (through a shell or not): the hook finds the nearest ancestor that is Claude Code
//! (`live::is_claude`) and sends its pid, its start time and the machine's boot id. A server on the
//! same machine and boot (the same boot id) then tells a `claude` that exited without a word (its
//! tmux killed, SIGKILL: no `SessionEnd` hook runs) from one that is quiet, and ends its session.
//! Another machine's `claude` cannot be looked at: its session ends by its `SessionEnd` hook only.
//!
//! What a live `claude` is doing, Claude Code says itself: CLI 2.1.332 keeps
//! `<config>/sessions/<pid>.json` while it runs, with a `status` (`busy`, `waiting`, `idle`) and
//! when it last changed (`statusUpdatedAt`, ms), fixtures in `tests/fixtures/claude-cli/terminal/`.

use std::path::Path;

use serde_json::Value;

use crate::agent::claude::transcripts::live::is_claude;
use crate::thread::{ClaudeProcess, TerminalState};

/// How far up the hook looks: the CLI, a shell it runs hooks through, `env` or a wrapper.
const ANCESTORS: usize = 6;

/// The `claude` this process was started by, if it is one's descendant (Linux only).
pub fn claude_of_this_hook() -> Option<ClaudeProcess> {
    let boot_id = boot_id()?;
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..ANCESTORS {
        if pid <= 1 {
            return None;
        }
        let args = args_of(pid);
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        if is_claude(exe.as_deref(), &args) {
            return Some(ClaudeProcess { pid, start_ticks: stat_field(pid, 19)?, boot_id });
        }
        pid = u32::try_from(stat_field(pid, 1)?).ok()?;
    }
    None
}

/// Whether `process` still runs: `None` when this machine cannot tell (another machine, or a
/// boot since).
pub fn is_alive(process: &ClaudeProcess) -> Option<bool> {
    if boot_id().as_deref() != Some(process.boot_id.as_str()) {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", process.pid)).ok();
    let Some(stat) = stat else { return Some(false) };
    let after_name = stat.rfind(')').map_or("", |end| &stat[end + 1..]);
    let mut fields = after_name.split_whitespace();
    // A zombie has exited; a pid used again started at another time.
    let zombie = fields.next() == Some("Z");
    let started = after_name.split_whitespace().nth(19).and_then(|t| t.parse::<u64>().ok());
    Some(!zombie && started == Some(process.start_ticks))
}

/// What Claude Code's registry says `process` is doing in session `claude_session_id`, and since
/// when (ms since the epoch); the registry is found beside the session's transcript
/// (`<config>/projects/<folder>/<id>.jsonl` → `<config>/sessions/<pid>.json`). `None` when
/// there is no entry for that very process (another pid's, a pid used again, another session).
pub fn registry_status(
    transcript: &Path,
    process: &ClaudeProcess,
    claude_session_id: &str,
) -> Option<(TerminalState, i64)> {
    let config = transcript.parent()?.parent().filter(|p| p.file_name() == Some("projects".as_ref()))?.parent()?;
    let path = config.join("sessions").join(format!("{}.json", process.pid));
    // An entry is a few hundred bytes: a big file, or one that is not a file, is no entry.
    let metadata = std::fs::metadata(&path).ok()?;
    if !metadata.is_file() || metadata.len() > 64 * 1024 {
        return None;
    }
    let entry: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let field = |key: &str| entry.get(key).and_then(Value::as_str);
    if field("sessionId") != Some(claude_session_id) || field("procStart") != Some(&process.start_ticks.to_string()) {
        return None;
    }
    let state = match field("status")? {
        "busy" => TerminalState::Working,
        "waiting" => TerminalState::Waiting,
        "idle" => TerminalState::Idle,
        _ => return None,
    };
    let at = ["statusUpdatedAt", "updatedAt"].iter().find_map(|key| entry.get(*key).and_then(Value::as_i64))?;
    Some((state, at))
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): the same machine, not rebooted since.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|id| !id.is_empty())
}

fn args_of(pid: u32) -> Vec<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    bytes.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

/// Field `n` (0 = the state) after the command name of `/proc/<pid>/stat`, as a number.
fn stat_field(pid: u32, n: usize) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(n)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_lives_while_it_runs_and_not_after_nor_under_a_pid_used_again() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let process = ClaudeProcess { pid, start_ticks: stat_field(pid, 19).unwrap(), boot_id: boot_id().unwrap() };
        assert_eq!(is_alive(&process), Some(true));
        assert_eq!(is_alive(&ClaudeProcess { start_ticks: process.start_ticks + 1, ..process.clone() }), Some(false));
        assert_eq!(is_alive(&ClaudeProcess { boot_id: "another-boot".into(), ..process.clone() }), None);
        child.kill().unwrap();
        // Exited, not yet reaped: a zombie is not alive.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .rsplit(") ")
            .next()
            .unwrap()
            .starts_with('Z')
        {
            assert!(std::time::Instant::now() < deadline, "the killed child never became a zombie");
            std::thread::yield_now();
        }
        assert_eq!(is_alive(&process), Some(false));
        child.wait().unwrap();
        assert_eq!(is_alive(&process), Some(false));
    }

    #[test]
    fn claude_codes_registry_says_what_its_very_process_does() {
        let config = tempfile::tempdir().unwrap();
        let transcript = config.path().join("projects/-home-user-project/f039304b-f40a-4662-9608-54c323a3e393.jsonl");
        std::fs::create_dir_all(config.path().join("sessions")).unwrap();
        let process = ClaudeProcess { pid: 15030, start_ticks: 265_430, boot_id: "b".into() };
        let id = "f039304b-f40a-4662-9608-54c323a3e393";
        let entry = config.path().join("sessions/15030.json");
        for (fixture, expected) in [
            ("perm_prompt.sessions_file_waiting.json", Some((TerminalState::Waiting, 1_795_737_858_985))),
            ("perm_prompt.sessions_file_idle.json", Some((TerminalState::Idle, 1_795_737_866_135))),
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-cli/terminal").join(fixture);
            std::fs::copy(path, &entry).unwrap();
            assert_eq!(registry_status(&transcript, &process, id), expected, "{fixture}");
        }
        // Another start of that pid, another session, or a transcript not in a projects folder.
        let again = ClaudeProcess { start_ticks: 1, ..process.clone() };
        assert_eq!(registry_status(&transcript, &again, id), None);
        assert_eq!(registry_status(&transcript, &process, "be782543-42c4-466d-b2e2-856e0f31cb34"), None);
        assert_eq!(registry_status(&config.path().join("x/y/z.jsonl"), &process, id), None);
    }

    #[test]
    fn a_hook_not_run_by_claude_finds_no_claude() {
        // The test runner's ancestors are cargo and a shell.
        assert_eq!(claude_of_this_hook(), None);
    }
}
