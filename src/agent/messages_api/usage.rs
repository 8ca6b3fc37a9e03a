//! The token counts the API reports with a message (`message_start`, each `assistant` line of
//! Claude Code), cumulatively in a `message_delta`, and summed in Claude Code's `result`.

use serde::{Deserialize, Serialize};

/// Token counts as the API reports them; every field may be missing from a given event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// Input written to the prompt cache, and read from it; not counted in `input_tokens`.
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    /// The cache writes by how long they are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation: Option<CacheCreation>,
    /// The server tools the model used (web search, web fetch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tool_use: Option<ServerToolUse>,
}

/// `usage.cache_creation`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCreation {
    #[serde(default)]
    pub ephemeral_5m_input_tokens: Option<u64>,
    #[serde(default)]
    pub ephemeral_1h_input_tokens: Option<u64>,
}

/// `usage.server_tool_use`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerToolUse {
    #[serde(default)]
    pub web_search_requests: Option<u64>,
    #[serde(default)]
    pub web_fetch_requests: Option<u64>,
}

impl Usage {
    /// Takes the counts `later` reports (a `message_delta`'s usage is cumulative).
    pub fn update(&mut self, later: &Usage) {
        fn take<T: Clone>(mine: &mut Option<T>, theirs: &Option<T>) {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        }
        take(&mut self.input_tokens, &later.input_tokens);
        take(&mut self.output_tokens, &later.output_tokens);
        take(&mut self.cache_creation_input_tokens, &later.cache_creation_input_tokens);
        take(&mut self.cache_read_input_tokens, &later.cache_read_input_tokens);
        take(&mut self.cache_creation, &later.cache_creation);
        take(&mut self.server_tool_use, &later.server_tool_use);
    }

    /// The conversation's size at this request, and with its reply: input (cached or not) plus
    /// output, what the next request carries.
    pub fn context_tokens(&self) -> u64 {
        [self.input_tokens, self.cache_creation_input_tokens, self.cache_read_input_tokens, self.output_tokens]
            .into_iter()
            .map(|n| n.unwrap_or(0))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_later_count_replaces_an_earlier_one_and_a_missing_one_keeps_it() {
        let mut usage: Usage =
            serde_json::from_value(json!({"input_tokens": 25, "cache_read_input_tokens": 10, "output_tokens": 1}))
                .unwrap();
        usage.update(&serde_json::from_value(json!({"output_tokens": 15})).unwrap());
        assert_eq!(
            (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens),
            (Some(25), Some(10), Some(15))
        );
        assert_eq!(usage.context_tokens(), 50);
    }

    #[test]
    fn the_cache_and_server_tool_figures_are_read_as_the_wire_has_them() {
        // A `result`'s usage as Claude Code 2.1.332 reports it (fields AskBridge does not read left in).
        let usage: Usage = serde_json::from_value(json!({
            "input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5,
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": "standard",
            "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
            "inference_geo": "", "iterations": [], "speed": "standard", "fallback_credit": null
        }))
        .unwrap();
        assert_eq!(usage.server_tool_use.and_then(|s| s.web_fetch_requests), Some(0));
        assert_eq!(usage.cache_creation.and_then(|c| c.ephemeral_1h_input_tokens), Some(0));
    }
}
