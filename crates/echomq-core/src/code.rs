//! The protocol's error codes. A transition that refuses answers with an error
//! reply `EMQ<NAME> <text>`; the code is the first word and is what speakers
//! match on. This table is the only place the codes are spelled in Rust.

use std::fmt;

/// One protocol error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// `EMQKIND`: the id's first three bytes are not `JOB`.
    Kind,
    /// `EMQFENCE`: the token is not the record's current `attempts`, or the
    /// record is not `active`: the caller does not hold the lease.
    Fence,
    /// `EMQNOJOB`: there is no record for the id.
    NoJob,
    /// `EMQSTATE`: the job's state does not allow the transition (retry of a
    /// job that is not dead, cancel of a done job).
    State,
    /// `EMQTYPE`: a key holds a value of the wrong Redis type.
    Type,
    /// `EMQARG`: a malformed call: wrong keys, a missing or out-of-range
    /// argument, an unknown option.
    Arg,
    /// `EMQSIZE`: a payload or an error text over its size limit.
    Size,
    /// `EMQDATA`: a key of the right type holds a value of the wrong shape
    /// (a record's `attempts` that is not an integer, a `paused` of `2`, a
    /// priority `abc`): malformed stored state, refused before any write.
    Data,
    /// `EMQFULL`: a group holds as many pending jobs as its `MAX` (1.7):
    /// ENQUEUE into it is refused until a claim takes some.
    Full,
    /// `EMQVERSION`: the queue's keys were written by another major of the
    /// protocol (`<q>config`'s `protocol`), or that field is malformed.
    Version,
    /// `TRYAGAIN`, Redis Cluster's own code, not a protocol refusal: a record
    /// the transition needs is missing here while the queue's slot is being
    /// moved to or from this node, so it may be on the other node. Nothing
    /// changed; cluster clients retry it once the slot has moved. Not in
    /// [`Code::ALL`], which holds the protocol's own codes.
    TryAgain,
}

impl Code {
    /// Every code, in the order PROTOCOL.md lists them.
    pub const ALL: [Code; 10] = [
        Code::Kind,
        Code::Fence,
        Code::NoJob,
        Code::State,
        Code::Type,
        Code::Arg,
        Code::Size,
        Code::Data,
        Code::Version,
        Code::Full,
    ];

    /// The code as it travels: the first word of the error reply.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::Kind => "EMQKIND",
            Code::Fence => "EMQFENCE",
            Code::NoJob => "EMQNOJOB",
            Code::State => "EMQSTATE",
            Code::Type => "EMQTYPE",
            Code::Arg => "EMQARG",
            Code::Size => "EMQSIZE",
            Code::Data => "EMQDATA",
            Code::Version => "EMQVERSION",
            Code::Full => "EMQFULL",
            Code::TryAgain => "TRYAGAIN",
        }
    }

    /// The code named by the first word of an error reply, if it is one of ours.
    #[must_use]
    pub fn parse(word: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|code| code.as_str() == word)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_parses_back_to_itself() {
        for code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(code));
            assert!(code.as_str().starts_with("EMQ"));
        }
        assert_eq!(Code::parse("ERR"), None);
        assert_eq!(Code::parse("emqkind"), None);
    }
}
