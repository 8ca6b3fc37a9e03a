//! What a turn cost: tokens over its requests, and dollars at the list prices of the model's
//! family, for the session header.

use std::time::Duration;

use crate::agent::messages_api;
use crate::thread::Usage;

/// Tokens and dollars over a turn's requests, and how big the conversation was at the last.
#[derive(Debug, Default)]
pub(super) struct Spent {
    pub(super) replies: u32,
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
    cost_usd: Option<f64>,
    /// The last request's input, cached or not, and its reply: what the next request carries.
    context_tokens: Option<u64>,
}

impl Spent {
    pub(super) fn add(&mut self, usage: &messages_api::Usage, model: &str) {
        self.replies += 1;
        let n = |v: Option<u64>| v.unwrap_or(0);
        self.input_tokens += n(usage.input_tokens);
        self.cache_write_tokens += n(usage.cache_creation_input_tokens);
        self.cache_read_tokens += n(usage.cache_read_input_tokens);
        self.output_tokens += n(usage.output_tokens);
        self.context_tokens = Some(usage.context_tokens());
        if let Some(cost) = cost_usd(model, usage) {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
    }

    pub(super) fn usage(&self, elapsed: Option<Duration>) -> Usage {
        Usage {
            input_tokens: Some(self.input_tokens),
            output_tokens: Some(self.output_tokens),
            cost_usd: self.cost_usd,
            duration_ms: elapsed.map(|e| e.as_millis() as u64),
            cache_read_tokens: Some(self.cache_read_tokens),
            cache_write_tokens: Some(self.cache_write_tokens),
            context_tokens: self.context_tokens,
            context_window: None,
        }
    }
}

/// List prices in dollars per million tokens, (input, output), by model family, as Claude Code
/// 2.1.332 lists them. Cache writes cost 1.25× input, cache reads 0.1×. `None` for a model this
/// table does not know: the header then shows no cost rather than a wrong one.
fn prices(model: &str) -> Option<(f64, f64)> {
    let families = [("opus", (4.0, 20.0)), ("fable", (8.0, 40.0)), ("sonnet", (2.0, 10.0)), ("haiku", (0.10, 0.50))];
    families.iter().find(|(family, _)| model.contains(family)).map(|(_, prices)| *prices)
}

fn cost_usd(model: &str, usage: &messages_api::Usage) -> Option<f64> {
    let (input, output) = prices(model)?;
    let n = |v: Option<u64>| v.unwrap_or(0) as f64 / 1_000_000.0;
    Some(
        n(usage.input_tokens) * input
            + n(usage.cache_creation_input_tokens) * input * 1.25
            + n(usage.cache_read_input_tokens) * input * 0.1
            + n(usage.output_tokens) * output,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_follows_the_model_family_and_counts_the_cache() {
        let usage = messages_api::Usage {
            input_tokens: Some(1_000_000),
            output_tokens: Some(100_000),
            cache_creation_input_tokens: Some(1_000_000),
            cache_read_input_tokens: Some(1_000_000),
            ..Default::default()
        };
        let cost = cost_usd("claude-sonnet-5-5", &usage).unwrap();
        assert!((cost - (2.0 + 1.0 + 2.5 + 0.2)).abs() < 1e-9, "{cost}");
        assert_eq!(cost_usd("some-other-model", &usage), None);
    }
}
