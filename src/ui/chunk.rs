//! A lazily loaded chunk that could not be fetched (the server was updated since the page
//! loaded, a network error): what every split point of `lazy.rs` (and `attachments.rs`) answers then.

/// The session pane's chunk could not be fetched.
#[derive(Debug, Clone, Copy)]
pub struct ChunkMissing;

#[cfg(feature = "hydrate")]
impl From<leptos::wasm_split::SplitLoaderError> for ChunkMissing {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        Self
    }
}
