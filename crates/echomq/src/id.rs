//! Job ids: branded and minted. `JOB_` + a 26-character ULID in Crockford
//! base32, upper case, 30 bytes in all. Ids minted by one process are strictly
//! increasing, so byte order is mint order and equal-priority jobs pop FIFO.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// The brand every job id starts with.
pub const PREFIX: &str = "JOB_";
/// The length of a job id in bytes.
pub const LEN: usize = 30;

/// A job's id, checked in full: prefix, length and alphabet.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(String);

impl JobId {
    /// Mint a new id, greater than every id this process minted before.
    pub fn mint() -> JobId {
        static GENERATOR: Mutex<Option<ulid::Generator>> = Mutex::new(None);
        let mut generator = GENERATOR.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let generator = generator.get_or_insert_with(ulid::Generator::new);
        loop {
            // The random part overflows only after 2^80 ids in one millisecond.
            if let Ok(ulid) = generator.generate() {
                return JobId(format!("{PREFIX}{ulid}"));
            }
            std::thread::yield_now();
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Crockford's base32 alphabet, upper case: digits and letters but I, L, O and U.
fn is_crockford(byte: u8) -> bool {
    matches!(byte, b'0'..=b'9' | b'A'..=b'H' | b'J' | b'K' | b'M' | b'N' | b'P'..=b'T' | b'V'..=b'Z')
}

impl FromStr for JobId {
    type Err = Error;

    fn from_str(text: &str) -> Result<JobId> {
        let why = if !text.starts_with(PREFIX) {
            "it does not start with JOB_"
        } else if text.len() != LEN {
            "it is not 30 bytes long"
        } else if !text.bytes().skip(PREFIX.len()).all(is_crockford) {
            "its ULID is not upper-case Crockford base32"
        } else if text.as_bytes()[PREFIX.len()] > b'7' {
            "its ULID is past the largest 128-bit value"
        } else {
            return Ok(JobId(text.to_owned()));
        };
        Err(Error::InvalidId(format!("{text:?}: {why}")))
    }
}

impl TryFrom<&[u8]> for JobId {
    type Error = Error;

    fn try_from(bytes: &[u8]) -> Result<JobId> {
        std::str::from_utf8(bytes).map_err(|_| Error::InvalidId(format!("{bytes:?}: not UTF-8")))?.parse()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for JobId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for JobId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for JobId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<JobId, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_carry_the_brand_and_increase() {
        let mut last = JobId::mint();
        for _ in 0..10_000 {
            let next = JobId::mint();
            assert_eq!(next.as_str().len(), LEN);
            assert!(next.as_str().starts_with(PREFIX));
            assert!(next > last, "{next} after {last}");
            assert_eq!(next.as_str().parse::<JobId>().unwrap(), next);
            last = next;
        }
    }

    #[test]
    fn the_full_brand_is_checked() {
        assert!("JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R".parse::<JobId>().is_ok());
        for bad in [
            "",
            "XYZ",
            "JOB_",
            "job_01JDQ3H6Z8M4W0T9XK2B7C5N1R",
            "JOB-01JDQ3H6Z8M4W0T9XK2B7C5N1R",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1RR",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1I",
            "JOB_01jdq3h6z8m4w0t9xk2b7c5n1r",
            "JOB_81JDQ3H6Z8M4W0T9XK2B7C5N1R",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N\u{e9}",
        ] {
            assert!(matches!(bad.parse::<JobId>(), Err(Error::InvalidId(_))), "{bad:?}");
        }
    }

    #[test]
    fn serde_round_trips_and_checks() {
        let id = JobId::mint();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<JobId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<JobId>("\"JOB_nope\"").is_err());
    }
}
