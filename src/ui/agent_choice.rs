//! Which agent and model a session gets: the new-session page's Agent and Model selects, and the
//! list they are drawn from (`api::agent_offers`, asked once per page). The session pane's chunk
//! draws them (`lazy::new_session_choices`, and the header's model switch): the first load of `/`
//! carries none of this code.

use std::cell::OnceCell;

use leptos::prelude::*;

use super::pane::model_select;
use super::state::NewSessionOptions;
use crate::thread::AgentOffer;

thread_local! {
    static OFFERS: OnceCell<ArcRwSignal<Option<Vec<AgentOffer>>>> = const { OnceCell::new() };
}

/// The agents a new session can talk to, with their models: `None` until the server answered
/// (asked at the first call; asked again at the next when it failed).
pub fn offers() -> ArcRwSignal<Option<Vec<AgentOffer>>> {
    let (offers, first) = OFFERS.with(|cell| {
        let first = cell.get().is_none();
        (cell.get_or_init(|| ArcRwSignal::new(None)).clone(), first)
    });
    if first {
        let asked = offers.clone();
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            if let Ok(list) = crate::api::agent_offers().await {
                asked.set(Some(list));
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = asked;
    }
    offers
}

/// Asks the server for the offers again: what an ACP agent offers (its models, its own modes) is
/// learnt from its first session, so a page opened before that has none of it.
pub fn ask_offers_again() {
    let offers = offers();
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        if let Ok(list) = crate::api::agent_offers().await {
            offers.set(Some(list));
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = offers;
}

/// The models `agent` offers, once known.
pub fn models_of(agent: &str) -> Option<Vec<crate::thread::ModelChoice>> {
    offers().with(|offers| offers.as_ref()?.iter().find(|a| a.name == agent).map(|a| a.models.clone()))
}

/// The permission modes of `agent`'s own, once known (empty: AskBridge's four).
pub fn modes_of(agent: &str) -> Vec<crate::thread::AgentMode> {
    offers().with(|offers| {
        offers.as_ref().and_then(|o| o.iter().find(|a| a.name == agent)).map(|a| a.modes.clone()).unwrap_or_default()
    })
}

/// The new-session page's Agent select (when the server offers more than one) and the chosen
/// agent's Model select. Picking another agent resets the model, and the folder to the agent's
/// own unless the person typed another.
pub fn new_session_choices(options: NewSessionOptions) -> impl IntoView {
    let NewSessionOptions { workdir, agent, agent_label, works_in_folder, model, .. } = options;
    let offers = offers();
    let list = offers.clone();
    let agents = move || {
        let offers = list.get()?;
        (offers.len() > 1).then(|| {
            let current = agent.get_untracked();
            let choices = offers
                .iter()
                .map(|offer| {
                    let selected = offer.name == current;
                    view! { <option value=offer.name.clone() selected=selected>{offer.label.clone()}</option> }
                })
                .collect_view();
            let picked = move |event: leptos::ev::Event| {
                let name = event_target_value(&event);
                let Some(offer) = offers.iter().find(|a| a.name == name) else { return };
                let before =
                    offers.iter().find(|a| a.name == agent.get_untracked()).and_then(|a| a.default_workdir.clone());
                let typed = workdir.get_untracked();
                if typed.trim().is_empty() || Some(&typed) == before.as_ref() {
                    workdir.set(offer.default_workdir.clone().unwrap_or_default());
                }
                works_in_folder.set(offer.default_workdir.is_some());
                agent_label.set(offer.label.clone());
                model.set(String::new());
                agent.set(name);
            };
            view! {
                <label class="mode-field">
                    <span class="mode-label">"Agent"</span>
                    <select aria-label="Agent" on:change=picked>{choices}</select>
                </label>
            }
        })
    };
    let models = move || {
        let models =
            offers.with(|offers| offers.as_ref()?.iter().find(|a| a.name == agent.get()).map(|a| a.models.clone()))?;
        (!models.is_empty()).then(|| model_select(models, model.get_untracked(), move |picked| model.set(picked)))
    };
    view! {
        {agents}
        {models}
    }
}
