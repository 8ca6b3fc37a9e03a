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

use leptos::prelude::*;

/// Markdown, re-rendered when the text changes (each streamed word).
pub fn markdown(text: Signal<String>) -> impl IntoView {
    view! { <div class="markdown" inner_html=move || text.with(|text| render_markdown(text)) /> }
}

/// Renders markdown to HTML that is safe to put in the page.
pub fn render_markdown(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    blocks(&lines, &mut out);
    out
}

// ---- Blocks ----

fn blocks(lines: &[&str], out: &mut String) {
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() {
            i += 1;
        } else if let Some((fence, info)) = fence_open(line) {
            i = code_block(lines, i, fence, info, out);
        } else if let Some((level, title)) = heading(line) {
            out.push_str(&format!("<h{level}>"));
            inline(title, out);
            out.push_str(&format!("</h{level}>"));
            i += 1;
        } else if is_rule(line) {
            out.push_str("<hr>");
            i += 1;
        } else if quote_line(line).is_some() {
            let start = i;
            let mut inner = Vec::new();
            while let Some(rest) = lines.get(i).and_then(|l| quote_line(l)) {
                inner.push(rest);
                i += 1;
            }
            debug_assert!(i > start);
            out.push_str("<blockquote>");
            blocks(&inner, out);
            out.push_str("</blockquote>");
        } else if list_marker(line).is_some() {
            i = list(lines, i, out);
        } else if let Some(columns) = table_start(lines, i) {
            i = table(lines, i, columns, out);
        } else {
            let start = i;
            i += 1;
            while i < lines.len() && !lines[i].trim().is_empty() && !interrupts_paragraph(lines[i]) {
                i += 1;
            }
            out.push_str("<p>");
            inline_lines(&lines[start..i], out);
            out.push_str("</p>");
        }
    }
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
        let closing = unindent(lines[i]).is_some_and(|rest| {
            let rest = rest.trim_end();
            rest.starts_with(fence) && rest.chars().all(|c| Some(c) == fence.chars().next())
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

fn list_marker(line: &str) -> Option<Marker> {
    let indent = line.len() - line.trim_start_matches(' ').len();
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
fn list(lines: &[&str], start: usize, out: &mut String) -> usize {
    let first = list_marker(lines[start]).expect("a list starts at a marker");
    let ordered = first.ordered;
    if ordered && first.number != 1 {
        out.push_str(&format!("<ol start=\"{}\">", first.number));
    } else {
        out.push_str(if ordered { "<ol>" } else { "<ul>" });
    }
    let mut i = start;
    while i < lines.len() {
        let Some(marker) = list_marker(lines[i]).filter(|m| m.ordered == ordered && m.indent <= first.indent + 1)
        else {
            break;
        };
        let mut item: Vec<&str> = vec![lines[i].get(marker.content..).unwrap_or("")];
        i += 1;
        let mut blank_inside = false;
        while i < lines.len() {
            let line = lines[i];
            let indent = line.len() - line.trim_start_matches(' ').len();
            if line.trim().is_empty() {
                // A blank line continues the item only if indented content follows.
                let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
                match next {
                    Some(next) if next.len() - next.trim_start_matches(' ').len() >= marker.content => {
                        blank_inside = true;
                        item.push("");
                        i += 1;
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
        list_item(&item, blank_inside, out);
        out.push_str("</li>");
        // Blank lines between items of the same list.
        let mut j = i;
        while j < lines.len() && lines[j].trim().is_empty() {
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
    item.last().is_some_and(|last| !last.trim().is_empty()) && !interrupts_paragraph(line)
}

fn list_item(lines: &[&str], loose: bool, out: &mut String) {
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
    let text_end = lines.iter().position(|l| l.trim().is_empty() || interrupts_paragraph(l)).unwrap_or(lines.len());
    if !loose && text_end > 0 {
        inline_lines(&lines[..text_end], out);
        blocks(&lines[text_end..], out);
    } else {
        blocks(&lines, out);
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
    (aligns.len() == table_row(header).len()).then_some(aligns)
}

fn table(lines: &[&str], start: usize, aligns: Vec<&str>, out: &mut String) -> usize {
    let cells = |line: &str, tag: &str, out: &mut String| {
        out.push_str("<tr>");
        let row = table_row(line);
        for (index, align) in aligns.iter().enumerate() {
            out.push_str(&format!("<{tag}{align}>"));
            inline(row.get(index).copied().unwrap_or(""), out);
            out.push_str(&format!("</{tag}>"));
        }
        out.push_str("</tr>");
    };
    out.push_str("<table><thead>");
    cells(lines[start], "th", out);
    out.push_str("</thead><tbody>");
    let mut i = start + 2;
    while i < lines.len() && lines[i].contains('|') && !lines[i].trim().is_empty() {
        cells(lines[i], "td", out);
        i += 1;
    }
    out.push_str("</tbody></table>");
    i
}

// ---- Inlines ----

/// The lines of a paragraph: soft breaks stay newlines; two trailing spaces or a backslash make
/// a hard break.
fn inline_lines(lines: &[&str], out: &mut String) {
    let mut text = String::new();
    for (index, line) in lines.iter().enumerate() {
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
    inline(&text, out);
}

fn inline(text: &str, out: &mut String) {
    let chars: Vec<char> = text.chars().collect();
    inline_chars(&chars, out);
}

fn inline_chars(s: &[char], out: &mut String) {
    let mut i = 0;
    while i < s.len() {
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
            '`' => i = code_span(s, i, out),
            '*' | '_' | '~' => i = emphasis(s, i, out),
            '!' if s.get(i + 1) == Some(&'[') => match link(s, i + 1) {
                Some((text, dest, title, end)) => {
                    out.push_str(&link_open(&dest, &title));
                    let alt: String = text.iter().collect();
                    escape(if alt.is_empty() { "image" } else { &alt }, out);
                    out.push_str("</a>");
                    i = end;
                }
                None => {
                    out.push('!');
                    i += 1;
                }
            },
            '[' => match link(s, i) {
                Some((text, dest, title, end)) => {
                    out.push_str(&link_open(&dest, &title));
                    inline_chars(&text, out);
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
            'h' if starts_with(s, i, "http://") || starts_with(s, i, "https://") => {
                let at_word_start = i == 0 || !s[i - 1].is_alphanumeric();
                match bare_url(s, i).filter(|_| at_word_start) {
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

fn starts_with(s: &[char], at: usize, prefix: &str) -> bool {
    let mut index = at;
    for c in prefix.chars() {
        if s.get(index) != Some(&c) {
            return false;
        }
        index += 1;
    }
    true
}

fn run_length(s: &[char], at: usize, c: char) -> usize {
    s[at..].iter().take_while(|x| **x == c).count()
}

fn code_span(s: &[char], start: usize, out: &mut String) -> usize {
    let run = run_length(s, start, '`');
    let mut i = start + run;
    while i < s.len() {
        if s[i] == '`' {
            let close = run_length(s, i, '`');
            if close == run {
                let mut content: String = s[start + run..i].iter().map(|c| if *c == '\n' { ' ' } else { *c }).collect();
                if content.len() >= 2
                    && content.starts_with(' ')
                    && content.ends_with(' ')
                    && !content.trim().is_empty()
                {
                    content = content[1..content.len() - 1].to_string();
                }
                out.push_str("<code>");
                escape(&content, out);
                out.push_str("</code>");
                return i + run;
            }
            i += close;
        } else {
            i += 1;
        }
    }
    // No closing run: the backticks are text.
    for _ in 0..run {
        out.push('`');
    }
    start + run
}

/// `*em*`, `**strong**`, `***both***`, `_em_`, `__strong__`, `~~deleted~~`. An `_` inside a word
/// (snake_case) is never emphasis.
fn emphasis(s: &[char], start: usize, out: &mut String) -> usize {
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
    let Some(close) = find_closer(s, start + run, c, run) else { return literal(out) };
    let inner = &s[start + run..close];
    let (open_tags, close_tags) = match (c, run) {
        ('~', _) => ("<del>", "</del>"),
        (_, 1) => ("<em>", "</em>"),
        (_, 2) => ("<strong>", "</strong>"),
        _ => ("<em><strong>", "</strong></em>"),
    };
    out.push_str(open_tags);
    inline_chars(inner, out);
    out.push_str(close_tags);
    close + run
}

fn find_closer(s: &[char], from: usize, c: char, run: usize) -> Option<usize> {
    let mut i = from;
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '`' => {
                // Code spans hide delimiters.
                let open = run_length(s, i, '`');
                let mut j = i + open;
                let mut end = None;
                while j < s.len() {
                    if s[j] == '`' {
                        let close = run_length(s, j, '`');
                        if close == open {
                            end = Some(j + close);
                            break;
                        }
                        j += close;
                    } else {
                        j += 1;
                    }
                }
                i = end.unwrap_or(i + open);
            }
            x if x == c => {
                let found = run_length(s, i, c);
                let before = s[i - 1];
                let after = s.get(i + found).copied();
                let closes = !before.is_whitespace() && !(c == '_' && after.is_some_and(char::is_alphanumeric));
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

/// `[text](destination "title")` starting at the `[`; returns the text, destination, title and
/// where the link ends.
fn link(s: &[char], start: usize) -> Option<(Vec<char>, String, String, usize)> {
    let mut depth = 0;
    let mut i = start;
    let close = loop {
        match s.get(i)? {
            '\\' => i += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break i;
                }
            }
            '\n' if s.get(i + 1) == Some(&'\n') => return None,
            _ => {}
        }
        i += 1;
    };
    if s.get(close + 1) != Some(&'(') {
        return None;
    }
    let mut i = close + 2;
    while s.get(i).is_some_and(|c| *c == ' ') {
        i += 1;
    }
    let mut dest = String::new();
    if s.get(i) == Some(&'<') {
        i += 1;
        while let Some(c) = s.get(i).filter(|c| **c != '>' && **c != '\n') {
            dest.push(*c);
            i += 1;
        }
        s.get(i).filter(|c| **c == '>')?;
        i += 1;
    } else {
        let mut parens = 0;
        while let Some(&c) = s.get(i) {
            if c.is_whitespace() || (c == ')' && parens == 0) {
                break;
            }
            parens += (c == '(') as i32 - (c == ')') as i32;
            dest.push(c);
            i += 1;
        }
    }
    while s.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    let mut title = String::new();
    if let Some(&quote) = s.get(i).filter(|c| matches!(c, '"' | '\'')) {
        i += 1;
        while let Some(&c) = s.get(i).filter(|c| **c != quote) {
            title.push(c);
            i += 1;
        }
        s.get(i)?;
        i += 1;
        while s.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
    }
    (s.get(i) == Some(&')')).then(|| (s[start + 1..close].to_vec(), dest, title, i + 1))
}

/// `<https://example.com>` or `<someone@example.com>`.
fn autolink(s: &[char], start: usize) -> Option<(String, usize)> {
    let end = s[start + 1..].iter().position(|c| *c == '>' || c.is_whitespace() || *c == '<')? + start + 1;
    if s[end] != '>' {
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
    let mut end = start;
    while end < s.len() && !s[end].is_whitespace() && s[end] != '<' && s[end] != '\u{0}' {
        end += 1;
    }
    loop {
        let last = s[end - 1];
        let open = s[start..end].iter().filter(|c| **c == '(').count();
        let close = s[start..end].iter().filter(|c| **c == ')').count();
        if ".,:;!?*_~'\"".contains(last) || (last == ')' && close > open) {
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
}
