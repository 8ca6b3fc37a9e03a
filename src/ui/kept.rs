//! What the person typed or chose but has not sent yet, kept in this browser's `localStorage` so
//! that a reload or a failed send loses nothing. One place for the keys (the README documents
//! them) and for the storage calls; on the server every method does nothing.

/// One kept value, by its key.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    key: String,
}

impl Kept {
    /// The composer's draft for `session`; `None` is the first message of a session to come.
    pub fn message_draft(session: Option<&str>) -> Self {
        Self { key: format!("askbridge:draft:{}", session.unwrap_or("new")) }
    }

    /// The choices made on a question card, until the answer is stored.
    pub fn answer_draft(session: &str, tool_use_id: &str) -> Self {
        Self { key: format!("askbridge:answer:{session}:{tool_use_id}") }
    }

    /// The message typed on a permission card, until the decision is stored.
    pub fn decision_message(session: &str, tool_use_id: &str) -> Self {
        Self { key: format!("askbridge:deny:{session}:{tool_use_id}") }
    }

    pub fn load(&self) -> Option<String> {
        #[cfg(feature = "hydrate")]
        return local_storage()?.get_item(&self.key).ok().flatten();
        #[cfg(not(feature = "hydrate"))]
        None
    }

    /// Keeps `value`; an empty value is forgotten instead.
    pub fn save(&self, value: &str) {
        #[cfg(feature = "hydrate")]
        if let Some(storage) = local_storage() {
            let _ = if value.is_empty() { storage.remove_item(&self.key) } else { storage.set_item(&self.key, value) };
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = value;
    }

    pub fn forget(&self) {
        self.save("");
    }
}

#[cfg(feature = "hydrate")]
fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_documented_ones() {
        assert_eq!(Kept::message_draft(Some("s1")).key, "askbridge:draft:s1");
        assert_eq!(Kept::message_draft(None).key, "askbridge:draft:new");
        assert_eq!(Kept::answer_draft("s1", "t1").key, "askbridge:answer:s1:t1");
        assert_eq!(Kept::decision_message("s1", "t1").key, "askbridge:deny:s1:t1");
    }
}
