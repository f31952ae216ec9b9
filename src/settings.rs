//! Numeric settings read from the environment (`ARRAYFLOW_*` variables): one rule for every
//! layer. A variable that is set but is not a number is reported once (a `tracing` warning naming
//! it) and the caller's default applies, so a typo never goes unnoticed or stops the program.

use std::str::FromStr;

/// The variable `name` as a number (surrounding spaces ignored); `None` when it is unset or not
/// a number of type `T` (then a warning says so).
pub fn number<T: FromStr>(name: &str) -> Option<T> {
    let v = std::env::var(name).ok()?;
    let n = v.trim().parse().ok();
    if n.is_none() {
        warn_once(name, &v);
    }
    n
}

/// One warning per variable and process.
fn warn_once(name: &str, value: &str) {
    static SEEN: parking_lot::Mutex<Vec<String>> = parking_lot::Mutex::new(Vec::new());
    let mut seen = SEEN.lock();
    if !seen.iter().any(|s| s == name) {
        seen.push(name.to_string());
        tracing::warn!(
            target: "arrayflow",
            "{name}={value:?} is not a number of the kind this setting takes; using its default"
        );
    }
}
