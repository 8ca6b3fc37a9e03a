//! Ids and the clock: the bottom layer, imported by anything on the server and importing nothing
//! of ours.

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or_default()
}

/// Time-ordered ids: sessions and messages sort by creation in the database and in logs.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}
