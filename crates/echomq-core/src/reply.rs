//! What a transition answers: a [`Reply`], or a [`Refusal`] carrying a
//! protocol [`Code`].

use std::fmt;

use crate::Code;

/// A transition's reply, in RESP's terms.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// An integer.
    Int(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// Nil.
    Nil,
    /// An array.
    Array(Vec<Reply>),
    /// An error reply inside an array: one item's own refusal (ACKMANY's
    /// per-job answers). A transition's refusal of the whole call is its
    /// [`Answer`]'s `Err`, never this.
    Error(Refusal),
}

/// A transition's refusal: `EMQ<NAME> <text>`. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The protocol code.
    pub code: Code,
    /// The text after the code.
    pub text: String,
}

impl Reply {
    /// A count or a time in ms, as an integer reply.
    #[must_use]
    pub fn count(n: u64) -> Reply {
        Reply::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl Refusal {
    /// A refusal with `code` and `text`.
    #[must_use]
    pub fn new(code: Code, text: impl Into<String>) -> Refusal {
        Refusal { code, text: text.into() }
    }

    /// `EMQARG <text>`.
    #[must_use]
    pub fn arg(text: impl Into<String>) -> Refusal {
        Refusal::new(Code::Arg, text)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.text)
    }
}

impl std::error::Error for Refusal {}

/// The result of every transition.
pub type Answer = Result<Reply, Refusal>;
