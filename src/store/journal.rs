//! What an agent streams, kept out of the database's pages. A SQLite transaction writes whole pages
//! (4 KiB then; 1 KiB in a file made since 3 Dec, `Store::open`), so a text delta of sixteen
//! characters stored as a row cost about 12 KiB of WAL: 110 bytes written per byte streamed even
//! with the pieces grouped (BENCHMARKS.md, "Group commit of what streams"). Here the pieces (text
//! and tool-argument deltas) are appended to a file per session, with a few bytes of framing each,
//! before they are broadcast, as every event is; everything else stays in the database.
//!
//! **Where the durability line sits.** A group is written to the file (the kernel's page cache)
//! before it is shown, and flushed to the disk (`fdatasync`) only when the run of pieces ends:
//! before the session's next event goes to the database (`settle`), the message's end, a tool
//! call, a question, the turn's end. So a crash of the server (a panic, `kill -9`, the OOM killer)
//! loses nothing shown: the kernel still writes what the process wrote. A power cut or a crash of
//! the kernel can lose the pieces since the session's last event in the database, that is, part of
//! the one message streaming then, and that turn is then ended at the next start, saying the
//! server stopped (`Turns::recover_unfinished`): what a tab showed is lost only with the turn
//! saying it was cut short. A flush per group instead rewrote a 4 KiB page for every 50 ms of text,
//! about 600 bytes written per byte of a reply at a reading pace (kernel `write_bytes`,
//! BENCHMARKS.md, "The disk at a reading pace").
//!
//! The file is the pieces' only home: the session's log is the database's events and the file's,
//! merged by sequence number (`events_after`), and a streaming message is its row plus the pieces
//! and tool calls' events after it (`load_thread`). A tool call's arguments are here only, until
//! its message's row is written: its `ToolCallReady` event does not repeat what streamed
//! (`Append::input_streamed`). A file is `ABJ2`, then its records, each `[payload length: varint]
//! [check: u16][payload]`, the payload a byte of flags (the kind, whether the id and the sequence
//! number follow from the record before), then what they do not say, the time as a difference,
//! and the piece: five bytes of framing for a piece of a message still streaming, where the
//! first format took about sixteen (eight of length and CRC-32, the number and time whole), more
//! than the text of a 50 ms group at a reading pace (BENCHMARKS.md, "What a turn costs, and what a
//! byte costs"). Files written before (no `ABJ2`) are read, and appended to, as they were. A crash
//! can leave only the last record torn, and the first access after a start cuts it off (its pieces
//! were never acknowledged or shown). The check is half of a CRC-32: what it must tell is a tail
//! torn by a power cut, where a false match (1 in 65,536) is then also to parse as a piece.
//!
//! Only a server alone on its SQLite file journals: where servers share Postgres, the pieces go
//! through it, for the other servers to read.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::streamed::StreamedInputs;
use super::{StoreResult, private};
use crate::thread::{EventBody, SessionEvent};

/// Each session's pieces, in a folder next to the database, or in memory for a store in memory.
pub(super) struct Journal {
    place: Place,
    /// Each session's own lock, held over its file's reads and writes: sessions flush their
    /// files side by side.
    sessions: Mutex<HashMap<String, Arc<Mutex<Tail>>>>,
    /// How many times a session's file was flushed to the disk (`settle`), since the start.
    flushes: std::sync::atomic::AtomicU64,
}

enum Place {
    /// The folder, and the file names in it: most sessions stream nothing (a question, a
    /// command) and have no file, and reading theirs then needs no trip to the disk.
    Folder(PathBuf, Mutex<HashSet<String>>),
    Memory(Mutex<HashMap<String, Vec<u8>>>),
}

/// What this process knows of a session's file.
#[derive(Default)]
struct Tail {
    /// The file was read since this process opened the store, and its torn record, if any, cut
    /// off: appends may follow it.
    checked: bool,
    /// How the file's records are framed; `None` while it has none (a new file is `Compact`).
    format: Option<Format>,
    /// The file's last record, which the next is written after.
    previous: Previous,
    /// The sequence number of the file's last record: a read after it needs no file.
    last_seq: Option<u64>,
    /// The pieces appended since the session's last event written to the database, as the first
    /// and last sequence numbers: the database's `last_seq` is one before the first.
    run: Option<(u64, u64)>,
    /// Pieces were written to the file and not yet flushed to the disk (`settle`).
    unsettled: bool,
    /// The tool calls whose arguments streamed into the file, while this process ran or as their
    /// rows say (`streamed.rs`).
    inputs: StreamedInputs,
}

/// How a file's records are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Files written since `ABJ2`: a varint length and a 16-bit check, the rest told as the
    /// difference from the record before.
    Compact,
    /// The first files: `[length: u32][CRC-32: u32]`, the sequence number and time whole.
    Legacy,
}

/// What a record is written after, and read after: the file's last record's.
#[derive(Debug, Clone, Default, PartialEq)]
struct Previous {
    /// The id (message or tool call): a record for the same one does not name it again.
    id: Option<String>,
    seq: u64,
    at_ms: i64,
}

/// The head of a file of `Compact` records. A `Legacy` file starts with its first record's length,
/// a u32 below `MAX_RECORD`, whose last byte is at most 4: no such file starts so.
const MAGIC: &[u8; 4] = b"ABJ2";

const TEXT: u8 = 1;
const TOOL_INPUT: u8 = 2;
/// A compact record's flags: the kind in the low two bits, then these.
const SAME_ID: u8 = 1 << 2;
const NEXT_SEQ: u8 = 1 << 3;
/// A legacy record's length, then CRC.
const HEADER: usize = 8;
/// A record this long is damage, not a piece (a merged piece is at most `MAX_QUEUED` deltas).
const MAX_RECORD: usize = 64 << 20;

impl Journal {
    /// The journal of the database at `database`: the folder `<database>-streams` next to it.
    pub(super) fn beside(database: &Path) -> Self {
        let mut folder = database.as_os_str().to_owned();
        folder.push("-streams");
        let folder = PathBuf::from(folder);
        // Read once, at start; the folder is made with its first file.
        let names = fs::read_dir(&folder)
            .map(|entries| entries.filter_map(|entry| entry.ok()?.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        Self {
            place: Place::Folder(folder, Mutex::new(names)),
            sessions: Mutex::default(),
            flushes: Default::default(),
        }
    }

    /// Whether the session has a file (pieces, or a torn record to cut off).
    fn has_file(&self, session: &str) -> bool {
        match &self.place {
            Place::Folder(_, names) => names.lock().expect("journal lock").contains(&file_name(session)),
            Place::Memory(files) => files.lock().expect("journal lock").contains_key(session),
        }
    }

    pub(super) fn in_memory() -> Self {
        Self { place: Place::Memory(Mutex::default()), sessions: Mutex::default(), flushes: Default::default() }
    }

    /// Appends the pieces (deltas, numbered in order) to the session's file; `settle` flushes them
    /// to the disk.
    pub(super) async fn append(self: &Arc<Self>, session: &str, pieces: Vec<SessionEvent>) -> StoreResult<()> {
        let (Some(first), Some(last)) = (pieces.first().map(|p| p.seq), pieces.last().map(|p| p.seq)) else {
            return Ok(());
        };
        // Appended to before its thread was read (which checks): no run is known yet.
        self.on_checked_tail(session, u64::MAX, move |journal, session, tail| {
            let mut bytes = Vec::new();
            let format = *tail.format.get_or_insert_with(|| {
                bytes.extend_from_slice(MAGIC);
                Format::Compact
            });
            for piece in &pieces {
                encode(piece, format, &mut tail.previous, &mut bytes)?;
                tail.inputs.appended(piece);
            }
            if let Err(error) = journal.write(session, &bytes) {
                // Part of it may be on the disk: the next access reads the file again and cuts
                // what was torn.
                tail.checked = false;
                return Err(error.into());
            }
            tail.run = Some((tail.run.map_or(first, |(first, _)| first), last));
            tail.last_seq = Some(last);
            tail.unsettled = true;
            Ok(())
        })
        .await
    }

    /// Flushes the session's pieces to the disk, if some were written since the last flush: before
    /// an event that follows them goes to the database, which must never hold what comes after
    /// pieces a power cut could still take.
    pub(super) async fn settle(self: &Arc<Self>, session: &str) -> StoreResult<()> {
        if !self.tail(session).lock().expect("journal lock").unsettled {
            return Ok(());
        }
        // Written to, so checked already: no file is read again.
        self.on_checked_tail(session, u64::MAX, |journal, session, tail| {
            if tail.unsettled {
                journal.flush(session)?;
                journal.flushes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tail.unsettled = false;
            }
            Ok(())
        })
        .await
    }

    #[cfg(test)]
    pub(super) fn flushes(&self) -> u64 {
        self.flushes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The session's pieces after `after`, in order, at most `limit` of them.
    pub(super) async fn read_after(
        self: &Arc<Self>,
        session: &str,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<SessionEvent>> {
        let journal = self.clone();
        let session = session.to_string();
        // Busy only while this session's pieces are written: then the file is read.
        let known = journal.tail(&session).try_lock().ok().filter(|tail| tail.checked).map(|tail| tail.last_seq);
        if known.is_some_and(|last| last.is_none_or(|last| last <= after)) || !journal.has_file(&session) {
            // A tab that has everything (most of those that connect) costs no read.
            return Ok(Vec::new());
        }
        blocking(move || {
            let bytes = journal.read_all(&session)?;
            Ok(decode(&bytes)
                .0
                .into_iter()
                .filter(|record| record.seq > after)
                .take(limit)
                .map(|record| record.to_event())
                .collect())
        })
        .await
    }

    /// The session's last piece journaled after `db_last_seq` (the database's last event), if
    /// any: pieces a crash left after the last event, or ones streamed since. The first call for
    /// a session after a start reads its file and cuts a torn record off.
    pub(super) async fn run_end(self: &Arc<Self>, session: &str, db_last_seq: u64) -> StoreResult<Option<u64>> {
        {
            // Known already, or no file to know it from: no trip to the disk (nor a thread for it).
            let tail = self.tail(session);
            let mut tail = tail.lock().expect("journal lock");
            if !tail.checked && !self.has_file(session) {
                tail.checked = true;
            }
            if tail.checked {
                return Ok(tail.run.map(|(_, last)| last).filter(|&last| last > db_last_seq));
            }
        }
        self.on_checked_tail(session, db_last_seq, move |_, _, tail| {
            Ok(tail.run.map(|(_, last)| last).filter(|&last| last > db_last_seq))
        })
        .await
    }

    /// Runs `work` in a blocking thread under the session's lock, its file checked first if this
    /// process has not yet (`check`, with `db_last_seq`).
    async fn on_checked_tail<T: Send + 'static>(
        self: &Arc<Self>,
        session: &str,
        db_last_seq: u64,
        work: impl FnOnce(&Journal, &str, &mut Tail) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let journal = self.clone();
        let session = session.to_string();
        blocking(move || {
            let tail = journal.tail(&session);
            let mut tail = tail.lock().expect("journal lock");
            if !tail.checked {
                journal.check(&session, &mut tail, db_last_seq)?;
            }
            work(&journal, &session, &mut tail)
        })
        .await
    }

    /// Reads the session's file, cuts a torn record off, and learns its last id and the pieces
    /// after the database's last event.
    fn check(&self, session: &str, tail: &mut Tail, db_last_seq: u64) -> std::io::Result<()> {
        let bytes = self.read_all(session)?;
        let (records, valid) = decode(&bytes);
        self.truncate(session, valid as u64)?;
        tail.format = format_of(&bytes[..valid]);
        tail.previous = records.last().map(Record::previous).unwrap_or_default();
        tail.last_seq = records.last().map(|record| record.seq);
        tail.run = records.last().filter(|last| last.seq > db_last_seq).map(|last| (db_last_seq + 1, last.seq));
        tail.checked = true;
        Ok(())
    }

    /// The database's last sequence number for the session as the next event written to it must
    /// find it: one before the pieces journaled since the database's last event, when the event
    /// numbered `seq` follows them.
    pub(super) fn expected_before(&self, session: &str, seq: u64) -> u64 {
        match self.tail(session).lock().expect("journal lock").run {
            Some((first, last)) if last + 1 == seq => first - 1,
            _ => seq - 1,
        }
    }

    /// An event of the session was written to the database: what follows it starts a new run.
    pub(super) fn written(&self, session: &str) {
        self.tail(session).lock().expect("journal lock").run = None;
    }

    /// What the session's file has of tool calls' arguments (`streamed.rs`).
    pub(super) fn inputs<T>(&self, session: &str, work: impl FnOnce(&mut StreamedInputs) -> T) -> T {
        work(&mut self.tail(session).lock().expect("journal lock").inputs)
    }

    /// Forgets a deleted session's pieces.
    pub(super) async fn remove(self: &Arc<Self>, session: &str) -> StoreResult<()> {
        let journal = self.clone();
        let session = session.to_string();
        blocking(move || {
            journal.sessions.lock().expect("journal lock").remove(&session);
            match &journal.place {
                Place::Memory(files) => {
                    files.lock().expect("journal lock").remove(&session);
                    Ok(())
                }
                Place::Folder(folder, names) => {
                    names.lock().expect("journal lock").remove(&file_name(&session));
                    match fs::remove_file(folder.join(file_name(&session))) {
                        Err(error) if error.kind() != ErrorKind::NotFound => Err(error.into()),
                        _ => Ok(()),
                    }
                }
            }
        })
        .await
    }

    /// The session's lock and what this process knows of its file.
    fn tail(&self, session: &str) -> Arc<Mutex<Tail>> {
        self.sessions.lock().expect("journal lock").entry(session.to_string()).or_default().clone()
    }

    fn read_all(&self, session: &str) -> std::io::Result<Vec<u8>> {
        match &self.place {
            Place::Memory(files) => Ok(files.lock().expect("journal lock").get(session).cloned().unwrap_or_default()),
            Place::Folder(folder, _) => match File::open(folder.join(file_name(session))) {
                Ok(mut file) => {
                    let mut bytes = Vec::new();
                    file.read_to_end(&mut bytes)?;
                    Ok(bytes)
                }
                Err(error) if error.kind() == ErrorKind::NotFound => Ok(Vec::new()),
                Err(error) => Err(error),
            },
        }
    }

    fn truncate(&self, session: &str, len: u64) -> std::io::Result<()> {
        match &self.place {
            Place::Memory(files) => {
                if let Some(bytes) = files.lock().expect("journal lock").get_mut(session) {
                    bytes.truncate(len as usize);
                }
                Ok(())
            }
            Place::Folder(folder, _) => match OpenOptions::new().write(true).open(folder.join(file_name(session))) {
                Ok(file) if file.metadata()?.len() > len => {
                    file.set_len(len)?;
                    file.sync_all()
                }
                Ok(_) => Ok(()),
                Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
                Err(error) => Err(error),
            },
        }
    }

    fn write(&self, session: &str, bytes: &[u8]) -> std::io::Result<()> {
        match &self.place {
            Place::Memory(files) => {
                files.lock().expect("journal lock").entry(session.to_string()).or_default().extend_from_slice(bytes);
                Ok(())
            }
            Place::Folder(folder, names) => {
                let path = folder.join(file_name(session));
                let mut file = match OpenOptions::new().append(true).open(&path) {
                    Ok(file) => file,
                    Err(error) if error.kind() == ErrorKind::NotFound => {
                        // A new file: its name must survive a power cut as its first record does.
                        // The folder and its files are the person's only (what the agent wrote).
                        private::create_dir(folder)?;
                        let file = private::options().append(true).create(true).open(&path)?;
                        File::open(folder)?.sync_all()?;
                        names.lock().expect("journal lock").insert(file_name(session));
                        file
                    }
                    Err(error) => return Err(error),
                };
                file.write_all(bytes)
            }
        }
    }

    fn flush(&self, session: &str) -> std::io::Result<()> {
        match &self.place {
            Place::Memory(_) => Ok(()),
            Place::Folder(folder, _) => match File::open(folder.join(file_name(session))) {
                Ok(file) => file.sync_data(),
                // Deleted with its session meanwhile: nothing left to keep.
                Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
                Err(error) => Err(error),
            },
        }
    }
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> StoreResult<T> + Send + 'static) -> StoreResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|panic| Err(std::io::Error::other(format!("journal task failed: {panic}")).into()))
}

/// A session's file name: its id when that is a plain name (every id `new_id` makes is), its
/// bytes in hex otherwise, so that no id names a path.
fn file_name(session: &str) -> String {
    let plain = !session.is_empty()
        && session.len() <= 128
        && session.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if plain { session.to_string() } else { session.bytes().map(|b| format!("{b:02x}")).collect::<String>() + ".x" }
}

/// One piece as the file holds it, borrowed from the file's bytes: a read builds events only of
/// the pieces it returns.
#[derive(Debug, PartialEq)]
struct Record<'a> {
    seq: u64,
    at_ms: i64,
    kind: u8,
    id: &'a str,
    data: &'a str,
}

impl Record<'_> {
    fn previous(&self) -> Previous {
        Previous { id: Some(self.id.to_string()), seq: self.seq, at_ms: self.at_ms }
    }

    fn to_event(&self) -> SessionEvent {
        let (id, data) = (self.id.to_string(), self.data.to_string());
        let body = match self.kind {
            TEXT => EventBody::TextDelta { message_id: id, text: data },
            _ => EventBody::ToolInputDelta { tool_use_id: id, partial_json: data },
        };
        SessionEvent { seq: self.seq, at_ms: self.at_ms, body }
    }
}

/// Appends one piece's record to `out`, framed as `format`, after `previous` (which it becomes).
fn encode(event: &SessionEvent, format: Format, previous: &mut Previous, out: &mut Vec<u8>) -> StoreResult<()> {
    let (kind, id, data) = match &event.body {
        EventBody::TextDelta { message_id, text } => (TEXT, message_id, text),
        EventBody::ToolInputDelta { tool_use_id, partial_json } => (TOOL_INPUT, tool_use_id, partial_json),
        other => {
            return Err(
                std::io::Error::other(format!("only streamed pieces are journaled, not {}", other.kind())).into()
            );
        }
    };
    let same_id = previous.id.as_deref() == Some(id.as_str());
    let at_ms = event.at_ms.max(0);
    let mut payload = Vec::with_capacity(data.len() + 8 + if same_id { 0 } else { id.len() + 1 });
    match format {
        // The kind, the sequence number and time as LEB128 varints, the id (its length + 1, or 0
        // for "the last record's"), then the data.
        Format::Legacy => {
            payload.push(kind);
            varint(event.seq, &mut payload);
            varint(at_ms as u64, &mut payload);
            if same_id {
                payload.push(0);
            } else {
                varint(id.len() as u64 + 1, &mut payload);
                payload.extend_from_slice(id.as_bytes());
            }
        }
        // The flags, the sequence number's step unless it is 1, the time's step (both zigzag: a
        // clock may go back, and a number that does is read back as written, as the first format
        // read any), the id unless it is the last record's, then the data.
        Format::Compact => {
            let next_seq = previous.seq.checked_add(1) == Some(event.seq);
            payload.push(kind | if same_id { SAME_ID } else { 0 } | if next_seq { NEXT_SEQ } else { 0 });
            if !next_seq {
                varint(zigzag(event.seq.wrapping_sub(previous.seq) as i64), &mut payload);
            }
            varint(zigzag(at_ms.wrapping_sub(previous.at_ms)), &mut payload);
            if !same_id {
                varint(id.len() as u64, &mut payload);
                payload.extend_from_slice(id.as_bytes());
            }
        }
    }
    payload.extend_from_slice(data.as_bytes());
    match format {
        Format::Legacy => {
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        }
        Format::Compact => {
            let mut length = Vec::with_capacity(4);
            varint(payload.len() as u64, &mut length);
            out.extend_from_slice(&length);
            out.extend_from_slice(&check(&length, &payload).to_le_bytes());
        }
    }
    out.extend_from_slice(&payload);
    *previous = Previous { id: Some(id.clone()), seq: event.seq, at_ms };
    Ok(())
}

/// A compact record's check: the low half of the CRC-32 of its length and payload.
fn check(length: &[u8], payload: &[u8]) -> u16 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(length);
    hasher.update(payload);
    hasher.finalize() as u16
}

/// How a file's valid bytes are framed: `None` for an empty one.
fn format_of(bytes: &[u8]) -> Option<Format> {
    match bytes {
        [] => None,
        _ if bytes.starts_with(MAGIC) => Some(Format::Compact),
        _ => Some(Format::Legacy),
    }
}

/// The records of a file, up to the first that is torn or damaged, and how many bytes they take
/// (its head included).
fn decode(bytes: &[u8]) -> (Vec<Record<'_>>, usize) {
    if bytes.starts_with(MAGIC) {
        let (records, used) = decode_compact(&bytes[MAGIC.len()..]);
        (records, MAGIC.len() + used)
    } else if MAGIC.starts_with(bytes) {
        // Nothing, or a head torn as it was first written.
        (Vec::new(), 0)
    } else {
        decode_legacy(bytes)
    }
}

fn decode_compact(bytes: &[u8]) -> (Vec<Record<'_>>, usize) {
    let mut records: Vec<Record<'_>> = Vec::new();
    let mut previous = (0u64, 0i64, None::<&str>);
    let mut at = 0;
    loop {
        let mut rest = &bytes[at..];
        let Some(len) =
            read_varint(&mut rest).and_then(|len| usize::try_from(len).ok()).filter(|&len| len <= MAX_RECORD)
        else {
            break;
        };
        let length = &bytes[at..bytes.len() - rest.len()];
        let Some((stored, payload)) = rest.get(..2).zip(rest.get(2..).and_then(|rest| rest.get(..len))) else { break };
        if u16::from_le_bytes([stored[0], stored[1]]) != check(length, payload) {
            break;
        }
        let Some(record) = parse_compact(payload, previous) else { break };
        previous = (record.seq, record.at_ms, Some(record.id));
        records.push(record);
        at += length.len() + 2 + len;
    }
    (records, at)
}

/// A compact payload after the record `(seq, at_ms, id)`.
fn parse_compact<'a>(payload: &'a [u8], (seq, at_ms, id): (u64, i64, Option<&'a str>)) -> Option<Record<'a>> {
    let (&flags, mut rest) = payload.split_first()?;
    let kind = flags & 0b11;
    if (kind != TEXT && kind != TOOL_INPUT) || flags & !(0b11 | SAME_ID | NEXT_SEQ) != 0 {
        return None;
    }
    let step = if flags & NEXT_SEQ != 0 { 1 } else { unzigzag(read_varint(&mut rest)?) };
    let seq = seq.wrapping_add(step as u64);
    let at_ms = at_ms.checked_add(unzigzag(read_varint(&mut rest)?))?;
    let id = if flags & SAME_ID != 0 {
        id?
    } else {
        let len = usize::try_from(read_varint(&mut rest)?).ok()?;
        let id = std::str::from_utf8(rest.get(..len)?).ok()?;
        rest = &rest[len..];
        id
    };
    let data = std::str::from_utf8(rest).ok()?;
    Some(Record { seq, at_ms, kind, id, data })
}

fn decode_legacy(bytes: &[u8]) -> (Vec<Record<'_>>, usize) {
    let mut records: Vec<Record<'_>> = Vec::new();
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + HEADER) {
        let len = u32::from_le_bytes(header[..4].try_into().expect("four bytes")) as usize;
        let crc = u32::from_le_bytes(header[4..].try_into().expect("four bytes"));
        let Some(payload) = bytes.get(at + HEADER..).and_then(|rest| rest.get(..len)).filter(|_| len <= MAX_RECORD)
        else {
            break;
        };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Some(record) = parse_legacy(payload, records.last().map(|last| last.id)) else { break };
        records.push(record);
        at += HEADER + len;
    }
    (records, at)
}

fn parse_legacy<'a>(payload: &'a [u8], last_id: Option<&'a str>) -> Option<Record<'a>> {
    let (&kind, mut rest) = payload.split_first()?;
    if kind != TEXT && kind != TOOL_INPUT {
        return None;
    }
    let seq = read_varint(&mut rest)?;
    let at_ms = i64::try_from(read_varint(&mut rest)?).ok()?;
    let id = match read_varint(&mut rest)? {
        0 => last_id?,
        len => {
            let len = usize::try_from(len - 1).ok()?;
            let id = std::str::from_utf8(rest.get(..len)?).ok()?;
            rest = &rest[len..];
            id
        }
    };
    let data = std::str::from_utf8(rest).ok()?;
    Some(Record { seq, at_ms, kind, id, data })
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

fn varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(seq: u64, message_id: &str, text: &str) -> SessionEvent {
        SessionEvent {
            seq,
            at_ms: 1_780_000_000_000 + seq as i64,
            body: EventBody::TextDelta { message_id: message_id.into(), text: text.into() },
        }
    }

    fn input(seq: u64, tool_use_id: &str, partial_json: &str) -> SessionEvent {
        SessionEvent {
            seq,
            at_ms: 1_780_000_000_000 + seq as i64,
            body: EventBody::ToolInputDelta { tool_use_id: tool_use_id.into(), partial_json: partial_json.into() },
        }
    }

    /// A new file's bytes holding `events`.
    fn encoded(events: &[SessionEvent]) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        let mut previous = Previous::default();
        for event in events {
            encode(event, Format::Compact, &mut previous, &mut bytes).unwrap();
        }
        bytes
    }

    /// A file of the first format holding `events`.
    fn encoded_legacy(events: &[SessionEvent]) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut previous = Previous::default();
        for event in events {
            encode(event, Format::Legacy, &mut previous, &mut bytes).unwrap();
        }
        bytes
    }

    fn events(bytes: &[u8]) -> Vec<SessionEvent> {
        decode(bytes).0.into_iter().map(|record| record.to_event()).collect()
    }

    fn pieces() -> Vec<SessionEvent> {
        vec![
            text(3, "msg_01", "Hello, "),
            text(4, "msg_01", "wörld ✓"),
            input(6, "toolu_01", "{\"command\": \"ls"),
            input(7, "toolu_01", "\"}"),
            text(9, "msg_01", ""),
            // A clock that went back, and a number that did.
            SessionEvent { at_ms: 5, ..text(10, "msg_01", "later") },
            text(8, "msg_01", "again"),
        ]
    }

    #[test]
    fn pieces_read_back_as_written_and_the_next_piece_of_a_message_costs_five_bytes_of_framing() {
        let written = pieces();
        let bytes = encoded(&written);
        assert_eq!(events(&bytes), written);
        assert_eq!(decode(&bytes).1, bytes.len());
        // Its length, the check, the flags (the same message, the next number), the time's step of
        // a millisecond, then the text.
        let one = encoded(&written[..1]).len();
        assert_eq!(encoded(&written[..2]).len() - one, 1 + 2 + 1 + 1 + "wörld ✓".len());
    }

    #[test]
    fn a_file_of_the_first_format_reads_as_written() {
        let written = pieces();
        let bytes = encoded_legacy(&written);
        assert_eq!(events(&bytes), written);
        assert_eq!(decode(&bytes).1, bytes.len());
        assert_eq!(format_of(&bytes), Some(Format::Legacy));
        assert_eq!(format_of(&encoded(&written)), Some(Format::Compact));
    }

    #[test]
    fn a_file_cut_anywhere_reads_as_the_records_before_the_cut() {
        let written: Vec<_> =
            (1..=20).map(|seq| text(seq * 2, if seq < 10 { "a" } else { "b" }, "0123456789")).collect();
        for encoded in [encoded, encoded_legacy] {
            let bytes = encoded(&written);
            // Where each record ends; a new file's head alone holds none.
            let head = encoded(&[]).len();
            let ends: Vec<usize> = (1..=written.len()).map(|n| encoded(&written[..n]).len()).collect();
            for cut in 0..=bytes.len() {
                let (records, valid) = decode(&bytes[..cut]);
                let whole = ends.iter().filter(|&&end| end <= cut).count();
                assert_eq!(records.len(), whole, "cut at {cut}");
                let expected = match whole {
                    0 if cut >= head => head,
                    0 => 0,
                    _ => ends[whole - 1],
                };
                assert_eq!(valid, expected, "cut at {cut}");
            }
        }
    }

    #[test]
    fn a_damaged_record_ends_the_file_there() {
        let written: Vec<_> = (1..=3).map(|seq| text(seq, "a", "some words")).collect();
        for (encoded, data_at) in [(encoded as fn(&[SessionEvent]) -> Vec<u8>, 5), (encoded_legacy, HEADER + 3)] {
            let mut bytes = encoded(&written);
            let second = encoded(&written[..1]).len();
            bytes[second + data_at] ^= 0x40;
            assert_eq!(events(&bytes), written[..1]);
        }
    }

    #[test]
    fn any_bytes_decode_without_panicking() {
        // What a damaged disk can hand back: never a panic, never more than the bytes hold.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let valid = [
            encoded(&[text(1, "a", "x"), input(2, "b", "{}")]),
            encoded_legacy(&[text(1, "a", "x"), input(2, "b", "{}")]),
        ];
        for _ in 0..40_000 {
            let len = (next() % 64) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            match next() % 4 {
                // Mostly valid: a real file of either format with a byte changed.
                0 | 1 => {
                    bytes = valid[(next() % 2) as usize].clone();
                    let at = (next() as usize) % bytes.len();
                    bytes[at] = next() as u8;
                }
                // Noise after a new file's head.
                2 => bytes.splice(0..0, MAGIC.iter().copied()).for_each(drop),
                _ => {}
            }
            let (records, used) = decode(&bytes);
            assert!(used <= bytes.len() && records.len() <= 2);
        }
    }

    #[tokio::test]
    async fn a_torn_last_record_is_cut_before_the_next_append() {
        let folder = tempfile::tempdir().unwrap();
        let database = folder.path().join("askbridge.db");
        let journal = Arc::new(Journal::beside(&database));
        journal.append("s1", vec![text(2, "m", "one "), text(3, "m", "two ")]).await.unwrap();
        // A crash in the middle of the next write.
        let path = folder.path().join("askbridge.db-streams").join("s1");
        let half = encoded(&[text(4, "m", "three ")]).split_off(MAGIC.len());
        OpenOptions::new().append(true).open(&path).unwrap().write_all(&half[..half.len() - 3]).unwrap();

        let restarted = Arc::new(Journal::beside(&database));
        assert_eq!(restarted.read_after("s1", 0, 100).await.unwrap(), vec![text(2, "m", "one "), text(3, "m", "two ")]);
        restarted.append("s1", vec![text(4, "m", "four ")]).await.unwrap();
        assert_eq!(
            restarted.read_after("s1", 2, 100).await.unwrap(),
            vec![text(3, "m", "two "), text(4, "m", "four ")],
            "the torn record is gone, and what came after it reads"
        );
        assert_eq!(restarted.read_after("s1", 0, 1).await.unwrap().len(), 1, "at most the limit");
    }

    #[tokio::test]
    async fn a_file_of_the_first_format_is_appended_to_in_its_own_format_and_a_new_one_in_the_compact() {
        let folder = tempfile::tempdir().unwrap();
        let database = folder.path().join("askbridge.db");
        let files = folder.path().join("askbridge.db-streams");
        fs::create_dir(&files).unwrap();
        let before = vec![text(2, "m", "one "), text(3, "m", "two ")];
        fs::write(files.join("old"), encoded_legacy(&before)).unwrap();

        let journal = Arc::new(Journal::beside(&database));
        assert_eq!(journal.run_end("old", 1).await.unwrap(), Some(3));
        journal.append("old", vec![text(4, "m", "three ")]).await.unwrap();
        journal.append("new", vec![text(2, "n", "first ")]).await.unwrap();
        let old = fs::read(files.join("old")).unwrap();
        assert_eq!(old, encoded_legacy(&[before.clone(), vec![text(4, "m", "three ")]].concat()));
        assert_eq!(fs::read(files.join("new")).unwrap(), encoded(&[text(2, "n", "first ")]));

        let restarted = Arc::new(Journal::beside(&database));
        let read = restarted.read_after("old", 0, 100).await.unwrap();
        assert_eq!(read, [before, vec![text(4, "m", "three ")]].concat());
        assert_eq!(restarted.read_after("new", 0, 100).await.unwrap(), vec![text(2, "n", "first ")]);
    }

    #[tokio::test]
    async fn a_removed_session_leaves_no_file_and_odd_ids_name_no_path() {
        let folder = tempfile::tempdir().unwrap();
        let journal = Arc::new(Journal::beside(&folder.path().join("db")));
        journal.append("../escape", vec![text(1, "m", "x")]).await.unwrap();
        let files: Vec<_> =
            fs::read_dir(folder.path().join("db-streams")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(files, vec![std::ffi::OsString::from("2e2e2f657363617065.x")]);
        journal.remove("../escape").await.unwrap();
        assert_eq!(fs::read_dir(folder.path().join("db-streams")).unwrap().count(), 0);
        assert!(journal.read_after("../escape", 0, 10).await.unwrap().is_empty());
        journal.remove("never-journaled").await.unwrap();
    }
}
