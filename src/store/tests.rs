//! Every behaviour of the store on both databases (`on_sqlite_and_postgres!` makes a `sqlite` and
//! a `postgres` test of each), then what only one of them has: SQLite files, Postgres's
//! notifications and foreign databases.

use std::time::Duration;

use super::*;
use crate::error::AppError;
use crate::testing::postgres::TestPostgres;
use crate::thread::{Block, EventBody, SessionEvent, SessionSummary, Thread, ToolStatus, TurnOutcome, Usage};

/// A fresh, empty database: a SQLite file in a folder of its own, or a database of its own on
/// this process's test Postgres.
struct Db {
    url: String,
    _folder: Option<tempfile::TempDir>,
}

impl Db {
    async fn sqlite() -> Db {
        let folder = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", folder.path().join("askbridge.db").display());
        Db { url, _folder: Some(folder) }
    }

    async fn postgres() -> Db {
        Db { url: TestPostgres::shared().database().await, _folder: None }
    }

    /// A store on the database; each call is another handle, as another server's would be.
    async fn open(&self) -> Store {
        Store::connect(&self.url).await.unwrap()
    }
}

/// For each `async fn test(db: Db)`, a module `test` with the tests `sqlite` and `postgres`.
macro_rules! on_sqlite_and_postgres {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$test(super::Db::sqlite().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$test(super::Db::postgres().await).await
            }
        }
    )*};
}

on_sqlite_and_postgres!(
    migrations_run_on_a_new_database_and_again_on_reopen,
    stored_thread_equals_the_fold_of_its_events,
    a_loaded_replys_blocks_take_the_room_they_need_and_no_more,
    an_output_with_a_nul_character_is_stored_with_a_replacement_character,
    events_after_a_sequence_number_are_exactly_the_rest,
    a_sequence_number_is_written_once,
    of_two_servers_appending_the_same_sequence_number_exactly_one_wins,
    sessions_list_most_recent_first_and_rename_stops_auto_titles,
    a_persons_message_moves_its_session_up_and_the_first_titles_it,
    the_list_follows_the_persons_activity_not_the_agents_events,
    the_list_comes_a_page_at_a_time_and_tabs_follow_its_top_and_what_is_live,
    sessions_are_found_by_title_and_by_what_was_written_in_them,
    deleting_a_session_removes_its_log_and_unknown_ids_are_not_found,
    unfinished_turns_are_found_after_a_restart,
    unfinished_turns_skip_sessions_a_live_server_holds,
    a_streamed_delta_writes_its_event_only_and_a_reload_mid_stream_sees_every_word,
    a_turns_usage_is_stored_beside_its_reply_without_writing_the_reply_again,
    times_round_trip_to_the_millisecond,
    last_seq_follows_the_log,
    a_lease_is_held_by_one_server_renewed_released_and_expires,
    of_servers_taking_a_lease_at_once_exactly_one_gets_it,
    an_agents_write_is_refused_once_another_server_took_its_lease,
    notices_are_sent_only_where_servers_share_the_database,
    open_interactions_fall_due_at_their_stored_deadline,
    sessions_owed_a_turn_have_a_message_without_one_or_a_parked_agent_with_nothing_waiting,
    a_terminal_session_is_one_per_claude_session_and_lists_what_its_terminal_does,
    an_attachment_is_stored_once_by_its_hash_and_read_back_byte_for_byte,
);

fn summary(id: &str, at: i64) -> SessionSummary {
    SessionSummary {
        id: id.into(),
        title: "New session".into(),
        agent: "scripted".into(),
        created_at_ms: at,
        updated_at_ms: at,
        working: false,
        waiting: false,
        workdir: None,
        active_at_ms: at,
        terminal: None,
        matched: None,
    }
}

/// Applies and stores events the way the session runtime does.
async fn record(store: &Store, session: &str, thread: &mut Thread, bodies: Vec<EventBody>) {
    for body in bodies {
        let input_streamed = input_is_streamed(thread, &body);
        let event = SessionEvent { seq: thread.seq + 1, at_ms: 10_000 + thread.seq as i64, body };
        let change = thread.apply(&event);
        store.append(Append { input_streamed, ..Append::of(session, &event, thread, &change) }).await.unwrap();
    }
}

fn a_turn() -> Vec<EventBody> {
    vec![
        EventBody::UserMessage { message_id: "u1".into(), text: "hi".into(), attachments: Vec::new() },
        EventBody::TurnStarted,
        EventBody::AssistantMessageStarted { message_id: "a1".into() },
        EventBody::TextDelta { message_id: "a1".into(), text: "Hello ".into() },
        EventBody::TextDelta { message_id: "a1".into(), text: "there".into() },
        EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "t1".into(), name: "Bash".into() },
        EventBody::ToolCallReady { tool_use_id: "t1".into(), input: serde_json::json!({"command": "ls"}) },
        EventBody::ToolResult { tool_use_id: "t1".into(), output: "x".into(), is_error: false },
        EventBody::MessageFinished { message_id: "a1".into() },
        EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None },
    ]
}

/// Stores an event alone, changing no message, turn or interaction.
async fn append_bare(store: &Store, session_id: &str, event: &SessionEvent) -> StoreResult<()> {
    store
        .append(Append {
            session_id,
            event,
            messages: vec![],
            usage: vec![],
            turn: None,
            interactions: vec![],
            fence: None,
            moves_up: false,
            first_title: None,
            input_streamed: false,
        })
        .await
}

async fn migrations_run_on_a_new_database_and_again_on_reopen(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    drop(store);
    let store = db.open().await;
    assert_eq!(store.list_sessions().await.unwrap().len(), 1);
}

async fn stored_thread_equals_the_fold_of_its_events(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut live = Thread::default();
    record(&store, "s1", &mut live, a_turn()).await;

    let loaded = store.load_thread("s1").await.unwrap();
    assert_eq!(loaded, live);

    let mut replayed = Thread::default();
    for event in store.events_after("s1", 0, 1000).await.unwrap() {
        replayed.apply(&event);
    }
    assert_eq!(replayed, live);
}

async fn a_loaded_replys_blocks_take_the_room_they_need_and_no_more(db: Db) {
    // As the thread grows them: a session loaded to wait on its question holds them while it waits.
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    record(&store, "s1", &mut Thread::default(), a_turn()).await;
    let loaded = store.load_thread("s1").await.unwrap();
    let reply = &loaded.messages[1];
    assert_eq!((reply.blocks.len(), reply.blocks.capacity()), (2, 2));
}

async fn an_output_with_a_nul_character_is_stored_with_a_replacement_character(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    // Postgres refuses U+0000 in jsonb and text; a tool that read a binary file returns it.
    let mut turn = a_turn();
    turn[0] = EventBody::UserMessage { message_id: "u1".into(), text: "read \0 this".into(), attachments: Vec::new() };
    turn[6] = EventBody::ToolCallReady { tool_use_id: "t1".into(), input: serde_json::json!({"path\0": "a\0b"}) };
    turn[7] = EventBody::ToolResult { tool_use_id: "t1".into(), output: "PK\u{3}\u{4}\0\0".into(), is_error: false };
    let mut live = Thread::default();
    record(&store, "s1", &mut live, turn).await;
    // The same thread, with U+FFFD where U+0000 was; a literal "\u0000" typed as text is kept.
    let as_stored = |text: &str| text.replace('\0', "\u{fffd}");
    let loaded = store.load_thread("s1").await.unwrap();
    let expected = serde_json::to_string(&live).unwrap().replace("\\u0000", "\u{fffd}");
    assert_eq!(serde_json::to_string(&loaded).unwrap(), expected);
    let events = store.events_after("s1", 0, 100).await.unwrap();
    assert!(
        matches!(&events[7].body, EventBody::ToolResult { output, .. } if *output == as_stored("PK\u{3}\u{4}\0\0"))
    );
    assert_eq!(store.session("s1").await.unwrap().title, as_stored("read \0 this"));
    store.rename_session("s1", "a literal \\u0000 stays").await.unwrap();
    assert_eq!(store.session("s1").await.unwrap().title, "a literal \\u0000 stays");
}

async fn events_after_a_sequence_number_are_exactly_the_rest(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, a_turn()).await;
    let rest = store.events_after("s1", 4, 1000).await.unwrap();
    assert_eq!(rest.iter().map(|e| e.seq).collect::<Vec<_>>(), (5..=10).collect::<Vec<_>>());
    let page = store.events_after("s1", 4, 2).await.unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![5, 6]);
    assert!(store.events_after("s1", 10, 1000).await.unwrap().is_empty());
}

async fn a_sequence_number_is_written_once(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, a_turn()).await;
    let stale = SessionEvent { seq: 3, at_ms: 0, body: EventBody::TurnStarted };
    let result = append_bare(&store, "s1", &stale).await;
    assert!(matches!(result, Err(StoreError::SequenceConflict { seq: 3, stored: 10, .. })), "{result:?}");
    let gone = SessionEvent { seq: 1, at_ms: 0, body: EventBody::TurnStarted };
    let result = append_bare(&store, "nope", &gone).await;
    assert!(matches!(result, Err(StoreError::SessionNotFound(_))), "{result:?}");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread);
}

async fn of_two_servers_appending_the_same_sequence_number_exactly_one_wins(db: Db) {
    let (one, other) = (db.open().await, db.open().await);
    one.create_session(&summary("s1", 1)).await.unwrap();
    for seq in 1..=20u64 {
        let event = |text: &str| SessionEvent {
            seq,
            at_ms: seq as i64,
            body: EventBody::UserMessage { message_id: format!("u{seq}"), text: text.into(), attachments: Vec::new() },
        };
        let (mine, theirs) = (event("one"), event("other"));
        let (first, second) = tokio::join!(append_bare(&one, "s1", &mine), append_bare(&other, "s1", &theirs));
        let results = [&first, &second];
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
        let lost = results.iter().find(|r| r.is_err()).unwrap();
        assert!(
            matches!(lost, Err(StoreError::SequenceConflict { seq: s, stored, .. }) if *s == seq && *stored == seq),
            "{lost:?}"
        );
    }
    let events = other.events_after("s1", 0, 100).await.unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=20).collect::<Vec<_>>(), "one event each");
    assert_eq!(one.last_seq("s1").await.unwrap(), 20);
}

async fn sessions_list_most_recent_first_and_rename_stops_auto_titles(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("old", 1)).await.unwrap();
    store.create_session(&summary("new", 2)).await.unwrap();
    let ids: Vec<_> = store.list_sessions().await.unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, vec!["new", "old"]);

    store.rename_session("old", "Mine").await.unwrap();
    let first =
        |text: &str| EventBody::UserMessage { message_id: "u1".into(), text: text.into(), attachments: Vec::new() };
    record(&store, "old", &mut Thread::default(), vec![first("from message")]).await;
    assert_eq!(store.session("old").await.unwrap().title, "Mine");
    record(&store, "new", &mut Thread::default(), vec![first("from message")]).await;
    assert_eq!(store.session("new").await.unwrap().title, "from message");
}

async fn a_persons_message_moves_its_session_up_and_the_first_titles_it(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    store.create_session(&summary("s2", 2)).await.unwrap();
    let message = |id: &str, text: &str| EventBody::UserMessage {
        message_id: id.into(),
        text: text.into(),
        attachments: Vec::new(),
    };
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, vec![message("u1", "Fix the build\nplease")]).await;
    let s1 = store.session("s1").await.unwrap();
    assert_eq!((s1.title.as_str(), s1.active_at_ms), ("Fix the build", 10_000));
    assert_eq!(store.list_sessions().await.unwrap()[0].id, "s1");
    // The agent's turn leaves both as they are; the next message moves it up again, and the
    // title stays the first message's.
    let mut turn = a_turn()[1..].to_vec();
    turn.push(message("u2", "And the tests"));
    record(&store, "s1", &mut thread, turn).await;
    let s1 = store.session("s1").await.unwrap();
    assert_eq!((s1.title.as_str(), s1.active_at_ms), ("Fix the build", 10_000 + 10));
    // A message typed ahead moves it up too.
    let mut queued = Thread::default();
    let ahead = EventBody::MessageQueued { message_id: "q1".into(), text: "later".into(), attachments: Vec::new() };
    record(&store, "s2", &mut queued, vec![ahead]).await;
    let s2 = store.session("s2").await.unwrap();
    assert_eq!((s2.title.as_str(), s2.active_at_ms), ("New session", 10_000));
}

async fn the_list_follows_the_persons_activity_not_the_agents_events(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("worked-in", 1)).await.unwrap();
    store.create_session(&summary("background", 2)).await.unwrap();
    store.mark_active("worked-in", 3).await.unwrap();
    let ids = |store: Store| async move {
        store.list_sessions().await.unwrap().into_iter().map(|s| (s.id, s.active_at_ms)).collect::<Vec<_>>()
    };
    assert_eq!(ids(store.clone()).await, vec![("worked-in".into(), 3), ("background".into(), 2)]);
    // The agent of the other session streams, asks and parks: the list stays as it is.
    let mut thread = Thread::default();
    record(&store, "background", &mut thread, a_turn()[1..].to_vec()).await;
    assert_eq!(ids(store.clone()).await, vec![("worked-in".into(), 3), ("background".into(), 2)]);
    assert!(matches!(store.mark_active("nope", 4).await, Ok(()) | Err(StoreError::SessionNotFound(_))));
}

async fn the_list_comes_a_page_at_a_time_and_tabs_follow_its_top_and_what_is_live(db: Db) {
    let store = db.open().await;
    for n in 0..7 {
        store.create_session(&summary(&format!("s{n}"), n)).await.unwrap();
    }
    let ids = |list: Vec<SessionSummary>| list.into_iter().map(|s| s.id).collect::<Vec<_>>();
    let first = store.list_sessions_page(None, 3).await.unwrap();
    assert_eq!(ids(first.clone()), ["s6", "s5", "s4"]);
    let second = store.list_sessions_page(Some(&first[2].cursor()), 3).await.unwrap();
    assert_eq!(ids(second.clone()), ["s3", "s2", "s1"]);
    let last = store.list_sessions_page(Some(&second[2].cursor()), 3).await.unwrap();
    assert_eq!(ids(last), ["s0"]);
    // An old session whose agent works is followed by the tabs beside the top of the list.
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, a_turn()[1..2].to_vec()).await;
    assert_eq!(ids(store.list_for_tabs(2).await.unwrap()), ["s6", "s5", "s1"]);
    // And one that waits for the person, though its turn ended (parked): by its open interaction.
    let mut parked = Thread::default();
    let mut bodies = a_turn()[1..2].to_vec();
    bodies.extend(asking("a0", "asks", None));
    bodies.push(EventBody::InteractionParked { tool_use_id: "asks".into() });
    bodies.push(EventBody::TurnEnded { outcome: TurnOutcome::Parked, usage: None });
    record(&store, "s0", &mut parked, bodies).await;
    let tabs = store.list_for_tabs(2).await.unwrap();
    assert_eq!(ids(tabs.clone()), ["s6", "s5", "s1", "s0"]);
    assert!(tabs[3].waiting && !tabs[3].working && tabs[2].working);
}

async fn sessions_are_found_by_title_and_by_what_was_written_in_them(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("auth", 1)).await.unwrap();
    store.rename_session("auth", "Set up OAuth_2 login").await.unwrap();
    store.create_session(&summary("db", 2)).await.unwrap();
    // Named, so that its first message does not title it: what is found in the text says so.
    store.rename_session("db", "Database chores").await.unwrap();
    store
        .create_session(&SessionSummary { workdir: Some("/work/side-project".into()), ..summary("other", 3) })
        .await
        .unwrap();
    let mut thread = Thread::default();
    let turn = vec![
        EventBody::UserMessage {
            message_id: "u1".into(),
            text: "Migrate the Pelican database, please".into(),
            attachments: Vec::new(),
        },
        EventBody::TurnStarted,
        EventBody::AssistantMessageStarted { message_id: "a1".into() },
        EventBody::TextDelta { message_id: "a1".into(), text: "Running the migrations now.".into() },
        EventBody::MessageFinished { message_id: "a1".into() },
    ];
    record(&store, "db", &mut thread, turn).await;
    let found = |query: &'static str| {
        let store = store.clone();
        async move { store.search_sessions(query, 10).await.unwrap().into_iter().map(|s| s.id).collect::<Vec<_>>() }
    };
    assert_eq!(found("oauth").await, ["auth"], "by title, whatever the case");
    assert_eq!(found("OAuth_2").await, ["auth"], "a title's _ is a character, not a wildcard");
    assert_eq!(found("pelican").await, ["db"], "by what the person wrote");
    assert_eq!(found("migra pelic").await, ["db"], "every word, each as a word's start");
    assert_eq!(found("running").await, ["db"], "by what the agent wrote");
    // The message written again, its text the same (its usage at the turn's end): still found.
    let usage = Usage { output_tokens: Some(7), ..Usage::default() };
    record(
        &store,
        "db",
        &mut thread,
        vec![EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: Some(usage) }],
    )
    .await;
    assert_eq!(found("running").await, ["db"], "after the turn's end wrote the message again");
    assert!(found("nothing-like-this").await.is_empty());
    assert!(found("\"*\" OR NEAR(").await.is_empty(), "the index's own syntax is only text");
    // Why each was found: the words around the match in the newest message that has it; nothing
    // when the title says it.
    let matched = |query: &'static str| {
        let store = store.clone();
        async move { store.search_sessions(query, 10).await.unwrap().into_iter().map(|s| s.matched).collect::<Vec<_>>() }
    };
    assert_eq!(matched("pelican").await, [Some("Migrate the Pelican database, please".to_string())]);
    assert_eq!(matched("the").await.first().cloned().flatten().as_deref(), Some("Running the migrations now."));
    assert_eq!(matched("oauth").await, [None]);
    // By its folder, which says so.
    assert_eq!(found("side-proj").await, ["other"]);
    assert_eq!(matched("side-proj").await, [Some("in /work/side-project".to_string())]);
    assert!(found("work").await.is_empty(), "a folder higher up the path is no reason");
    // A deleted session is found no more.
    store.delete_session("db").await.unwrap();
    assert!(found("pelican").await.is_empty());
}

async fn deleting_a_session_removes_its_log_and_unknown_ids_are_not_found(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, a_turn()).await;
    store.delete_session("s1").await.unwrap();
    assert!(matches!(store.load_thread("s1").await, Err(StoreError::SessionNotFound(_))));
    assert!(store.events_after("s1", 0, 10).await.unwrap().is_empty());
    assert!(matches!(store.delete_session("s1").await, Err(StoreError::SessionNotFound(_))));
    assert!(matches!(store.rename_session("nope", "x").await, Err(StoreError::SessionNotFound(_))));
    assert!(matches!(store.session("nope").await, Err(StoreError::SessionNotFound(_))));
}

async fn unfinished_turns_are_found_after_a_restart(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    store.create_session(&summary("s2", 1)).await.unwrap();
    let mut thread = Thread::default();
    let mut bodies = a_turn();
    bodies.truncate(4);
    record(&store, "s1", &mut thread, bodies).await;
    assert_eq!(store.sessions_with_unfinished_turns().await.unwrap(), vec!["s1"]);
    assert!(store.session("s1").await.unwrap().working);
}

/// An assistant message asking `tool_use_id` (a question, open), expiring at `expires_at_ms`.
fn asking(message_id: &str, tool_use_id: &str, expires_at_ms: Option<i64>) -> Vec<EventBody> {
    let request = crate::interaction::InteractionRequest::Question { questions: Vec::new() };
    vec![
        EventBody::AssistantMessageStarted { message_id: message_id.into() },
        EventBody::ToolCallStarted {
            message_id: message_id.into(),
            tool_use_id: tool_use_id.into(),
            name: "Ask".into(),
        },
        EventBody::InteractionOpened { tool_use_id: tool_use_id.into(), request, expires_at_ms },
    ]
}

async fn open_interactions_fall_due_at_their_stored_deadline(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut thread = Thread::default();
    let mut bodies = a_turn()[..2].to_vec();
    bodies.extend(asking("a1", "soon", Some(1_000)));
    bodies.extend(asking("a2", "later", Some(5_000)));
    bodies.extend(asking("a3", "never", None));
    record(&store, "s1", &mut thread, bodies).await;
    let due = |now| {
        let store = store.clone();
        async move { store.interaction_deadlines(now, 64).await.unwrap() }
    };
    let pair = |tool_use_id: &str| ("s1".to_string(), tool_use_id.to_string());
    assert_eq!(due(999).await, (vec![], Some(1_000)));
    assert_eq!(due(2_000).await, (vec![pair("soon")], Some(5_000)));
    assert_eq!(due(9_000).await, (vec![pair("soon"), pair("later")], None));
    assert_eq!(store.interaction_deadlines(9_000, 1).await.unwrap(), (vec![pair("soon")], None), "a page");
    // Settled: it no longer falls due.
    let resolved = EventBody::InteractionResolved {
        tool_use_id: "soon".into(),
        outcome: crate::interaction::InteractionOutcome::Declined { reason: None },
    };
    record(&store, "s1", &mut thread, vec![resolved]).await;
    assert_eq!(due(2_000).await, (vec![], Some(5_000)));
    let later = store.load_thread("s1").await.unwrap();
    assert_eq!(later.tool_call("later").unwrap().interaction.as_ref().unwrap().expires_at_ms, Some(5_000));
}

async fn sessions_owed_a_turn_have_a_message_without_one_or_a_parked_agent_with_nothing_waiting(db: Db) {
    let store = db.open().await;
    for id in ["message", "done", "parked", "held"] {
        store.create_session(&summary(id, 1)).await.unwrap();
    }
    let mut thread = Thread::default();
    // The server died between the message and its turn.
    record(&store, "message", &mut thread, a_turn()[..1].to_vec()).await;
    record(&store, "done", &mut Thread::default(), a_turn()).await;
    let mut parked = Thread::default();
    let mut bodies = a_turn()[..2].to_vec();
    bodies.extend(asking("a1", "q", None));
    bodies.push(EventBody::InteractionParked { tool_use_id: "q".into() });
    bodies.push(EventBody::TurnEnded { outcome: TurnOutcome::Parked, usage: None });
    record(&store, "parked", &mut parked, bodies).await;
    record(&store, "held", &mut Thread::default(), a_turn()[..1].to_vec()).await;
    assert!(store.take_lease("held", "another server", "f", Duration::from_secs(60)).await.unwrap().is_some());
    assert_eq!(store.sessions_owed_a_turn().await.unwrap(), vec!["message"], "the question still waits");
    let answered = EventBody::InteractionResolved {
        tool_use_id: "q".into(),
        outcome: crate::interaction::InteractionOutcome::Declined { reason: None },
    };
    record(&store, "parked", &mut parked, vec![answered]).await;
    assert_eq!(store.sessions_owed_a_turn().await.unwrap(), vec!["message", "parked"]);
    record(&store, "message", &mut thread, vec![EventBody::TurnStarted]).await;
    assert_eq!(store.sessions_owed_a_turn().await.unwrap(), vec!["parked"], "working, and no message waits");
}

async fn unfinished_turns_skip_sessions_a_live_server_holds(db: Db) {
    let store = db.open().await;
    for id in ["s1", "s2"] {
        store.create_session(&summary(id, 1)).await.unwrap();
        let mut thread = Thread::default();
        record(&store, id, &mut thread, a_turn()[..2].to_vec()).await;
    }
    // Long enough for the next two statements on a loaded machine; then waited out.
    assert!(store.take_lease("s1", "a", "fa", Duration::from_secs(3)).await.unwrap().is_some());
    assert!(store.take_lease("s2", "b", "fb", Duration::from_secs(60)).await.unwrap().is_some());
    assert!(store.sessions_with_unfinished_turns().await.unwrap().is_empty(), "both are running");
    assert!(store.sessions_with_expired_leases().await.unwrap().is_empty());
    until_expired(&store, "s1").await;
    // Server a stopped renewing: its session's turn is unfinished and nobody runs it.
    assert_eq!(store.sessions_with_unfinished_turns().await.unwrap(), vec!["s1"]);
    assert_eq!(store.sessions_with_expired_leases().await.unwrap(), vec!["s1"]);
}

async fn a_turns_usage_is_stored_beside_its_reply_without_writing_the_reply_again(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut live = Thread::default();
    let mut turn = a_turn();
    turn.pop();
    record(&store, "s1", &mut live, turn).await;
    let written_at = || async {
        let seq: i64 = on_pool!(store, |pool, dialect| {
            sqlx::query_scalar("SELECT updated_seq FROM messages WHERE id = 'a1'").fetch_one(pool).await.unwrap()
        });
        seq
    };
    let finished = written_at().await;
    let usage = Usage { input_tokens: Some(12), output_tokens: Some(7), cost_usd: Some(0.01), ..Usage::default() };
    let end = EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: Some(usage.clone()) };
    record(&store, "s1", &mut live, vec![end]).await;
    assert_eq!(written_at().await, finished, "the turn's end did not write the reply again");
    let loaded = store.load_thread("s1").await.unwrap();
    assert_eq!(loaded.messages[1].usage.as_ref(), Some(&usage), "the reply shows its turn's usage");
    assert_eq!(loaded, live);
    // Deleted with its session.
    store.delete_session("s1").await.unwrap();
    let left: i64 = on_pool!(store, |pool, dialect| {
        sqlx::query_scalar("SELECT count(*) FROM message_usage").fetch_one(pool).await.unwrap()
    });
    assert_eq!(left, 0);
}

async fn a_streamed_delta_writes_its_event_only_and_a_reload_mid_stream_sees_every_word(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut live = Thread::default();
    let mut turn = a_turn();
    turn.truncate(5); // up to the second text delta: the reply still streams
    record(&store, "s1", &mut live, turn).await;
    let written: i64 = on_pool!(store, |pool, dialect| {
        sqlx::query_scalar("SELECT updated_seq FROM messages WHERE id = 'a1'").fetch_one(pool).await.unwrap()
    });
    assert_eq!(written, 3, "the deltas did not rewrite the message");
    assert_eq!(store.load_thread("s1").await.unwrap(), live, "the deltas are replayed on load");
    // A delta moves the log on, and not the session up the list.
    let listed = store.session("s1").await.unwrap().updated_at_ms;
    record(&store, "s1", &mut live, vec![EventBody::TextDelta { message_id: "a1".into(), text: "!".into() }]).await;
    assert_eq!(store.last_seq("s1").await.unwrap(), live.seq);
    assert_eq!(store.session("s1").await.unwrap().updated_at_ms, listed);
    // Then a tool call streams its arguments into the same message.
    record(
        &store,
        "s1",
        &mut live,
        vec![
            EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "t1".into(), name: "Bash".into() },
            EventBody::ToolInputDelta { tool_use_id: "t1".into(), partial_json: "{\"comm".into() },
            EventBody::ToolInputDelta { tool_use_id: "t1".into(), partial_json: "and\": \"ls\"".into() },
            EventBody::TextDelta { message_id: "a1".into(), text: "!".into() },
        ],
    )
    .await;
    assert_eq!(store.load_thread("s1").await.unwrap(), live);
}

async fn times_round_trip_to_the_millisecond(db: Db) {
    let store = db.open().await;
    // The epoch, odd milliseconds now and in 2100, and the last millisecond of 9999.
    let times = [0, 1, 999, 1_700_000_000_123, 1_700_000_000_999, 4_102_444_800_001, 253_402_300_799_999];
    for (i, &at) in times.iter().enumerate() {
        let id = format!("s{i}");
        let mut session = summary(&id, at);
        session.updated_at_ms = at + 7;
        store.create_session(&session).await.unwrap();
        let stored = store.session(&id).await.unwrap();
        assert_eq!((stored.created_at_ms, stored.updated_at_ms), (at, at + 7));

        let event = SessionEvent {
            seq: 1,
            at_ms: at + 11,
            body: EventBody::UserMessage { message_id: "u1".into(), text: "hi".into(), attachments: Vec::new() },
        };
        let mut thread = Thread::default();
        let change = thread.apply(&event);
        store.append(Append::of(&id, &event, &thread, &change)).await.unwrap();
        assert_eq!(store.events_after(&id, 0, 10).await.unwrap(), vec![event]);
        assert_eq!(store.load_thread(&id).await.unwrap(), thread, "the message's time too");
        assert_eq!(store.session(&id).await.unwrap().updated_at_ms, at + 11, "an event moves the session up");
    }
}

async fn last_seq_follows_the_log(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    assert_eq!(store.last_seq("s1").await.unwrap(), 0);
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, a_turn()).await;
    assert_eq!(store.last_seq("s1").await.unwrap(), 10);
    assert!(matches!(store.last_seq("nope").await, Err(StoreError::SessionNotFound(_))));
}

/// Waits until the store says the session's lease expired (no holder any more).
async fn until_expired(store: &Store, session: &str) {
    crate::testing::wait_until("the lease to expire", Duration::from_secs(30), || async {
        store.lease_holder(session).await.unwrap().is_none().then_some(())
    })
    .await;
}

async fn a_lease_is_held_by_one_server_renewed_released_and_expires(db: Db) {
    let (store, long, short) = (db.open().await, Duration::from_secs(60), Duration::from_secs(3));
    for id in ["s1", "s2", "s3"] {
        store.create_session(&summary(id, 1)).await.unwrap();
    }
    assert_eq!(store.lease_holder("s1").await.unwrap(), None);
    assert!(store.take_lease("s1", "a", "fence a", long).await.unwrap().is_some(), "a free lease is taken");
    assert!(
        store.take_lease("s1", "b", "fence b", long).await.unwrap().is_none(),
        "another server's live lease is not"
    );
    assert!(store.take_lease("s1", "a", "fence a", long).await.unwrap().is_some(), "its holder renews it");
    assert_eq!(store.lease_holder("s1").await.unwrap().as_deref(), Some("a"));
    store.release_lease("s1", "b").await.unwrap();
    assert_eq!(store.lease_holder("s1").await.unwrap().as_deref(), Some("a"), "only its holder lets go");
    store.release_lease("s1", "a").await.unwrap();
    assert_eq!(store.lease_holder("s1").await.unwrap(), None);
    assert!(store.take_lease("s1", "b", "fence b", long).await.unwrap().is_some());

    // A lease that is not renewed expires, and is then anyone's; one renewed lives on. Time is
    // waited on by what the store says, not by a margin: `short` is only long enough for the next
    // few statements, on a loaded machine.
    assert!(store.take_lease("s2", "a", "fence a", short).await.unwrap().is_some());
    assert!(store.take_lease("s3", "c", "fence c", short).await.unwrap().is_some());
    assert!(store.take_lease("s2", "b", "fence b", long).await.unwrap().is_none());
    assert_eq!(store.renew_leases("a", long).await.unwrap(), 1, "renewed before it expires");
    // s3 was taken after s2: once it expired, s2's first lease would have too.
    until_expired(&store, "s3").await;
    assert_eq!(store.lease_holder("s2").await.unwrap().as_deref(), Some("a"), "the renewal kept it");
    assert_eq!(store.renew_leases("a", short).await.unwrap(), 1);
    until_expired(&store, "s2").await;
    assert_eq!(store.sessions_with_expired_leases().await.unwrap(), vec!["s2", "s3"]);
    assert_eq!(store.renew_leases("a", long).await.unwrap(), 0, "an expired lease is taken again, not renewed");
    assert!(store.take_lease("s2", "b", "fence b", long).await.unwrap().is_some(), "an expired lease is taken over");
    assert!(store.take_lease("s3", "c", "fence c", long).await.unwrap().is_some(), "or taken again by its server");
    assert!(store.sessions_with_expired_leases().await.unwrap().is_empty());

    store.release_leases("b").await.unwrap();
    assert_eq!(store.lease_holder("s1").await.unwrap(), None);
    assert_eq!(store.lease_holder("s2").await.unwrap(), None);
    assert_eq!(store.lease_holder("s3").await.unwrap().as_deref(), Some("c"));
    store.clear_leases().await.unwrap();
    assert_eq!(store.lease_holder("s3").await.unwrap(), None);

    let result = store.take_lease("nope", "a", "f", long).await;
    assert!(matches!(result, Err(StoreError::SessionNotFound(_))), "{result:?}");
    assert!(store.take_lease("s1", "a", "fence a", long).await.unwrap().is_some());
    store.delete_session("s1").await.unwrap();
    assert_eq!(store.lease_holder("s1").await.unwrap(), None, "a deleted session's lease goes with it");
}

async fn an_agents_write_is_refused_once_another_server_took_its_lease(db: Db) {
    let store = db.open().await;
    store.create_session(&summary("s1", 1)).await.unwrap();
    let long = Duration::from_secs(60);
    let fence_a = store.take_lease("s1", "a", "fence a", long).await.unwrap().unwrap();
    assert_eq!(
        store.take_lease("s1", "a", "another", long).await.unwrap().as_deref(),
        Some("fence a"),
        "renewed, same token"
    );
    let mut thread = Thread::default();
    let mut write = |body: EventBody, fence: Option<String>| {
        let event = SessionEvent { seq: thread.seq + 1, at_ms: 1, body };
        let change = thread.apply(&event);
        let (store, thread) = (store.clone(), thread.clone());
        async move {
            let fence = fence.as_deref();
            store.append(Append { fence, ..Append::of("s1", &event, &thread, &change) }).await
        }
    };
    write(EventBody::TurnStarted, Some(fence_a.clone())).await.unwrap();

    // Server a stalls past its lease; b takes the session over.
    store.release_lease("s1", "a").await.unwrap();
    let fence_b = store.take_lease("s1", "b", "fence b", long).await.unwrap().unwrap();
    assert_ne!(fence_a, fence_b);
    let late = write(EventBody::AssistantMessageStarted { message_id: "m1".into() }, Some(fence_a)).await;
    if store.is_shared() {
        assert!(matches!(late, Err(StoreError::LeaseLost { .. })), "{late:?}");
        assert_eq!(store.last_seq("s1").await.unwrap(), 1, "nothing of a's was written");
        // The holder's writes, and anyone's without a lease (the person's answer), go on.
        let mut thread = store.load_thread("s1").await.unwrap();
        for (body, fence) in [
            (EventBody::TurnEnded { outcome: TurnOutcome::Abandoned, usage: None }, Some(fence_b.as_str())),
            (EventBody::UserMessage { message_id: "u1".into(), text: "hi".into(), attachments: Vec::new() }, None),
        ] {
            let event = SessionEvent { seq: thread.seq + 1, at_ms: 2, body };
            let change = thread.apply(&event);
            store.append(Append { fence, ..Append::of("s1", &event, &thread, &change) }).await.unwrap();
        }
        assert_eq!(store.last_seq("s1").await.unwrap(), 3);
    } else {
        // One server alone: its leases are its own, and no write is fenced.
        late.unwrap();
    }
}

async fn of_servers_taking_a_lease_at_once_exactly_one_gets_it(db: Db) {
    let (one, other) = (db.open().await, db.open().await);
    for round in 0..20 {
        let session = format!("s{round}");
        one.create_session(&summary(&session, 1)).await.unwrap();
        let take = |store: &Store, server: &'static str| {
            let (store, session) = (store.clone(), session.clone());
            tokio::spawn(async move {
                store.take_lease(&session, server, server, Duration::from_secs(60)).await.unwrap().is_some()
            })
        };
        let (a, b) = (take(&one, "a"), take(&other, "b"));
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert!(a ^ b, "round {round}: a got it: {a}, b got it: {b}");
        let holder = one.lease_holder(&session).await.unwrap();
        assert_eq!(holder.as_deref(), Some(if a { "a" } else { "b" }));
    }
}

async fn notices_are_sent_only_where_servers_share_the_database(db: Db) {
    let store = db.open().await;
    let listener = store.listen().await.unwrap();
    assert_eq!(store.is_shared(), listener.is_some());
    assert_eq!(store.is_shared(), db.url.starts_with("postgres"));
    // A no-op on SQLite, sent on Postgres: it works on both.
    store.notify(&Notice::ListChanged).await.unwrap();
}

/// The next notice, within a few seconds.
async fn heard(listener: &mut Listener) -> Option<Notice> {
    tokio::time::timeout(Duration::from_secs(5), listener.next()).await.expect("a notice within 5 s").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_hears_appends_in_order_and_list_changes() {
    let db = Db::postgres().await;
    let (store, other_server) = (db.open().await, db.open().await);
    let mut listener = other_server.listen().await.unwrap().expect("Postgres listens");

    store.create_session(&summary("s1", 1)).await.unwrap();
    assert_eq!(heard(&mut listener).await, Some(Notice::ListChanged));
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, a_turn()).await;
    // The person's message moves the session up the list, and titles it, in its transaction.
    assert_eq!(heard(&mut listener).await, Some(Notice::Appended { session: "s1".into(), seq: 1 }));
    assert_eq!(heard(&mut listener).await, Some(Notice::ListChanged));
    for seq in 2..=10 {
        assert_eq!(heard(&mut listener).await, Some(Notice::Appended { session: "s1".into(), seq }));
    }
    store.rename_session("s1", "Mine").await.unwrap();
    assert_eq!(heard(&mut listener).await, Some(Notice::ListChanged));
    store.notify(&Notice::Interrupt { session: "s1".into() }).await.unwrap();
    assert_eq!(heard(&mut listener).await, Some(Notice::Interrupt { session: "s1".into() }));
    // Someone else's payload on our channel is skipped.
    on_pool!(store, |pool, dialect| {
        sqlx::query("SELECT pg_notify('askbridge', 'not a notice')").execute(pool).await.unwrap();
    });
    store.delete_session("s1").await.unwrap();
    assert_eq!(heard(&mut listener).await, Some(Notice::Deleted { session: "s1".into() }));
    assert_eq!(heard(&mut listener).await, Some(Notice::ListChanged));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_that_fails_in_its_transaction_sends_nothing() {
    let db = Db::postgres().await;
    let store = db.open().await;
    let mut listener = store.listen().await.unwrap().unwrap();
    store.create_session(&summary("s1", 1)).await.unwrap();
    assert_eq!(heard(&mut listener).await, Some(Notice::ListChanged));
    // The message of this event is refused after the session's row was updated.
    on_pool!(store, |pool, dialect| {
        sqlx::raw_sql(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
             CREATE TRIGGER refuse BEFORE INSERT ON messages FOR EACH ROW WHEN (NEW.id = 'doomed')
               EXECUTE FUNCTION refuse();",
        )
        .execute(pool)
        .await
        .unwrap();
    });
    let mut thread = Thread::default();
    let doomed = SessionEvent {
        seq: 1,
        at_ms: 1,
        body: EventBody::UserMessage { message_id: "doomed".into(), text: "hi".into(), attachments: Vec::new() },
    };
    let mut next = thread.clone();
    let change = next.apply(&doomed);
    let result = store.append(Append::of("s1", &doomed, &next, &change)).await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(store.last_seq("s1").await.unwrap(), 0, "nothing was written");
    // A stale sequence number sends nothing either.
    record(&store, "s1", &mut thread, a_turn()[..1].to_vec()).await;
    let stale = SessionEvent { seq: 1, at_ms: 0, body: EventBody::TurnStarted };
    assert!(append_bare(&store, "s1", &stale).await.is_err());
    record(&store, "s1", &mut thread, vec![EventBody::TurnStarted]).await;
    assert_eq!(heard(&mut listener).await, Some(Notice::Appended { session: "s1".into(), seq: 1 }));
    assert_eq!(heard(&mut listener).await, Some(Notice::ListChanged), "the person's message moved it up");
    assert_eq!(heard(&mut listener).await, Some(Notice::Appended { session: "s1".into(), seq: 2 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_lost_its_connection_says_so_and_hears_again() {
    let db = Db::postgres().await;
    let store = db.open().await;
    let mut listener = store.listen().await.unwrap().unwrap();
    let ended: Vec<bool> = on_pool!(store, |pool, dialect| {
        sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND query LIKE 'LISTEN%'",
        )
        .fetch_all(pool)
        .await
        .unwrap()
    });
    assert_eq!(ended, [true], "the listener's connection was ended");
    assert_eq!(heard(&mut listener).await, None, "notices may have been missed");
    store.notify(&Notice::ListChanged).await.unwrap();
    assert_eq!(heard(&mut listener).await, Some(Notice::ListChanged), "it listens again");
}

#[tokio::test]
async fn another_programs_postgres_database_is_refused_and_left_alone() {
    let db = Db::postgres().await;
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url).await.unwrap();
    sqlx::query("CREATE TABLE invoices (id bigint PRIMARY KEY)").execute(&mut admin).await.unwrap();
    let url = db.url.replace("postgres@", "postgres:secret@");
    let error = Store::connect(&url).await.err().expect("refused");
    assert!(matches!(&error, StoreError::Foreign { tables, .. } if tables == "invoices"), "{error:?}");
    assert!(!error.to_string().contains("secret"), "{error}");
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'")
            .fetch_all(&mut admin)
            .await
            .unwrap();
    assert_eq!(tables, ["invoices"], "no tables of ours were added");
}

#[tokio::test]
async fn urls_choose_the_database() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("a.db");
    for url in [format!("sqlite://{}", path.display()), format!("sqlite:{}", path.display())] {
        let store = Store::connect(&url).await.unwrap();
        assert!(!store.is_shared());
    }
    assert!(path.exists());
    Store::connect("sqlite::memory:").await.unwrap();
    let error = Store::connect("mysql://me:secret@db.example/askbridge").await.err().expect("refused");
    assert!(matches!(&error, StoreError::UnknownUrl(url) if url == "mysql://me:…@db.example/askbridge"), "{error:?}");
}

#[tokio::test]
async fn a_sqlite_commit_is_on_disk_before_it_is_acknowledged() {
    let folder = tempfile::tempdir().unwrap();
    let store = Store::open(&folder.path().join("a.db")).await.unwrap();
    let Pool::Sqlite(pool) = &store.pool else { unreachable!("a SQLite file") };
    // Every connection of the pool is set so, not only the first.
    let mut connections = Vec::new();
    for _ in 0..3 {
        connections.push(pool.acquire().await.unwrap());
    }
    for connection in &mut connections {
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut **connection).await.unwrap();
        let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&mut **connection).await.unwrap();
        // In WAL mode, FULL (2) syncs the log at every commit; NORMAL (1) only at checkpoints.
        assert_eq!((journal.as_str(), synchronous), ("wal", 2));
    }
}

#[test]
fn a_database_url_is_shown_without_its_password() {
    assert_eq!(
        without_password("postgres://team:s3cret@db.internal:5432/askbridge"),
        "postgres://team:…@db.internal:5432/askbridge"
    );
    assert_eq!(without_password("postgres://team@db/askbridge"), "postgres://team@db/askbridge");
    assert_eq!(without_password("postgres://db/ask:me@bridge"), "postgres://db/ask:me@bridge", "an @ after the host");
    assert_eq!(without_password("sqlite:///home/me/data/askbridge.db"), "sqlite:///home/me/data/askbridge.db");
}

/// What a SQLite store has on the disk: the database and its write-ahead log.
fn database_bytes(path: &std::path::Path) -> u64 {
    let wal = path.with_extension("db-wal");
    [path, wal.as_path()].iter().map(|file| std::fs::metadata(file).map_or(0, |m| m.len())).sum()
}

/// A SQLite store in a folder of its own, with the session "s1".
async fn a_sqlite_file_with_a_session() -> (tempfile::TempDir, std::path::PathBuf, Store) {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("askbridge.db");
    let store = Store::open(&path).await.unwrap();
    store.create_session(&summary("s1", 1)).await.unwrap();
    (folder, path, store)
}

#[tokio::test]
async fn streamed_pieces_go_to_the_journal_not_the_databases_pages_and_read_back_in_the_log() {
    let (folder, path, store) = a_sqlite_file_with_a_session().await;
    let mut live = Thread::default();
    let mut turn = a_turn();
    let after = turn.split_off(5);
    turn.truncate(3); // up to the reply's start
    record(&store, "s1", &mut live, turn).await;

    let before = database_bytes(&path);
    let mut streamed = 0;
    for batch in 0..200 {
        let pieces: Vec<SessionEvent> = (0..5)
            .map(|i| {
                let text = format!("word {batch}.{i} ");
                streamed += text.len();
                let body = EventBody::TextDelta { message_id: "a1".into(), text };
                let event = SessionEvent { seq: live.seq + 1, at_ms: 1_780_000_000_000, body };
                live.apply(&event);
                event
            })
            .collect();
        store.append_pieces("s1", pieces).await.unwrap();
    }
    assert_eq!(database_bytes(&path), before, "a thousand pieces wrote nothing to the database");
    let journal = std::fs::metadata(folder.path().join("askbridge.db-streams/s1")).unwrap().len() as usize;
    // Each piece: its text, eight bytes of header and ten of kind, number, time and id.
    assert!(journal <= streamed + 1_000 * 20, "{journal} bytes for {streamed} streamed");
    assert_eq!(store.load_thread("s1").await.unwrap(), live);

    // What follows goes to the database, after the pieces.
    record(&store, "s1", &mut live, after).await;
    let events = store.events_after("s1", 0, u32::MAX).await.unwrap();
    assert_eq!(events.iter().map(|event| event.seq).collect::<Vec<_>>(), (1..=live.seq).collect::<Vec<_>>());
    let mut folded = Thread::default();
    events.iter().for_each(|event| {
        folded.apply(event);
    });
    assert_eq!(folded, live, "the database's events and the journal's fold into the thread");
    let page = store.events_after("s1", 100, 10).await.unwrap();
    assert_eq!(page.iter().map(|event| event.seq).collect::<Vec<_>>(), (101..=110).collect::<Vec<_>>());
    drop(store);
    assert_eq!(Store::open(&path).await.unwrap().load_thread("s1").await.unwrap(), live, "after a restart too");
}

#[tokio::test]
async fn streamed_pieces_reach_the_disk_once_their_run_ends_not_at_every_group() {
    let (_folder, path, store) = a_sqlite_file_with_a_session().await;
    let flushes = || store.journal.as_ref().expect("a SQLite file journals").flushes();
    let mut live = Thread::default();
    let mut turn = a_turn();
    let after = turn.split_off(5);
    let (start, pieces) = (turn[..3].to_vec(), turn[3..].to_vec());
    record(&store, "s1", &mut live, start).await;
    for piece in pieces {
        record(&store, "s1", &mut live, vec![piece]).await;
    }
    assert_eq!(flushes(), 0, "each group is written, not flushed");
    // A crash of the process: the file holds what was written, whatever the disk has yet.
    let reopened = Store::open(&path).await.unwrap();
    assert_eq!(reopened.load_thread("s1").await.unwrap(), live);
    drop(reopened);

    let mut rest = after.into_iter();
    record(&store, "s1", &mut live, rest.next().into_iter().collect()).await;
    assert_eq!(flushes(), 1, "the event after the pieces went to the database only once they were on the disk");
    record(&store, "s1", &mut live, rest.collect()).await;
    assert_eq!(flushes(), 1, "no pieces since: nothing to flush");
    assert_eq!(store.load_thread("s1").await.unwrap(), live);
}

#[tokio::test]
async fn a_crash_mid_stream_keeps_every_stored_piece_and_the_log_goes_on_after_them() {
    let (folder, path, store) = a_sqlite_file_with_a_session().await;
    let mut live = Thread::default();
    let mut turn = a_turn();
    turn.truncate(5); // two text deltas: the reply still streams
    record(&store, "s1", &mut live, turn).await;
    drop(store);

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.last_seq("s1").await.unwrap(), 5, "the log ends at the last piece");
    let mut thread = store.load_thread("s1").await.unwrap();
    assert_eq!(thread, live);
    assert_eq!(thread.messages[1].blocks, live.messages[1].blocks);
    // The next event follows the pieces, in the database.
    record(&store, "s1", &mut thread, vec![EventBody::MessageFinished { message_id: "a1".into() }]).await;
    assert_eq!(store.last_seq("s1").await.unwrap(), 6);
    assert_eq!(store.events_after("s1", 3, 10).await.unwrap().len(), 3);
    // A piece numbered as if the log were elsewhere is refused.
    let stale =
        SessionEvent { seq: 6, at_ms: 1, body: EventBody::TextDelta { message_id: "a1".into(), text: "x".into() } };
    assert!(matches!(store.append_pieces("s1", vec![stale]).await, Err(StoreError::SequenceConflict { .. })));

    store.delete_session("s1").await.unwrap();
    assert!(!folder.path().join("askbridge.db-streams/s1").exists(), "a deleted session's pieces are gone");
}

#[tokio::test]
async fn a_new_database_has_small_pages_and_one_made_with_larger_pages_is_rewritten_with_all_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let pragma = |store: &Store, name: &'static str| {
        let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
        let pool = pool.clone();
        async move { sqlx::query_scalar::<_, i64>(&format!("PRAGMA {name}")).fetch_one(&pool).await.unwrap() }
    };
    let new = Store::open(&dir.path().join("new.db")).await.unwrap();
    assert_eq!(pragma(&new, "page_size").await, i64::from(PAGE_SIZE));
    assert_eq!(pragma(&new, "auto_vacuum").await, 2, "incremental from its first table on");

    // A file an earlier version made and wrote, in SQLite's 4 KiB pages, without auto-vacuum.
    let older = dir.path().join("older.db");
    let mut thread = Thread::default();
    {
        let options = SqliteConnectOptions::from_str("sqlite://")
            .unwrap()
            .filename(&older)
            .create_if_missing(true)
            .page_size(4096)
            .journal_mode(SqliteJournalMode::Wal);
        let pool = SqlitePoolOptions::new().connect_with(options).await.unwrap();
        let store = Store::migrated_sqlite(pool, journal::Journal::beside(&older)).await.unwrap();
        assert_eq!(pragma(&store, "page_size").await, 4096);
        store.create_session(&summary("s1", 1)).await.unwrap();
        let text = "x".repeat(10_000);
        record(
            &store,
            "s1",
            &mut thread,
            vec![EventBody::UserMessage { message_id: "u1".into(), text, attachments: Vec::new() }],
        )
        .await;
        store.close().await;
    }
    let store = Store::open(&older).await.unwrap();
    assert_eq!(pragma(&store, "page_size").await, i64::from(PAGE_SIZE));
    assert_eq!(pragma(&store, "auto_vacuum").await, 2, "incremental, in the same rewrite");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread, "everything it held, as it was");
    // And it goes on as any other file: in WAL mode, written and read again after a restart.
    let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(pool).await.unwrap();
    assert_eq!(mode, "wal");
    record(&store, "s1", &mut thread, vec![EventBody::TurnStarted]).await;
    store.close().await;
    assert_eq!(Store::open(&older).await.unwrap().load_thread("s1").await.unwrap(), thread);
}

/// A file in small pages already but made without auto-vacuum (one over the size the page rewrite
/// takes on is the same case) is rewritten once at a start, so that a deleted session's pages go
/// back to the file system rather than to a free list inside the file.
#[tokio::test]
async fn a_database_made_without_auto_vacuum_is_rewritten_once_and_a_deleted_session_then_gives_its_space_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("older.db");
    let pragma = |store: &Store, name: &'static str| {
        let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
        let pool = pool.clone();
        async move { sqlx::query_scalar::<_, i64>(&format!("PRAGMA {name}")).fetch_one(&pool).await.unwrap() }
    };
    let mut kept = Thread::default();
    {
        let options = SqliteConnectOptions::from_str("sqlite://")
            .unwrap()
            .filename(&path)
            .create_if_missing(true)
            .page_size(PAGE_SIZE)
            .auto_vacuum(sqlx::sqlite::SqliteAutoVacuum::None)
            .journal_mode(SqliteJournalMode::Wal);
        let pool = SqlitePoolOptions::new().connect_with(options).await.unwrap();
        let store = Store::migrated_sqlite(pool, journal::Journal::beside(&path)).await.unwrap();
        assert_eq!(pragma(&store, "auto_vacuum").await, 0);
        for (id, thread) in [("kept", &mut kept), ("deleted", &mut Thread::default())] {
            store.create_session(&summary(id, 1)).await.unwrap();
            let text = format!("{id} ").repeat(20_000);
            let message = EventBody::UserMessage { message_id: format!("{id}-u1"), text, attachments: Vec::new() };
            record(&store, id, thread, vec![message]).await;
        }
        store.close().await;
    }

    let store = Store::open(&path).await.unwrap();
    assert_eq!(pragma(&store, "auto_vacuum").await, 2, "incremental, once the file was rewritten");
    assert_eq!(pragma(&store, "page_size").await, i64::from(PAGE_SIZE), "its pages as they were");
    assert_eq!(store.load_thread("kept").await.unwrap(), kept, "everything it held, as it was");
    let pages = pragma(&store, "page_count").await;
    store.delete_session("deleted").await.unwrap();
    assert_eq!(pragma(&store, "freelist_count").await, 0, "no page left free inside the file");
    assert!(pragma(&store, "page_count").await < pages - 100, "the deleted session's pages were given back");
    assert_eq!(store.load_thread("kept").await.unwrap(), kept);
}

/// Where a file keeps what streams, a tool call of a message still streaming is stored as its
/// events, not as the message again at each of them: the message's row is written at its end,
/// once, and until then (a restart too) the thread reads back whole, its events replayed onto it.
#[tokio::test]
async fn a_tool_call_of_a_streaming_message_is_its_events_and_the_message_is_written_once_at_its_end() {
    let (_dir, path, store) = a_sqlite_file_with_a_session().await;
    let mut thread = Thread::default();
    let turn = a_turn();
    let (before_end, end) = turn.split_at(8);
    record(&store, "s1", &mut thread, before_end.to_vec()).await;
    let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
    let written_at = || async {
        sqlx::query_scalar::<_, i64>("SELECT updated_seq FROM messages WHERE id = 'a1'").fetch_one(pool).await.unwrap()
    };
    assert_eq!(written_at().await, 3, "the reply's row as its start wrote it");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread, "its text and tool call replayed onto it");
    store.close().await;

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.load_thread("s1").await.unwrap(), thread, "the same after a restart");
    let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
    record(&store, "s1", &mut thread, end.to_vec()).await;
    let written: i64 =
        sqlx::query_scalar("SELECT updated_seq FROM messages WHERE id = 'a1'").fetch_one(pool).await.unwrap();
    assert_eq!(written, 9, "written whole at its end");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread);
}

/// Where a file keeps what streams, a tool call's arguments are stored once as they streamed and
/// once in the message: its `ToolCallReady` event leaves them out, and reads back with them, from
/// the log (a tab catching up) and as the thread (a restart while the message still streams).
#[tokio::test]
async fn a_tool_calls_streamed_arguments_are_not_stored_again_in_its_ready_event_and_read_back_whole() {
    let (_dir, path, store) = a_sqlite_file_with_a_session().await;
    let content = "line of the file\n".repeat(2_000);
    let input = serde_json::json!({"file_path": "/tmp/big.txt", "content": content});
    let text = input.to_string();
    let mut bodies = a_turn()[..3].to_vec();
    bodies.push(EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "t1".into(), name: "Write".into() });
    for piece in text.as_bytes().chunks(4_000) {
        let partial_json = String::from_utf8(piece.to_vec()).unwrap();
        bodies.push(EventBody::ToolInputDelta { tool_use_id: "t1".into(), partial_json });
    }
    bodies.push(EventBody::ToolCallReady { tool_use_id: "t1".into(), input: input.clone() });
    let ready = bodies.len() as u64;
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, bodies).await;

    let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
    let (kind, stored): (String, i64) = sqlx::query_as("SELECT kind, length(body) FROM events WHERE seq = $1")
        .bind(ready as i64)
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(kind, "tool_call_ready_streamed");
    assert!(stored < 200, "the event without its {} bytes of input: {stored} bytes", text.len());
    let read = store.events_after("s1", ready - 1, 10).await.unwrap();
    assert_eq!(read[0].body, EventBody::ToolCallReady { tool_use_id: "t1".into(), input: input.clone() });
    assert_eq!(store.load_thread("s1").await.unwrap(), thread);
    store.close().await;

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.load_thread("s1").await.unwrap(), thread, "after a restart, the message still streaming");
    assert_eq!(store.events_after("s1", ready - 1, 10).await.unwrap()[0].body, read[0].body);
    // Arguments that are not what streamed (the agent's own reading of them) are stored as given.
    let other = serde_json::json!({"file_path": "/tmp/other.txt"});
    record(
        &store,
        "s1",
        &mut thread,
        vec![
            EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "t2".into(), name: "Write".into() },
            EventBody::ToolInputDelta { tool_use_id: "t2".into(), partial_json: "{\"file_pa".into() },
            EventBody::ToolCallReady { tool_use_id: "t2".into(), input: other.clone() },
        ],
    )
    .await;
    let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
    let kind: String =
        sqlx::query_scalar("SELECT kind FROM events ORDER BY seq DESC LIMIT 1").fetch_one(pool).await.unwrap();
    assert_eq!(kind, "tool_call_ready");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread);
}

/// A tool call's streamed arguments, large and not searched (a file written), and another's that
/// search reads (a command), as the scripted turn `streamed.rs`'s tests build.
fn a_reply_writing_a_file(content: &str) -> (Vec<EventBody>, serde_json::Value) {
    let input = serde_json::json!({"file_path": "/tmp/big.txt", "content": content});
    let command = serde_json::json!({"command": format!("echo {}", "y".repeat(3_000))});
    let mut bodies = a_turn()[..3].to_vec();
    for (id, name, input) in [("t1", "Write", &input), ("t2", "Bash", &command)] {
        bodies.push(EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: id.into(), name: name.into() });
        for piece in input.to_string().as_bytes().chunks(1_000) {
            let partial_json = String::from_utf8(piece.to_vec()).unwrap();
            bodies.push(EventBody::ToolInputDelta { tool_use_id: id.into(), partial_json });
        }
        bodies.push(EventBody::ToolCallReady { tool_use_id: id.into(), input: input.clone() });
    }
    bodies.push(EventBody::MessageFinished { message_id: "a1".into() });
    (bodies, input)
}

/// The reply's row: its blocks' length, and the inputs it leaves out.
async fn reply_row(store: &Store) -> (i64, Option<String>) {
    let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
    sqlx::query_as("SELECT length(blocks), streamed_inputs FROM messages WHERE id = 'a1'")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Where a file keeps what streams, a file's content that streamed is stored there once: its
/// message's row leaves it out and says where it is, and the thread reads back whole, after a
/// restart and after the row's later writes. A command, which search reads, stays in the row.
#[tokio::test]
async fn a_files_streamed_content_is_stored_once_and_its_message_reads_back_whole() {
    let (_dir, path, store) = a_sqlite_file_with_a_session().await;
    let content = "line of the file\n".repeat(2_000);
    let (bodies, _) = a_reply_writing_a_file(&content);
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, bodies).await;
    let (length, left_out) = reply_row(&store).await;
    assert!(length < 5_000, "the row holds the command's 3 KB, not the file's {} bytes: {length}", content.len());
    let left_out: std::collections::BTreeMap<String, u64> = serde_json::from_str(&left_out.unwrap()).unwrap();
    assert_eq!(left_out.keys().collect::<Vec<_>>(), ["t1"]);
    assert_eq!(store.load_thread("s1").await.unwrap(), thread);
    store.close().await;

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.load_thread("s1").await.unwrap(), thread, "after a restart");
    let end = vec![
        EventBody::ToolResult { tool_use_id: "t1".into(), output: "written".into(), is_error: false },
        EventBody::ToolResult { tool_use_id: "t2".into(), output: "y".into(), is_error: false },
        EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None },
    ];
    record(&store, "s1", &mut thread, end).await;
    let (length, left_out) = reply_row(&store).await;
    assert!(length < 5_000 && left_out.is_some(), "the results' writes leave it out again: {length}");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread);
    let events = store.events_after("s1", 0, u32::MAX).await.unwrap();
    let mut folded = Thread::default();
    events.iter().for_each(|event| {
        folded.apply(event);
    });
    assert_eq!(folded, thread, "the log folds into the same thread");
}

/// A file beside the database that was not kept with it: the inputs only it had are missing, and
/// the rest of the thread reads back as it was.
#[tokio::test]
async fn a_left_out_input_whose_file_is_gone_reads_back_without_it_and_nothing_else_is_lost() {
    let (dir, path, store) = a_sqlite_file_with_a_session().await;
    let (bodies, _) = a_reply_writing_a_file(&"line of the file\n".repeat(2_000));
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, bodies).await;
    store.close().await;
    std::fs::remove_file(dir.path().join("askbridge.db-streams/s1")).unwrap();

    let loaded = Store::open(&path).await.unwrap().load_thread("s1").await.unwrap();
    let call = loaded.tool_call("t1").unwrap();
    assert_eq!((call.input.as_ref(), call.status), (None, ToolStatus::Running));
    let mut expected = thread.clone();
    let Some(Block::ToolCall(call)) =
        expected.messages[1].blocks.iter_mut().find(|b| matches!(b, Block::ToolCall(c) if c.id == "t1"))
    else {
        unreachable!()
    };
    call.input = None;
    assert_eq!(loaded, expected);
}

/// A row that several events of one transaction changed is written once, as the last left it.
#[test]
fn a_row_several_events_of_a_transaction_changed_is_written_once_as_the_last_left_it() {
    let mut thread = Thread::default();
    let mut held = Vec::new();
    for body in a_turn() {
        let event = SessionEvent { seq: thread.seq + 1, at_ms: 1, body };
        let change = thread.apply(&event);
        held.push(Held::of("s1", event, &thread, &change));
    }
    // The reply's end, then the turn's end (which writes its usage and turn state only).
    let mut appends: Vec<Append> = held[8..].iter().map(|held| held.append("s1")).collect();
    let mut reply_and_result: Vec<Append> = [&held[7], &held[8]].map(|held| held.append("s1")).into();
    events::written_once(&mut appends);
    assert_eq!(appends[0].messages.len(), 1, "nothing later writes the reply");
    events::written_once(&mut reply_and_result);
    assert!(reply_and_result[0].messages.is_empty(), "the result's write of the reply is the end's");
    assert_eq!(reply_and_result[1].messages.iter().map(|(at, m)| (*at, !m.streaming)).collect::<Vec<_>>(), [(1, true)]);
}

/// Events written together are one transaction: all of them, or none when one cannot follow.
#[tokio::test]
async fn events_appended_together_are_stored_all_or_none() {
    let store = Store::open_in_memory().await.unwrap();
    store.create_session(&summary("s1", 1)).await.unwrap();
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, a_turn()[..3].to_vec()).await;
    let held: Vec<Held> = [
        EventBody::MessageFinished { message_id: "a1".into() },
        EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None },
    ]
    .into_iter()
    .map(|body| {
        let event = SessionEvent { seq: thread.seq + 1, at_ms: 20_000, body };
        let change = thread.apply(&event);
        Held::of("s1", event, &thread, &change)
    })
    .collect();
    let before = store.load_thread("s1").await.unwrap();

    // The second one numbered as if it followed another: neither is written.
    let mut skipping = held.clone();
    skipping[1].event.seq += 1;
    let error = store.append_all(skipping.iter().map(|held| held.append("s1")).collect()).await.unwrap_err();
    assert!(matches!(error, StoreError::SequenceConflict { .. }), "{error:?}");
    assert_eq!(store.load_thread("s1").await.unwrap(), before, "nothing of the two");

    let commits = store.commits();
    store.append_all(held.iter().map(|held| held.append("s1")).collect()).await.unwrap();
    assert_eq!(store.commits(), commits + 1);
    assert_eq!(store.load_thread("s1").await.unwrap(), thread);
    let kinds: Vec<&str> = store.events_after("s1", 3, 10).await.unwrap().iter().map(|e| e.body.kind()).collect();
    assert_eq!(kinds, ["message_finished", "turn_ended"]);
}

/// The write-ahead log's index is in the server's memory (`unix-excl`): a `-shm` file an older
/// version left beside the database is never read, and is removed once the server holds the file.
#[tokio::test]
async fn the_log_index_file_an_older_version_left_is_ignored_and_removed() {
    let (dir, path, store) = a_sqlite_file_with_a_session().await;
    let mut thread = Thread::default();
    record(&store, "s1", &mut thread, vec![EventBody::TurnStarted]).await;
    assert!(!dir.path().join("askbridge.db-shm").exists(), "no index file is made");
    store.close().await;

    let index = dir.path().join("askbridge.db-shm");
    std::fs::write(&index, [0xa5; 32_768]).unwrap();
    let store = Store::open(&path).await.unwrap();
    assert!(!index.exists(), "the old index file is removed");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread, "what was stored, read from the log itself");
}

#[tokio::test]
async fn a_full_disk_is_said_plainly_and_loses_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Store::open(&path).await.unwrap());
    // The file may not grow: every new page is refused, as on a full disk.
    let pages: u32 = {
        let store = Store::open(&path).await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        let Pool::Sqlite(pool) = &store.pool else { unreachable!() };
        sqlx::query_scalar("PRAGMA page_count").fetch_one(pool).await.unwrap()
    };
    let store = Store::open_with_page_limit(&path, Some(pages + 2)).await.unwrap();
    let mut thread = Thread::default();
    let mut failed = None;
    for i in 0..200 {
        let body =
            EventBody::UserMessage { message_id: format!("u{i}"), text: "x".repeat(20_000), attachments: Vec::new() };
        let event = SessionEvent { seq: thread.seq + 1, at_ms: 0, body };
        let mut next = thread.clone();
        let change = next.apply(&event);
        match store.append(Append::of("s1", &event, &next, &change)).await {
            Ok(()) => thread = next,
            Err(error) => {
                failed = Some(error);
                break;
            }
        }
    }
    let error = failed.expect("the limit was reached");
    assert!(matches!(error, StoreError::DiskFull), "{error:?}");
    let message = AppError::from(error).to_string();
    assert!(message.contains("the disk is full") && message.contains("Nothing already stored was lost"), "{message}");
    assert_eq!(store.load_thread("s1").await.unwrap(), thread, "everything stored before is intact");
}

#[tokio::test]
async fn a_file_that_is_not_our_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, b"this is not a database, it is a shopping list: eggs, milk\n".repeat(200)).unwrap();
    let error = Store::open(&garbage).await.err().expect("refused");
    assert!(matches!(error, StoreError::NotADatabase { .. }), "{error:?}");
    assert!(error.to_string().contains("move it away"), "{error}");
    assert!(std::fs::read(&garbage).unwrap().starts_with(b"this is not a database"), "untouched");

    let foreign = dir.path().join("foreign.db");
    {
        let options = SqliteConnectOptions::from_str("sqlite://").unwrap().filename(&foreign).create_if_missing(true);
        let pool = SqlitePoolOptions::new().connect_with(options).await.unwrap();
        sqlx::query("CREATE TABLE invoices (id INTEGER PRIMARY KEY)").execute(&pool).await.unwrap();
        pool.close().await;
    }
    let error = Store::open(&foreign).await.err().expect("refused");
    assert!(matches!(&error, StoreError::Foreign { tables, .. } if tables == "invoices"), "{error:?}");
    let options = SqliteConnectOptions::from_str("sqlite://").unwrap().filename(&foreign);
    let pool = SqlitePoolOptions::new().connect_with(options).await.unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'").fetch_all(&pool).await.unwrap();
    assert_eq!(tables, ["invoices"], "no tables of ours were added");
}

async fn a_terminal_session_is_one_per_claude_session_and_lists_what_its_terminal_does(db: Db) {
    use crate::thread::{ClaudeProcess, TERMINAL_AGENT, TerminalState, TerminalSummary};
    let store = db.open().await;
    let terminal = TerminalSummary {
        host: "laptop".into(),
        folder: "/home/me/project".into(),
        claude_session_id: "f039304b".into(),
        transcript_path: None,
        state: TerminalState::Idle,
        state_at_ms: 1_000,
        process: Some(ClaudeProcess { pid: 4242, start_ticks: 99, boot_id: "boot-1".into() }),
    };
    let mut first = summary("t1", 1_000);
    first.agent = TERMINAL_AGENT.into();
    first.workdir = Some(terminal.folder.clone());
    assert_eq!(store.terminal_session("laptop", "f039304b").await.unwrap(), None);
    assert_eq!(store.create_terminal_session(&first, &terminal).await.unwrap(), "t1");
    // The same Claude Code session again (another hook, or another server, at the same moment).
    let mut second = summary("t2", 2_000);
    second.agent = TERMINAL_AGENT.into();
    assert_eq!(store.create_terminal_session(&second, &terminal).await.unwrap(), "t1");
    assert!(matches!(store.session("t2").await, Err(StoreError::SessionNotFound(_))), "nothing half-made");
    let other_host = TerminalSummary { host: "server".into(), ..terminal.clone() };
    assert_eq!(store.create_terminal_session(&second, &other_host).await.unwrap(), "t2");

    let listed = store.session("t1").await.unwrap();
    assert!(listed.is_terminal());
    assert_eq!(listed.terminal, Some(terminal.clone()));
    assert!(!listed.working && !listed.waiting);
    store.set_terminal_state("t1", TerminalState::Waiting, Some("/t.jsonl"), 3_000).await.unwrap();
    let listed = store.session("t1").await.unwrap();
    assert!(listed.working && listed.waiting, "a terminal waiting for the person: {listed:?}");
    assert_eq!(listed.terminal.as_ref().unwrap().transcript_path.as_deref(), Some("/t.jsonl"));
    store.set_terminal_state("t1", TerminalState::Idle, None, 4_000).await.unwrap();
    let listed = store.session("t1").await.unwrap();
    assert!(!listed.working && !listed.waiting);
    assert_eq!(listed.terminal.as_ref().unwrap().transcript_path.as_deref(), Some("/t.jsonl"), "kept");
    assert_eq!(listed.terminal.as_ref().unwrap().state_at_ms, 4_000);
    // The process its latest hook found; the ones whose death can be seen are those not ended.
    let later = ClaudeProcess { pid: 5151, start_ticks: 7, boot_id: "boot-1".into() };
    store.set_terminal_process("t1", &later).await.unwrap();
    assert_eq!(store.session("t1").await.unwrap().terminal.unwrap().process, Some(later.clone()));
    let of_t1 =
        |found: Vec<(String, ClaudeProcess)>| found.into_iter().filter(|(id, _)| id == "t1").collect::<Vec<_>>();
    assert_eq!(of_t1(store.terminal_processes().await.unwrap()), vec![("t1".to_string(), later)]);
    store.set_terminal_state("t1", TerminalState::Ended, None, 5_000).await.unwrap();
    assert_eq!(of_t1(store.terminal_processes().await.unwrap()), vec![]);
    assert_eq!(store.list_sessions().await.unwrap().len(), 2);
    // How far its transcript was read moves only from where the mover saw it.
    let read = store.terminal_transcript("t1").await.unwrap().unwrap();
    assert_eq!((read.path.as_str(), read.claude_session_id.as_str(), read.offset), ("/t.jsonl", "f039304b", 0));
    assert!(store.advance_terminal_transcript("t1", 0, 120).await.unwrap());
    assert!(!store.advance_terminal_transcript("t1", 0, 90).await.unwrap(), "another read took those lines");
    assert_eq!(store.terminal_transcript("t1").await.unwrap().unwrap().offset, 120);
    assert_eq!(store.terminal_transcript("t2").await.unwrap(), None, "no transcript named yet");
    store.delete_session("t1").await.unwrap();
    assert_eq!(store.terminal_session("laptop", "f039304b").await.unwrap(), None, "deleted with its session");
}

async fn an_attachment_is_stored_once_by_its_hash_and_read_back_byte_for_byte(db: Db) {
    let store = db.open().await;
    // Every byte value, NUL included: a file is bytes, not text.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let file = crate::thread::AttachmentRef {
        hash: "ab".repeat(32),
        media_type: "image/png".into(),
        name: Some("screenshot.png".into()),
        size: bytes.len() as u64,
    };
    assert_eq!(store.attachment(&file.hash).await.unwrap(), None);
    store.put_attachment(&file, &bytes, 1_000).await.unwrap();
    // Stored again (another upload, another name): the first stays, and nothing fails.
    let again = crate::thread::AttachmentRef { name: Some("other.png".into()), ..file.clone() };
    store.put_attachment(&again, &bytes, 2_000).await.unwrap();

    let reopened = db.open().await;
    assert_eq!(reopened.attachment(&file.hash).await.unwrap(), Some((file.clone(), bytes)));
    assert_eq!(reopened.attachment_ref(&file.hash).await.unwrap(), Some(file));
    assert_eq!(reopened.attachment_ref(&"cd".repeat(32)).await.unwrap(), None);
}
