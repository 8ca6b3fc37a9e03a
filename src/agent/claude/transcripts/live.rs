//! Which transcripts a running `claude` is writing right now, found in `/proc` (Linux): such a
//! session is shown as running in a terminal, and is read-only here until that process ends.
//!
//! What ties a process to a session, most certain first:
//! 1. Claude Code's own registry: while it runs, CLI 2.1.332 keeps `<config>/sessions/<pid>.json`
//!    (`{pid, sessionId, cwd, procStart, status, …}`, removed when it exits). It counts only while
//!    that pid lives and its start time (`/proc/<pid>/stat` field 22) is the recorded
//!    `procStart`, so a file left by a crash, or a pid used again, is not believed. Seen in real
//!    runs (tests/claude_transcripts.rs). Only the `.json` is read, never the `.key` beside it.
//! 2. an open file descriptor on the transcript (2.1.332 does not keep one open; older or other
//!    writers might);
//! 3. a `claude` process's arguments: `--resume <id>`, `-r <id>`, `--session-id <id>`;
//! 4. its working folder: a process started in the folder a transcript is filed under, and that
//!    transcript the newest there, written since the process started.
//!
//! A `claude` process (rules 2–4) is one whose executable, or whose script (the npm package run
//! by node), is Claude Code's.
//!
//! Limits: only processes this user may inspect (`/proc/<pid>/fd` and `cwd` of another user's
//! processes are not readable: those are missed); processes on another machine, or in another
//! PID namespace (a container) are not seen; rule 3 is a guess when several sessions of one
//! folder run at once (each process claims the newest transcript written since it started, so
//! two processes may claim one and leave another out). A transcript written by a process that
//! `/proc` does not show is not called running.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::projects::{ProjectsDir, TranscriptFile, folder_name_of};

/// Why a process is taken to write a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    SessionFile,
    OpenFile,
    Arguments,
    WorkingFolder,
}

/// A `claude` process that writes a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Writer {
    pub pid: u32,
    pub evidence: Evidence,
    /// This server started it (it descends from this process): AskBridge's own session, not a
    /// terminal's.
    pub ours: bool,
    /// What Claude Code says it is doing (`idle`, `busy`, …), from its registry file.
    pub status: Option<String>,
}

/// What one look at `/proc` found: the sessions being written, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Running {
    writers: HashMap<String, Writer>,
}

impl Running {
    pub fn is_running(&self, id: &str) -> bool {
        self.writers.contains_key(id)
    }

    /// Written by a `claude` this server did not start: a terminal's (or another program's).
    pub fn is_running_elsewhere(&self, id: &str) -> bool {
        self.writers.get(id).is_some_and(|w| !w.ours)
    }

    pub fn writer(&self, id: &str) -> Option<&Writer> {
        self.writers.get(id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.writers.keys().map(String::as_str)
    }
}

/// A `claude` process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeProcess {
    pub pid: u32,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Its open files (their real paths), as far as this user may see them.
    pub open_files: Vec<PathBuf>,
    /// When it started.
    pub started: Option<SystemTime>,
    /// It descends from this process.
    pub ours: bool,
}

/// Looks at every process once, and ties the `claude` ones to the transcripts of `dir`. Costs a
/// read of `/proc/*/cmdline` for every process, and `fd`, `cwd` and `stat` for the `claude` ones
/// (a few ms for a few hundred processes).
pub fn scan(dir: &ProjectsDir) -> Running {
    let registered = dir.root().parent().map(|config| registered(&config.join("sessions"))).unwrap_or_default();
    let processes = claude_processes();
    if processes.is_empty() && registered.is_empty() {
        return Running::default();
    }
    let mut running = ties(&processes, &dir.transcripts());
    for (id, writer) in registered {
        running.writers.insert(id, writer);
    }
    running
}

/// Rule 1: the sessions in Claude Code's registry whose process lives.
fn registered(sessions: &Path) -> HashMap<String, Writer> {
    let mut found = HashMap::new();
    let Ok(files) = std::fs::read_dir(sessions) else { return found };
    for file in files.flatten() {
        let name = file.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_suffix(".json")).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        // A registry entry is small; a big file is no entry.
        if file.metadata().map_or(true, |m| !m.is_file() || m.len() > 64 * 1024) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file.path()) else { continue };
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
        let field = |key: &str| entry.get(key).and_then(|v| v.as_str());
        let Some(id) = field("sessionId").filter(|id| super::projects::is_session_id(id)) else { continue };
        if entry.get("pid").and_then(|p| p.as_u64()) != Some(u64::from(pid)) {
            continue;
        }
        let alive = match (field("procStart"), start_ticks(pid)) {
            (Some(recorded), Some(actual)) => recorded == actual.to_string(),
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if alive {
            let writer = Writer {
                pid,
                evidence: Evidence::SessionFile,
                ours: descends_from_us(pid),
                status: field("status").map(str::to_string),
            };
            found.insert(id.to_string(), writer);
        }
    }
    found
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks since boot; `None`
/// when no such process lives.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(19)?.parse().ok()
}

/// The rules above, for processes and transcripts given (the testable part of [`scan`]).
pub fn ties(processes: &[ClaudeProcess], transcripts: &[TranscriptFile]) -> Running {
    let mut writers: HashMap<String, Writer> = HashMap::new();
    let mut claim = |id: &str, process: &ClaudeProcess, evidence: Evidence| {
        let better = writers.get(id).is_none_or(|w| rank(evidence) < rank(w.evidence));
        if better {
            writers.insert(id.to_string(), Writer { pid: process.pid, evidence, ours: process.ours, status: None });
        }
    };
    let real: Vec<(Option<PathBuf>, &TranscriptFile)> =
        transcripts.iter().map(|t| (std::fs::canonicalize(&t.path).ok(), t)).collect();
    for process in processes {
        for (path, transcript) in &real {
            if path.as_ref().is_some_and(|p| process.open_files.contains(p)) {
                claim(&transcript.id, process, Evidence::OpenFile);
            }
        }
        if let Some(id) = resumed_id(&process.args)
            && transcripts.iter().any(|t| t.id == id)
        {
            claim(id, process, Evidence::Arguments);
        }
        if let Some(id) = newest_in_folder(process, transcripts) {
            claim(&id, process, Evidence::WorkingFolder);
        }
    }
    Running { writers }
}

fn rank(evidence: Evidence) -> u8 {
    match evidence {
        Evidence::SessionFile => 0,
        Evidence::OpenFile => 0,
        Evidence::Arguments => 1,
        Evidence::WorkingFolder => 2,
    }
}

/// The session a command line names: `--resume <id>`, `--resume=<id>`, `-r <id>`,
/// `--session-id <id>`.
fn resumed_id(args: &[String]) -> Option<&str> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        for flag in ["--resume", "--session-id"] {
            if let Some(id) = arg.strip_prefix(flag).and_then(|rest| rest.strip_prefix('=')) {
                return Some(id);
            }
        }
        if matches!(arg.as_str(), "--resume" | "-r" | "--session-id") {
            return args.next().map(String::as_str).filter(|id| !id.starts_with('-'));
        }
    }
    None
}

/// Rule 3: the newest transcript of the process's folder, if written since the process started.
fn newest_in_folder(process: &ClaudeProcess, transcripts: &[TranscriptFile]) -> Option<String> {
    let folder = folder_name_of(&process.cwd.as_ref()?.display().to_string());
    let started = process.started?;
    transcripts
        .iter()
        .filter(|t| t.folder == folder)
        .filter_map(|t| Some((std::fs::metadata(&t.path).ok()?.modified().ok()?, t)))
        // A second of slack: the clock of `stat` and the file system's are not one.
        .filter(|(modified, _)| *modified + Duration::from_secs(1) >= started)
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, t)| t.id.clone())
}

/// Every `claude` process `/proc` shows.
pub fn claude_processes() -> Vec<ClaudeProcess> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let boot = boot_time();
    let ticks = clock_ticks();
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter_map(|pid| {
            let proc_dir = PathBuf::from(format!("/proc/{pid}"));
            let args = read_args(&proc_dir.join("cmdline"))?;
            let exe = std::fs::read_link(proc_dir.join("exe")).ok();
            if !is_claude(exe.as_deref(), &args) {
                return None;
            }
            Some(ClaudeProcess {
                pid,
                args,
                cwd: std::fs::read_link(proc_dir.join("cwd")).ok(),
                open_files: open_files(&proc_dir),
                started: start_time(&proc_dir, boot, ticks),
                ours: descends_from_us(pid),
            })
        })
        .collect()
}

/// Claude Code's executable is `claude` (the native build), or node running its package's
/// `cli.js`; a shell script or a test harness that only mentions it is not.
pub fn is_claude(exe: Option<&Path>, args: &[String]) -> bool {
    let base = |path: &str| Path::new(path).file_name().and_then(|n| n.to_str()).map(str::to_string);
    let exe_name = exe.and_then(|e| base(&e.display().to_string()));
    // npm's package runs its native binary `bin/claude.exe` (2.1.332), linked as `claude`.
    let named = |name: Option<String>| matches!(name.as_deref(), Some("claude" | "claude.exe"));
    if named(exe_name.clone()) || named(args.first().and_then(|a| base(a))) {
        return true;
    }
    let node = exe_name.as_deref().is_some_and(|n| n == "node" || n.starts_with("node"));
    node && args
        .iter()
        .skip(1)
        .take(3)
        .any(|a| a.contains("@anthropic-ai/claude-code/") && (a.ends_with("cli.js") || a.ends_with("/claude")))
}

fn read_args(path: &Path) -> Option<Vec<String>> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.is_empty() {
        return None; // a kernel thread, or a zombie
    }
    Some(bytes.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
}

fn open_files(proc_dir: &Path) -> Vec<PathBuf> {
    let Ok(fds) = std::fs::read_dir(proc_dir.join("fd")) else { return Vec::new() };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.is_absolute() && target.extension().is_some_and(|e| e == "jsonl"))
        .collect()
}

/// When the process started: field 22 of `/proc/<pid>/stat`, in clock ticks since boot.
fn start_time(proc_dir: &Path, boot: Option<SystemTime>, ticks: u64) -> Option<SystemTime> {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let since_boot: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    Some(boot? + Duration::from_millis(since_boot * 1000 / ticks.max(1)))
}

/// Whether `pid` is a child of this process, or a grandchild (a CLI started through a wrapper).
fn descends_from_us(pid: u32) -> bool {
    let us = std::process::id();
    let mut pid = pid;
    for _ in 0..4 {
        match parent_of(pid) {
            Some(parent) if parent == us => return true,
            Some(parent) if parent > 1 => pid = parent,
            _ => return false,
        }
    }
    false
}

/// Field 4 of `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

fn boot_time() -> Option<SystemTime> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let seconds: u64 = stat.lines().find_map(|line| line.strip_prefix("btime "))?.trim().parse().ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(seconds))
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_resumed_session_is_named_by_its_arguments() {
        assert_eq!(resumed_id(&args("claude --resume abc")), Some("abc"));
        assert_eq!(resumed_id(&args("claude -r abc -p hi")), Some("abc"));
        assert_eq!(resumed_id(&args("claude --resume=abc")), Some("abc"));
        assert_eq!(resumed_id(&args("claude --session-id abc")), Some("abc"));
        assert_eq!(resumed_id(&args("claude --resume --verbose")), None, "the picker: no id");
        assert_eq!(resumed_id(&args("claude -p hello")), None);
    }

    #[test]
    fn only_claude_itself_counts_as_claude() {
        let exe = |p: &str| Some(PathBuf::from(p));
        assert!(is_claude(
            exe("/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude").as_deref(),
            &args("claude")
        ));
        assert!(is_claude(
            exe("/x/node_modules/@anthropic-ai/claude-code/bin/claude.exe").as_deref(),
            &args("/x/claude -p")
        ));
        assert!(is_claude(
            exe("/usr/bin/node").as_deref(),
            &args("node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js -p hi")
        ));
        assert!(!is_claude(exe("/usr/bin/bash").as_deref(), &args("bash -c claude-wrapper")));
        assert!(!is_claude(exe("/usr/bin/vim").as_deref(), &args("vim claude.md")));
    }

    #[test]
    fn the_process_with_the_file_open_wins_over_a_guess() {
        let home = tempfile::tempdir().unwrap();
        let folder = home.path().join("-work-project");
        std::fs::create_dir_all(&folder).unwrap();
        let transcript = |id: &str, age: u64| {
            let path = folder.join(format!("{id}.jsonl"));
            std::fs::write(&path, "{}\n").unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(age)).unwrap();
            TranscriptFile { id: id.into(), folder: "-work-project".into(), path }
        };
        let (a, b) = (transcript("a", 100), transcript("b", 10));
        let long_ago = SystemTime::now() - Duration::from_secs(3600);
        let process = |pid, open: Option<&TranscriptFile>, args: &str| ClaudeProcess {
            pid,
            args: super::tests::args(args),
            cwd: Some(PathBuf::from("/work/project")),
            open_files: open.map(|t| std::fs::canonicalize(&t.path).unwrap()).into_iter().collect(),
            started: Some(long_ago),
            ours: false,
        };
        let running = ties(&[process(7, Some(&a), "claude")], &[a.clone(), b.clone()]);
        assert_eq!(
            running.writer("a"),
            Some(&Writer { pid: 7, evidence: Evidence::OpenFile, ours: false, status: None })
        );
        // Both were written since it started; by its folder alone it would be the newest one.
        assert!(running.writer("b").is_some_and(|w| w.evidence == Evidence::WorkingFolder));
        let running = ties(&[process(8, None, "claude --resume a")], &[a.clone(), b.clone()]);
        assert_eq!(
            running.writer("a"),
            Some(&Writer { pid: 8, evidence: Evidence::Arguments, ours: false, status: None })
        );
        // A process that started after the last write writes neither.
        let mut fresh = process(9, None, "claude");
        fresh.started = Some(SystemTime::now() + Duration::from_secs(60));
        assert!(ties(&[fresh], &[a, b]).ids().next().is_none());
    }

    #[test]
    fn a_registry_entry_counts_only_while_its_process_lives() {
        let config = tempfile::tempdir().unwrap();
        let sessions = config.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let me = std::process::id();
        let entry = |pid: u32, id: &str, start: String| {
            let json = serde_json::json!({"pid": pid, "sessionId": id, "procStart": start, "status": "busy"});
            std::fs::write(sessions.join(format!("{pid}.json")), json.to_string()).unwrap();
        };
        // This test process stands in for a live claude; a pid with the wrong start time is a
        // pid used again; a pid that does not exist left its file behind in a crash.
        entry(me, "live-session", start_ticks(me).unwrap().to_string());
        let parent = std::os::unix::process::parent_id();
        entry(parent, "reused-pid", "1".into());
        entry(u32::MAX - 1, "crashed", "1".into());
        std::fs::write(sessions.join("123.key"), "secret").unwrap();
        std::fs::write(sessions.join("bad.json"), "{").unwrap();
        let found = registered(&sessions);
        assert_eq!(found.keys().collect::<Vec<_>>(), vec!["live-session"]);
        assert_eq!(found["live-session"].status.as_deref(), Some("busy"));
        assert_eq!(found["live-session"].evidence, Evidence::SessionFile);
    }

    #[test]
    fn this_test_process_is_no_claude_and_the_scan_finds_none_here() {
        // The scan runs on the real /proc: cheap, and it never panics on what it finds there.
        let dir = ProjectsDir::new("/nonexistent/projects");
        assert!(!scan(&dir).is_running("x"));
        assert!(claude_processes().iter().all(|p| p.pid != std::process::id()));
        assert!(boot_time().is_some());
        assert_eq!(parent_of(std::process::id()), Some(std::os::unix::process::parent_id()));
    }
}
