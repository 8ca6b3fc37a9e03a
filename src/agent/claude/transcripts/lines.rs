//! Reading a transcript's lines without reading the whole file: its head (for the session list)
//! and, newest first, backwards from any line start (to open a 20 MB transcript at its end and page
//! back). A transcript is JSON Lines that Claude Code appends to; a line can be several MB (a
//! pasted image), and the last one can be half-written while we read.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// How much is read at a time from the end of a file. Doubles while one line does not fit, so a
/// long line costs a few reads, not one per chunk.
const CHUNK: usize = 64 * 1024;
/// Longer lines are skipped, never held in memory whole: no real entry comes near (a 5 MB image
/// is 7 MB of base64), and a runaway line must not take the server's memory.
pub const MAX_LINE: usize = 32 * 1024 * 1024;

/// One line of the file, without its `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Where the line starts in the file: a page cursor.
    pub offset: u64,
    /// `None` when the line was longer than [`MAX_LINE`] and skipped.
    pub bytes: Option<Vec<u8>>,
}

/// The lines of `file` that end before `end`, newest first. Empty lines are left out.
pub struct Backwards<'f> {
    file: &'f File,
    /// `buf` holds the bytes of the file from `start` up to the end still to be split.
    start: u64,
    buf: Vec<u8>,
    /// The line being read is over [`MAX_LINE`]: its bytes are dropped until its start is found.
    skipping: bool,
    chunk: usize,
    /// Nothing before this offset is read: a line that starts before it is not returned.
    floor: u64,
}

impl<'f> Backwards<'f> {
    pub fn new(file: &'f File, end: u64) -> Self {
        Self::bounded(file, end, 0)
    }

    /// The lines that lie whole between `floor` and `end`: a bounded read of a file's tail.
    pub fn bounded(file: &'f File, end: u64, floor: u64) -> Self {
        Self { file, start: end, buf: Vec::new(), skipping: false, chunk: CHUNK, floor: floor.min(end) }
    }

    /// Reads the chunk before `start` in front of `buf`.
    fn read_more(&mut self) -> io::Result<()> {
        if self.skipping {
            // Only the position of the line's start matters now.
            self.buf.clear();
        }
        // Doubling, but never past the length that makes a line too long.
        let room = (MAX_LINE + 1).saturating_sub(self.buf.len()).max(1);
        let want = self.chunk.max(self.buf.len()).min(room).min((self.start - self.floor) as usize);
        let from = self.start - want as u64;
        let mut chunk = vec![0; want];
        self.file.read_exact_at(&mut chunk, from)?;
        chunk.extend_from_slice(&self.buf);
        self.buf = chunk;
        self.start = from;
        Ok(())
    }
}

impl Iterator for Backwards<'_> {
    type Item = io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(at) = memchr_last(b'\n', &self.buf) {
                let offset = self.start + at as u64 + 1;
                let bytes = self.buf.split_off(at + 1);
                self.buf.pop();
                let skipped = std::mem::take(&mut self.skipping) || bytes.len() > MAX_LINE;
                if skipped {
                    return Some(Ok(Line { offset, bytes: None }));
                }
                if !is_blank(&bytes) {
                    return Some(Ok(Line { offset, bytes: Some(bytes) }));
                }
                continue;
            }
            if self.buf.len() > MAX_LINE {
                self.skipping = true;
            }
            if self.start == self.floor && self.floor > 0 {
                // The line is whole if it starts right at the floor; else the rest of it lies below.
                let bytes = std::mem::take(&mut self.buf);
                let skipped = std::mem::take(&mut self.skipping);
                let offset = std::mem::take(&mut self.floor);
                self.start = 0;
                return match is_line_start(self.file, offset, u64::MAX) {
                    Ok(true) if skipped => Some(Ok(Line { offset, bytes: None })),
                    Ok(true) if !is_blank(&bytes) => Some(Ok(Line { offset, bytes: Some(bytes) })),
                    Ok(_) => None,
                    Err(error) => Some(Err(error)),
                };
            }
            if self.start == 0 {
                let bytes = std::mem::take(&mut self.buf);
                if std::mem::take(&mut self.skipping) {
                    return Some(Ok(Line { offset: 0, bytes: None }));
                }
                if is_blank(&bytes) {
                    return None;
                }
                return Some(Ok(Line { offset: 0, bytes: Some(bytes) }));
            }
            if let Err(error) = self.read_more() {
                self.start = 0;
                self.buf.clear();
                return Some(Err(error));
            }
        }
    }
}

/// The complete lines among the first `budget` bytes of `file`, oldest first, and whether they
/// are the whole file. A line cut by the budget is left out, and so is a last line with no `\n`
/// while it may still be being written (it is kept once the whole file fits).
pub fn head(file: &File, budget: usize) -> io::Result<(Vec<Line>, bool)> {
    let mut buf = vec![0; budget];
    let mut filled = 0;
    while filled < budget {
        match file.read_at(&mut buf[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    buf.truncate(filled);
    let whole = filled < budget;
    let mut lines = Vec::new();
    let mut offset = 0;
    for piece in buf.split_inclusive(|b| *b == b'\n') {
        let complete = piece.ends_with(b"\n") || whole;
        let bytes = piece.strip_suffix(b"\n").unwrap_or(piece);
        if complete && !is_blank(bytes) {
            lines.push(Line { offset, bytes: Some(bytes.to_vec()) });
        }
        offset += piece.len() as u64;
    }
    Ok((lines, whole))
}

/// The complete lines of `file` from `from` on, oldest first, read a chunk at a time until
/// `budget` bytes were read: for what follows a page. Lines longer than the budget are not seen.
pub struct Forwards<'f> {
    file: &'f File,
    /// The file offset of `buf[0]`.
    start: u64,
    buf: Vec<u8>,
    read: usize,
    budget: usize,
    at_end: bool,
}

impl<'f> Forwards<'f> {
    pub fn new(file: &'f File, from: u64, budget: usize) -> Self {
        Self { file, start: from, buf: Vec::new(), read: 0, budget, at_end: false }
    }
}

impl Iterator for Forwards<'_> {
    type Item = io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(at) = self.buf.iter().position(|b| *b == b'\n') {
                let rest = self.buf.split_off(at + 1);
                let mut bytes = std::mem::replace(&mut self.buf, rest);
                bytes.pop();
                let offset = self.start;
                self.start += at as u64 + 1;
                if !is_blank(&bytes) {
                    return Some(Ok(Line { offset, bytes: Some(bytes) }));
                }
                continue;
            }
            if self.at_end || self.read >= self.budget {
                // A last line with no `\n` may be half-written: it is not returned.
                return None;
            }
            let mut chunk = vec![0; CHUNK.min(self.budget - self.read)];
            match self.file.read_at(&mut chunk, self.start + self.buf.len() as u64) {
                Ok(0) => self.at_end = true,
                Ok(n) => {
                    self.read += n;
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    self.at_end = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

/// Whether `offset` is where a line of the file starts (0, or just after a `\n`), so that a
/// cursor from the browser cannot make us parse from the middle of a line.
pub fn is_line_start(file: &File, offset: u64, len: u64) -> io::Result<bool> {
    if offset == 0 {
        return Ok(true);
    }
    if offset > len {
        return Ok(false);
    }
    let mut byte = [0];
    file.read_exact_at(&mut byte, offset - 1)?;
    Ok(byte[0] == b'\n')
}

fn memchr_last(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().rposition(|b| *b == needle)
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(bytes).unwrap();
        let file = File::open(tmp.path()).unwrap();
        (tmp, file)
    }

    fn backwards(file: &File, end: u64, chunk: usize) -> Vec<(u64, Option<String>)> {
        let mut lines = Backwards::new(file, end);
        lines.chunk = chunk;
        lines.map(|l| l.unwrap()).map(|l| (l.offset, l.bytes.map(|b| String::from_utf8(b).unwrap()))).collect()
    }

    #[test]
    fn lines_come_newest_first_with_their_offsets() {
        let text = b"one\ntwo\n\nthree";
        let (_tmp, file) = file_with(text);
        for chunk in [1, 2, 3, 5, 64] {
            let got = backwards(&file, text.len() as u64, chunk);
            let want = vec![(9, Some("three".into())), (4, Some("two".into())), (0, Some("one".into()))];
            assert_eq!(got, want, "chunk {chunk}");
        }
    }

    #[test]
    fn reading_before_an_offset_starts_at_the_line_before_it() {
        let text = b"one\ntwo\nthree\n";
        let (_tmp, file) = file_with(text);
        assert_eq!(backwards(&file, 8, 2), vec![(4, Some("two".into())), (0, Some("one".into()))]);
        assert_eq!(backwards(&file, 0, 2), vec![]);
        assert!(is_line_start(&file, 8, 14).unwrap());
        assert!(!is_line_start(&file, 9, 14).unwrap());
        assert!(!is_line_start(&file, 15, 14).unwrap());
    }

    #[test]
    fn a_bounded_read_returns_only_whole_lines_above_the_floor() {
        let text = b"one\ntwo\nthree\n";
        let (_tmp, file) = file_with(text);
        let mut lines = Backwards::bounded(&file, 14, 5);
        lines.chunk = 2;
        let got: Vec<_> = lines.map(|l| l.unwrap().offset).collect();
        assert_eq!(got, vec![8]);
        let got: Vec<_> = Backwards::bounded(&file, 14, 4).map(|l| l.unwrap().offset).collect();
        assert_eq!(got, vec![8, 4]);
    }

    #[test]
    fn a_line_longer_than_the_limit_is_skipped_with_its_offset() {
        let mut text = b"first\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        text.extend_from_slice(b"\nlast\n");
        let (_tmp, file) = file_with(&text);
        let got = backwards(&file, text.len() as u64, CHUNK);
        assert_eq!(got, vec![(MAX_LINE as u64 + 17, Some("last".into())), (6, None), (0, Some("first".into()))]);
    }

    #[test]
    fn lines_after_an_offset_come_oldest_first_within_the_budget() {
        let (_tmp, file) = file_with(b"one\ntwo\n\nthree\nfour");
        let got: Vec<_> = Forwards::new(&file, 4, 100).map(|l| l.unwrap()).map(|l| l.offset).collect();
        assert_eq!(got, vec![4, 9], "the unfinished last line is left out");
        let got: Vec<_> = Forwards::new(&file, 0, 5).map(|l| l.unwrap()).map(|l| l.offset).collect();
        assert_eq!(got, vec![0]);
    }

    #[test]
    fn the_head_keeps_whole_lines_only() {
        let (_tmp, file) = file_with(b"one\ntwo\nthr");
        let (lines, whole) = head(&file, 10).unwrap();
        assert!(!whole);
        assert_eq!(lines.len(), 2);
        let (lines, whole) = head(&file, 100).unwrap();
        assert!(whole);
        assert_eq!(lines.last().unwrap(), &Line { offset: 8, bytes: Some(b"thr".to_vec()) });
    }
}
