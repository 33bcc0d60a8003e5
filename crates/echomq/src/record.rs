//! The record: one hash per job, with a fixed set of named fields.
//!
//! Every executor writes the three birth fields; the native executor writes
//! two more, and nothing writes any other. Readers accept a record with or
//! without the two.

use crate::ErrorKind;
use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// The record's field names. The names are the protocol.
pub mod field {
    /// The lifecycle position: one of [`State`](super::State)'s names.
    pub const STATE: &str = "state";
    /// The fencing token: each claim increments it and hands the new value out.
    pub const ATTEMPTS: &str = "attempts";
    /// The caller's bytes, stored verbatim, never inspected.
    pub const PAYLOAD: &str = "payload";
    /// Native executor only: when the job was enqueued, server ms.
    pub const ENQUEUED_AT: &str = "enqueued_at";
    /// Native executor only: when a transition last wrote the record, server ms.
    pub const UPDATED_AT: &str = "updated_at";
}

/// Where a job is in its lifecycle; each state has its own sorted set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// Waiting to be claimed.
    Pending,
    /// Claimed, under a lease.
    Active,
    /// Waiting for its due time (scheduled, or a retry's back-off).
    Delayed,
    /// Finished.
    Done,
    /// Out of attempts: a dead letter, retryable by hand.
    Dead,
    /// Cancelled by hand.
    Cancelled,
    /// A flow's parent waiting for its children (protocol 1.6): pending
    /// once they have all ended.
    Waiting,
}

impl State {
    /// Every state, in lifecycle order (and `waiting`, which comes before
    /// pending, last: the order of the protocol's sets).
    pub const ALL: [State; 7] = [
        State::Pending,
        State::Active,
        State::Delayed,
        State::Done,
        State::Dead,
        State::Cancelled,
        State::Waiting,
    ];

    /// The state's name in the record and in its set's key.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Active => "active",
            State::Delayed => "delayed",
            State::Done => "done",
            State::Dead => "dead",
            State::Cancelled => "cancelled",
            State::Waiting => "waiting",
        }
    }
}

impl FromStr for State {
    type Err = Error;

    fn from_str(name: &str) -> Result<State> {
        State::ALL
            .into_iter()
            .find(|state| state.as_str() == name)
            .ok_or_else(|| Error::new(ErrorKind::Record, format!("unknown state {name:?}")))
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One job's record, as read from its hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The lifecycle position.
    pub state: State,
    /// The fencing token: how many times the job was claimed.
    pub attempts: u64,
    /// The caller's bytes.
    pub payload: Vec<u8>,
    /// When it was enqueued, server ms (written by the native executor only).
    pub enqueued_at: Option<u64>,
    /// When a native transition last wrote it, server ms: at its birth,
    /// equal to `enqueued_at` (written by the native executor only).
    pub updated_at: Option<u64>,
}

impl Record {
    /// Read a record from its hash's field/value pairs (HGETALL's reply).
    ///
    /// # Errors
    /// [`ErrorKind::Record`] for a missing birth field, an unknown field, an
    /// unknown state, or a field whose value is not of its type.
    pub fn from_fields<F, V>(fields: impl IntoIterator<Item = (F, V)>) -> Result<Record>
    where
        F: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let (mut state, mut attempts, mut payload) = (None, None, None);
        let (mut enqueued_at, mut updated_at) = (None, None);
        for (name, value) in fields {
            let value = value.as_ref();
            match name.as_ref() {
                b"state" => state = Some(text(field::STATE, value)?.parse()?),
                b"attempts" => attempts = Some(number(field::ATTEMPTS, value)?),
                b"payload" => payload = Some(value.to_vec()),
                b"enqueued_at" => enqueued_at = Some(number(field::ENQUEUED_AT, value)?),
                b"updated_at" => updated_at = Some(number(field::UPDATED_AT, value)?),
                other => {
                    let other = String::from_utf8_lossy(other);
                    return Err(Error::new(ErrorKind::Record, format!("unknown field {other:?}")));
                }
            }
        }
        let missing = |name: &str| Error::new(ErrorKind::Record, format!("no {name} field"));
        Ok(Record {
            state: state.ok_or_else(|| missing(field::STATE))?,
            attempts: attempts.ok_or_else(|| missing(field::ATTEMPTS))?,
            payload: payload.ok_or_else(|| missing(field::PAYLOAD))?,
            enqueued_at,
            updated_at,
        })
    }
}

fn text<'a>(name: &str, value: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(value).map_err(|_| Error::new(ErrorKind::Record, format!("{name} is not text")))
}

fn number(name: &str, value: &[u8]) -> Result<u64> {
    text(name, value)?
        .parse()
        .map_err(|_| Error::new(ErrorKind::Record, format!("{name} is not a non-negative integer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        list.iter().map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn reads_the_three_birth_fields() {
        let record =
            Record::from_fields(pairs(&[("state", "pending"), ("attempts", "0"), ("payload", "hi")]))
                .unwrap();
        assert_eq!(record.state, State::Pending);
        assert_eq!(record.attempts, 0);
        assert_eq!(record.payload, b"hi");
        assert_eq!((record.enqueued_at, record.updated_at), (None, None));
    }

    #[test]
    fn reads_the_native_two_as_well() {
        let record = Record::from_fields(pairs(&[
            ("state", "active"),
            ("attempts", "3"),
            ("payload", ""),
            ("enqueued_at", "1700000000000"),
            ("updated_at", "1700000000500"),
        ]))
        .unwrap();
        assert_eq!(record.state, State::Active);
        assert_eq!(record.enqueued_at, Some(1_700_000_000_000));
        assert_eq!(record.updated_at, Some(1_700_000_000_500));
    }

    #[test]
    fn rejects_what_the_protocol_never_writes() {
        let base = [("state", "pending"), ("attempts", "0"), ("payload", "x")];
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![("state", "paused"), base[1], base[2]],
            vec![base[0], ("attempts", "-1"), base[2]],
            vec![base[0], ("attempts", "one"), base[2]],
            vec![base[1], base[2]],
            vec![base[0], base[2]],
            vec![base[0], base[1]],
            vec![base[0], base[1], base[2], ("priority", "5")],
        ];
        for case in cases {
            assert!(
                matches!(Record::from_fields(pairs(&case)), Err(Error { kind: ErrorKind::Record, .. })),
                "{case:?}"
            );
        }
    }

    #[test]
    fn state_names_round_trip() {
        for state in State::ALL {
            assert_eq!(state.as_str().parse::<State>().unwrap(), state);
        }
    }
}
