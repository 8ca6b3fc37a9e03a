//! What a turn used: tokens, cache, cost, time, and how full the model's context was.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens read at full price (not from the prompt cache).
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    pub duration_ms: Option<u64>,
    /// Input tokens read from the prompt cache, and written to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// How many tokens the conversation took at the turn's last request (input, cached or not),
    /// and how many the model's context window holds: how full it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// `12,345`: a count as people read it (the thread's notices and the page's usage lines).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Usage {
    /// `self` and `later` as one spending: counts and costs add up; the context is `later`'s.
    pub fn plus(&self, later: &Usage) -> Usage {
        let sum = |x: Option<u64>, y: Option<u64>| {
            if x.is_none() && y.is_none() { None } else { Some(x.unwrap_or(0) + y.unwrap_or(0)) }
        };
        Usage {
            input_tokens: sum(self.input_tokens, later.input_tokens),
            output_tokens: sum(self.output_tokens, later.output_tokens),
            cost_usd: match (self.cost_usd, later.cost_usd) {
                (None, None) => None,
                (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
            },
            duration_ms: later.duration_ms.or(self.duration_ms),
            cache_read_tokens: sum(self.cache_read_tokens, later.cache_read_tokens),
            cache_write_tokens: sum(self.cache_write_tokens, later.cache_write_tokens),
            context_tokens: later.context_tokens.or(self.context_tokens),
            context_window: later.context_window.or(self.context_window),
        }
    }
}
