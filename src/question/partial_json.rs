//! Closing a JSON document that was cut off, as an agent's arguments are while they stream: a
//! small state machine, read one character at a time, so that a preview can parse what has
//! arrived so far.

/// Closes a JSON document that was cut off: open strings, objects and lists are closed, a
/// dangling key gets `null`, and a half-written number or literal is dropped. The result of any
/// prefix of a valid document parses.
pub fn repair_partial_json(partial: &str) -> String {
    let mut document = PartialDocument::with_capacity(partial.len() + 8);
    for c in partial.chars() {
        document.read(c);
    }
    document.closed()
}

#[derive(Clone, Copy, PartialEq)]
enum Expect {
    Key,
    Colon,
    Value,
    Next,
}

/// What has been read of a document, and where it stands.
struct PartialDocument {
    /// The open containers: (is an object, what comes next in it).
    stack: Vec<(bool, Expect)>,
    out: String,
    /// Where the output may be cut back to if the document ends in the middle of a token.
    token_start: Option<usize>,
    in_string: bool,
    escape: bool,
    /// What comes next outside any container.
    top: Expect,
}

impl PartialDocument {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            stack: Vec::new(),
            out: String::with_capacity(capacity),
            token_start: None,
            in_string: false,
            escape: false,
            top: Expect::Value,
        }
    }

    /// What comes next in the innermost open container, or outside any.
    fn expected(&mut self) -> &mut Expect {
        self.stack.last_mut().map(|(_, e)| e).unwrap_or(&mut self.top)
    }

    /// A string ended: it was a key, and its colon comes next, or a value.
    fn string_ended(&mut self) {
        let e = self.expected();
        *e = match *e {
            Expect::Key => Expect::Colon,
            _ => Expect::Next,
        };
    }

    fn read(&mut self, c: char) {
        if self.in_string {
            self.read_in_string(c);
            return;
        }
        if self.token_start.is_some() && !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+')) {
            // A number or literal just ended.
            self.token_start = None;
            *self.expected() = Expect::Next;
        }
        self.read_outside_string(c);
    }

    fn read_in_string(&mut self, c: char) {
        self.out.push(c);
        if self.escape {
            self.escape = false;
        } else if c == '\\' {
            self.escape = true;
        } else if c == '"' {
            self.in_string = false;
            self.token_start = None;
            self.string_ended();
        }
    }

    fn read_outside_string(&mut self, c: char) {
        match c {
            '"' => {
                self.token_start = Some(self.out.len());
                self.in_string = true;
            }
            '{' | '[' => self.stack.push((c == '{', if c == '{' { Expect::Key } else { Expect::Value })),
            '}' | ']' => {
                self.stack.pop();
                *self.expected() = Expect::Next;
            }
            ':' => {
                if let Some((_, e)) = self.stack.last_mut() {
                    *e = Expect::Value;
                }
            }
            ',' => {
                if let Some((is_object, e)) = self.stack.last_mut() {
                    *e = if *is_object { Expect::Key } else { Expect::Value };
                }
            }
            c if c.is_whitespace() => {}
            _ => {
                if self.token_start.is_none() {
                    self.token_start = Some(self.out.len());
                }
            }
        }
        self.out.push(c);
    }

    /// The document with what is open closed, and what is half-written dropped.
    fn closed(mut self) -> String {
        if self.in_string {
            self.close_string();
        } else if let Some(start) = self.token_start {
            self.end_token(start);
        }
        self.close_containers();
        if self.out.trim().is_empty() { "null".to_string() } else { self.out }
    }

    fn close_string(&mut self) {
        let out = &mut self.out;
        // Drop a dangling escape (`\` or an unfinished `\u12`), then close the string.
        if self.escape {
            out.pop();
        } else if let Some(index) = out.rfind("\\u").filter(|i| out.len() - i < 6) {
            let backslashes = out[..index].chars().rev().take_while(|c| *c == '\\').count();
            if backslashes % 2 == 0 {
                out.truncate(index);
            }
        }
        out.push('"');
        self.string_ended();
    }

    /// A half-written number or literal: keep it only if it is complete.
    fn end_token(&mut self, start: usize) {
        let token = self.out[start..].to_string();
        if serde_json::from_str::<serde_json::Value>(&token).is_ok() {
            *self.expected() = Expect::Next;
        } else {
            self.out.truncate(start);
        }
    }

    fn close_containers(&mut self) {
        let out = &mut self.out;
        while let Some((is_object, expect)) = self.stack.pop() {
            let trimmed = out.trim_end().len();
            out.truncate(trimmed);
            match expect {
                Expect::Colon => out.push_str(":null"),
                Expect::Value if out.ends_with(':') => out.push_str("null"),
                _ => {}
            }
            if out.ends_with(',') {
                out.pop();
            }
            out.push(if is_object { '}' } else { ']' });
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    #[test]
    fn repair_closes_what_is_open() {
        assert_eq!(repair_partial_json(r#"{"a": "b"#), r#"{"a": "b"}"#);
        assert_eq!(repair_partial_json(r#"{"a": [1, 2"#), r#"{"a": [1, 2]}"#);
        assert_eq!(repair_partial_json(r#"{"a": [1, 2,"#), r#"{"a": [1, 2]}"#);
        assert_eq!(repair_partial_json(r#"{"a""#), r#"{"a":null}"#);
        assert_eq!(repair_partial_json(r#"{"a":"#), r#"{"a":null}"#);
        assert_eq!(repair_partial_json(r#"{"a": tr"#), r#"{"a":null}"#);
        assert_eq!(repair_partial_json(r#"{"a": -"#), r#"{"a":null}"#);
        assert_eq!(repair_partial_json(r#"{"a": "x\"#), r#"{"a": "x"}"#);
        assert_eq!(repair_partial_json(r#"{"a": "x\u00"#), r#"{"a": "x"}"#);
        assert_eq!(repair_partial_json(r#"{"a": 1, "#), r#"{"a": 1}"#);
    }

    /// Any JSON document, nested a few levels: what the properties here, and the normalizer's, are
    /// tried on.
    pub(in crate::question) fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            (-1e6f64..1e6).prop_map(|n| json!(n)),
            "(?s).{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map("[a-zA-Z\"\\\\é ]{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn every_prefix_of_valid_json_repairs_to_valid_json(value in arbitrary_json(), pretty in any::<bool>()) {
            let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { value.to_string() };
            for (cut, _) in text.char_indices().chain([(text.len(), ' ')]) {
                let repaired = repair_partial_json(&text[..cut]);
                prop_assert!(serde_json::from_str::<Value>(&repaired).is_ok(), "{:?} -> {:?}", &text[..cut], repaired);
            }
        }
    }
}
