//! A terminal per session: a shell in a pseudo-terminal on the server, in the session's folder,
//! with what it wrote kept here (the scrollback) so that a reload or a second tab shows the same
//! screen. The browser's side is xterm.js (`public/terminal.js`), over a WebSocket
//! (`server/shell_socket.rs`).
//!
//! The PTY is `portable-pty`'s (wezterm's): the openpty, the session and controlling terminal of
//! the child, the window size. Its reads and writes block, so each shell has two threads of its
//! own (a shell waits on the person far more than it writes, and a thread parked in `read` costs
//! no CPU): one reads and hands the output to every tab, one writes what the tabs type.

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use portable_pty::{ChildKiller, CommandBuilder, MasterPty, PtySize, native_pty_system};
use tokio::sync::broadcast;
use tracing::{debug, warn};

use crate::agent::AgentEnv;

/// What a shell wrote, kept for the next tab: the last 1 MiB, cut at a line's end.
pub const SCROLLBACK_BYTES: usize = 1 << 20;

/// Output a slow tab may fall behind by before it is sent the whole screen again.
const BEHIND_AT_MOST: usize = 1024;

/// A terminal's size, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub cols: u16,
    pub rows: u16,
}

impl Size {
    /// Within what a screen can show: 2–1000 columns, 1–500 rows.
    pub fn bounded(cols: u16, rows: u16) -> Self {
        Self { cols: cols.clamp(2, 1000), rows: rows.clamp(1, 500) }
    }

    fn pty(self) -> PtySize {
        PtySize { rows: self.rows, cols: self.cols, pixel_width: 0, pixel_height: 0 }
    }
}

impl Default for Size {
    fn default() -> Self {
        Self { cols: 80, rows: 24 }
    }
}

/// What a tab hears from its shell.
#[derive(Debug, Clone)]
pub enum Output {
    Bytes(Arc<[u8]>),
    /// The shell ended (it exited, or was ended with its session), and how.
    Ended(String),
}

#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error("the terminal could not be started: {0}")]
    Start(String),
    #[error("the terminal has ended")]
    Ended,
}

/// The shells of this server's sessions, by session.
pub struct Shells {
    open: Mutex<HashMap<String, Arc<Shell>>>,
    inherit: AgentEnv,
    /// The shell started: the person's own.
    program: std::ffi::OsString,
}

impl Shells {
    /// Shells whose environment is what an agent's is: what a terminal needs, never the server's
    /// own configuration.
    pub fn new(inherit: AgentEnv) -> Self {
        Self { open: Mutex::default(), inherit, program: login_shell() }
    }

    /// The session's shell: the running one, or a new one in `folder`.
    pub fn open(&self, session: &str, folder: &Path, size: Size) -> Result<Arc<Shell>, ShellError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shell) = open.get(session).filter(|shell| !shell.has_ended()) {
            return Ok(shell.clone());
        }
        let shell = Shell::start(&self.program, folder, size, &self.inherit)?;
        open.insert(session.to_string(), shell.clone());
        Ok(shell)
    }

    /// Ends the session's shell, if it has one (the session was deleted).
    pub fn end(&self, session: &str) {
        let shell = self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(session);
        if let Some(shell) = shell {
            shell.end("the session was deleted");
        }
    }
}

impl Drop for Shells {
    fn drop(&mut self) {
        for shell in self.open.get_mut().unwrap_or_else(PoisonError::into_inner).values() {
            shell.end("the server stopped");
        }
    }
}

/// One shell in its PTY.
pub struct Shell {
    master: Mutex<Box<dyn MasterPty + Send>>,
    /// What the tabs typed, to the writing thread.
    input: std::sync::mpsc::Sender<Vec<u8>>,
    killer: Mutex<Box<dyn ChildKiller + Send + Sync>>,
    /// The shell's pid: it leads its own session, which is ended with it.
    leader: Option<u32>,
    screen: Mutex<Screen>,
    news: broadcast::Sender<Output>,
}

/// What the shell wrote so far, and whether it has ended: changed only with `news` sent under
/// the same lock, so that a tab that attaches gets each byte exactly once.
#[derive(Default)]
struct Screen {
    scrollback: Vec<u8>,
    ended: Option<String>,
}

impl Shell {
    fn start(
        program: &std::ffi::OsStr,
        folder: &Path,
        size: Size,
        inherit: &AgentEnv,
    ) -> Result<Arc<Self>, ShellError> {
        let start = |error: &dyn std::fmt::Display| ShellError::Start(error.to_string());
        let pair = native_pty_system().openpty(size.pty()).map_err(|e| start(&e))?;
        let mut command = CommandBuilder::new(program);
        command.env_clear();
        for (name, value) in inherit.inherited(std::env::vars_os()) {
            command.env(name, value);
        }
        command.env("TERM", "xterm-256color");
        command.env("COLORTERM", "truecolor");
        command.cwd(folder);
        let mut child = pair.slave.spawn_command(command).map_err(|e| start(&e))?;
        // The shell holds the terminal's other end; ours would keep the PTY open after it exits.
        drop(pair.slave);
        let reader = pair.master.try_clone_reader().map_err(|e| start(&e))?;
        let writer = pair.master.take_writer().map_err(|e| start(&e))?;
        let leader = child.process_id();
        let (input, typed) = std::sync::mpsc::channel();
        let shell = Arc::new(Self {
            master: Mutex::new(pair.master),
            input,
            killer: Mutex::new(child.clone_killer()),
            leader,
            screen: Mutex::default(),
            news: broadcast::channel(BEHIND_AT_MOST).0,
        });
        spawn_thread("askbridge-shell-write", move || write_typed(writer, &typed))?;
        let weak = Arc::downgrade(&shell);
        spawn_thread("askbridge-shell-read", move || {
            read_output(reader, &weak);
            // The PTY closed: the shell has exited (or was ended); its status says how.
            let how = match child.wait() {
                Ok(status) if status.success() => "the shell exited".to_string(),
                Ok(status) => format!("the shell exited with status {}", status.exit_code()),
                Err(error) => format!("the shell's end could not be read: {error}"),
            };
            if let Some(shell) = weak.upgrade() {
                shell.finish(how);
            }
        })?;
        debug!(folder = %folder.display(), pid = ?leader, "a terminal started");
        Ok(shell)
    }

    /// The screen so far, and what comes after it; or how the shell ended.
    pub fn attach(&self) -> (Vec<u8>, broadcast::Receiver<Output>, Option<String>) {
        let screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        (screen.scrollback.clone(), self.news.subscribe(), screen.ended.clone())
    }

    /// Types `bytes` into the shell.
    pub fn write(&self, bytes: &[u8]) -> Result<(), ShellError> {
        if self.has_ended() {
            return Err(ShellError::Ended);
        }
        self.input.send(bytes.to_vec()).map_err(|_| ShellError::Ended)
    }

    /// The terminal's new size (the shell and what it runs hear SIGWINCH).
    pub fn resize(&self, size: Size) {
        let master = self.master.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = master.resize(size.pty()) {
            debug!(%error, "the terminal could not be resized");
        }
    }

    pub fn has_ended(&self) -> bool {
        self.screen.lock().unwrap_or_else(PoisonError::into_inner).ended.is_some()
    }

    /// Ends the shell and whatever it runs: every process group of its session is hung up. Only
    /// while the shell is not reaped: its pid, which names the session, is then still its own;
    /// once reaped, the number may be another session's. A job still running after the shell
    /// exited by itself is left, as a terminal leaves it.
    fn end(&self, why: &str) {
        if let Some(leader) = self.leader.filter(|_| !self.has_ended()) {
            crate::agent::hang_up_session(leader);
        }
        if let Err(error) = self.killer.lock().unwrap_or_else(PoisonError::into_inner).kill() {
            debug!(%error, "the shell was already gone");
        }
        self.finish(why.to_string());
    }

    fn output(&self, bytes: &[u8]) {
        let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        keep(&mut screen.scrollback, bytes, SCROLLBACK_BYTES);
        let _ = self.news.send(Output::Bytes(bytes.into()));
    }

    fn finish(&self, how: String) {
        let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        if screen.ended.is_none() {
            screen.ended = Some(how.clone());
            let _ = self.news.send(Output::Ended(how));
        }
    }
}

/// The person's own shell (`$SHELL`), else `/bin/sh`.
fn login_shell() -> std::ffi::OsString {
    std::env::var_os("SHELL").filter(|shell| Path::new(shell).is_absolute()).unwrap_or_else(|| "/bin/sh".into())
}

fn spawn_thread(name: &str, run: impl FnOnce() + Send + 'static) -> Result<(), ShellError> {
    std::thread::Builder::new().name(name.into()).spawn(run).map(drop).map_err(|e| ShellError::Start(e.to_string()))
}

fn read_output(mut reader: Box<dyn Read + Send>, shell: &std::sync::Weak<Shell>) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        match reader.read(&mut buffer) {
            // EIO is how Linux says the other end closed.
            Ok(0) | Err(_) => return,
            Ok(read) => match shell.upgrade() {
                Some(shell) => shell.output(&buffer[..read]),
                None => return,
            },
        }
    }
}

fn write_typed(mut writer: Box<dyn Write + Send>, typed: &std::sync::mpsc::Receiver<Vec<u8>>) {
    // Ends when the shell is dropped (its sender with it) or the PTY is gone.
    while let Ok(bytes) = typed.recv() {
        if let Err(error) = writer.write_all(&bytes).and_then(|()| writer.flush()) {
            warn!(%error, "what was typed could not reach the terminal");
            return;
        }
    }
}

/// Appends `bytes` to `scrollback`, then keeps only its last `most` bytes, cut after a line's end
/// where there is one (a cut inside an escape sequence would show as noise on the next screen).
fn keep(scrollback: &mut Vec<u8>, bytes: &[u8], most: usize) {
    scrollback.extend_from_slice(bytes);
    if scrollback.len() <= most {
        return;
    }
    let over = scrollback.len() - most;
    let cut = scrollback[over..].iter().position(|&b| b == b'\n').map_or(over, |at| over + at + 1);
    scrollback.drain(..cut);
}
