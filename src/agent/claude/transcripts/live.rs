//! Whether a `claude` process is writing a transcript right now.
