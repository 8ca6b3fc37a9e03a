//! Agent text as HTML, safely.
//!
//! A compact renderer for the markdown agents write: headings, paragraphs, emphasis, code spans
//! and fenced code, lists (nested, ordered, task lists), block quotes, tables, rules, links and
//! bare URLs. It is our own because it runs in the browser on every streamed word and the page
//! has a byte budget: pulldown-cmark alone added 58 KB (brotli) to the bundle, a quarter of it.
//!
//! Safety comes from construction: every character of the input reaches the output through
//! `escape`, and the only tags are the ones written here. Raw HTML is shown as text, links may
//! only go to http(s) or mailto (or stay on this site) and open in a new tab, and images become
//! links, so a page never loads a remote image because an agent wrote one.
//!
//! The work is linear in the text, whatever the text: a search ahead for a closing `]`, backtick
//! run or emphasis is answered from what `Inline` learned once per run of text, and structures
//! nest at most `MAX_NESTING` deep. Searching ahead per opener made 60,000 unclosed `[` take
//! ~600 ms on every page load. The tests count the work (`work`) to keep it so.

use std::ops::Range;

/// How deep quotes, list items, emphasis and links may nest in one another; what is deeper is
/// shown as text. Each level reads its content again, so this bounds the work per character (and
/// the recursion, which a line of 100,000 `>` overflowed). Agents nest a few levels, not sixteen.
const MAX_NESTING: usize = 16;

/// A table row shorter than its header gets empty cells up to the header's width, so the width
/// multiplies the output of every row (a wide header over rows of one `|` each grew the output
/// with the square of the text); a wider table is shown as text.
const MAX_TABLE_COLUMNS: usize = 32;

/// Renders markdown to HTML that is safe to put in the page.
pub fn render_markdown(text: &str) -> String {
    render_unsettled(text).0
}

/// Renders `text`, and says how much of it appended text cannot change. A top-level block is
/// decided by its own lines and the first line of the next one, so once that line is complete
/// (ends in a newline), the blocks before it are settled. Returns the HTML, the last such line
/// (with its newline), and how many top-level elements come before it (each block makes one).
pub(super) fn render_unsettled(text: &str) -> (String, Range<usize>, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let (mut line, mut elements_before, mut elements) = (0..0, 0, 0);
    let mut i = 0;
    while i < lines.len() {
        let start = lines[i].as_ptr() as usize - text.as_ptr() as usize;
        let end = start + lines[i].len();
        if !is_blank(lines[i]) {
            if end < text.len() {
                // After the line, "\n" or "\r\n".
                line = start..end + 1 + (text.as_bytes()[end] == b'\r') as usize;
                elements_before = elements;
            }
            elements += 1;
        }
        i = block(&lines, i, 0, &mut out);
    }
    (out, line, elements_before)
}

// Counts characters read, for the tests that prove the work linear; nothing outside tests.
#[cfg(test)]
thread_local!(pub(super) static WORK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });

#[inline(always)]
fn work(_characters: usize) {
    #[cfg(test)]
    WORK.with(|work| work.set(work.get() + _characters));
}

// ---- Blocks ----

/// The blocks of `lines`, inside `depth` quotes and list items; inside `MAX_NESTING` of them,
/// the lines as they are written.
fn blocks(lines: &[&str], depth: usize, out: &mut String) {
    if depth >= MAX_NESTING {
        if !lines.is_empty() {
            out.push_str("<p>");
            inline_lines(lines, depth, out);
            out.push_str("</p>");
        }
        return;
    }
    let mut i = 0;
    while i < lines.len() {
        i = block(lines, i, depth, out);
    }
}

/// The block that starts at line `i` (or a blank line, skipped); returns the line after it.
fn block(lines: &[&str], mut i: usize, depth: usize, out: &mut String) -> usize {
    let line = lines[i];
    if is_blank(line) {
        i += 1;
    } else if let Some((fence, info)) = fence_open(line) {
        i = code_block(lines, i, fence, info, out);
    } else if let Some((level, title)) = heading(line) {
        out.push_str(&format!("<h{level}>"));
        inline(title, depth, out);
        out.push_str(&format!("</h{level}>"));
        i += 1;
    } else if is_rule(line) {
        out.push_str("<hr>");
        i += 1;
    } else if quote_line(line).is_some() {
        let start = i;
        let mut inner = Vec::new();
        while let Some(rest) = lines.get(i).and_then(|l| quote_line(l)) {
            work(rest.len() + 1);
            inner.push(rest);
            i += 1;
        }
        debug_assert!(i > start);
        out.push_str("<blockquote>");
        blocks(&inner, depth + 1, out);
        out.push_str("</blockquote>");
    } else if list_marker(line).is_some() {
        i = list(lines, i, depth, out);
    } else if let Some(columns) = table_start(lines, i) {
        i = table(lines, i, columns, depth, out);
    } else {
        let start = i;
        i += 1;
        while i < lines.len() && !is_blank(lines[i]) && !interrupts_paragraph(lines[i]) {
            i += 1;
        }
        out.push_str("<p>");
        inline_lines(&lines[start..i], depth, out);
        out.push_str("</p>");
    }
    i
}

/// Every loop over lines asks this of each line it takes up, so it also counts the line as read:
/// what the loop then does with the line reads it a bounded number of times.
fn is_blank(line: &str) -> bool {
    work(line.len() + 1);
    line.trim().is_empty()
}

fn interrupts_paragraph(line: &str) -> bool {
    fence_open(line).is_some()
        || heading(line).is_some()
        || is_rule(line)
        || quote_line(line).is_some()
        || list_marker(line).is_some_and(|m| !m.ordered || m.number == 1)
}

/// Up to three spaces of indentation, as CommonMark allows before a block marker.
fn unindent(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    (line.len() - trimmed.len() <= 3).then_some(trimmed)
}

fn fence_open(line: &str) -> Option<(&str, &str)> {
    let rest = unindent(line)?;
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.len() - rest.trim_start_matches(c).len();
    if run < 3 {
        return None;
    }
    let info = rest[run..].trim();
    if c == '`' && info.contains('`') {
        return None;
    }
    Some((&rest[..run], info))
}

/// A fenced code block; an unclosed fence (still streaming) runs to the end.
fn code_block(lines: &[&str], start: usize, fence: &str, info: &str, out: &mut String) -> usize {
    let language: String = info
        .split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_alphanumeric() || "-_+#.".contains(*c))
        .collect();
    if language.is_empty() {
        out.push_str("<pre><code>");
    } else {
        out.push_str(&format!("<pre><code class=\"language-{language}\">"));
    }
    let mut i = start + 1;
    while i < lines.len() {
        work(lines[i].len() + 1);
        let closing = unindent(lines[i]).is_some_and(|rest| {
            let rest = rest.trim_end();
            rest.starts_with(fence) && rest.chars().all(|c| fence.starts_with(c))
        });
        if closing {
            i += 1;
            break;
        }
        escape(lines[i], out);
        out.push('\n');
        i += 1;
    }
    out.push_str("</code></pre>");
    i
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let rest = unindent(line)?;
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let title = &rest[level..];
    if !(title.is_empty() || title.starts_with(' ') || title.starts_with('\t')) {
        return None;
    }
    // A closing run of #s is not part of the title.
    let title = title.trim();
    let without_closing = title.trim_end_matches('#');
    let title =
        if without_closing.is_empty() || without_closing.ends_with(' ') { without_closing.trim_end() } else { title };
    Some((level, title))
}

fn is_rule(line: &str) -> bool {
    let Some(rest) = unindent(line) else { return false };
    let Some(c) = rest.chars().next().filter(|c| matches!(c, '-' | '*' | '_')) else { return false };
    let marks = rest.chars().filter(|x| *x == c).count();
    marks >= 3 && rest.chars().all(|x| x == c || x == ' ' || x == '\t')
}

fn quote_line(line: &str) -> Option<&str> {
    let rest = unindent(line)?.strip_prefix('>')?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

struct Marker {
    ordered: bool,
    number: u32,
    /// Where the item's content starts, in bytes from the start of the line.
    content: usize,
    /// The marker's own indentation.
    indent: usize,
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn list_marker(line: &str) -> Option<Marker> {
    let indent = indentation(line);
    let rest = &line[indent..];
    let (ordered, number, width) = if let Some(c) = rest.chars().next().filter(|c| matches!(c, '-' | '*' | '+')) {
        (false, 0, c.len_utf8())
    } else {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if !(1..=9).contains(&digits) || !matches!(rest.as_bytes().get(digits), Some(b'.' | b')')) {
            return None;
        }
        (true, rest[..digits].parse().ok()?, digits + 1)
    };
    let after = &rest[width..];
    if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
        return None;
    }
    let spaces = (after.len() - after.trim_start().len()).clamp(1, 4);
    let content = if after.trim().is_empty() { indent + width + 1 } else { indent + width + spaces };
    Some(Marker { ordered, number, content, indent })
}

/// A list and its items; an item holds the lines indented under it, rendered as blocks.
fn list(lines: &[&str], start: usize, depth: usize, out: &mut String) -> usize {
    let first = list_marker(lines[start]).expect("a list starts at a marker");
    let ordered = first.ordered;
    if ordered && first.number != 1 {
        out.push_str(&format!("<ol start=\"{}\">", first.number));
    } else {
        out.push_str(if ordered { "<ol>" } else { "<ul>" });
    }
    let mut i = start;
    while i < lines.len() {
        work(lines[i].len() + 1);
        let Some(marker) = list_marker(lines[i]).filter(|m| m.ordered == ordered && m.indent <= first.indent + 1)
        else {
            break;
        };
        let mut item: Vec<&str> = vec![lines[i].get(marker.content..).unwrap_or("")];
        i += 1;
        let mut blank_inside = false;
        while i < lines.len() {
            let line = lines[i];
            let indent = indentation(line);
            if is_blank(line) {
                // Blank lines continue the item only if indented content follows. They are
                // taken together: looking past each one to that content was quadratic.
                let mut next = i + 1;
                while next < lines.len() && is_blank(lines[next]) {
                    next += 1;
                }
                match lines.get(next) {
                    Some(next_line) if indentation(next_line) >= marker.content => {
                        blank_inside = true;
                        while i < next {
                            item.push("");
                            i += 1;
                        }
                    }
                    _ => break,
                }
            } else if indent >= marker.content {
                item.push(&line[marker.content.min(indent)..]);
                i += 1;
            } else if list_marker(line).is_some() || !lazy_continuation(&item, line) {
                break;
            } else {
                item.push(line.trim_start());
                i += 1;
            }
        }
        out.push_str("<li>");
        list_item(&item, blank_inside, depth + 1, out);
        out.push_str("</li>");
        // Blank lines between items of the same list.
        let mut j = i;
        while j < lines.len() && is_blank(lines[j]) {
            j += 1;
        }
        if j > i && j < lines.len() && list_marker(lines[j]).is_some_and(|m| m.ordered == ordered) {
            i = j;
        }
    }
    out.push_str(if ordered { "</ol>" } else { "</ul>" });
    i
}

/// A paragraph inside an item goes on over unindented lines that start no other block.
fn lazy_continuation(item: &[&str], line: &str) -> bool {
    item.last().is_some_and(|last| !is_blank(last)) && !interrupts_paragraph(line)
}

fn list_item(lines: &[&str], loose: bool, depth: usize, out: &mut String) {
    let mut lines = lines.to_vec();
    if let Some(first) = lines.first_mut() {
        let task = first
            .strip_prefix("[ ] ")
            .map(|rest| (false, rest))
            .or_else(|| first.strip_prefix("[x] ").or_else(|| first.strip_prefix("[X] ")).map(|rest| (true, rest)));
        if let Some((checked, rest)) = task {
            out.push_str(if checked {
                "<input type=\"checkbox\" checked disabled> "
            } else {
                "<input type=\"checkbox\" disabled> "
            });
            *first = rest;
        }
    }
    // A tight item is one paragraph, maybe followed by a nested list: no <p> around its text.
    let text_end = lines.iter().position(|l| is_blank(l) || interrupts_paragraph(l)).unwrap_or(lines.len());
    if !loose && text_end > 0 {
        inline_lines(&lines[..text_end], depth, out);
        blocks(&lines[text_end..], depth, out);
    } else {
        blocks(&lines, depth, out);
    }
}

fn table_row(line: &str) -> Vec<&str> {
    let line = line.trim();
    let line = line.strip_prefix('|').unwrap_or(line);
    let line = line.strip_suffix('|').unwrap_or(line);
    let mut cells = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        if *byte == b'|' && (index == 0 || bytes[index - 1] != b'\\') {
            cells.push(line[start..index].trim());
            start = index + 1;
        }
    }
    cells.push(line[start..].trim());
    cells
}

/// A header row with pipes, then a delimiter row like `| --- | :-: |`.
fn table_start(lines: &[&str], i: usize) -> Option<Vec<&'static str>> {
    let header = lines[i];
    let delimiter = lines.get(i + 1)?;
    work(delimiter.len() + 1);
    if !header.contains('|') || !delimiter.contains('-') {
        return None;
    }
    let cells = table_row(delimiter);
    let aligns = cells
        .iter()
        .map(|cell| {
            let dashes = cell.trim_start_matches(':').trim_end_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|c| c == '-') {
                return None;
            }
            Some(match (cell.starts_with(':'), cell.ends_with(':')) {
                (true, true) => " style=\"text-align:center\"",
                (false, true) => " style=\"text-align:right\"",
                (true, false) => " style=\"text-align:left\"",
                (false, false) => "",
            })
        })
        .collect::<Option<Vec<_>>>()?;
    (aligns.len() <= MAX_TABLE_COLUMNS && aligns.len() == table_row(header).len()).then_some(aligns)
}

fn table(lines: &[&str], start: usize, aligns: Vec<&str>, depth: usize, out: &mut String) -> usize {
    let cells = |line: &str, tag: &str, out: &mut String| {
        out.push_str("<tr>");
        let row = table_row(line);
        for (index, align) in aligns.iter().enumerate() {
            out.push_str(&format!("<{tag}{align}>"));
            inline(row.get(index).copied().unwrap_or(""), depth, out);
            out.push_str(&format!("</{tag}>"));
        }
        out.push_str("</tr>");
    };
    out.push_str("<table><thead>");
    cells(lines[start], "th", out);
    out.push_str("</thead><tbody>");
    let mut i = start + 2;
    while i < lines.len() && lines[i].contains('|') && !is_blank(lines[i]) {
        cells(lines[i], "td", out);
        i += 1;
    }
    out.push_str("</tbody></table>");
    i
}

// ---- Inlines ----

/// The lines of a paragraph: soft breaks stay newlines; two trailing spaces or a backslash make
/// a hard break.
fn inline_lines(lines: &[&str], depth: usize, out: &mut String) {
    let mut text = String::new();
    for (index, line) in lines.iter().enumerate() {
        work(line.len() + 1);
        let last = index + 1 == lines.len();
        let line = line.trim_start();
        if !last && (line.ends_with("  ") || line.ends_with('\\')) {
            text.push_str(line.trim_end().trim_end_matches('\\'));
            text.push('\u{0}');
        } else {
            text.push_str(if last { line.trim_end() } else { line });
            if !last {
                text.push('\n');
            }
        }
    }
    inline(&text, depth, out);
}

fn inline(text: &str, depth: usize, out: &mut String) {
    let chars: Vec<char> = text.chars().collect();
    work(chars.len());
    inline_chars(&chars, depth, out);
}

/// Inline text inside `depth` structures; inside `MAX_NESTING` of them, as it is written.
fn inline_chars(s: &[char], depth: usize, out: &mut String) {
    if depth >= MAX_NESTING {
        work(s.len());
        for c in s {
            match c {
                '\u{0}' => out.push_str("<br>"),
                c => escape_char(*c, out),
            }
        }
    } else {
        Inline::new(s, depth).render(out);
    }
}

/// A run of inline text, and what was learned about it once so that no search ahead repeats
/// per opener.
struct Inline<'a> {
    s: &'a [char],
    depth: usize,
    /// For a `[`, its `]`; for a backtick run (or what is left of one after an escaped first
    /// backtick), where the next run of the same length starts: the end of its code span.
    /// 0, which no partner can be, when there is none. Empty until first asked (`partner`).
    partner: Vec<usize>,
    /// For each position, the searches for an emphasis closer that passed it: a bit for each
    /// delimiter and run length. A search that comes to a position another one passed fails as
    /// that one did, for from there on it goes the same way; one that succeeded ends before any
    /// later opener. Empty until the first search.
    passed: Vec<usize>,
}

impl<'a> Inline<'a> {
    fn new(s: &'a [char], depth: usize) -> Self {
        Self { s, depth, partner: Vec::new(), passed: Vec::new() }
    }

    /// `partner` at `i`, built on first asking: most text has no `[` or backtick.
    fn partner(&mut self, i: usize) -> usize {
        let s = self.s;
        if self.partner.is_empty() {
            work(2 * s.len());
            // Tables grow by `push`, as the stack does: `vec![0; n]` and `resize` each brought
            // their own allocation code into the WASM (~450 bytes before wasm-opt).
            for _ in s {
                self.partner.push(0);
            }
            // Brackets pair as a stack; a backslash hides the character after it.
            let mut open = Vec::new();
            let mut i = 0;
            while i < s.len() {
                match s[i] {
                    '\\' => i += 1,
                    '[' => open.push(i),
                    ']' => {
                        if let Some(opener) = open.pop() {
                            self.partner[opener] = i;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            // Backtick runs from the right, remembering the nearest run of each length.
            let mut nearest = Vec::new();
            let mut i = s.len();
            while i > 0 {
                let end = i;
                while i > 0 && s[i - 1] == '`' {
                    i -= 1;
                }
                if i == end {
                    i -= 1;
                    continue;
                }
                let run = end - i;
                while nearest.len() <= run {
                    nearest.push(0);
                }
                self.partner[i] = nearest[run];
                if run > 1 {
                    self.partner[i + 1] = nearest[run - 1];
                }
                nearest[run] = i;
            }
        }
        self.partner[i]
    }

    fn render(&mut self, out: &mut String) {
        let s = self.s;
        let mut i = 0;
        while i < s.len() {
            work(1);
            let c = s[i];
            match c {
                '\u{0}' => {
                    out.push_str("<br>");
                    i += 1;
                }
                '\\' if s.get(i + 1).is_some_and(|n| n.is_ascii_punctuation()) => {
                    escape_char(s[i + 1], out);
                    i += 2;
                }
                '`' => i = self.code_span(i, out),
                '*' | '_' | '~' => i = self.emphasis(i, out),
                '!' if s.get(i + 1) == Some(&'[') => match self.link(i + 1) {
                    Some((close, dest, title, end)) => {
                        out.push_str(&link_open(&dest, &title));
                        let alt: String = s[i + 2..close].iter().collect();
                        escape(if alt.is_empty() { "image" } else { &alt }, out);
                        out.push_str("</a>");
                        i = end;
                    }
                    None => {
                        out.push('!');
                        i += 1;
                    }
                },
                '[' => match self.link(i) {
                    Some((close, dest, title, end)) => {
                        out.push_str(&link_open(&dest, &title));
                        inline_chars(&s[i + 1..close], self.depth + 1, out);
                        out.push_str("</a>");
                        i = end;
                    }
                    None => {
                        out.push('[');
                        i += 1;
                    }
                },
                '<' => match autolink(s, i) {
                    Some((url, end)) => {
                        out.push_str(&link_open(&url, ""));
                        escape(&url, out);
                        out.push_str("</a>");
                        i = end;
                    }
                    None => {
                        out.push_str("&lt;");
                        i += 1;
                    }
                },
                'h' if (i == 0 || !s[i - 1].is_alphanumeric())
                    && (starts_with(s, i, "http://") || starts_with(s, i, "https://")) =>
                {
                    match bare_url(s, i) {
                        Some(end) => {
                            let url: String = s[i..end].iter().collect();
                            out.push_str(&link_open(&url, ""));
                            escape(&url, out);
                            out.push_str("</a>");
                            i = end;
                        }
                        None => {
                            out.push('h');
                            i += 1;
                        }
                    }
                }
                _ => {
                    escape_char(c, out);
                    i += 1;
                }
            }
        }
    }

    fn code_span(&mut self, start: usize, out: &mut String) -> usize {
        let s = self.s;
        let run = run_length(s, start, '`');
        let close = self.partner(start);
        if close == 0 {
            // No closing run: the backticks are text.
            for _ in 0..run {
                out.push('`');
            }
            return start + run;
        }
        work(close - start);
        let mut content: String = s[start + run..close].iter().map(|c| if *c == '\n' { ' ' } else { *c }).collect();
        if content.len() >= 2 && content.starts_with(' ') && content.ends_with(' ') && !content.trim().is_empty() {
            content = content[1..content.len() - 1].to_string();
        }
        out.push_str("<code>");
        escape(&content, out);
        out.push_str("</code>");
        close + run
    }

    /// `*em*`, `**strong**`, `***both***`, `_em_`, `__strong__`, `~~deleted~~`. An `_` inside a
    /// word (snake_case) is never emphasis.
    fn emphasis(&mut self, start: usize, out: &mut String) -> usize {
        let s = self.s;
        let c = s[start];
        let run = run_length(s, start, c);
        let literal = |out: &mut String| {
            for _ in 0..run {
                out.push(c);
            }
            start + run
        };
        let before = start.checked_sub(1).map(|i| s[i]);
        let after = s.get(start + run).copied();
        let opens = after.is_some_and(|a| !a.is_whitespace())
            && !(c == '_' && before.is_some_and(char::is_alphanumeric))
            && (c != '~' || run == 2);
        if !opens || run > 3 {
            return literal(out);
        }
        let Some(close) = self.find_closer(start + run, c, run) else { return literal(out) };
        let (open_tags, close_tags) = match (c, run) {
            ('~', _) => ("<del>", "</del>"),
            (_, 1) => ("<em>", "</em>"),
            (_, 2) => ("<strong>", "</strong>"),
            _ => ("<em><strong>", "</strong></em>"),
        };
        out.push_str(open_tags);
        inline_chars(&s[start + run..close], self.depth + 1, out);
        out.push_str(close_tags);
        close + run
    }

    fn find_closer(&mut self, from: usize, c: char, run: usize) -> Option<usize> {
        let s = self.s;
        let kind = match c {
            '*' => run - 1,
            '_' => run + 2,
            _ => 6,
        };
        let search = 1 << kind;
        if self.passed.is_empty() {
            work(s.len());
            for _ in s {
                self.passed.push(0);
            }
        }
        let mut i = from;
        while i < s.len() && self.passed[i] & search == 0 {
            work(1);
            self.passed[i] |= search;
            match s[i] {
                '\\' => i += 2,
                // Code spans hide delimiters.
                '`' => {
                    let open = run_length(s, i, '`');
                    i = match self.partner(i) {
                        0 => i + open,
                        close => close + open,
                    };
                }
                x if x == c => {
                    let found = run_length(s, i, c);
                    let before = s[i - 1];
                    let after = s.get(i + found).copied();
                    let closes = !(before.is_whitespace() || c == '_' && after.is_some_and(char::is_alphanumeric));
                    if found == run && closes && i > from {
                        return Some(i);
                    }
                    i += found;
                }
                _ => i += 1,
            }
        }
        None
    }

    /// `[text](destination "title")` starting at the `[`; returns where the text closes, the
    /// destination, the title and where the link ends.
    fn link(&mut self, start: usize) -> Option<(usize, String, String, usize)> {
        let s = self.s;
        let close = self.partner(start);
        if close == 0 || s.get(close + 1) != Some(&'(') {
            return None;
        }
        // A destination or title never runs over the `](` of another link, so no two links'
        // searches read the same characters (`[](a` repeated was quadratic).
        let another_link = |i: usize| s[i] == ']' && s.get(i + 1) == Some(&'(');
        let mut i = skip(s, close + 2, |i| s[i] == ' ');
        let dest: String;
        if s.get(i) == Some(&'<') {
            let end = skip(s, i + 1, |j| s[j] != '>' && s[j] != '\n' && !another_link(j));
            s.get(end).filter(|c| **c == '>')?;
            dest = s[i + 1..end].iter().collect();
            i = end + 1;
        } else {
            let mut parens = 0;
            let end = skip(s, i, |j| {
                let c = s[j];
                if c.is_whitespace() || (c == ')' && parens == 0) || another_link(j) {
                    return false;
                }
                parens += (c == '(') as i32 - (c == ')') as i32;
                true
            });
            dest = s[i..end].iter().collect();
            i = end;
        }
        i = skip(s, i, |j| s[j].is_whitespace());
        let mut title = String::new();
        if let Some(&quote) = s.get(i).filter(|c| matches!(c, '"' | '\'')) {
            let end = skip(s, i + 1, |j| s[j] != quote && !another_link(j));
            s.get(end)?;
            title = s[i + 1..end].iter().collect();
            i = skip(s, end + 1, |j| s[j].is_whitespace());
        }
        (s.get(i) == Some(&')')).then_some((close, dest, title, i + 1))
    }
}

/// The first position from `i` on where `go` is false, or the end.
fn skip(s: &[char], mut i: usize, mut go: impl FnMut(usize) -> bool) -> usize {
    while i < s.len() && go(i) {
        work(1);
        i += 1;
    }
    i
}

fn starts_with(s: &[char], at: usize, prefix: &str) -> bool {
    (at..).zip(prefix.chars()).all(|(index, c)| s.get(index) == Some(&c))
}

fn run_length(s: &[char], at: usize, c: char) -> usize {
    skip(s, at, |i| s[i] == c) - at
}

/// `<https://example.com>` or `<someone@example.com>`.
fn autolink(s: &[char], start: usize) -> Option<(String, usize)> {
    let end = skip(s, start + 1, |i| s[i] != '>' && !s[i].is_whitespace() && s[i] != '<');
    if s.get(end) != Some(&'>') {
        return None;
    }
    let inner: String = s[start + 1..end].iter().collect();
    let lower = inner.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:") {
        Some((inner, end + 1))
    } else if inner.contains('@') && !inner.contains(':') {
        Some((format!("mailto:{inner}"), end + 1))
    } else {
        None
    }
}

/// A bare `https://…` runs to whitespace; trailing punctuation and unbalanced `)` stay text.
fn bare_url(s: &[char], start: usize) -> Option<usize> {
    let mut end = skip(s, start, |i| !s[i].is_whitespace() && s[i] != '<' && s[i] != '\u{0}');
    // Parentheses are counted once, not again per trimmed character (quadratic on a run of dots).
    work(2 * (end - start));
    let (mut open, mut close) = (0, 0);
    for c in &s[start..end] {
        match c {
            '(' => open += 1,
            ')' => close += 1,
            _ => {}
        }
    }
    loop {
        let last = s[end - 1];
        if ".,:;!?*_~'\"".contains(last) || (last == ')' && close > open) {
            close -= (last == ')') as usize;
            end -= 1;
        } else {
            break;
        }
    }
    let scheme = if s[start + 4] == 's' { 8 } else { 7 };
    (end > start + scheme).then_some(end)
}

fn link_open(dest: &str, title: &str) -> String {
    let mut out = String::from("<a href=\"");
    if is_safe_url(dest) {
        escape(dest, &mut out);
    } else {
        out.push('#');
    }
    out.push('"');
    if !title.is_empty() {
        out.push_str(" title=\"");
        escape(title, &mut out);
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
    match lower.find([':', '/', '?', '#']) {
        Some(index) if lower.as_bytes()[index] == b':' => matches!(&lower[..index], "http" | "https" | "mailto"),
        _ => true,
    }
}

fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        escape_char(c, out);
    }
}

fn escape_char(c: char, out: &mut String) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        '\u{0}' => out.push('\u{FFFD}'),
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn md(text: &str) -> String {
        render_markdown(text)
    }

    #[test]
    fn paragraphs_headings_and_rules() {
        assert_eq!(md("Hello\nworld\n\nAgain"), "<p>Hello\nworld</p><p>Again</p>");
        assert_eq!(md("# Title\n## Sub ##\n#nope"), "<h1>Title</h1><h2>Sub</h2><p>#nope</p>");
        assert_eq!(md("a\n\n---\n\nb"), "<p>a</p><hr><p>b</p>");
    }

    #[test]
    fn emphasis_code_and_snake_case() {
        assert_eq!(
            md("**bold** and *it* and ***both***"),
            "<p><strong>bold</strong> and <em>it</em> and <em><strong>both</strong></em></p>"
        );
        assert_eq!(md("a snake_case_name and __init__"), "<p>a snake_case_name and <strong>init</strong></p>");
        assert_eq!(md("`a < b` and ``x ` y``"), "<p><code>a &lt; b</code> and <code>x ` y</code></p>");
        assert_eq!(md("2 * 3 * 4"), "<p>2 * 3 * 4</p>");
        assert_eq!(md("~~gone~~ \\*literal\\*"), "<p><del>gone</del> *literal*</p>");
        assert_eq!(md("*not `closed*` here"), "<p>*not <code>closed*</code> here</p>");
    }

    #[test]
    fn fenced_code_keeps_its_language_and_escapes_its_content() {
        assert_eq!(
            md("```rust\nfn main() { let a = 1 < 2; }\n```\nafter"),
            "<pre><code class=\"language-rust\">fn main() { let a = 1 &lt; 2; }\n</code></pre><p>after</p>"
        );
        // Still streaming: the block runs to the end.
        assert_eq!(md("```\nline 1\nline 2"), "<pre><code>line 1\nline 2\n</code></pre>");
        assert_eq!(md("````\n```\n````"), "<pre><code>```\n</code></pre>");
    }

    #[test]
    fn lists_nest_and_number() {
        assert_eq!(md("- a\n- b\n  - c\n- d"), "<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>");
        assert_eq!(md("1. one\n2. two"), "<ol><li>one</li><li>two</li></ol>");
        assert_eq!(md("3. three\n4. four"), "<ol start=\"3\"><li>three</li><li>four</li></ol>");
        assert_eq!(
            md("- [x] done\n- [ ] todo"),
            "<ul><li><input type=\"checkbox\" checked disabled> done</li><li><input type=\"checkbox\" disabled> todo</li></ul>"
        );
        assert_eq!(md("- a\n\n- b"), "<ul><li>a</li><li>b</li></ul>");
        assert_eq!(
            md("1. **First**, with text\n   that goes on\n\n   and a second paragraph\n2. Second"),
            "<ol><li><p><strong>First</strong>, with text\nthat goes on</p><p>and a second paragraph</p></li><li>Second</li></ol>"
        );
        assert_eq!(md("- item\n```\ncode\n```"), "<ul><li>item</li></ul><pre><code>code\n</code></pre>");
    }

    #[test]
    fn quotes_and_tables() {
        assert_eq!(md("> quoted\n> **more**"), "<blockquote><p>quoted\n<strong>more</strong></p></blockquote>");
        assert_eq!(
            md("| a | b |\n|:--|--:|\n| 1 | `2` |\n\nafter"),
            "<table><thead><tr><th style=\"text-align:left\">a</th><th style=\"text-align:right\">b</th></tr></thead>\
             <tbody><tr><td style=\"text-align:left\">1</td><td style=\"text-align:right\"><code>2</code></td></tr></tbody></table><p>after</p>"
        );
    }

    #[test]
    fn raw_html_from_the_agent_is_shown_as_text() {
        let html = md("hello <script>alert(1)</script> and <img src=x onerror=alert(1)>");
        assert_eq!(html, "<p>hello &lt;script&gt;alert(1)&lt;/script&gt; and &lt;img src=x onerror=alert(1)&gt;</p>");
        assert!(!md("<div onclick=\"x()\">\nhi\n</div>\n").contains("<div"));
    }

    #[test]
    fn script_links_are_neutralized_and_others_open_in_a_new_tab() {
        for bad in
            ["javascript:alert(1)", "JavaScript:alert(1)", "java\tscript:alert(1)", "data:text/html,x", "vbscript:x"]
        {
            let html = md(&format!("[x](<{bad}>)"));
            assert!(html.contains("href=\"#\""), "{bad}: {html}");
        }
        assert_eq!(
            md("[docs](https://example.com/a?b=1&c=\"2\" \"The docs\")"),
            "<p><a href=\"https://example.com/a?b=1&amp;c=&quot;2&quot;\" title=\"The docs\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">docs</a></p>"
        );
        assert!(md("[rel](/s/abc)").contains("href=\"/s/abc\""));
    }

    #[test]
    fn bare_urls_and_autolinks_become_links() {
        assert_eq!(
            md("See https://example.com/x_(y). Or <mailto:a@b.c>."),
            "<p>See <a href=\"https://example.com/x_(y)\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">https://example.com/x_(y)</a>. \
             Or <a href=\"mailto:a@b.c\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">mailto:a@b.c</a>.</p>"
        );
        assert_eq!(md("nothttps://x.y"), "<p>nothttps://x.y</p>");
    }

    #[test]
    fn images_become_links() {
        let html = md("![a cat](https://example.com/cat.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("<a href=\"https://example.com/cat.png\""), "{html}");
        assert!(html.contains(">a cat</a>"), "{html}");
    }

    #[test]
    fn hard_breaks() {
        assert_eq!(md("one  \ntwo\\\nthree"), "<p>one<br>two<br>three</p>");
    }

    /// Renders `text` and returns how many characters were read doing it.
    fn work_for(text: &str) -> usize {
        WORK.with(|work| work.set(0));
        render_markdown(text);
        WORK.with(|work| work.get())
    }

    /// The bound on characters read per character of text, from the code. At each nesting level
    /// a character is read at most
    /// - 8 times by block rules: a loop takes up a line at most 6 times (as a block's start, its
    ///   end, the next block's start, a table's delimiter, an item's blank or lazy line) and a
    ///   paragraph's lines are read again to join them, and again to find where an item's text ends;
    /// - 27 times by inline rules: 1 to collect it, 3 to pair brackets and backtick runs, 1 to walk
    ///   it, 2 for each of the 7 kinds of emphasis search (its position and the delimiter run
    ///   there, passed by one search of a kind only), 2 for link tails (which never overlap, but an
    ///   image's is read twice), 1 for autolinks, 3 for a bare URL and 1 for a code span.
    ///
    /// A character is inside at most `MAX_NESTING` levels, plus the one where it is shown as text.
    /// Measured: at most about 97 (links nested 16 deep, each opening every kind of emphasis).
    const WORK_PER_CHARACTER: usize = (8 + 27) * (MAX_NESTING + 1);

    /// The most HTML per character of text: a table row of a single `|` gets `MAX_TABLE_COLUMNS`
    /// empty cells of up to 35 bytes (`<td style="text-align:center"></td>`) for two bytes.
    const HTML_PER_CHARACTER: usize = 18 * MAX_TABLE_COLUMNS;

    fn assert_linear(text: &str) {
        let work = work_for(text);
        let per_character = work as f64 / text.len().max(1) as f64;
        assert!(
            work <= WORK_PER_CHARACTER * (text.len() + 1),
            "{work} characters read for {} of text ({per_character:.1} each): {:.60?}…",
            text.len(),
            text
        );
        let html = render_markdown(text);
        assert!(html.len() <= HTML_PER_CHARACTER * (text.len() + 1), "{} bytes of HTML for {}", html.len(), text.len());
    }

    #[test]
    fn unclosed_brackets_are_read_a_bounded_number_of_times() {
        assert_eq!(md("[[[ a"), "<p>[[[ a</p>");
        for text in [
            "[".repeat(60_000),
            format!("[{}", "a".repeat(60_000)),
            "[a ".repeat(20_000),
            "![".repeat(30_000),
            format!("{}{}", "[".repeat(30_000), "]".repeat(30_000)),
            format!("{}{}", "[".repeat(30_000), "](".repeat(15_000)),
            "](".repeat(30_000),
            "[](a".repeat(15_000),
            "[](<".repeat(15_000),
            "[](a \"".repeat(10_000),
            "[](a '".repeat(10_000),
            format!("{}{}", "[](a".repeat(10_000), " ".repeat(20_000)),
            "[a](".repeat(15_000),
            "(".repeat(60_000),
            format!("[a]({}", "(".repeat(60_000)),
        ] {
            assert_linear(&text);
        }
    }

    #[test]
    fn unclosed_emphasis_is_read_a_bounded_number_of_times() {
        assert_eq!(md("*a *a *a"), "<p>*a *a *a</p>");
        for text in [
            "*a ".repeat(20_000),
            "_a ".repeat(20_000),
            "**a ".repeat(15_000),
            "***a ".repeat(12_000),
            "~~a ".repeat(15_000),
            "a*".repeat(30_000),
            "*a **a ***a _a __a ___a ~~a ".repeat(2_000),
            format!("*a **a ***a _a __a ___a ~~a {}", "x ".repeat(30_000)),
            "*".repeat(60_000),
            "*`".repeat(30_000),
            "*\\".repeat(30_000),
            // Every level of nesting opens all seven kinds of emphasis and closes none.
            format!("{}{}{}", "*a **a ***a _a __a ___a ~~a [".repeat(20), "x ".repeat(30_000), "](/)".repeat(20)),
            format!(
                "{}{}{}",
                "*a **a ***a _a __a ___a ~~a `` > - [".repeat(20),
                "x ".repeat(30_000),
                "](/)".repeat(20)
            ),
        ] {
            assert_linear(&text);
        }
    }

    #[test]
    fn unclosed_code_spans_are_read_a_bounded_number_of_times() {
        // Runs of every length up to 340, each without a partner: 58,000 characters.
        let lengths: String = (1..=340).rev().map(|n| format!("{} ", "`".repeat(n))).collect();
        for text in [
            "`a ".repeat(20_000),
            "``a `".repeat(12_000),
            "\\``".repeat(20_000),
            lengths,
            format!("*{}", "`a`` ".repeat(12_000)),
        ] {
            assert_linear(&text);
        }
    }

    #[test]
    fn urls_and_autolinks_are_read_a_bounded_number_of_times() {
        for text in [
            format!("https://a.b{}", ".".repeat(60_000)),
            format!("https://a.b{}", ")".repeat(60_000)),
            "ahttps://a".repeat(6_000),
            "<".repeat(60_000),
            "<a".repeat(30_000),
        ] {
            assert_linear(&text);
        }
    }

    #[test]
    fn blocks_are_read_a_bounded_number_of_times() {
        for text in [
            "> ".repeat(30_000),
            ">".repeat(60_000),
            "- ".repeat(30_000),
            "1. ".repeat(20_000),
            format!("- a\n{}  b", "\n".repeat(60_000)),
            (0..300).map(|n| format!("{}- a\n", " ".repeat(2 * n))).collect(),
            "# a\n".repeat(15_000),
            "```\n".repeat(15_000),
            "- a\n\n".repeat(10_000),
            "> - ".repeat(15_000),
            format!("{}\n{}\n{}", "a|".repeat(32), "-|".repeat(32), "|\n".repeat(30_000)),
            "a|b\n-|-\n".repeat(7_000),
        ] {
            assert_linear(&text);
        }
    }

    #[test]
    fn structures_nest_sixteen_deep_and_deeper_ones_are_text() {
        let html = md(&">".repeat(100_000));
        assert_eq!(html.matches("<blockquote>").count(), MAX_NESTING);
        assert!(html.contains("&gt;&gt;&gt;"), "{:.300}", html);
        let html = md(&format!("{}*x*{}", "[".repeat(20), "](/)".repeat(20)));
        assert_eq!(html.matches("<a ").count(), MAX_NESTING);
        assert!(html.contains(">[[[[*x*](/)](/)](/)](/)</a>"), "{html}");
        let html = md(&format!("{}*x*{}", "[".repeat(10), "](/)".repeat(10)));
        assert!(html.contains("<em>x</em>"), "{html}");
    }

    #[test]
    fn a_table_wider_than_the_cap_is_text() {
        let html = md(&format!("{}\n{}", "a|".repeat(MAX_TABLE_COLUMNS + 1), "-|".repeat(MAX_TABLE_COLUMNS + 1)));
        assert!(!html.contains("<table>"), "{html}");
        let html = md(&format!("{}\n{}", "a|".repeat(MAX_TABLE_COLUMNS), "-|".repeat(MAX_TABLE_COLUMNS)));
        assert!(html.contains("<table>"), "{html}");
    }

    #[test]
    fn a_link_destination_stops_at_another_link() {
        assert_eq!(
            md("[a](b [c](d)"),
            format!("<p>[a](b {}</p>", "<a href=\"d\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">c</a>")
        );
        assert!(md("[a](b](c))").starts_with("<p>[a](b]"));
    }

    /// Text made to defeat searching ahead: runs of openers without closers, closers without
    /// openers, halves of links, block markers, and openers around a middle with closers after it.
    fn adversarial_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            proptest::sample::select(vec![
                "[", "]", "(", ")", "`", "``", "*", "_", "~~", "**", "***", "__", "!", "\\", "<", ">", "\"", "'",
                "[](a", "[](<", "[](a \"", "](", "[a", "*a ", "_a ", "a*", "`a", "\\`", "http://a", ".", "<a", "> ",
                "- ", "1. ", "  ", "\n", "\n\n", "|", "|-|", "```", "# ", "a", " ",
            ])
            .prop_map(str::to_string),
            "[\\[\\]()*_`~<>!\\\\ a\n|#-]{1,6}",
        ];
        let runs = proptest::collection::vec((piece.clone(), 1..4_000usize), 1..6)
            .prop_map(|runs| runs.iter().map(|(piece, times)| piece.repeat(*times)).collect::<String>());
        let nested = (piece.clone(), runs.clone(), piece, 1..4_000usize)
            .prop_map(|(open, middle, close, times)| format!("{}{middle}{}", open.repeat(times), close.repeat(times)));
        prop_oneof![runs, nested]
    }

    /// The tags and attributes the renderer may write; anything else came from the input.
    fn only_our_markup(html: &str) -> Result<(), String> {
        const TAGS: &[&str] = &[
            "p",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "hr",
            "br",
            "pre",
            "code",
            "em",
            "strong",
            "del",
            "a",
            "ul",
            "ol",
            "li",
            "blockquote",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "input",
        ];
        let mut rest = html;
        while let Some(open) = rest.find('<') {
            rest = &rest[open + 1..];
            let end = rest.find('>').ok_or("unclosed tag")?;
            let tag = &rest[..end];
            let name = tag.trim_start_matches('/').split([' ', '>']).next().unwrap_or("");
            if !TAGS.contains(&name) {
                return Err(format!("tag <{tag}>"));
            }
            let mut attributes = tag[name.len() + tag.starts_with('/') as usize..].trim_start();
            while !attributes.is_empty() {
                let key_end = attributes.find(['=', ' ']).unwrap_or(attributes.len());
                let key = &attributes[..key_end];
                let mut value = "";
                attributes = &attributes[key_end..];
                if let Some(quoted) = attributes.strip_prefix("=\"") {
                    let close = quoted.find('"').ok_or("unclosed attribute")?;
                    value = &quoted[..close];
                    attributes = &quoted[close + 1..];
                }
                attributes = attributes.trim_start();
                if !["href", "title", "target", "rel", "class", "start", "style", "type", "checked", "disabled"]
                    .contains(&key)
                {
                    return Err(format!("attribute {key} in <{tag}>"));
                }
                let scheme = value.split([':', '/', '?', '#']).next().filter(|_| value.contains(':')).unwrap_or("");
                let scheme_ends = value.find([':', '/', '?', '#']).is_some_and(|i| value[i..].starts_with(':'));
                if key == "href"
                    && scheme_ends
                    && !["http", "https", "mailto"].contains(&scheme.to_ascii_lowercase().as_str())
                {
                    return Err(format!("href {value}"));
                }
            }
            rest = &rest[end..];
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn any_text_renders_without_panicking_and_without_foreign_markup(text in "(?s).{0,400}") {
            let html = render_markdown(&text);
            prop_assert!(only_our_markup(&html).is_ok(), "{:?} -> {html}: {:?}", text, only_our_markup(&html));
        }

        #[test]
        fn markdown_like_text_renders_without_foreign_markup(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("*"), Just("**"), Just("_"), Just("`"), Just("```"), Just("~~"), Just("["), Just("]"),
                    Just("("), Just(")"), Just("<"), Just(">"), Just("\n"), Just("\n\n"), Just("- "), Just("1. "),
                    Just("> "), Just("# "), Just("|"), Just("---"), Just("  "), Just("\\"), Just("https://a.b"),
                    Just("javascript:alert(1)"), Just("\"onerror=x"), Just("<script>"), Just("word"), Just("é"),
                ],
                0..60,
            )
        ) {
            let text: String = parts.concat();
            let html = render_markdown(&text);
            prop_assert!(only_our_markup(&html).is_ok(), "{:?} -> {html}: {:?}", text, only_our_markup(&html));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn any_text_is_read_a_bounded_number_of_times_per_character(text in adversarial_text()) {
            assert_linear(&text);
        }
    }
}
