//! A job's own policy, set by its producer at ENQUEUE and kept beside the
//! record in `emq:{q}:policy` (id → its text): how many attempts it gets,
//! how it backs off between them, and how long one attempt may run. FAIL and
//! REAP honour it on the server; the worker's options are only the defaults
//! for what a job leaves unset. CLAIM hands it to the worker, which enforces
//! the timeout.
//!
//! The text is the ENQUEUE options that make it, in a fixed order, upper
//! case, decimal, separated by single spaces:
//! `ATTEMPTS 3 BACKOFF_EXP 1000 TIMEOUT 30000`. Any speaker reads it back by
//! the same rules as the options.

use std::ops::RangeInclusive;

use crate::limits::{DELAY_MS, MAX_ATTEMPTS, TIMEOUT_MS};
use crate::parse::options;
use crate::Refusal;

/// The options of ENQUEUE that make a policy, as [`options`] reads them.
pub(crate) const OPTIONS: [(&str, RangeInclusive<u64>); 4] =
    [("ATTEMPTS", MAX_ATTEMPTS), ("BACKOFF", DELAY_MS), ("BACKOFF_EXP", DELAY_MS), ("TIMEOUT", TIMEOUT_MS)];

/// How long a failed job waits before its next attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backoff {
    /// The same wait after every failure, in ms.
    Fixed(u64),
    /// `base · 2^(attempt − 1)` ms after failed attempt `attempt`, at most
    /// the longest delay ([`DELAY_MS`]).
    Exponential(u64),
}

/// A job's own policy. Each part left `None` falls back to the caller's
/// (the failing worker's, the reaper's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// The job dies when its attempts reach this.
    pub attempts: Option<u64>,
    /// How it backs off between attempts.
    pub backoff: Option<Backoff>,
    /// How long one attempt may run, in ms; the worker enforces it.
    pub timeout: Option<u64>,
}

impl Policy {
    /// The policy the options `[ATTEMPTS, BACKOFF, BACKOFF_EXP, TIMEOUT]`
    /// make; `None` when none was given.
    pub(crate) fn from_options(found: [Option<u64>; 4]) -> Result<Option<Policy>, Refusal> {
        let [attempts, fixed, exponential, timeout] = found;
        let backoff = match (fixed, exponential) {
            (Some(_), Some(_)) => return Err(Refusal::arg("BACKOFF and BACKOFF_EXP exclude each other")),
            (Some(ms), None) => Some(Backoff::Fixed(ms)),
            (None, Some(ms)) => Some(Backoff::Exponential(ms)),
            (None, None) => None,
        };
        let policy = Policy { attempts, backoff, timeout };
        Ok((policy != Policy::default()).then_some(policy))
    }

    /// The policy stored as `text`, or `None` when it does not read as one
    /// (PROTOCOL.md §7.2): its words split on each single space (so a
    /// leading, trailing or doubled space makes an empty word, which is no
    /// option), read as the options are.
    #[must_use]
    pub(crate) fn parse(text: &[u8]) -> Option<Policy> {
        let words: Vec<&[u8]> = text.split(|b| *b == b' ').collect();
        options(&words, OPTIONS).ok().and_then(|found| Policy::from_options(found).ok().flatten())
    }

    /// The policy stored as `text`, read as a transition reads it
    /// (PROTOCOL.md §7.2), where text that does not read counts as none (a
    /// host showing what it found; a transition refuses it instead).
    #[must_use]
    pub fn read(text: &[u8]) -> Policy {
        Policy::parse(text).unwrap_or_default()
    }

    /// The stored text: the options that make it, in the fixed order.
    #[must_use]
    pub(crate) fn text(&self) -> Vec<u8> {
        let mut parts = Vec::new();
        if let Some(n) = self.attempts {
            parts.push(format!("ATTEMPTS {n}"));
        }
        match self.backoff {
            Some(Backoff::Fixed(ms)) => parts.push(format!("BACKOFF {ms}")),
            Some(Backoff::Exponential(ms)) => parts.push(format!("BACKOFF_EXP {ms}")),
            None => {}
        }
        if let Some(ms) = self.timeout {
            parts.push(format!("TIMEOUT {ms}"));
        }
        parts.join(" ").into_bytes()
    }

    /// The maximum attempts: the job's, or `default`.
    #[must_use]
    pub(crate) fn max_attempts(&self, default: u64) -> u64 {
        self.attempts.unwrap_or(default)
    }

    /// The back-off after failed attempt `attempt` (≥ 1): the job's, or `default`.
    #[must_use]
    pub(crate) fn backoff_ms(&self, default: u64, attempt: u64) -> u64 {
        match self.backoff {
            None => default,
            Some(Backoff::Fixed(ms)) => ms,
            Some(Backoff::Exponential(base)) => {
                let cap = *DELAY_MS.end();
                let doublings = attempt.saturating_sub(1);
                // Past 40 doublings any base of 1 ms or more is past the cap.
                if base == 0 {
                    0
                } else if doublings >= 40 {
                    cap
                } else {
                    base.saturating_mul(1 << doublings).min(cap)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_reads_back_as_the_same_policy() {
        let policy =
            Policy { attempts: Some(3), backoff: Some(Backoff::Exponential(1000)), timeout: Some(30_000) };
        assert_eq!(policy.text(), b"ATTEMPTS 3 BACKOFF_EXP 1000 TIMEOUT 30000");
        assert_eq!(Policy::read(&policy.text()), policy);
        assert_eq!(Policy::read(b"ATTEMPTS 0"), Policy { attempts: Some(0), ..Policy::default() });
    }

    #[test]
    fn text_that_is_no_policy_leaves_every_default() {
        for text in
            [&b""[..], b"ATTEMPTS", b"ATTEMPTS x", b"COLOUR 3", b"BACKOFF 1 BACKOFF_EXP 2", b"TIMEOUT 0"]
        {
            assert_eq!(Policy::read(text), Policy::default(), "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn an_exponential_backoff_doubles_per_attempt_up_to_the_longest_delay() {
        let policy = Policy { backoff: Some(Backoff::Exponential(1000)), ..Policy::default() };
        let waits: Vec<u64> = (1..=4).map(|attempt| policy.backoff_ms(7, attempt)).collect();
        assert_eq!(waits, [1000, 2000, 4000, 8000]);
        assert_eq!(policy.backoff_ms(7, 40), 999_999_999_999);
        assert_eq!(policy.backoff_ms(7, 999_999_999_999_999), 999_999_999_999);
        assert_eq!(Policy::default().backoff_ms(7, 3), 7);
        assert_eq!(Policy { backoff: Some(Backoff::Fixed(5)), ..Policy::default() }.backoff_ms(7, 9), 5);
    }
}
