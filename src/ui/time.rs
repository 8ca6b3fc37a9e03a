//! Times as this browser's person reads them.

use leptos::prelude::*;

/// A moment (ms since the epoch) in this browser's time zone: the time today, the
/// day and month before. Drawn once the page is interactive (the server does not know the zone).
pub fn local_time(at_ms: i64) -> impl IntoView {
    let text = RwSignal::new(String::new());
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let at = js_sys::Date::new(&(at_ms as f64).into());
        let now = js_sys::Date::new_0();
        let same_day = at.get_full_year() == now.get_full_year()
            && at.get_month() == now.get_month()
            && at.get_date() == now.get_date();
        text.set(if same_day {
            format!("{:02}:{:02}", at.get_hours(), at.get_minutes())
        } else {
            format!("{} {}", MONTHS[at.get_month() as usize % 12], at.get_date())
        });
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = at_ms;
    move || text.get()
}
