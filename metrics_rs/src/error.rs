//! The one error type of the pure functions: which argument was wrong and why.

use std::fmt;

/// A caller's mistake, attributed to the argument that carries it.
/// The Python layer turns it into `ValueError("<argument>: <message>")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArgument {
    pub argument: &'static str,
    pub message: String,
}

impl InvalidArgument {
    pub fn new(argument: &'static str, message: impl Into<String>) -> Self {
        Self {
            argument,
            message: message.into(),
        }
    }
}

impl fmt::Display for InvalidArgument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.argument, self.message)
    }
}

impl std::error::Error for InvalidArgument {}

pub type Result<T> = std::result::Result<T, InvalidArgument>;

/// Fails with `argument: message` unless `condition` holds.
pub fn ensure(
    condition: bool,
    argument: &'static str,
    message: impl FnOnce() -> String,
) -> Result<()> {
    if condition {
        Ok(())
    } else {
        Err(InvalidArgument::new(argument, message()))
    }
}
