//! A server function called from the page: whether it is in flight and why it last failed, for
//! the control that started it to show. Every button that talks to the server goes through it
//! (send, stop, create, rename, delete, answer, skip, decide, switch mode, load a session).
//!
//! It has `ServerAction`'s shape (`dispatch` a server function's input; `pending`; the error) but
//! not its machinery: an `Action` per server function, with its version, input and value
//! signals. Measured on this bundle (the release WASM after wasm-opt, brotli), with the same ten
//! call sites: this helper 322,802 bytes; the same type built on `ServerAction` 335,146 bytes,
//! 12 KiB more, which the page's 250 KiB budget cannot carry.

use std::marker::PhantomData;

use leptos::prelude::*;
use server_fn::ServerFn;

use crate::error::AppError;

/// In flight or not, and why the last call failed (in words for people); a card's submit and
/// skip share one.
#[derive(Clone, Copy)]
pub struct CallState {
    pub pending: RwSignal<bool>,
    pub problem: RwSignal<Option<String>>,
}

impl CallState {
    pub fn new() -> Self {
        Self { pending: RwSignal::new(false), problem: RwSignal::new(None) }
    }
}

impl Default for CallState {
    fn default() -> Self {
        Self::new()
    }
}

/// Calls the server function `S` (the struct `#[server]` makes of its arguments).
pub struct ServerCall<S> {
    state: CallState,
    server_fn: PhantomData<fn(S)>,
}

impl<S> Clone for ServerCall<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for ServerCall<S> {}

impl<S> Default for ServerCall<S>
where
    S: ServerFn<Error = AppError> + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<S> ServerCall<S>
where
    S: ServerFn<Error = AppError> + 'static,
{
    pub fn new() -> Self {
        Self::sharing(CallState::new())
    }

    /// A call whose state is `state`, shown by the same control as another call's.
    pub fn sharing(state: CallState) -> Self {
        Self { state, server_fn: PhantomData }
    }

    pub fn state(&self) -> CallState {
        self.state
    }

    /// In flight (tracked).
    pub fn pending(&self) -> bool {
        self.state.pending.get()
    }

    /// Why the last call failed, in words for people (tracked).
    pub fn problem(&self) -> Option<String> {
        self.state.problem.get()
    }

    /// Calls the server; `then` hears of its answer when it is a success. A failure stays in
    /// `problem` until the next call.
    pub fn dispatch(&self, input: S, then: impl FnOnce(S::Output) + 'static) {
        self.dispatch_then(input, move |result| {
            if let Ok(output) = result {
                then(output);
            }
        });
    }

    /// Calls the server; `done` hears of the outcome, failure included (and may take the
    /// failure back from `problem`, when it is no news to the person).
    pub fn dispatch_then(&self, input: S, done: impl FnOnce(Result<S::Output, AppError>) + 'static) {
        self.call(input, Box::new(done));
    }

    /// The call itself, once per server function rather than once per function and callback:
    /// with `done` generic, every call site (and `dispatch`'s wrapper) made its own copy of this
    /// task. Boxing the callback measured 0.4 KB less on the first load (brotli).
    ///
    /// The request is queued before the state changes: what the change redraws then waits behind
    /// the request rather than ahead of it (tasks and effects run in the order they are queued).
    fn call(&self, input: S, done: Box<dyn FnOnce(Result<S::Output, AppError>)>) {
        let state = self.state;
        leptos::task::spawn_local(async move {
            let result = S::run_on_client(input).await;
            // The control may be gone by now (its session closed): then nobody is told.
            state.pending.try_set(false);
            if let Err(error) = &result {
                state.problem.try_set(Some(error.to_string()));
            }
            done(result);
        });
        state.pending.set(true);
        state.problem.set(None);
    }
}
