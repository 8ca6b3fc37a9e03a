//! The interface, named for what people see: the workspace with its session list, the thread
//! with its messages, tool cards, question and approval cards, and the composer.

pub mod agent_choice;
pub mod approval_card;
pub mod attachments;
pub mod box_keys;
pub mod chunk;
pub mod claude_sessions;
pub mod composer;
pub mod file_list;
pub mod focus;
pub mod icons;
pub mod interaction_card;
pub mod kept;
pub mod keys_dialog;
pub mod keys_help;
pub mod lazy;
pub mod markdown;
pub mod navigation;
pub mod new_session;
pub mod notify;
pub mod page_data;
pub mod pane;
pub mod presence;
pub mod question_card;
pub mod queued;
pub mod server_call;
pub mod session_edit;
pub mod session_list;
pub mod session_pane;
pub mod slash;
pub mod state;
pub mod thread_view;
pub mod time;
pub mod tool_card;
pub mod usage;
pub mod workspace;
