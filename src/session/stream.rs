//! Group commit for what an agent streams. Each write to the store costs a flush to the disk, and
//! where servers share Postgres, a transaction of whole pages (two 4 KiB pages and an fsync for a
//! delta of a few bytes: 385 bytes written per byte streamed, `make bench`; a server alone on
//! SQLite appends them to a journal instead, `store/journal.rs`). So the pieces of text and tool
//! arguments that arrive while one is being written, or within [`STREAM_INTERVAL`] of the last
//! write, wait here, and go to the store together, merged into one piece per message or tool
//! call: one write and one flush.
//!
//! Nothing is shown before it is stored: the merged event is broadcast once written, as every
//! event is. Any other event of the session is written only after the pieces queued before it
//! (`SessionRuntime::append_judged` writes them first), so the log's order is the agent's.

use std::time::Duration;

use crate::store::StoreError;
use crate::thread::EventBody;

/// The most often a streaming session writes its pieces. A piece that comes after a quiet moment
/// is written at once; while the agent streams, its pieces are stored (and seen) at most this
/// much later than they came: 50 ms is under what a reader notices in text that appears as it
/// is written, and brings a stream at the API's pace (tens of pieces a second) to a write or
/// two per interval.
pub const STREAM_INTERVAL: Duration = Duration::from_millis(50);

/// Pieces queued past this wait for the store: an agent cannot outrun a stalled disk with memory.
pub const MAX_QUEUED: usize = 1_024;

/// The pieces waiting to be stored, and whether a writer is on its way for them.
#[derive(Default)]
pub struct Stream {
    queued: Vec<EventBody>,
    /// A task writes the queue (at the next interval); no other needs to start.
    pub writing: bool,
    /// A write of queued pieces failed: the agent hears it at its next event.
    pub failed: Option<StoreError>,
}

impl Stream {
    /// Queues a piece (a text or argument delta), merged into the last one queued when both grow
    /// the same message or tool call. How many events are queued now.
    pub fn push(&mut self, piece: EventBody) -> usize {
        match (self.queued.last_mut(), piece) {
            (
                Some(EventBody::TextDelta { message_id: queued, text: so_far }),
                EventBody::TextDelta { message_id, text },
            ) if *queued == message_id => so_far.push_str(&text),
            (
                Some(EventBody::ToolInputDelta { tool_use_id: queued, partial_json: so_far }),
                EventBody::ToolInputDelta { tool_use_id, partial_json },
            ) if *queued == tool_use_id => so_far.push_str(&partial_json),
            (_, piece) => self.queued.push(piece),
        }
        self.queued.len()
    }

    /// The queued events, in order, leaving the queue empty.
    pub fn take(&mut self) -> Vec<EventBody> {
        std::mem::take(&mut self.queued)
    }

    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(message_id: &str, text: &str) -> EventBody {
        EventBody::TextDelta { message_id: message_id.into(), text: text.into() }
    }

    fn input(tool_use_id: &str, partial_json: &str) -> EventBody {
        EventBody::ToolInputDelta { tool_use_id: tool_use_id.into(), partial_json: partial_json.into() }
    }

    #[test]
    fn pieces_of_one_message_or_call_merge_in_order_and_others_keep_their_place() {
        let mut stream = Stream::default();
        stream.push(text("a1", "Hel"));
        stream.push(text("a1", "lo"));
        stream.push(input("t1", "{\"comm"));
        stream.push(input("t1", "and\": \"ls\"}"));
        stream.push(text("a2", "!"));
        assert_eq!(stream.push(text("a1", " again")), 4, "a message's piece after another's is not merged back");
        assert_eq!(
            stream.take(),
            vec![text("a1", "Hello"), input("t1", "{\"command\": \"ls\"}"), text("a2", "!"), text("a1", " again")]
        );
        assert!(stream.is_empty());
    }
}
