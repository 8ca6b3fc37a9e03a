//! What the agent used, in words: a turn's tokens (in, out, cached) and cost under its last reply,
//! and the session's in its header, with how full the context window is.

use crate::thread::Usage;
pub use crate::thread::thousands as count;

/// `12.3k`, for a header with little room.
pub fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0).replace(".0k", "k"),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0).replace(".0M", "M"),
    }
}

/// A turn's use, as its footer says it: "1,234 in · 567 out · 8,900 cached · $0.0123".
pub fn turn_line(usage: &Usage) -> String {
    let mut parts = Vec::new();
    // A turn that asked the model nothing (a local command) has no counts to show.
    if let Some(n) = usage.input_tokens.filter(|n| *n > 0) {
        parts.push(format!("{} in", count(n)));
    }
    if let Some(n) = usage.output_tokens.filter(|n| *n > 0) {
        parts.push(format!("{} out", count(n)));
    }
    let cached = usage.cache_read_tokens.unwrap_or(0) + usage.cache_write_tokens.unwrap_or(0);
    if cached > 0 {
        parts.push(format!("{} cached", count(cached)));
    }
    if let Some(cost) = usage.cost_usd.filter(|c| *c > 0.0) {
        parts.push(format!("${cost:.4}"));
    }
    parts.join(" · ")
}

/// How full the context window is, when both are known: "23% of 200k".
pub fn context_line(usage: &Usage) -> Option<String> {
    let (used, window) = (usage.context_tokens?, usage.context_window.filter(|w| *w > 0)?);
    Some(format!("{}% of {}", (used * 100).div_ceil(window).min(100), short(window)))
}

/// The session's tokens in a few characters: "12.3k tokens".
pub fn session_tokens(usage: &Usage) -> Option<String> {
    let total = [usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens]
        .into_iter()
        .flatten()
        .sum::<u64>();
    (total > 0).then(|| format!("{} tokens", short(total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_cost_read_as_people_write_them() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(short(999), "999");
        assert_eq!(short(12_345), "12.3k");
        assert_eq!(short(200_000), "200k");
        assert_eq!(short(1_000_000), "1M");
        let usage = Usage {
            input_tokens: Some(1234),
            output_tokens: Some(567),
            cost_usd: Some(0.01234),
            cache_read_tokens: Some(8000),
            cache_write_tokens: Some(900),
            context_tokens: Some(46_000),
            context_window: Some(200_000),
            ..Usage::default()
        };
        assert_eq!(turn_line(&usage), "1,234 in · 567 out · 8,900 cached · $0.0123");
        assert_eq!(context_line(&usage).as_deref(), Some("23% of 200k"));
        assert_eq!(session_tokens(&usage).as_deref(), Some("10.7k tokens"));
        assert_eq!(context_line(&Usage { context_tokens: Some(5), ..Usage::default() }), None);
        let local_command =
            Usage { input_tokens: Some(0), output_tokens: Some(0), cost_usd: Some(0.0), ..Usage::default() };
        assert_eq!(turn_line(&local_command), "");
    }
}
