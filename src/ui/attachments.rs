//! Files in a message (issue 21): images and text files pasted into the message box, dropped on
//! it, or picked with Attach; each shown before sending (a thumbnail or a chip with its name, and
//! a button that removes it), uploaded at once (`POST /api/attachments`), and sent by their hashes
//! with the message. And how the thread shows them once sent.
//!
//! The composer holds the files' state (`Attachments`: a few lines in the first load); everything
//! that attaching does (paste and drop, the upload, the thumbnails) is drawn by the session pane's
//! chunk once the page is interactive (`draw_tray`, docs/size.md), so the welcome page's first
//! load carries none of it.

use leptos::prelude::*;

use crate::thread::attachment::attachment_url;
use crate::thread::{AttachmentRef, Image};

/// A file in the composer, before the message is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// This page's own number for it (the same file may be attached twice).
    pub id: u32,
    pub name: String,
    /// A `blob:` URL of the image, for its thumbnail; None for a text file.
    pub preview: Option<String>,
    /// Its hash once uploaded.
    pub hash: Option<String>,
}

/// The files attached to the message being written, and why the last one could not be.
#[derive(Debug, Clone, Copy)]
pub struct Attachments {
    pub files: RwSignal<Vec<Pending>>,
    pub problem: RwSignal<Option<String>>,
}

impl Attachments {
    pub fn new() -> Self {
        Self { files: RwSignal::new(Vec::new()), problem: RwSignal::new(None) }
    }

    /// The uploaded files' hashes, in order: what `send_message` takes.
    pub fn hashes(&self) -> Vec<String> {
        self.files.with_untracked(|files| files.iter().filter_map(|f| f.hash.clone()).collect())
    }

    /// A file is still on its way to the server: the message waits for it.
    pub fn uploading(&self) -> bool {
        self.files.with(|files| files.iter().any(|f| f.hash.is_none()))
    }

    /// The message went: the box starts empty again.
    pub fn clear(&self) {
        self.files.set(Vec::new());
        self.problem.set(None);
    }

    /// The Attach button, the files attached and what went wrong: drawn by the chunk, once the
    /// page is interactive (attaching needs the browser anyway, and nothing of it is in the HTML
    /// the server draws, so hydration has nothing to take over).
    // On the server the closure draws nothing (there is nothing to take over).
    #[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_lazy_evaluations))]
    pub fn tray(self) -> impl IntoView {
        let hydrated = super::state::use_workspace().hydrated;
        move || {
            hydrated.get().then(|| {
                #[cfg(feature = "hydrate")]
                {
                    Suspend::new(async move { draw_tray(self).await.unwrap_or_else(|_| ().into_any()) })
                }
            })
        }
    }
}

impl Default for Attachments {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "hydrate")]
#[leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)]
fn draw_tray(attachments: Attachments) -> Result<AnyView, super::chunk::ChunkMissing> {
    Ok(view! { <browser::Tray attachments /> }.into_any())
}

/// An image the person attached, in the thread: the stored file (or the bytes an imported
/// message carried), with its name as its alt text.
pub fn attached_image(image: &Image) -> impl IntoView + use<> {
    let alt = image.name.clone().unwrap_or_else(|| "Attached image".into());
    let src = image.src();
    view! {
        <a class="attached-image" href=image.hash.as_deref().map(attachment_url) target="_blank" rel="noopener">
            <img src=src alt=alt loading="lazy" />
        </a>
    }
}

/// A text file the person attached, in the thread: a chip with its name, which opens it.
pub fn attached_file(file: &AttachmentRef) -> impl IntoView + use<> {
    let name = file.name.clone().unwrap_or_else(|| "Attached file".into());
    let download = name.clone();
    view! {
        <a class="attachment-chip" href=file.url() download=download title="Attached file">
            {name}
        </a>
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::sync::atomic::{AtomicU32, Ordering};

    use leptos::ev;
    use leptos::html;
    use leptos::prelude::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    use super::{Attachments, Pending};
    use crate::error::AppError;
    use crate::thread::AttachmentRef;
    use crate::thread::attachment::{Kind, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS_PER_MESSAGE, Refused};

    static NEXT_ID: AtomicU32 = AtomicU32::new(1);

    /// What the file picker offers (a text file without a known type is still taken).
    const ACCEPT: &str = "image/png,image/jpeg,image/gif,image/webp,text/*,.md,.json,.toml,.yaml,.yml,.rs,.py,.ts,.js,\
                          .go,.java,.c,.h,.cpp,.sh,.sql,.csv,.log,.diff,.patch";

    #[component]
    pub fn Tray(attachments: Attachments) -> impl IntoView {
        let picker = NodeRef::<html::Input>::new();
        let files = attachments.files;
        take_what_is_pasted_or_dropped(attachments);

        view! {
            <ul class="attachment-list" aria-label="Attached files" hidden=move || files.with(Vec::is_empty)>
                <For each=move || files.get() key=|file| (file.id, file.hash.clone()) let:file>
                    <li class="attachment" aria-busy=file.hash.is_none().then_some("true")>
                        {match file.preview.clone() {
                            Some(src) => view! { <img class="attachment-thumb" src=src alt=file.name.clone() /> }.into_any(),
                            None => view! { <span class="attachment-chip">{file.name.clone()}</span> }.into_any(),
                        }}
                        <button
                            type="button"
                            class="attachment-remove"
                            aria-label=format!("Remove {}", file.name)
                            title=format!("Remove {}", file.name)
                            on:click=move |_| remove(attachments, file.id)
                        >
                            "×"
                        </button>
                    </li>
                </For>
            </ul>
            <button
                type="button"
                class="button attach"
                title="Attach images or text files (or paste or drop them here)"
                on:click=move |_| {
                    if let Some(input) = picker.get_untracked() {
                        input.click();
                    }
                }
            >
                "Attach"
            </button>
            <input
                node_ref=picker
                type="file"
                multiple
                accept=ACCEPT
                hidden
                tabindex="-1"
                aria-hidden="true"
                on:change=move |ev| {
                    let input: web_sys::HtmlInputElement = event_target(&ev);
                    if let Some(list) = input.files() {
                        add_all(attachments, &list);
                    }
                    // The same file may be picked again.
                    input.set_value("");
                }
            />
            <p class="attachment-problem" role="alert" hidden=move || attachments.problem.with(Option::is_none)>
                {move || attachments.problem.get().unwrap_or_default()}
            </p>
        }
    }

    /// Files pasted or dropped anywhere in the composer (the message box first of all) are
    /// attached, for as long as the tray is drawn.
    fn take_what_is_pasted_or_dropped(attachments: Attachments) {
        let in_composer = |target: Option<web_sys::EventTarget>| {
            target
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .is_some_and(|el| el.closest(".composer").ok().flatten().is_some())
        };
        let paste = window_event_listener(ev::paste, move |ev| {
            let Some(list) = ev.clipboard_data().and_then(|data| data.files()) else { return };
            if in_composer(ev.target()) && list.length() > 0 {
                ev.prevent_default();
                add_all(attachments, &list);
            }
        });
        let drag = window_event_listener(ev::dragover, move |ev| {
            if in_composer(ev.target()) {
                ev.prevent_default();
            }
        });
        let drop = window_event_listener(ev::drop, move |ev| {
            let Some(list) = ev.data_transfer().and_then(|data| data.files()) else { return };
            if in_composer(ev.target()) && list.length() > 0 {
                ev.prevent_default();
                add_all(attachments, &list);
            }
        });
        on_cleanup(move || {
            paste.remove();
            drag.remove();
            drop.remove();
        });
    }

    fn add_all(attachments: Attachments, list: &web_sys::FileList) {
        attachments.problem.set(None);
        for index in 0..list.length() {
            if let Some(file) = list.get(index) {
                add(attachments, file);
            }
        }
    }

    /// Judges the file here first (its size and kind: nothing is sent for one that cannot be
    /// attached), shows it, and uploads it.
    fn add(attachments: Attachments, file: web_sys::File) {
        let name = file.name();
        let declared = file.type_();
        let refuse = |refusal: Refused| attachments.problem.set(Some(format!("{name} cannot be attached: {refusal}.")));
        let size = file.size() as usize;
        if size > MAX_ATTACHMENT_BYTES {
            return refuse(Refused::TooLarge { size });
        }
        if size == 0 {
            return refuse(Refused::Empty);
        }
        let Some(kind) = Kind::of_file(&declared, &name) else {
            return refuse(Refused::UnknownKind { declared });
        };
        if attachments.files.with_untracked(Vec::len) >= MAX_ATTACHMENTS_PER_MESSAGE {
            let problem = format!("A message may carry at most {MAX_ATTACHMENTS_PER_MESSAGE} files.");
            return attachments.problem.set(Some(problem));
        }
        let preview =
            matches!(kind, Kind::Image(_)).then(|| web_sys::Url::create_object_url_with_blob(&file).ok()).flatten();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        attachments.files.update(|files| files.push(Pending { id, name: name.clone(), preview, hash: None }));
        leptos::task::spawn_local(async move {
            match upload(&file, kind.media_type(), &name).await {
                Ok(stored) => attachments.files.update(|files| {
                    if let Some(pending) = files.iter_mut().find(|f| f.id == id) {
                        pending.hash = Some(stored.hash);
                    }
                }),
                Err(error) => {
                    remove(attachments, id);
                    let why = match error {
                        AppError::AttachmentRefused { detail } => format!("{detail}."),
                        other => other.to_string(),
                    };
                    attachments.problem.set(Some(format!("{name} cannot be attached: {why}")));
                }
            }
        });
    }

    fn remove(attachments: Attachments, id: u32) {
        attachments.files.update(|files| {
            if let Some(at) = files.iter().position(|f| f.id == id) {
                if let Some(url) = &files[at].preview {
                    _ = web_sys::Url::revoke_object_url(url);
                }
                files.remove(at);
            }
        });
    }

    /// `POST /api/attachments` with the file's bytes as they are.
    async fn upload(file: &web_sys::File, media_type: &str, name: &str) -> Result<AttachmentRef, AppError> {
        let unreachable = |_| AppError::Unreachable { detail: "the file could not be sent".into() };
        let headers = web_sys::Headers::new().map_err(unreachable)?;
        headers.set("Content-Type", media_type).map_err(unreachable)?;
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_body(file);
        init.set_headers(&headers);
        let url = format!("/api/attachments?name={}", js_sys::encode_uri_component(name));
        let response = JsFuture::from(window().fetch_with_str_and_init(&url, &init)).await.map_err(unreachable)?;
        let response: web_sys::Response = response.unchecked_into();
        let text = JsFuture::from(response.text().map_err(unreachable)?).await.map_err(unreachable)?;
        let text = text.as_string().unwrap_or_default();
        if response.ok() {
            serde_json::from_str(&text).map_err(|e| AppError::Internal { detail: e.to_string() })
        } else {
            Err(serde_json::from_str(&text)
                .unwrap_or(AppError::Internal { detail: format!("HTTP {}", response.status()) }))
        }
    }
}
