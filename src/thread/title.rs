//! A session's title from its first message, until the person names it.

/// A title from the first message: its first line, cut at a word near 60 characters.
pub fn title_from_message(text: &str) -> String {
    const MAX: usize = 60;
    let line = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("New session");
    if line.chars().count() <= MAX {
        return line.to_string();
    }
    let mut title = String::new();
    for word in line.split_whitespace() {
        if title.chars().count() + word.chars().count() + 1 > MAX {
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    if title.is_empty() {
        title = line.chars().take(MAX).collect();
    }
    title.push('…');
    title
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn titles_come_from_the_first_line_cut_at_a_word() {
        assert_eq!(title_from_message("\n  Fix the build \nplease"), "Fix the build");
        let long = "word ".repeat(30);
        let title = title_from_message(&long);
        assert!(title.ends_with('…') && title.chars().count() <= 61, "{title}");
    }
}
