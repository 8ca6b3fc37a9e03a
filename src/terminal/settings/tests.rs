//! Tests of the settings.json edits (`settings.rs`).

use super::*;
use proptest::prelude::*;

fn entries() -> Vec<HookEntry> {
    let command = "'/opt/ask bridge/askbridge' hook".to_string();
    vec![
        HookEntry { event: "PermissionRequest", matcher: Some("*"), command: command.clone(), timeout: 86400 },
        HookEntry { event: "Notification", matcher: None, command: command.clone(), timeout: 30 },
        HookEntry { event: "Stop", matcher: None, command, timeout: 30 },
    ]
}

/// connect, then disconnect with its record: the same bytes (or no file) again; and the
/// connected file is JSON with every entry in it.
fn round_trip(original: Option<&str>) -> String {
    let connected = connect(original, &entries()).unwrap();
    let value: Value = serde_json::from_str(&connected.text).unwrap_or_else(|e| panic!("{e}:\n{}", connected.text));
    for entry in entries() {
        let groups = value["hooks"][entry.event].as_array().unwrap_or_else(|| panic!("{}", connected.text));
        let ours: Vec<_> = groups.iter().filter(|g| g["hooks"][0]["command"].as_str().is_some_and(is_ours)).collect();
        assert_eq!(ours.len(), 1, "{}", connected.text);
        assert_eq!(ours[0]["hooks"][0]["timeout"], entry.timeout);
        assert_eq!(ours[0].get("matcher").and_then(Value::as_str), entry.matcher);
    }
    let again = connect(Some(&connected.text), &entries()).unwrap();
    assert_eq!(again.text, connected.text, "a second connect changes nothing");
    assert!(again.added.is_empty() && again.record.edits.is_empty());
    let undone = disconnect(&connected.text, Some(&connected.record)).unwrap();
    assert!(!undone.searched);
    assert_eq!(undone.text.as_deref(), original, "restored byte for byte:\n{}", connected.text);
    // Without the record (or after an edit elsewhere), the entries are found all the same.
    let searched = disconnect(&connected.text, None).unwrap();
    assert!(searched.searched);
    assert_eq!(searched.removed, 3);
    let left: Value = serde_json::from_str(searched.text.as_deref().unwrap()).unwrap();
    assert!(!left.to_string().contains("askbridge"), "{left}");
    connected.text
}

#[test]
fn no_file_gets_a_new_one_that_disconnect_removes() {
    let text = round_trip(None);
    assert!(
        text.starts_with("{\n  \"hooks\": {\n    \"PermissionRequest\": [\n      {\n        \"matcher\": \"*\""),
        "{text}"
    );
    assert!(text.ends_with("}\n"));
}

#[test]
fn other_keys_and_hooks_keep_their_bytes() {
    let original = r#"{
    "model": "opus",
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
        ],
        "Stop": [
            {
                "hooks": [{"type": "command", "command": "notify-send done"}]
            }
        ]
    },
    "permissions": {"allow": ["Bash(npm test)"]}
}
"#;
    let text = round_trip(Some(original));
    // Four-space indentation, as the file has; the other Stop hook stays first.
    assert!(
        text.contains("\n        \"PermissionRequest\": [\n            {\n                \"matcher\": \"*\","),
        "{text}"
    );
    let stop = text.find("notify-send").unwrap();
    let ours = text[text.find("\"Stop\"").unwrap()..].find("askbridge").unwrap() + text.find("\"Stop\"").unwrap();
    assert!(stop < ours);
    assert!(text.starts_with("{\n    \"model\": \"opus\",\n    \"env\": {\"FOO\": \"bar\"},"));
    assert!(text.ends_with("    \"permissions\": {\"allow\": [\"Bash(npm test)\"]}\n}\n"));
}

#[test]
fn odd_indentation_tabs_crlf_and_no_final_newline_survive() {
    round_trip(Some("{\r\n\t\"theme\": \"dark\"\r\n}"));
    round_trip(Some("{\n   \"a\": 1,\n   \"hooks\": {}\n}"));
    round_trip(Some("{}"));
    round_trip(Some("{ }\n"));
    round_trip(Some("  \n"));
    round_trip(Some("{\"a\":1,\"b\":[1,2]}"));
    round_trip(Some("{\"hooks\": {\"Stop\": []}, \"x\": \"\\\"quoted\\\" } ]\"}"));
    let text = round_trip(Some("{\n  \"hooks\": {\n    \"Notification\": [\n    ]\n  }\n}"));
    assert!(text.contains("\"Notification\": [\n      {\n"), "{text}");
}

#[test]
fn a_file_changed_after_connect_loses_only_our_entries() {
    let original = "{\n  \"model\": \"opus\"\n}\n";
    let connected = connect(Some(original), &entries()).unwrap();
    // The person adds a hook of their own beside ours, and a key.
    let edited = connected.text.replace("\"model\": \"opus\"", "\"model\": \"sonnet\"").replacen(
        "\"Stop\": [",
        "\"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]},",
        1,
    );
    let result = disconnect(&edited, Some(&connected.record)).unwrap();
    assert!(result.searched);
    assert_eq!(result.removed, 3);
    let value: Value = serde_json::from_str(result.text.as_deref().unwrap()).unwrap();
    assert_eq!(value["model"], "sonnet");
    assert_eq!(value["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
    assert!(value["hooks"].get("PermissionRequest").is_none());
}

#[test]
fn what_is_not_settings_is_refused_untouched() {
    assert!(matches!(connect(Some("{\"a\": "), &entries()), Err(SettingsError::NotJson(_))));
    assert_eq!(connect(Some("[1]"), &entries()), Err(SettingsError::NotAnObject));
    assert!(matches!(connect(Some("{\"hooks\": []}"), &entries()), Err(SettingsError::Unexpected(_))));
    assert!(matches!(connect(Some("{\"hooks\": {\"Stop\": {}}}"), &entries()), Err(SettingsError::Unexpected(_))));
}

#[test]
fn only_askbridge_hook_commands_are_ours() {
    assert!(is_ours("'/usr/local/bin/askbridge' hook"));
    assert!(!is_ours("askbridge serve"));
    assert!(!is_ours("~/bin/hook.sh"));
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        "[a-z \"\\\\{}\\[\\],:é]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Any settings object, written compact or pretty with any indentation and final
    /// newline, round-trips byte for byte.
    #[test]
    fn any_settings_object_round_trips(
        fields in prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..5),
        indent in prop_oneof![Just(""), Just(" "), Just("  "), Just("    "), Just("\t")],
        newline in any::<bool>(),
    ) {
        let mut fields: serde_json::Map<String, Value> = fields.into_iter().collect();
        fields.remove("hooks");
        let value = Value::Object(fields);
        let mut text = if indent.is_empty() {
            value.to_string()
        } else {
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
            value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, formatter)).unwrap();
            String::from_utf8(out).unwrap()
        };
        if newline {
            text.push('\n');
        }
        round_trip(Some(&text));
    }

    /// The scanner never panics on text that is not JSON: it is refused.
    #[test]
    fn any_text_is_refused_or_edited_never_a_panic(text in "[ {}\\[\\]\",:a-z0-9\\\\\n]{0,40}") {
        let _ = connect(Some(&text), &entries());
        let _ = disconnect(&text, None);
    }
}
