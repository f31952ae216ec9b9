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
}

/// An error of the arrayflow runtime. Its `Display` starts with the user's `file:line`.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Error {
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

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            site: None,
            origin: None,
            hint: None,
        }
    }
    pub fn at(mut self, site: Site) -> Self {
        self.site = Some(site);
        self
    }
    pub fn origin(mut self, site: Site) -> Self {
        self.origin = Some(site);
        self
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn kind(&self) -> ErrorKind {
        self.kind
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
