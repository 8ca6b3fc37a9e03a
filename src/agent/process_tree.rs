//! Everything an agent's process started, found through `/proc`, and ended with it. Claude Code runs each Bash
//! command in a session of its own (`setsid`: its own process group too), so a signal to the
//! CLI's process group misses them; a command that outlived its CLI would run on, unseen (seen
//! with CLI 2.1.332: after stdin closed mid-command, killing the CLI's group left `bash` and its
//! `sleep`s running under init).

use std::collections::HashSet;

/// One line of the process table: `/proc/<pid>/stat`, fields 1, 4, 5 and 6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    pid: u32,
    parent: u32,
    group: u32,
    session: u32,
}

impl Entry {
    /// Parses `/proc/<pid>/stat`. The command's name (field 2) is in parentheses and may hold
    /// anything, spaces and parentheses included: the fields are counted after its last `)`.
    fn parse(stat: &str) -> Option<Self> {
        let (head, rest) = stat.rsplit_once(')')?;
        let pid = head.split_once(' ')?.0.trim().parse().ok()?;
        let mut fields = rest.split_whitespace().skip(1).map(str::parse::<u32>);
        let (parent, group, session) = (fields.next()?.ok()?, fields.next()?.ok()?, fields.next()?.ok()?);
        Some(Self { pid, parent, group, session })
    }
}

/// Every process this user may see.
fn table() -> Vec<Entry> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Entry::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?))
        .collect()
}

/// A CLI and what it started: its descendants, and the process groups and sessions they made
/// (where a command can still be found once the process that started it is gone).
#[derive(Debug, Default)]
pub(in crate::agent) struct Tree {
    /// The CLI, while it is not reaped (once it is, its pid may be another process's).
    root: Option<u32>,
    groups: HashSet<u32>,
}

impl Tree {
    /// The tree under `root` as it is now.
    pub(in crate::agent) fn of(root: u32) -> Self {
        let mut tree = Self { root: Some(root), groups: HashSet::new() };
        tree.members(&table(), &HashSet::new());
        tree
    }

    /// The CLI was reaped: what is left is found through the groups and sessions seen.
    pub(in crate::agent) fn without_root(mut self) -> Self {
        self.root = None;
        self
    }

    /// Kills every process of the tree (SIGKILL): `root`'s descendants, and whatever is in a
    /// process group or session they made, including those seen when the tree was taken. Each is
    /// stopped (SIGSTOP) first, so that nothing forks away while the table is read again. Returns
    /// how many processes were signalled.
    pub(in crate::agent) fn kill(mut self) -> usize {
        let mut found = HashSet::new();
        // A fork bomb could outrun a fixed number of rounds; a real command tree never has.
        for _ in 0..32 {
            let members = self.members(&table(), &found);
            let new: Vec<u32> = members.into_iter().filter(|pid| !found.contains(pid)).collect();
            if new.is_empty() {
                break;
            }
            for &pid in &new {
                signal(pid, libc::SIGSTOP);
            }
            found.extend(new);
        }
        for &pid in &found {
            signal(pid, libc::SIGKILL);
        }
        found.len()
    }

    /// The processes of the tree in `table`. Learns the process groups and sessions they are in
    /// (never the server's own).
    fn members(&mut self, table: &[Entry], known: &HashSet<u32>) -> Vec<u32> {
        let ours = own_group_and_session();
        let mut members: Vec<u32> = Vec::new();
        let mut inside: HashSet<u32> = known.iter().copied().collect();
        inside.extend(self.root);
        // Parents come before their children only by chance: go round until nothing joins.
        loop {
            let before = inside.len();
            for entry in table {
                let joins = Some(entry.pid) == self.root
                    || inside.contains(&entry.parent)
                    || self.groups.contains(&entry.group)
                    || self.groups.contains(&entry.session);
                if joins && entry.pid != std::process::id() && entry.pid > 1 {
                    inside.insert(entry.pid);
                    for id in [entry.group, entry.session] {
                        if !ours.contains(&id) && id > 1 {
                            self.groups.insert(id);
                        }
                    }
                }
            }
            if inside.len() == before {
                break;
            }
        }
        // Never this process, though it is the root (an ACP host ends what is below it).
        members.extend(table.iter().map(|e| e.pid).filter(|pid| inside.contains(pid) && *pid != std::process::id()));
        members
    }
}

/// Hangs up every process of the session `leader` leads, as a terminal's hang-up would: SIGHUP to
/// each of its process groups, then SIGCONT, so that a stopped job hears it too. A shell with job
/// control runs each background job in a group of its own, and only bash passes its own hang-up
/// on to them (dash, `/bin/sh` on Debian, leaves `sleep 600 &` running). What chose to outlive a
/// hang-up (`nohup`) lives on. Returns how many groups were signalled.
pub fn hang_up_session(leader: u32) -> usize {
    let ours = own_group_and_session();
    let groups: HashSet<u32> = table()
        .into_iter()
        .filter(|entry| entry.session == leader && entry.group > 1 && !ours.contains(&entry.group))
        .map(|entry| entry.group)
        .collect();
    for &group in &groups {
        // SAFETY: kill only sends a signal; a group gone meanwhile gives ESRCH, ignored.
        unsafe {
            libc::kill(-(group as libc::pid_t), libc::SIGHUP);
            libc::kill(-(group as libc::pid_t), libc::SIGCONT);
        }
    }
    groups.len()
}

/// The server's own process group and session: never signalled.
fn own_group_and_session() -> [u32; 2] {
    // SAFETY: both only read this process's ids.
    unsafe { [libc::getpgrp() as u32, libc::getsid(0) as u32] }
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill only sends a signal; a process gone meanwhile gives ESRCH, ignored.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Makes an agent's process (the Claude Code CLI, an ACP agent) die (SIGKILL) the moment the server does, however it dies.
///
/// A CLI that outlives a killed server sees its stdin close and answers what it was asking
/// by itself: "The user doesn't want to take this action right now" reaches the model (protocol
/// §12, l_hook_eof), for a question the person may have answered a moment before. Killed
/// instead, it tells the model nothing; its transcript keeps the call without a result (a
/// parked call stays parked, and `--resume` asks it again), and the next message tells the
/// model the call was interrupted ([`TOLD_WHEN_KILLED`]). Captured with CLI 2.1.332.
///
/// The kernel signals the child when the *thread* that started it ends. The CLI is started from
/// the runtime's worker threads, which live as long as the server (never from a blocking-pool
/// thread, which ends when idle).
pub(in crate::agent) fn die_with_the_server(command: &mut tokio::process::Command) {
    let server = std::process::id();
    // SAFETY: prctl and getppid are async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The server died between the fork and the prctl: nobody would signal this one.
            if libc::getppid() as u32 != server {
                return Err(std::io::Error::other("the server is gone"));
            }
            Ok(())
        });
    }
}

/// `program` in `workdir` with only what the allow-list passes of the server's environment (its
/// own settings, the database URL, the token, are not the agent's business), then `env`, and the
/// marker that says whose agent it is.
fn in_agent_environment(
    program: impl AsRef<std::ffi::OsStr>,
    inherit: &crate::agent::AgentEnv,
    env: &[(String, String)],
    session: &str,
    workdir: &std::path::Path,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .env_clear()
        .envs(inherit.inherited(std::env::vars_os()))
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(crate::agent::SESSION_MARKER, session)
        .current_dir(workdir);
    command
}

/// The command that starts an ACP host (`acp/host.rs`) in `workdir`, with the environment of
/// [`agent_command`] (the host passes it on to its agent): in a session of its own, so that
/// neither the server's death nor a signal to the server's terminal reaches it, its stdio closed.
pub(in crate::agent) fn host_command(
    program: impl AsRef<std::ffi::OsStr>,
    inherit: &crate::agent::AgentEnv,
    env: &[(String, String)],
    session: &str,
    workdir: &std::path::Path,
) -> tokio::process::Command {
    use std::process::Stdio;
    let mut command = in_agent_environment(program, inherit, env, session, workdir);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// The command that starts an agent's process (the Claude Code CLI, an ACP agent) in `workdir`,
/// in the agent's environment ([`in_agent_environment`]); its stdio piped; in a process group of its own (what it runs is found and ended
/// with it all the same, by [`Tree`]); killed when dropped, and when the server dies.
pub(in crate::agent) fn agent_command(
    program: impl AsRef<std::ffi::OsStr>,
    inherit: &crate::agent::AgentEnv,
    env: &[(String, String)],
    session: &str,
    workdir: &std::path::Path,
) -> tokio::process::Command {
    use std::process::Stdio;
    let mut command = in_agent_environment(program, inherit, env, session, workdir);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    die_with_the_server(&mut command);
    command
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_stat_line_is_read_whatever_the_command_is_called() {
        let stat = "4242 (tricky) name (x)) S 17 4242 4200 0 -1 4194560 0 0";
        assert_eq!(Entry::parse(stat), Some(Entry { pid: 4242, parent: 17, group: 4242, session: 4200 }));
        assert_eq!(Entry::parse("garbage"), None);
        assert_eq!(Entry::parse("12 (x) S"), None);
    }

    #[test]
    fn the_table_of_this_process_knows_its_parent() {
        let me = table().into_iter().find(|e| e.pid == std::process::id()).expect("this process is listed");
        assert_eq!(me.parent, std::os::unix::process::parent_id());
    }

    fn alive(pid: u32) -> bool {
        // A zombie is as good as gone: it holds no resources but its entry.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
    }

    /// The pid a script wrote to `file`, once it is there.
    fn written_pid(file: &std::path::Path) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|t| t.trim().parse().ok()) {
                return pid;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "the script never wrote {}", file.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn killing_a_tree_ends_commands_in_sessions_of_their_own_even_once_the_cli_is_gone() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let (inner, outer) = (dir.path().join("inner"), dir.path().join("outer"));
        // As Claude Code runs a command: in a session of its own; inside, a command that ignores
        // the polite signals.
        let script = format!(
            "setsid sh -c 'echo $$ > {outer}; trap \"\" TERM INT HUP; sleep 600 & echo $! > {inner}; wait' & sleep 600",
            inner = inner.display(),
            outer = outer.display()
        );
        let mut cli = Command::new("sh").args(["-c", &script]).stdin(Stdio::null()).process_group(0).spawn().unwrap();
        let (inner, outer) = (written_pid(&inner), written_pid(&outer));
        let tree = Tree::of(cli.id());
        assert!(tree.groups.contains(&outer), "the command's own session is known: {tree:?}");

        // The CLI dies first (as when it is killed alone): its command is orphaned, still running.
        signal(cli.id(), libc::SIGKILL);
        cli.wait().unwrap();
        assert!(alive(inner) && alive(outer), "a kill of the CLI alone leaves its command running");

        let killed = tree.without_root().kill();
        assert!(killed >= 2, "{killed}");
        let start = Instant::now();
        while alive(inner) || alive(outer) {
            assert!(start.elapsed() < Duration::from_secs(10), "a command outlived its CLI");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
