//! What a killed server left running of its ACP agents, ended when it starts again.
//!
//! An agent dies with the server (`die_with_the_server`), but what it started does not: Claude's
//! adapter runs `claude` as a child, which outlived its killed adapter and went on calling the
//! model (acp.md §4; seen again in `acp.spec`'s crash test, where it spent the reply scripted for
//! the person's next message). So each agent's process group is written down while it runs
//! (`<data>/acp/<session>.group`: the boot, the group's id, the leader's start time), and a server
//! that starts ends whatever is still in a group it wrote down and that started with it or after:
//! never a group of another boot, nor an older process that has the id now.
//!
//! A hosted agent (`host.rs`) is meant to outlive the server: its record says `host`, names the
//! host rather than the agent, and is left alone while the host lives (its socket is
//! `<data>/acp/<session>.sock`). The next server attaches to it.

use std::path::{Path, PathBuf};

use tracing::{info, warn};

use crate::agent::process_tree::Tree;

pub struct Leftovers {
    dir: PathBuf,
}

/// `/proc/<pid>/stat`'s process group (field 5) and start time (field 22, clock ticks since boot).
fn group_and_start(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields.get(2)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default().trim().to_string()
}

impl Leftovers {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The folder the records are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, session: &str) -> PathBuf {
        self.dir.join(format!("{}.group", file_name(session)))
    }

    /// Where the host of `session`'s agent listens.
    pub fn socket(&self, session: &str) -> PathBuf {
        self.dir.join(format!("{}.sock", file_name(session)))
    }

    /// Writes down agent `pid`'s process group (it leads its own) for `session`.
    pub fn record(&self, session: &str, pid: u32) {
        self.write(session, pid, "");
    }

    /// Writes down the host `pid` of `session`'s agent (it leads its own session and group).
    pub fn record_host(&self, session: &str, pid: u32) {
        self.write(session, pid, " host");
    }

    fn write(&self, session: &str, pid: u32, kind: &str) {
        let Some((_, start)) = group_and_start(pid) else { return };
        let written = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(self.file(session), format!("{} {pid} {start}{kind}\n", boot_id())));
        if let Err(error) = written {
            warn!(%error, dir = %self.dir.display(), "could not write down an ACP agent's process group");
        }
    }

    /// Whether the host of `session`'s agent still runs (it outlived the server before).
    pub fn host_alive(&self, session: &str) -> bool {
        Record::read(&self.file(session)).is_some_and(|record| record.host && record.alive(&boot_id()))
    }

    /// Ends what is left of `session`'s agent (its host, if it lost it), and forgets it.
    pub fn end(&self, session: &str) {
        end_recorded(&self.file(session), &boot_id());
        self.forget(session);
    }

    /// The agent of `session` was ended: nothing to end later, no host to attach to.
    pub fn forget(&self, session: &str) {
        let _ = std::fs::remove_file(self.file(session));
        let _ = std::fs::remove_file(self.socket(session));
    }

    /// Ends what the previous run of this server left running; returns how many processes.
    pub fn end_previous(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return 0 };
        let boot = boot_id();
        let mut ended = 0;
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.extension().is_some_and(|e| e == "group") {
                // A host that lives waits for this server to attach.
                if Record::read(&path).is_some_and(|record| record.host && record.alive(&boot)) {
                    continue;
                }
                ended += end_recorded(&path, &boot);
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_file(path.with_extension("sock"));
            }
        }
        if ended > 0 {
            info!(ended, "ended what ACP agents of the previous run left running");
        }
        ended
    }
}

/// Session ids are ours (uuids); anything else is made safe for a file name.
fn file_name(session: &str) -> String {
    session.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// One line written by [`Leftovers::write`].
struct Record {
    boot: String,
    group: u32,
    start: u64,
    host: bool,
}

impl Record {
    fn read(path: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut words = text.split_whitespace();
        let (boot, group, start) = (words.next()?, words.next()?.parse().ok()?, words.next()?.parse().ok()?);
        Some(Self { boot: boot.to_string(), group, start, host: words.next() == Some("host") })
    }

    /// Its leader runs still: the same process, not another that has its id now, nor its corpse
    /// (killed, and not reaped yet).
    fn alive(&self, boot: &str) -> bool {
        let zombie = std::fs::read_to_string(format!("/proc/{}/stat", self.group))
            .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')));
        self.boot == boot && !zombie && group_and_start(self.group).is_some_and(|(_, start)| start == self.start)
    }
}

fn end_recorded(path: &Path, boot: &str) -> usize {
    let Some(Record { boot: recorded_boot, group, start, .. }) = Record::read(path) else { return 0 };
    if recorded_boot != boot || group <= 1 {
        return 0;
    }
    let Ok(processes) = std::fs::read_dir("/proc") else { return 0 };
    processes
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter(|&pid| group_and_start(pid).is_some_and(|(g, s)| g == group && s >= start))
        .map(|pid| Tree::of(pid).kill())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    use std::os::unix::process::CommandExt;

    #[test]
    fn what_a_killed_server_left_in_an_agents_group_is_ended_at_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let leftovers = Leftovers::new(dir.path().to_path_buf());
        // An "agent" leading its own group, with a child that outlives it, as the adapter's claude.
        let mut agent = Command::new("sh")
            .args(["-c", "sleep 300 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(agent.stdout.take().unwrap()), &mut line).unwrap();
        let child: u32 = line.trim().parse().unwrap();
        leftovers.record("s1", agent.id());
        agent.kill().unwrap();
        agent.wait().unwrap();
        assert!(group_and_start(child).is_some(), "the child outlives its agent");

        assert_eq!(Leftovers::new(dir.path().to_path_buf()).end_previous(), 1);
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            std::fs::read_to_string(format!("/proc/{child}/stat")).map_or(true, |s| s.contains(") Z "))
        });
        assert!(gone, "the leftover was ended");
        assert!(!leftovers.file("s1").exists(), "and forgotten");
    }

    #[test]
    fn a_group_of_another_boot_or_one_forgotten_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.group"), format!("another-boot {} 0\n", std::process::id())).unwrap();
        let leftovers = Leftovers::new(dir.path().to_path_buf());
        assert_eq!(leftovers.end_previous(), 0);
        leftovers.record("s2", std::process::id());
        leftovers.forget("s2");
        assert_eq!(leftovers.end_previous(), 0);
    }

    #[test]
    fn a_living_host_is_left_for_the_next_server_and_a_dead_ones_record_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let leftovers = Leftovers::new(dir.path().to_path_buf());
        let mut host = Command::new("sleep").arg("300").process_group(0).spawn().unwrap();
        leftovers.record_host("s3", host.id());
        assert!(leftovers.host_alive("s3"));
        assert_eq!(Leftovers::new(dir.path().to_path_buf()).end_previous(), 0);
        assert!(leftovers.host_alive("s3"), "a host waits for the next server");

        host.kill().unwrap();
        // Killed and not reaped: its corpse keeps its id and start time, and is no host.
        let dead = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            !leftovers.host_alive("s3")
        });
        assert!(dead, "a killed host is not alive");
        host.wait().unwrap();
        Leftovers::new(dir.path().to_path_buf()).end_previous();
        assert!(!leftovers.file("s3").exists(), "its record is forgotten");
    }
}
