//! The reader against projects folders made on the spot: bad input of every kind, paths that try
//! to leave the folder, paging. The real CLI's transcripts are read in `fixtures.rs`.

use std::fs;
use std::io::Write;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::error::AppError;
use crate::thread::{Block, Message, Role, ToolStatus};

const ID: &str = "0b5d4f0e-1a2b-4c3d-8e9f-aabbccddeeff";

struct Projects {
    home: tempfile::TempDir,
    dir: ProjectsDir,
}

impl Projects {
    fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        fs::create_dir_all(home.path().join("projects")).unwrap();
        let dir = ProjectsDir::new(home.path().join("projects"));
        Self { home, dir }
    }

    fn folder(&self, name: &str) -> std::path::PathBuf {
        let path = self.home.path().join("projects").join(name);
        fs::create_dir_all(&path).unwrap();
        path
    }

    fn write(&self, folder: &str, id: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = self.folder(folder).join(format!("{id}.jsonl"));
        fs::write(&path, bytes).unwrap();
        path
    }
}

fn lines(entries: &[Value]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in entries {
        writeln!(bytes, "{entry}").unwrap();
    }
    bytes
}

fn prompt(uuid: &str, text: &str, cwd: &str) -> Value {
    json!({"type": "user", "uuid": uuid, "sessionId": ID, "cwd": cwd, "timestamp": "2026-11-26T10:00:00.000Z",
           "isSidechain": false, "message": {"role": "user", "content": text}})
}

fn reply(uuid: &str, message_id: &str, text: &str) -> Value {
    json!({"type": "assistant", "uuid": uuid, "sessionId": ID, "cwd": "/work/project", "isSidechain": false,
           "message": {"id": message_id, "role": "assistant", "content": [{"type": "text", "text": text}]}})
}

fn texts(page: &TranscriptPage) -> Vec<String> {
    page.messages.iter().map(|m| m.text()).collect()
}

#[test]
fn a_resumed_process_starts_counting_from_the_last_cost_state_its_transcript_holds() {
    let projects = Projects::new();
    let cost = |total: f64| json!({"type": "cost-state", "sessionId": ID, "totalCostUSD": total, "modelUsage": {}});
    projects.write("-work-project", ID, &lines(&[prompt("u1", "hi", "/work/project")]));
    assert_eq!(projects.dir.restored_cost(ID).unwrap(), None, "no process has exited yet");
    let entries = [prompt("u1", "hi", "/work/project"), cost(0.1326), reply("a1", "m1", "hello"), cost(0.1996)];
    let mut bytes = lines(&entries);
    // A line of another kind that mentions the words, and a half-written last line.
    bytes.extend_from_slice(&lines(&[prompt("u2", "what is \"cost-state\"?", "/work/project")]));
    bytes.extend_from_slice(b"{\"type\":\"cost-state\",\"totalCost");
    projects.write("-work-project", ID, &bytes);
    assert_eq!(projects.dir.restored_cost(ID).unwrap(), Some(0.1996));
    assert!(projects.dir.restored_cost("not-an-id").is_err());
}

#[test]
fn corrupt_lines_unknown_entries_and_a_truncated_last_line_are_skipped() {
    let projects = Projects::new();
    let mut bytes = lines(&[
        json!({"type": "summary", "summary": "Fix the login bug", "leafUuid": "x"}),
        prompt("p1", "hello", "/work/project"),
        json!({"type": "a-kind-from-the-future", "payload": [1, 2, 3]}),
    ]);
    bytes.extend_from_slice(b"{\"type\":\"user\",\"message\":{ this is not json\n");
    bytes.extend_from_slice(b"\xff\xfe\x00 garbage \n");
    bytes.extend_from_slice(&lines(&[reply("a1", "msg_1", "hi there")]));
    bytes
        .extend_from_slice(br#"{"type":"assistant","uuid":"a2","message":{"id":"msg_2","content":[{"type":"text","te"#);
    projects.write("-work-project", ID, &bytes);
    let page = projects.dir.page(ID, None, 10).unwrap();
    assert_eq!(texts(&page), vec!["hello", "hi there"]);
    assert_eq!(page.older, None);
    let groups = projects.dir.list();
    assert_eq!(groups.len(), 1);
    let session = &groups[0].sessions[0];
    assert_eq!(session.title(), "Fix the login bug");
    assert_eq!(session.first_prompt.as_deref(), Some("hello"));
    assert_eq!(session.project, "/work/project");
}

#[test]
fn an_empty_file_is_no_session_and_opens_as_an_empty_thread() {
    let projects = Projects::new();
    projects.write("-work-project", ID, b"");
    assert!(projects.dir.list().is_empty());
    let page = projects.dir.page(ID, None, 10).unwrap();
    assert!(page.messages.is_empty());
    assert_eq!(page.older, None);
}

#[test]
fn crafted_ids_are_refused_before_any_path_is_made() {
    let projects = Projects::new();
    projects.write("-work-project", ID, &lines(&[prompt("p1", "hello", "/work/project")]));
    fs::write(projects.home.path().join("secret.jsonl"), lines(&[prompt("s", "secret", "/")])).unwrap();
    for id in ["../x", "../secret", "..", "-work-project/../../secret", "a/b", "", "x.jsonl", "x\0y"] {
        let error = projects.dir.page(id, None, 10).unwrap_err();
        assert!(matches!(error, TranscriptError::InvalidId { .. }), "{id:?}: {error:?}");
        assert!(matches!(AppError::from(error), AppError::BadRequest { .. }));
    }
    let error = projects.dir.page("secret", None, 10).unwrap_err();
    assert_eq!(error, TranscriptError::NotFound { id: "secret".into() });
}

#[test]
fn a_symlink_that_leaves_the_projects_folder_is_refused() {
    let projects = Projects::new();
    let outside = projects.home.path().join("outside.jsonl");
    fs::write(&outside, lines(&[prompt("s", "secret", "/")])).unwrap();
    let link = projects.folder("-work-project").join(format!("{ID}.jsonl"));
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    assert_eq!(projects.dir.page(ID, None, 10).unwrap_err(), TranscriptError::Outside { id: ID.into() });
    assert!(projects.dir.list().is_empty(), "the list leaves it out");
    // A whole folder linked from outside, too.
    let elsewhere = projects.home.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let other = "11111111-2222-3333-4444-555555555555";
    fs::write(elsewhere.join(format!("{other}.jsonl")), lines(&[prompt("s", "secret", "/")])).unwrap();
    std::os::unix::fs::symlink(&elsewhere, projects.home.path().join("projects/-linked")).unwrap();
    assert_eq!(projects.dir.page(other, None, 10).unwrap_err(), TranscriptError::Outside { id: other.into() });
}

#[test]
fn a_symlink_inside_the_projects_folder_is_followed() {
    let projects = Projects::new();
    let real = projects.write("-work-project", ID, &lines(&[prompt("p1", "hello", "/work/project")]));
    let other = "11111111-2222-3333-4444-555555555555";
    std::os::unix::fs::symlink(&real, projects.folder("-work-other").join(format!("{other}.jsonl"))).unwrap();
    assert_eq!(texts(&projects.dir.page(other, None, 10).unwrap()), vec!["hello"]);
}

#[test]
fn a_fifo_named_like_a_transcript_is_refused_without_blocking() {
    let projects = Projects::new();
    let path = projects.folder("-work-project").join(format!("{ID}.jsonl"));
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    assert!(matches!(projects.dir.page(ID, None, 10).unwrap_err(), TranscriptError::Unreadable { .. }));
    assert!(projects.dir.list().is_empty());
}

#[test]
fn reading_writes_nothing() {
    let projects = Projects::new();
    let path = projects.write("-work-project", ID, &lines(&[prompt("p1", "hello", "/work/project")]));
    let before = fs::metadata(&path).unwrap();
    let files_before = fs::read_dir(path.parent().unwrap()).unwrap().count();
    projects.dir.list();
    projects.dir.page(ID, None, 10).unwrap();
    let after = fs::metadata(&path).unwrap();
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
    assert_eq!(before.len(), after.len());
    assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), files_before, "no lock or temp file");
}

#[test]
fn subagent_transcripts_and_sidechain_entries_are_not_the_session() {
    let projects = Projects::new();
    let side = |text: &str| {
        let mut entry = prompt("s1", text, "/work/project");
        entry["isSidechain"] = json!(true);
        entry["agentId"] = json!("1a2b3c4d");
        entry
    };
    projects.write(
        "-work-project",
        ID,
        &lines(&[prompt("p1", "main prompt", "/work/project"), side("inline subagent")]),
    );
    projects.write("-work-project", "agent-1a2b3c4d", &lines(&[side("subagent prompt")]));
    let sub = projects.folder("-work-project").join(ID).join("subagents");
    fs::create_dir_all(&sub).unwrap();
    fs::write(sub.join("agent-1a2b3c4d.jsonl"), lines(&[side("nested subagent")])).unwrap();
    // A file with a session's name that holds only a subagent's entries.
    projects.write("-work-project", "22222222-2222-3333-4444-555555555555", &lines(&[side("only a side chain")]));
    let groups = projects.dir.list();
    let ids: Vec<_> = groups.iter().flat_map(|g| g.sessions.iter().map(|s| s.id.as_str())).collect();
    assert_eq!(ids, vec![ID]);
    assert_eq!(texts(&projects.dir.page(ID, None, 10).unwrap()), vec!["main prompt"]);
    assert!(matches!(projects.dir.page("agent-1a2b3c4d", None, 10).unwrap_err(), TranscriptError::NotFound { .. }));
}

#[test]
fn sessions_are_grouped_by_their_real_folder_newest_first() {
    let projects = Projects::new();
    let set_mtime = |path: &Path, secs: i64| {
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        let times = [libc::timespec { tv_sec: secs, tv_nsec: 0 }, libc::timespec { tv_sec: secs, tv_nsec: 0 }];
        assert_eq!(unsafe { libc::utimensat(libc::AT_FDCWD, c_path.as_ptr(), times.as_ptr(), 0) }, 0);
    };
    let a = projects.write(
        "-work-my-app",
        "aaaaaaaa-0000-0000-0000-000000000001",
        &lines(&[prompt("1", "old", "/work/my-app")]),
    );
    let b = projects.write(
        "-work-my-app",
        "aaaaaaaa-0000-0000-0000-000000000002",
        &lines(&[prompt("2", "new", "/work/my-app")]),
    );
    let c =
        projects.write("-tmp-x", "aaaaaaaa-0000-0000-0000-000000000003", &lines(&[prompt("3", "middle", "/tmp/x")]));
    // No cwd anywhere: the folder name is the only clue.
    let d = projects.write(
        "-srv-site",
        "aaaaaaaa-0000-0000-0000-000000000004",
        &lines(&[json!({"type": "user", "message": {"role": "user", "content": "guess"}})]),
    );
    set_mtime(&a, 1_000);
    set_mtime(&b, 4_000);
    set_mtime(&c, 3_000);
    set_mtime(&d, 2_000);
    let groups = projects.dir.list();
    let shape: Vec<(String, bool, Vec<String>)> = groups
        .iter()
        .map(|g| (g.project.clone(), g.project_known, g.sessions.iter().map(|s| s.title().to_string()).collect()))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("/work/my-app".into(), true, vec!["new".into(), "old".into()]),
            ("/tmp/x".into(), true, vec!["middle".into()]),
            ("/srv/site".into(), false, vec!["guess".into()]),
        ]
    );
    assert_eq!(groups[0].sessions[0].modified_ms, 4_000_000);
    assert_eq!(groups[0].sessions[0].entries, Some(1));
}

/// A transcript of `turns` turns, each a prompt, a tool call with its result and a reply.
fn long_transcript(turns: usize) -> Vec<u8> {
    let mut entries = Vec::new();
    for turn in 0..turns {
        entries.push(prompt(&format!("p{turn}"), &format!("prompt {turn}"), "/work/project"));
        entries.push(json!({"type": "assistant", "uuid": format!("a{turn}"), "message": {"id": format!("msg_{turn}_1"),
            "content": [{"type": "tool_use", "id": format!("t{turn}"), "name": "Bash", "input": {"command": format!("echo {turn}")}}]}}));
        entries.push(json!({"type": "user", "uuid": format!("r{turn}"), "message": {"content": [
            {"type": "tool_result", "tool_use_id": format!("t{turn}"), "content": format!("out {turn}")}]}}));
        entries.push(reply(&format!("b{turn}"), &format!("msg_{turn}_2"), &format!("reply {turn}")));
    }
    lines(&entries)
}

#[test]
fn pages_go_back_from_the_newest_without_gaps_or_overlaps() {
    let projects = Projects::new();
    projects.write("-work-project", ID, &long_transcript(10));
    for limit in 1..=7 {
        let mut all: Vec<Message> = Vec::new();
        let mut before = None;
        loop {
            let page = projects.dir.page(ID, before.as_ref(), limit).unwrap();
            assert!(page.messages.len() <= limit, "limit {limit}: {}", page.messages.len());
            let mut older = page.messages.clone();
            older.extend(all);
            all = older;
            match page.older {
                Some(cursor) => before = Some(cursor),
                None => break,
            }
        }
        assert_eq!(all.len(), 30, "limit {limit}");
        for (turn, chunk) in all.chunks(3).enumerate() {
            assert_eq!(chunk[0].text(), format!("prompt {turn}"));
            let Block::ToolCall(call) = &chunk[1].blocks[0] else { panic!() };
            // A page that ends between a call and its result still shows the result.
            assert_eq!(
                (call.status, call.result.clone()),
                (ToolStatus::Done, Some(format!("out {turn}"))),
                "limit {limit}"
            );
            assert_eq!(chunk[2].text(), format!("reply {turn}"));
        }
    }
}

fn chained(uuid: &str, parent: Option<&str>, mut entry: Value) -> Value {
    entry["uuid"] = json!(uuid);
    entry["parentUuid"] = json!(parent);
    entry
}

#[test]
fn a_way_left_behind_by_a_rewind_is_not_shown() {
    let projects = Projects::new();
    projects.write(
        "-work-project",
        ID,
        &lines(&[
            chained("p1", None, prompt("", "first", "/work/project")),
            chained("a1", Some("p1"), reply("", "msg_1", "answer one")),
            chained("p2", Some("a1"), prompt("", "abandoned question", "/work/project")),
            chained("a2", Some("p2"), reply("", "msg_2", "abandoned answer")),
            json!({"type": "system", "uuid": "s1", "parentUuid": "a2", "subtype": "turn_duration"}),
            chained("p3", Some("a1"), prompt("", "second try", "/work/project")),
            chained("a3", Some("p3"), reply("", "msg_3", "answer three")),
        ]),
    );
    let all = texts(&projects.dir.page(ID, None, 10).unwrap());
    assert_eq!(all, vec!["first", "answer one", "second try", "answer three"]);
    // Page by page, the same.
    let newest = projects.dir.page(ID, None, 2).unwrap();
    assert_eq!(texts(&newest), vec!["second try", "answer three"]);
    let older = projects.dir.page(ID, newest.older.as_ref(), 2).unwrap();
    assert_eq!(texts(&older), vec!["first", "answer one"]);
    assert_eq!(older.older, None);
}

#[test]
fn a_broken_chain_shows_everything_rather_than_guess() {
    let projects = Projects::new();
    projects.write(
        "-work-project",
        ID,
        &lines(&[
            chained("p1", None, prompt("", "first", "/work/project")),
            chained("a1", Some("p1"), reply("", "msg_1", "answer one")),
            chained("p2", Some("missing"), prompt("", "second", "/work/project")),
            chained("a2", Some("p2"), reply("", "msg_2", "answer two")),
        ]),
    );
    assert_eq!(texts(&projects.dir.page(ID, None, 10).unwrap()), vec!["first", "answer one", "second", "answer two"]);
}

#[test]
fn the_chain_continues_across_a_compaction() {
    let projects = Projects::new();
    projects.write(
        "-work-project",
        ID,
        &lines(&[
            chained("p1", None, prompt("", "first", "/work/project")),
            chained("a1", Some("p1"), reply("", "msg_1", "answer one")),
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "c1", "parentUuid": null, "logicalParentUuid": "a1"}),
            json!({"type": "user", "uuid": "c2", "parentUuid": "c1", "isCompactSummary": true, "message": {"role": "user", "content": "Summary: …"}}),
            chained("p2", Some("c2"), prompt("", "second", "/work/project")),
        ]),
    );
    let page = projects.dir.page(ID, None, 10).unwrap();
    assert_eq!(page.messages.len(), 5, "{:#?}", texts(&page));
    assert_eq!(page.messages[2].role, Role::Notice);
    assert_eq!(page.messages[4].text(), "second");
}

#[test]
fn a_cursor_that_is_no_line_start_is_refused() {
    let projects = Projects::new();
    let bytes = long_transcript(2);
    projects.write("-work-project", ID, &bytes);
    for before in ["1", "5", &(bytes.len() + 1).to_string(), &u64::MAX.to_string()] {
        let cursor: Cursor = before.parse().unwrap();
        assert_eq!(projects.dir.page(ID, Some(&cursor), 5).unwrap_err(), TranscriptError::BadCursor { id: ID.into() });
    }
    for bad in ["", "x", "-1", "12:../x", "12:", "1.5"] {
        assert!(bad.parse::<Cursor>().is_err(), "{bad:?}");
    }
    let cursor: Cursor = "123:0b5d4f0e-1a2b".parse().unwrap();
    assert_eq!(serde_json::to_value(&cursor).unwrap(), json!("123:0b5d4f0e-1a2b"));
    assert_eq!(serde_json::from_value::<Cursor>(json!("123:0b5d4f0e-1a2b")).unwrap(), cursor);
}

#[test]
fn a_huge_line_is_skipped_and_the_rest_still_reads() {
    let projects = Projects::new();
    let mut bytes = lines(&[prompt("p1", "before", "/work/project")]);
    bytes.extend(std::iter::repeat_n(b'x', lines::MAX_LINE + 1));
    bytes.push(b'\n');
    bytes.extend(lines(&[reply("a1", "msg_1", "after")]));
    projects.write("-work-project", ID, &bytes);
    assert_eq!(texts(&projects.dir.page(ID, None, 10).unwrap()), vec!["before", "after"]);
    assert_eq!(projects.dir.list()[0].sessions[0].first_prompt.as_deref(), Some("before"));
}

#[test]
fn the_title_of_a_first_prompt_longer_than_the_head_is_still_found() {
    let projects = Projects::new();
    let image = "A".repeat(200_000);
    let entry = json!({"type": "user", "cwd": "/work/project", "message": {"role": "user", "content": [
        {"type": "text", "text": "what is in \"this\" picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}]}});
    projects.write("-work-project", ID, &lines(&[entry, reply("a1", "msg_1", "a cat")]));
    let session = &projects.dir.list()[0].sessions[0];
    assert_eq!(session.first_prompt.as_deref(), Some("what is in \"this\" picture?"));
    let page = projects.dir.page(ID, None, 10).unwrap();
    assert_eq!(page.messages[0].role, Role::User);
    let Block::Image(image) = &page.messages[0].blocks[1] else { panic!() };
    assert_eq!((image.media_type.as_str(), image.data.len()), ("image/png", 200_000));
    assert!(image.src().starts_with("data:image/png;base64,AAAA"));
}

#[test]
fn resume_target_is_the_last_folder_that_exists() {
    let projects = Projects::new();
    let work = projects.home.path().join("my app");
    fs::create_dir_all(&work).unwrap();
    let cwd = work.display().to_string();
    let folder = projects::folder_name_of(&cwd);
    projects.write(
        &folder,
        ID,
        &lines(&[prompt("p1", "hello", &cwd), prompt("p2", "cd elsewhere", "/somewhere/else")]),
    );
    let target = projects.dir.resume_target(ID).unwrap();
    assert_eq!(target.folder, work);
    assert_eq!(target.command, format!("cd '{cwd}' && claude --resume {ID}"));
    fs::remove_dir(&work).unwrap();
    assert!(matches!(projects.dir.resume_target(ID).unwrap_err(), TranscriptError::FolderGone { .. }));
}

#[test]
fn shell_quoting_keeps_a_folder_one_word() {
    assert_eq!(shell_quote("/work/project"), "/work/project");
    assert_eq!(shell_quote("/work/it's here"), r"'/work/it'\''s here'");
    assert_eq!(shell_quote("/a;rm -rf ~"), "'/a;rm -rf ~'");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the lines (JSON-ish or raw bytes), listing and paging never panic, every cursor
    /// they give works, and paging ends.
    #[test]
    fn arbitrary_transcripts_never_panic(
        chunks in prop::collection::vec(
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..200),
                arbitrary_entry().prop_map(|v| v.to_string().into_bytes()),
                arbitrary_entry().prop_map(|v| { let s = v.to_string(); s.as_bytes()[..s.len() / 2].to_vec() }),
            ],
            0..40,
        ),
        limit in 1usize..6,
    ) {
        let projects = Projects::new();
        projects.write("-work-project", ID, &chunks.join(&b'\n'));
        projects.dir.list();
        let _ = projects.dir.resume_target(ID);
        let mut before: Option<Cursor> = None;
        for _ in 0..200 {
            let page = projects.dir.page(ID, before.as_ref(), limit).unwrap();
            match page.older {
                Some(cursor) => {
                    prop_assert!(cursor.offset < before.as_ref().map_or(u64::MAX, |b| b.offset));
                    before = Some(cursor)
                }
                None => break,
            }
        }
    }
}

/// Entries shaped like the real ones, with fields of any type in their places.
fn arbitrary_entry() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z0-9 <>/\"\\[\\]-]{0,20}".prop_map(Value::from),
    ];
    let kind = prop_oneof![Just("user"), Just("assistant"), Just("system"), Just("summary"), Just("other")];
    let block_type = prop_oneof![Just("text"), Just("image"), Just("tool_use"), Just("tool_result"), Just("thinking")];
    let block = (block_type, leaf.clone(), leaf.clone(), prop_oneof![Just("t1"), Just("t2")]).prop_map(|(kind, a, b, id)| {
        json!({"type": kind, "text": a, "id": id, "tool_use_id": id, "name": "AskUserQuestion", "input": {"questions": b},
               "content": a, "is_error": b, "source": {"type": "base64", "media_type": a, "data": b}})
    });
    let content = prop_oneof![leaf.clone(), prop::collection::vec(block, 0..4).prop_map(Value::from)];
    (kind, content, leaf.clone(), leaf, prop_oneof![Just("m1"), Just("m2")]).prop_map(|(kind, content, flag, cwd, id)| {
        json!({"type": kind, "uuid": "u", "cwd": cwd, "isSidechain": flag, "isMeta": flag.clone(), "subtype": "compact_boundary",
               "toolUseResult": {"answers": flag}, "summary": cwd.clone(),
               "message": {"id": id, "role": kind, "content": content}})
    })
}

/// The real CLI's transcripts (2.1.332, tests/claude_transcripts.rs made them), read without it.
mod fixtures {
    use super::*;
    use crate::interaction::{InteractionOutcome, InteractionRequest};
    use crate::question::QuestionAnswer;

    const PLAIN: &[u8] = include_bytes!("../../../../tests/fixtures/claude-cli/transcripts/plain.jsonl");
    const TOOLS: &[u8] = include_bytes!("../../../../tests/fixtures/claude-cli/transcripts/tools.jsonl");
    const IMAGE: &[u8] = include_bytes!("../../../../tests/fixtures/claude-cli/transcripts/image.jsonl");
    const QUESTION: &[u8] = include_bytes!("../../../../tests/fixtures/claude-cli/transcripts/question.jsonl");
    const RESUMED: &[u8] = include_bytes!("../../../../tests/fixtures/claude-cli/transcripts/resumed.jsonl");

    fn open(bytes: &[u8]) -> (Projects, TranscriptPage) {
        let projects = Projects::new();
        projects.write("-home-user-project", ID, bytes);
        let page = projects.dir.page(ID, None, 50).unwrap();
        (projects, page)
    }

    fn calls(page: &TranscriptPage) -> Vec<&crate::thread::ToolCall> {
        page.messages
            .iter()
            .flat_map(|m| m.blocks.iter())
            .filter_map(|b| match b {
                Block::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_plain_reply_reads_as_a_prompt_and_an_answer_and_lists_with_its_folder() {
        let (projects, page) = open(PLAIN);
        let shape: Vec<_> = page.messages.iter().map(|m| (m.role, m.text())).collect();
        assert_eq!(
            shape,
            vec![
                (Role::User, "Say hello to the transcript reader".into()),
                (Role::Assistant, "Hello from the mock.".into())
            ]
        );
        assert!(page.messages[0].created_at_ms > 1_700_000_000_000, "timestamps are read");
        let session = &projects.dir.list()[0].sessions[0];
        assert_eq!((session.project.as_str(), session.project_known), ("/home/user/project", true));
        assert_eq!(session.title(), "Say hello to the transcript reader");
        assert_eq!(session.entries, None, "140 KB: more than the head, not counted");
    }

    #[test]
    fn tool_calls_read_with_their_results() {
        let (_projects, page) = open(TOOLS);
        let calls = calls(&page);
        let got: Vec<_> = calls.iter().map(|c| (c.name.as_str(), c.status)).collect();
        assert_eq!(got, vec![("Read", ToolStatus::Done), ("Bash", ToolStatus::Done)]);
        assert!(calls[0].result.as_deref().unwrap().contains("The notes say hi."));
        assert_eq!(calls[1].result.as_deref(), Some("transcript-bash"));
        assert_eq!(calls[1].input.as_ref().unwrap()["command"], json!("echo transcript-bash"));
    }

    #[test]
    fn an_image_reads_as_an_image_block() {
        let (_projects, page) = open(IMAGE);
        let Some(Block::Image(image)) = page.messages[0].blocks.iter().find(|b| matches!(b, Block::Image(_))) else {
            panic!("{:#?}", page.messages[0])
        };
        assert_eq!(image.media_type, "image/png");
        assert!(image.data.starts_with("iVBORw0KGgo"));
        assert_eq!(page.messages[0].text(), "What is in this picture?");
    }

    #[test]
    fn a_question_reads_as_answered_with_labels_other_text_and_notes() {
        let (_projects, page) = open(QUESTION);
        let call = calls(&page).into_iter().find(|c| c.name == "AskUserQuestion").unwrap();
        let interaction = call.interaction.as_ref().unwrap();
        assert!(matches!(&interaction.request, InteractionRequest::Question { questions } if questions.len() == 2));
        assert_eq!(
            interaction.outcome,
            Some(InteractionOutcome::Answered {
                answers: vec![
                    QuestionAnswer::new("Which auth method should we use?", &["JWT"], None, Some("short-lived tokens")),
                    QuestionAnswer::new("Which features?", &["Dark mode"], Some("Offline support"), None),
                ]
            })
        );
    }

    #[test]
    fn a_resumed_session_reads_as_one_thread_and_pages_back_the_same() {
        let (projects, page) = open(RESUMED);
        let texts: Vec<_> = page.messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, vec!["First question", "First answer.", "Second question", "Second answer."]);
        for fixture in [PLAIN, TOOLS, IMAGE, QUESTION, RESUMED] {
            projects.write("-home-user-project", ID, fixture);
            let whole = projects.dir.page(ID, None, 50).unwrap().messages;
            let (mut paged, mut before) = (Vec::new(), None::<Cursor>);
            loop {
                let page = projects.dir.page(ID, before.as_ref(), 1).unwrap();
                paged.splice(0..0, page.messages);
                match page.older {
                    Some(cursor) => before = Some(cursor),
                    None => break,
                }
            }
            assert_eq!(paged, whole);
        }
    }
}
