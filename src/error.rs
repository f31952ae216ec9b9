//! The crate's one error type: what went wrong, at which call site of the user's code, and what to do.

use crate::ir::Site;
use std::fmt;

/// What class of problem an [`Error`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Shapes that cannot be combined (broadcasting, matmul, reshape, concat ...).
    Shape,
    /// An element type that the operation does not accept.
    DType,
    /// An argument outside its allowed range (axis, slice, length of a host slice ...).
    Argument,
    /// A computation failed while running (division by zero, index out of bounds ...).
    Execution,
    /// A read of an array whose computation failed or was abandoned.
    InvalidResult,
    /// The runtime itself could not do what was asked (threads gone, allocation failed).
    Runtime,
    /// Comparison mode: an optimised result differs from its reference result.
    Mismatch,
    /// A trap fired (NaN, infinity, index out of range, failed assertion): see
    /// `crate::debug::trap`.
    Trap,
}

/// An error of the arrayflow runtime. Its `Display` starts with the user's `file:line`. Its
/// `Debug` (what `unwrap()` and `fn main() -> Result` print) is the same readable message; `{:#?}`
/// shows the fields.
#[derive(Clone, thiserror::Error)]
pub struct Error {
    /// What class of problem it is.
    pub kind: ErrorKind,
    /// What was wrong.
    pub message: String,
    /// The user's call site that made the failing request (the read, or the recording call).
    pub site: Option<Site>,
    /// For [`ErrorKind::InvalidResult`] and [`ErrorKind::Execution`]: where the failing op was recorded.
    pub origin: Option<Site>,
    /// What to do about it.
    pub hint: Option<String>,
}

/// Called with the site of every error named at a call site ([`Error::at`]): the profiler
/// registers its counter here at its first start (`crate::profile`, a layer above this one).
pub static ERROR_HOOK: std::sync::OnceLock<fn(Site)> = std::sync::OnceLock::new();

impl Error {
    /// An error of `kind` saying `message`, with no call site, origin or hint yet.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            site: None,
            origin: None,
            hint: None,
        }
    }
    /// Names the user's call site that made the failing request.
    pub fn at(mut self, site: Site) -> Self {
        if let Some(hook) = ERROR_HOOK.get() {
            hook(site);
        }
        self.site = Some(site);
        self
    }
    /// Names where the failing operation was recorded.
    pub fn origin(mut self, site: Site) -> Self {
        self.origin = Some(site);
        self
    }
    /// Says what to do about it.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    /// What class of problem it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.debug_struct("Error")
                .field("kind", &self.kind)
                .field("message", &self.message)
                .field("site", &self.site)
                .field("origin", &self.origin)
                .field("hint", &self.hint)
                .finish()
        } else {
            fmt::Display::fmt(self, f)
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(site) = &self.site {
            write!(f, "{site}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(origin) = &self.origin {
            write!(f, " (operation recorded at {origin})")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "; hint: {hint}")?;
        }
        Ok(())
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
