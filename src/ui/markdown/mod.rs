//! Agent text as HTML in the page, kept up to date as it streams.
//!
//! The renderer (`render.rs`) turns markdown into safe HTML and says how much of a text appended
//! text can no longer change; this file streams its output into the page, rendering again only
//! what a new word can change.

mod render;

use leptos::html;
use leptos::prelude::*;

pub use render::render_markdown;
use render::render_unsettled;

/// Markdown, kept up to date as it streams. The page comes with it rendered; after that, a
/// change renders again only from the first top-level block that appended text could still
/// change, and the elements before it stay in the page (`streamed`). Rendering all of it, and
/// the page parsing all of it again, on every word cost O(n²) over a long reply.
pub fn markdown(text: Signal<String>) -> impl IntoView {
    let node = NodeRef::<html::Div>::new();
    let mut shown = Some(text.get_untracked());
    let html = render_markdown(shown.as_deref().unwrap_or_default());
    Effect::new(move |settled: Option<Settled>| {
        let text = text.get();
        let Some(div) = node.get_untracked() else { return Settled::default() };
        // The first run: the page shows the text, unless it changed since the view was made.
        if settled.is_none() && shown.take().as_ref() == Some(&text) {
            return Settled::default();
        }
        let (keep, html, settled) = streamed(&text, settled.unwrap_or_default());
        while let Some(last) = div.last_element_child().filter(|_| div.child_element_count() as usize > keep) {
            last.remove();
        }
        let _ = div.insert_adjacent_html("beforeend", &html);
        settled
    });
    view! { <div class="markdown" node_ref=node inner_html=html /> }
}

/// The start of a streamed text that appended text cannot change.

#[derive(Default)]
struct Settled {
    /// Up to the end of the line that settled the blocks before it.
    text: String,
    /// Where that line starts: rendering goes on from there.
    from: usize,
    /// How many top-level elements the blocks before it made.
    elements: usize,
}

/// What `text` changes in a page that shows an earlier text, of which `settled` is settled: how
/// many top-level elements stay, and the HTML that follows them; and what is settled now.
fn streamed(text: &str, mut settled: Settled) -> (usize, String, Settled) {
    if !text.starts_with(&settled.text) {
        settled = Settled::default();
    }
    let keep = settled.elements;
    let (html, line, elements) = render_unsettled(&text[settled.from..]);
    // The line that settled the blocks before is still complete and starts the first block, so
    // the line found now is that one or a later one.
    settled.text.push_str(&text[settled.text.len()..settled.from + line.end]);
    settled.from += line.start;
    settled.elements += elements;
    (keep, html, settled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use render::WORK;

    /// The top-level elements of HTML that this renderer wrote, as the page holds them.
    fn elements(html: &str) -> Vec<String> {
        let (mut elements, mut depth, mut start) = (Vec::new(), 0, 0);
        for (at, _) in html.match_indices('<') {
            let end = at + html[at..].find('>').unwrap() + 1;
            let tag = &html[at + 1..end - 1];
            if depth == 0 {
                start = at;
            }
            if tag.starts_with('/') {
                depth -= 1;
            } else if !["br", "hr", "input"].contains(&tag.split(' ').next().unwrap()) {
                depth += 1;
            }
            if depth == 0 {
                elements.push(html[start..end].to_string());
            }
        }
        elements
    }

    /// Streams `text` in pieces of `sizes` bytes (cycled) into a page of top-level elements, as
    /// `markdown` does, checking each step against rendering it whole; returns the characters
    /// read.
    fn stream(text: &str, sizes: &[usize]) -> Result<usize, TestCaseError> {
        let (mut page, mut settled) = (Vec::new(), Settled::default());
        let (mut end, mut work) = (0, 0);
        for size in sizes.iter().cycle() {
            end = (end + size).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let now = &text[..end];
            WORK.with(|work| work.set(0));
            let (keep, html, next) = streamed(now, settled);
            work += WORK.with(|work| work.get());
            settled = next;
            page.truncate(keep);
            page.extend(elements(&html));
            prop_assert_eq!(page.concat(), render_markdown(now), "streamed to {:?}", now);
            if end == text.len() {
                return Ok(work);
            }
        }
        unreachable!("sizes is not empty")
    }

    #[test]
    fn text_that_changes_otherwise_than_by_growing_is_rendered_again() {
        let mut settled = Settled::default();
        for text in ["- a\n\nb\n\nc", "- a\n\n- c\n\nd", "x"] {
            let (keep, html, next) = streamed(text, settled);
            assert_eq!((keep, html), (0, render_markdown(text)));
            settled = next;
        }
    }

    #[test]
    fn streaming_renders_each_block_a_bounded_number_of_times() {
        // Twice the reply costs twice the work, where rendering all of it per word cost four times.
        let reply = "A paragraph of a few words.\n\n- an item\n- another\n\n```\ncode\n\nmore\n```\n\n";
        let work = |times: usize| stream(&reply.repeat(times), &[5]).unwrap();
        let (once, twice) = (work(100), work(200));
        assert!(twice <= once * 21 / 10, "{once} then {twice}");
    }

    proptest! {
        #[test]
        fn streamed_text_renders_as_if_rendered_whole(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("*"), Just("**"), Just("_"), Just("`"), Just("```"), Just("~~"), Just("["), Just("]("),
                    Just(")"), Just("<"), Just("\n"), Just("\n\n"), Just("\r\n"), Just("- "), Just("1. "),
                    Just("2. "), Just("> "), Just("# "), Just("|"), Just("|-|"), Just("---"), Just("  "),
                    Just("\\"), Just("https://a.b"), Just("word"), Just("é"), Just("    "),
                ],
                0..60,
            ),
            sizes in proptest::collection::vec(1..12usize, 1..6),
        ) {
            stream(&parts.concat(), &sizes)?;
        }
    }
}
