//! What a notice says, the same for a push and a webhook: which session and folder, the question
//! (or the permission asked) and its options, the link to the card, and, in a push, the actions
//! that answer it. It is what the card shows and nothing more: no transcript, no file contents
//! (an edit's permission names the file, not the change). `--notify-detail minimal` keeps only
//! "a session needs you" and the link.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde_json::{Value, json};

use super::Detail;
use super::ece::MAX_PLAINTEXT;
use crate::approval::{Approval, Decision, Shows};
use crate::interaction::InteractionRequest;
use crate::question::QuestionAnswer;
use crate::thread::SessionSummary;

/// What a minimal notice says.
pub const MINIMAL_TEXT: &str = "A session needs you";

/// The most options a notice lists, and the longest texts it carries (in characters): a push
/// holds about 4 KB in all, and a lock screen shows a few lines.
const MAX_OPTIONS: usize = 8;
const MAX_LABEL: usize = 80;
const MAX_QUESTION: usize = 600;
const MAX_TITLE: usize = 120;
const MAX_FOLDER: usize = 200;
/// Actions a notification shows: Chrome's `Notification.maxActions` on Android and desktop.
pub const MAX_ACTIONS: usize = 2;

/// Which moment of an interaction a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AskEvent {
    /// The agent asked.
    Opened,
    /// The agent let go and waits, paused, for the answer (DESIGN §3).
    Parked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AskKind {
    Question,
    Permission,
}

/// A button of a push notification: the service worker posts `body` to `path` (with the page's
/// sign-in cookie), through the same server function, and the same first-wins rule, as a click
/// on the card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    /// The notification action's id.
    pub action: String,
    pub title: String,
    pub path: &'static str,
    pub body: Value,
}

/// An interaction that needs the person, as a notice tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub event: AskEvent,
    pub session: String,
    /// The session's title.
    pub title: String,
    /// The folder the agent works in.
    pub folder: Option<String>,
    pub tool_use_id: String,
    pub kind: AskKind,
    /// The question (the first, when the card has several), or what permission is asked for.
    pub question: String,
    /// The first question's option labels; "Allow once" and "Deny" for a permission.
    pub options: Vec<String>,
    /// What answers it in one tap: a single question with one choice, or a permission.
    pub actions: Vec<Action>,
}

impl Ask {
    /// The notice of `request`, asked in `session`; `None` for what needs no one (a question
    /// the agent sent unreadable is failed at once).
    pub fn of(
        event: AskEvent,
        session: &SessionSummary,
        tool_use_id: &str,
        request: &InteractionRequest,
    ) -> Option<Self> {
        let (kind, question, options, actions) = match request {
            InteractionRequest::Unreadable { .. } => return None,
            InteractionRequest::Question { questions } => {
                let first = questions.first()?;
                let mut text = first.question.clone();
                if questions.len() > 1 {
                    text.push_str(&format!(" (and {} more)", questions.len() - 1));
                }
                let options: Vec<String> = first.options.iter().map(|choice| choice.label.clone()).collect();
                // One tap answers only a card that a click on the page would submit at once.
                let actions = if questions.len() == 1 && !first.multi_select {
                    options
                        .iter()
                        .take(MAX_ACTIONS)
                        .enumerate()
                        .map(|(i, label)| Action {
                            action: format!("answer-{i}"),
                            title: clip(label, MAX_LABEL),
                            path: "/api/submit_answers",
                            body: json!({
                                "session": session.id,
                                "tool_use_id": tool_use_id,
                                "answers": [QuestionAnswer::new(&first.question, &[label], None, None)],
                            }),
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                (AskKind::Question, text, options, actions)
            }
            InteractionRequest::Approval(approval) => {
                let decide = |action: &str, title: &str, decision: Decision| Action {
                    action: action.into(),
                    title: title.into(),
                    path: "/api/decide_approval",
                    body: json!({"session": session.id, "tool_use_id": tool_use_id, "decision": decision}),
                };
                let actions = vec![
                    decide("allow", "Allow once", Decision::Allow { always: None }),
                    decide("deny", "Deny", Decision::Deny { message: None }),
                ];
                let options = actions.iter().map(|action| action.title.clone()).collect();
                (AskKind::Permission, permission_question(approval), options, actions)
            }
        };
        Some(Self {
            event,
            session: session.id.clone(),
            title: session.title.clone(),
            folder: session.workdir.clone(),
            tool_use_id: tool_use_id.to_string(),
            kind,
            question,
            options,
            actions,
        })
    }

    /// The card's address on this server: `/s/<session>#<tool_use_id>`.
    pub fn path(&self) -> String {
        card_path(&self.session, &self.tool_use_id)
    }

    /// The notification's title and text, as a lock screen shows them.
    fn headline(&self) -> (String, String) {
        let what = match (self.event, self.kind) {
            (AskEvent::Opened, AskKind::Question) => "Question",
            (AskEvent::Opened, AskKind::Permission) => "Permission",
            (AskEvent::Parked, _) => "Still waiting",
        };
        let title = format!("{what} · {}", clip(&self.title, MAX_TITLE));
        let mut body = clip(&self.question, MAX_QUESTION);
        if self.kind == AskKind::Question && !self.options.is_empty() {
            let labels: Vec<String> = self.options.iter().take(MAX_OPTIONS).map(|l| clip(l, MAX_LABEL)).collect();
            body.push('\n');
            body.push_str(&labels.join(" · "));
        }
        (title, body)
    }

    /// The push's JSON (what the service worker shows), within what one push carries: the
    /// actions are left out if they do not fit, then the texts are shortened.
    pub fn push_payload(&self, detail: Detail, tag: &str) -> Vec<u8> {
        let url = self.path();
        if detail == Detail::Minimal {
            return minimal_push(self.event, tag, &url);
        }
        let (title, body) = self.headline();
        let options: Vec<String> = self.options.iter().take(MAX_OPTIONS).map(|l| clip(l, MAX_LABEL)).collect();
        let mut payload = json!({
            "type": "ask",
            "tag": tag,
            "event": self.event,
            "title": title,
            "body": body,
            "url": url,
            "session": self.session,
            "session_title": clip(&self.title, MAX_TITLE),
            "folder": self.folder.as_deref().map(|folder| clip(folder, MAX_FOLDER)),
            "kind": self.kind,
            "question": clip(&self.question, MAX_QUESTION),
            "options": options,
            "tool_use_id": self.tool_use_id,
            "actions": self.actions,
        });
        let fits = |payload: &Value| serde_json::to_vec(payload).ok().filter(|bytes| bytes.len() <= MAX_PLAINTEXT);
        if let Some(bytes) = fits(&payload) {
            return bytes;
        }
        // An action carries the question whole (the answer must name it exactly): too long a
        // question goes without them, and the tap opens the card.
        payload["actions"] = json!([]);
        if let Some(bytes) = fits(&payload) {
            return bytes;
        }
        // Ids of unusual length: what is left is the minimal notice.
        minimal_push(self.event, tag, &url)
    }

    /// The generic webhook's JSON: `{event, session, title, folder, kind, question, options,
    /// url}` (or `{event, message, url}` when minimal); `url` is the card's full address.
    pub fn webhook_json(&self, detail: Detail, base_url: &str) -> Value {
        let url = format!("{}{}", base_url.trim_end_matches('/'), self.path());
        match detail {
            Detail::Minimal => json!({"event": self.event, "message": MINIMAL_TEXT, "url": url}),
            Detail::Full => json!({
                "event": self.event,
                "session": self.session,
                "title": self.title,
                "folder": self.folder,
                "kind": self.kind,
                "question": self.question,
                "options": self.options,
                "url": url,
            }),
        }
    }

    /// Title, message and link for ntfy and Slack.
    pub fn words(&self, detail: Detail) -> (String, String) {
        match detail {
            Detail::Minimal => ("AskBridge".into(), MINIMAL_TEXT.into()),
            Detail::Full => self.headline(),
        }
    }
}

fn minimal_push(event: AskEvent, tag: &str, url: &str) -> Vec<u8> {
    let payload = json!({
        "type": "ask", "tag": tag, "event": event, "title": "AskBridge", "body": MINIMAL_TEXT, "url": url,
        "actions": [],
    });
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// The push that tells the service worker to close the notification `tag`: the question was
/// answered (or ended) elsewhere.
pub fn close_payload(tag: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"type": "close", "tag": tag})).unwrap_or_default()
}

/// A card's address on this server.
pub fn card_path(session: &str, tool_use_id: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    let encode = |text: &str| percent_encoding::utf8_percent_encode(text, KEEP).to_string();
    format!("/s/{}#{}", encode(session), encode(tool_use_id))
}

/// The notification's tag and the push's Topic for one interaction: the same for its "asked" and
/// its "answered", so that one replaces the other; a hash, so that the push service learns no id.
pub fn tag_of(session: &str, tool_use_id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{session}\n{tool_use_id}").as_bytes());
    // 16 bytes: 22 characters, within the Topic header's 32.
    URL_SAFE_NO_PAD.encode(&digest.as_ref()[..16])
}

/// What a permission request asks, in a line: the command, the file or the address (never the
/// change itself).
fn permission_question(approval: &Approval) -> String {
    let tool = &approval.tool;
    match &approval.shows {
        Shows::Command { command } => format!("Run `{}`?", clip(command, 300)),
        Shows::File { path, .. } => format!("{tool} {}?", clip(path, 300)),
        Shows::Url { url, .. } => format!("{tool} {}?", clip(url, 300)),
        Shows::Plan { .. } => "Approve the plan and start?".into(),
        Shows::Json { .. } => format!("Use {tool}?"),
    }
}

/// `text` cut to `max` characters, with an ellipsis where it was cut.
pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if text[at..].chars().count() > 1 => format!("{}…", &text[..at]),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::DiffLine;
    use crate::question::{Choice, Question};

    fn session() -> SessionSummary {
        SessionSummary {
            id: "s1".into(),
            title: "Fix the login".into(),
            agent: "claude".into(),
            created_at_ms: 0,
            updated_at_ms: 0,
            working: true,
            waiting: true,
            workdir: Some("/home/me/app".into()),
            active_at_ms: 0,
            terminal: None,
            matched: None,
        }
    }

    fn question(text: &str, labels: &[&str], multi_select: bool) -> Question {
        Question {
            header: "Auth".into(),
            question: text.into(),
            options: labels
                .iter()
                .map(|label| Choice {
                    label: label.to_string(),
                    description: Some("secret detail".into()),
                    preview: None,
                })
                .collect(),
            multi_select,
        }
    }

    fn approval(shows: Shows) -> InteractionRequest {
        InteractionRequest::Approval(Approval {
            tool: "Edit".into(),
            input: json!({"file_path": "/home/me/app/src/main.rs", "old_string": "SECRET OLD", "new_string": "SECRET NEW"}),
            description: None,
            reason: None,
            blocked_path: None,
            suggestions: vec![],
            shows,
            asked_by: None,
        })
    }

    fn payload(ask: &Ask, detail: Detail) -> Value {
        serde_json::from_slice(&ask.push_payload(detail, "TAG")).unwrap()
    }

    #[test]
    fn a_single_choice_question_carries_its_options_and_its_first_two_as_answers() {
        let request = InteractionRequest::Question {
            questions: vec![question("Which auth?", &["JWT", "Sessions", "OAuth"], false)],
        };
        let ask = Ask::of(AskEvent::Opened, &session(), "toolu_1", &request).unwrap();
        let push = payload(&ask, Detail::Full);
        assert_eq!(push["type"], "ask");
        assert_eq!(push["tag"], "TAG");
        assert_eq!(push["session"], "s1");
        assert_eq!(push["folder"], "/home/me/app");
        assert_eq!(push["kind"], "question");
        assert_eq!(push["question"], "Which auth?");
        assert_eq!(push["options"], json!(["JWT", "Sessions", "OAuth"]));
        assert_eq!(push["url"], "/s/s1#toolu_1");
        assert_eq!(push["title"], "Question · Fix the login");
        let actions = push["actions"].as_array().unwrap();
        assert_eq!(actions.len(), 2);
        assert_eq!(actions[0]["title"], "JWT");
        assert_eq!(actions[0]["path"], "/api/submit_answers");
        assert_eq!(
            actions[0]["body"],
            json!({"session": "s1", "tool_use_id": "toolu_1",
                   "answers": [{"question": "Which auth?", "labels": ["JWT"], "other": null, "notes": null}]})
        );
        // What the card shows only on focus (descriptions, previews) stays out.
        assert!(!String::from_utf8(ask.push_payload(Detail::Full, "TAG")).unwrap().contains("secret detail"));
    }

    #[test]
    fn multi_select_and_several_questions_open_the_card_instead_of_answering() {
        let multi = InteractionRequest::Question { questions: vec![question("Which?", &["A", "B"], true)] };
        assert!(Ask::of(AskEvent::Opened, &session(), "t", &multi).unwrap().actions.is_empty());
        let several = InteractionRequest::Question {
            questions: vec![question("First?", &["A", "B"], false), question("Second?", &["C"], false)],
        };
        let ask = Ask::of(AskEvent::Opened, &session(), "t", &several).unwrap();
        assert!(ask.actions.is_empty());
        assert_eq!(ask.question, "First? (and 1 more)");
        let unreadable = InteractionRequest::Unreadable { error: "bad".into() };
        assert_eq!(Ask::of(AskEvent::Opened, &session(), "t", &unreadable), None);
    }

    #[test]
    fn a_permission_names_the_file_never_the_change_and_offers_allow_once_and_deny() {
        let shows = Shows::File {
            path: "/home/me/app/src/main.rs".into(),
            diff: vec![DiffLine { sign: '+', text: "SECRET NEW".into() }],
            more: 0,
        };
        let ask = Ask::of(AskEvent::Parked, &session(), "t", &approval(shows)).unwrap();
        let bytes = ask.push_payload(Detail::Full, "TAG");
        let text = String::from_utf8(bytes).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        let push: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(push["question"], "Edit /home/me/app/src/main.rs?");
        assert_eq!(push["kind"], "permission");
        assert_eq!(push["event"], "parked");
        assert_eq!(push["title"], "Still waiting · Fix the login");
        assert_eq!(push["options"], json!(["Allow once", "Deny"]));
        assert_eq!(push["actions"][0]["body"]["decision"], json!({"allow": {"always": null}}));
        assert_eq!(push["actions"][1]["body"]["decision"], json!({"deny": {"message": null}}));
        assert_eq!(push["actions"][1]["path"], "/api/decide_approval");
    }

    #[test]
    fn minimal_detail_says_only_that_a_session_needs_you_and_links_to_it() {
        let request = InteractionRequest::Question { questions: vec![question("Which auth?", &["JWT"], false)] };
        let ask = Ask::of(AskEvent::Opened, &session(), "t1", &request).unwrap();
        let push = payload(&ask, Detail::Minimal);
        assert_eq!(
            push,
            json!({"type": "ask", "tag": "TAG", "event": "opened", "title": "AskBridge", "body": MINIMAL_TEXT,
                   "url": "/s/s1#t1", "actions": []})
        );
        assert_eq!(
            ask.webhook_json(Detail::Minimal, "https://ab.example.com/"),
            json!({"event": "opened", "message": MINIMAL_TEXT, "url": "https://ab.example.com/s/s1#t1"})
        );
    }

    #[test]
    fn a_huge_question_still_fits_one_push() {
        let long = "Why? ".repeat(2_000);
        let labels: Vec<String> = (0..50).map(|i| format!("{i} {}", "x".repeat(300))).collect();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let request = InteractionRequest::Question { questions: vec![question(&long, &labels, false)] };
        let ask = Ask::of(AskEvent::Opened, &session(), "t", &request).unwrap();
        let bytes = ask.push_payload(Detail::Full, "TAG");
        assert!(bytes.len() <= MAX_PLAINTEXT, "{}", bytes.len());
        let push: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(push["actions"], json!([]), "the actions (with the whole question) did not fit");
        assert!(push["question"].as_str().unwrap().ends_with('…'));
        assert_eq!(push["options"].as_array().unwrap().len(), MAX_OPTIONS);
    }

    #[test]
    fn the_tag_is_a_short_hash_the_same_for_the_same_interaction() {
        let tag = tag_of("s1", "toolu_1");
        assert_eq!(tag.len(), 22);
        assert_eq!(tag, tag_of("s1", "toolu_1"));
        assert_ne!(tag, tag_of("s1", "toolu_2"));
        assert!(tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }

    #[test]
    fn clipping_counts_characters_not_bytes() {
        assert_eq!(clip("héllo", 10), "héllo");
        assert_eq!(clip("héllo", 5), "héllo");
        assert_eq!(clip("héllo wörld", 5), "héll…");
        assert_eq!(clip("", 3), "");
    }
}
