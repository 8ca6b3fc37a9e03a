//! Agent text as HTML, safely: raw HTML in the markdown is shown as text, links may only go to
//! http(s) or mailto and open in a new tab, and images become links (a page never loads a remote
//! image because an agent wrote one).

use leptos::prelude::*;
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// Renders markdown to HTML that is safe to put in the page.
pub fn render_markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).map(|event| match event {
        // The writer escapes text; this is what keeps `<script>` from the agent inert.
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link { dest_url, title, .. }) | Event::Start(Tag::Image { dest_url, title, .. }) => {
            Event::Html(CowStr::from(link_open(&dest_url, &title)))
        }
        Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => Event::Html(CowStr::Borrowed("</a>")),
        other => other,
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

fn link_open(dest: &str, title: &str) -> String {
    let mut out = String::from("<a href=\"");
    if is_safe_url(dest) {
        let _ = pulldown_cmark_escape::escape_href(&mut out, dest);
    } else {
        out.push('#');
    }
    out.push('"');
    if !title.is_empty() {
        out.push_str(" title=\"");
        let _ = pulldown_cmark_escape::escape_html(&mut out, title);
        out.push('"');
    }
    out.push_str(" target=\"_blank\" rel=\"noopener noreferrer nofollow\">");
    out
}

/// Relative links and http, https and mailto only. Browsers ignore tabs and newlines inside a
/// scheme (`java\tscript:`), so they are removed before looking.
fn is_safe_url(url: &str) -> bool {
    let cleaned: String = url.chars().filter(|c| !c.is_ascii_whitespace() && !c.is_ascii_control()).collect();
    let lower = cleaned.to_ascii_lowercase();
    match lower.find(|c| matches!(c, ':' | '/' | '?' | '#')) {
        Some(index) if lower.as_bytes()[index] == b':' => {
            matches!(&lower[..index], "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// Markdown, re-rendered when the text changes (each streamed word).
#[component]
pub fn Markdown(#[prop(into)] text: Signal<String>) -> impl IntoView {
    view! { <div class="markdown" inner_html=move || text.with(|text| render_markdown(text)) /> }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_from_the_agent_is_shown_as_text() {
        let html = render_markdown("hello <script>alert(1)</script> and <img src=x onerror=alert(1)>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn html_blocks_are_escaped_too() {
        let html = render_markdown("<div onclick=\"x()\">\nhi\n</div>\n");
        assert!(!html.contains("<div"), "{html}");
    }

    #[test]
    fn script_links_are_neutralized_and_others_open_in_a_new_tab() {
        for bad in ["javascript:alert(1)", "JavaScript:alert(1)", "java\tscript:alert(1)", "data:text/html,x", "vbscript:x"] {
            let html = render_markdown(&format!("[x](<{bad}>)"));
            assert!(html.contains("href=\"#\""), "{bad}: {html}");
        }
        let html = render_markdown("[docs](https://example.com/a?b=1&c=\"2\")");
        assert!(html.contains("href=\"https://example.com/a?b=1&amp;c=%222%22\""), "{html}");
        assert!(html.contains("rel=\"noopener noreferrer nofollow\""), "{html}");
        assert!(render_markdown("[rel](/s/abc)").contains("href=\"/s/abc\""));
    }

    #[test]
    fn images_become_links() {
        let html = render_markdown("![a cat](https://example.com/cat.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("<a href=\"https://example.com/cat.png\""), "{html}");
        assert!(html.contains("a cat"), "{html}");
    }

    #[test]
    fn code_blocks_keep_their_language_and_escape_their_content() {
        let html = render_markdown("```rust\nfn main() { let a = 1 < 2; }\n```");
        assert!(html.contains("<pre><code class=\"language-rust\">"), "{html}");
        assert!(html.contains("1 &lt; 2"), "{html}");
    }
}
