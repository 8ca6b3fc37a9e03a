//! The few icons the interface uses, as inline SVG (no icon font to download).

use leptos::prelude::*;

fn icon(path: &'static str) -> impl IntoView {
    view! {
        <svg class="icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
            <path d=path fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" />
        </svg>
    }
}

pub fn menu() -> impl IntoView {
    icon("M4 6h16M4 12h16M4 18h16")
}

pub fn plus() -> impl IntoView {
    icon("M12 5v14M5 12h14")
}

pub fn pencil() -> impl IntoView {
    icon("M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4")
}

pub fn trash() -> impl IntoView {
    icon("M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3")
}

pub fn send() -> impl IntoView {
    icon("M5 12h13M12 5l7 7-7 7")
}

pub fn stop() -> impl IntoView {
    icon("M7 7h10v10H7z")
}

pub fn bell() -> impl IntoView {
    icon("M6 16V11a6 6 0 0 1 12 0v5l2 2H4zM10 20a2 2 0 0 0 4 0")
}

pub fn bridge() -> impl IntoView {
    icon("M3 17h18M5 17c0-5 3-9 7-9s7 4 7 9M9 17v-4M15 17v-4")
}
