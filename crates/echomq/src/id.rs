//! Job ids: minted branded, accepted by their kind.
//!
//! The host mints *branded* ids: `JOB_` + a 26-character ULID in Crockford
//! base32, upper case, 30 bytes in all. Ids minted by one process are strictly
//! increasing, so byte order is mint order and equal-priority jobs pop FIFO.
//!
//! The server admits any id whose first three bytes are `JOB` (the kind gate,
//! `EMQKIND` otherwise), and another speaker, or a caller that derives its
//! ids, may enqueue such an id. A host must run, inspect, retry and cancel
//! every job the server admitted, so [`JobId`] accepts exactly what the kind
//! gate accepts (as UTF-8 text); [`JobId::is_branded`] tells the two apart.

use crate::ErrorKind;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// The brand every minted job id starts with.
pub const PREFIX: &str = "JOB_";
/// The length of a branded job id in bytes.
pub const LEN: usize = 30;
/// The kind every job id starts with: the server's gate (`EMQKIND`).
pub const KIND: &str = "JOB";

/// A job's id: UTF-8 text whose first three bytes are `JOB`, as the server's
/// kind gate admits it. Minted ids carry the full brand (`JOB_` + ULID).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(String);

impl JobId {
    /// Mint a new id, greater than every id this process minted before.
    pub fn mint() -> JobId {
        static GENERATOR: Mutex<Option<ulid::Generator>> = Mutex::new(None);
        let mut generator = GENERATOR.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let generator = generator.get_or_insert_with(ulid::Generator::new);
        loop {
            // Should the random part overflow (2^80 ids in one millisecond),
            // wait for the clock to pass the last id's (PROTOCOL.md §11.2).
            if let Ok(ulid) = generator.generate() {
                return JobId(format!("{PREFIX}{ulid}"));
            }
            std::thread::yield_now();
        }
    }

    /// Check the full brand: `JOB_` and a canonical ULID, as [`JobId::mint`]
    /// makes them. For a host that wants only its own kind of id; every
    /// other path accepts what the server admits (`str::parse`).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidId`] for text that is not `JOB_` and a canonical
    /// ULID (26 upper-case Crockford base32 characters), saying which rule it breaks.
    pub fn branded(text: &str) -> Result<JobId> {
        let id: JobId = text.parse()?;
        match brand_error(text) {
            None => Ok(id),
            Some(why) => Err(Error::new(ErrorKind::InvalidId, format!("{text:?}: {why}"))),
        }
    }

    /// Whether the id carries the full brand (`JOB_` + ULID): every minted
    /// id does. Only branded ids are ordered by their mint time.
    #[must_use]
    pub fn is_branded(&self) -> bool {
        brand_error(&self.0).is_none()
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id of the `at`th child, in `queue` with `payload`, of the job
    /// with this id, as a flow's children without an id of their own get
    /// it ([`ChildJobs`](crate::ChildJobs), `emq flow add`): the same each
    /// time, so that a parent that names its children again, or a flow
    /// added again, adds none twice. `JOB_` and a ULID whose time is this
    /// id's (a branded id's, else 0), whose next 16 bits are `at`
    /// (siblings are claimed in the order named) and whose last 64 are the
    /// first 8 bytes of SHA-1(this id, 0x00, `at` in decimal, 0x00, queue,
    /// 0x00, payload).
    #[must_use]
    pub fn child(&self, at: usize, queue: &str, payload: &[u8]) -> JobId {
        let time = ulid_of(self).map_or(0, |ulid| ulid.timestamp_ms());
        let mut sha = sha1_smol::Sha1::new();
        for part in
            [self.0.as_bytes(), b"\0", at.to_string().as_bytes(), b"\0", queue.as_bytes(), b"\0", payload]
        {
            sha.update(part);
        }
        let digest = sha.digest().bytes();
        let hashed = digest[..8].iter().fold(0u128, |acc, byte| acc << 8 | u128::from(*byte));
        let ulid = ulid::Ulid::from_parts(time, (at as u128 & 0xffff) << 64 | hashed);
        JobId(format!("{PREFIX}{ulid}"))
    }
}

/// The ULID of a branded id.
fn ulid_of(id: &JobId) -> Option<ulid::Ulid> {
    ulid::Ulid::from_string(id.0.strip_prefix(PREFIX)?).ok()
}

/// Why `text` is not a branded id, or `None` when it is one.
fn brand_error(text: &str) -> Option<&'static str> {
    if !text.starts_with(PREFIX) {
        Some("it does not start with JOB_")
    } else if text.len() != LEN {
        Some("it is not 30 bytes long")
    } else if !text.bytes().skip(PREFIX.len()).all(is_crockford) {
        Some("its ULID is not upper-case Crockford base32")
    } else if text.as_bytes()[PREFIX.len()] > b'7' {
        Some("its ULID is past the largest 128-bit value")
    } else {
        None
    }
}

/// Crockford's base32 alphabet, upper case: digits and letters but I, L, O and U.
fn is_crockford(byte: u8) -> bool {
    matches!(byte, b'0'..=b'9' | b'A'..=b'H' | b'J' | b'K' | b'M' | b'N' | b'P'..=b'T' | b'V'..=b'Z')
}

impl FromStr for JobId {
    type Err = Error;

    /// Any text the server's kind gate admits: its first three bytes are `JOB`.
    fn from_str(text: &str) -> Result<JobId> {
        if text.starts_with(KIND) {
            Ok(JobId(text.to_owned()))
        } else {
            Err(Error::new(ErrorKind::InvalidId, format!("{text:?}: it does not start with JOB")))
        }
    }
}

impl TryFrom<&[u8]> for JobId {
    type Error = Error;

    fn try_from(bytes: &[u8]) -> Result<JobId> {
        std::str::from_utf8(bytes)
            .map_err(|_| Error::new(ErrorKind::InvalidId, format!("{bytes:?}: not UTF-8")))?
            .parse()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Branded ids print bare; any other id quoted and escaped, so that an id a
/// stranger chose cannot forge a log line.
impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_branded() {
            f.write_str(&self.0)
        } else {
            fmt::Debug::fmt(&self.0, f)
        }
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
    fn a_child_s_derived_id_is_the_same_each_time_and_siblings_keep_their_order() {
        let parent = JobId::mint();
        // The derivation every speaker shares (clients/python's ids.child_id tests this value too).
        let known: JobId = "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R".parse().unwrap();
        assert_eq!(known.child(0, "render", b"page").as_str(), "JOB_01JDQ3H6Z80005GDX951CDT8G3");
        let first = parent.child(0, "render", b"page");
        assert_eq!(first, parent.child(0, "render", b"page"), "the same child, the same id");
        for other in [
            JobId::mint().child(0, "render", b"page"),
            parent.child(1, "render", b"page"),
            parent.child(0, "thumbs", b"page"),
            parent.child(0, "render", b"other"),
        ] {
            assert_ne!(first, other);
        }
        assert!(first.is_branded());
        assert_eq!(
            ulid_of(&first).map(|u| u.timestamp_ms()),
            ulid_of(&parent).map(|u| u.timestamp_ms()),
            "the parent's time"
        );
        let siblings: Vec<JobId> = (0..300).map(|at| parent.child(at, "render", b"page")).collect();
        assert!(siblings.windows(2).all(|pair| pair[0] < pair[1]), "claimed in the order named");
        let unbranded: JobId = "JOB-7".parse().unwrap();
        assert_eq!(ulid_of(&unbranded.child(0, "q", b"")).map(|u| u.timestamp_ms()), Some(0));
    }

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
        assert!(JobId::branded("JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R").is_ok());
        assert!(JobId::mint().is_branded());
        for bad in [
            "",
            "XYZ",
            "JOB_",
            "JOBX",
            "JOB-not-a-ulid",
            "job_01JDQ3H6Z8M4W0T9XK2B7C5N1R",
            "JOB-01JDQ3H6Z8M4W0T9XK2B7C5N1R",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1RR",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1I",
            "JOB_01jdq3h6z8m4w0t9xk2b7c5n1r",
            "JOB_81JDQ3H6Z8M4W0T9XK2B7C5N1R",
            "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N\u{e9}",
        ] {
            assert!(matches!(JobId::branded(bad), Err(Error { kind: ErrorKind::InvalidId, .. })), "{bad:?}");
            if let Ok(id) = bad.parse::<JobId>() {
                assert!(!id.is_branded(), "{bad:?}");
            }
        }
    }

    #[test]
    fn any_id_the_kind_gate_admits_is_accepted() {
        for admitted in
            ["JOB", "JOBX", "JOB-not-a-ulid", "JOB_", "JOB_01jdq3h6z8m4w0t9xk2b7c5n1r", "JOB\nline"]
        {
            let id: JobId = admitted.parse().unwrap_or_else(|e| panic!("{admitted:?}: {e}"));
            assert_eq!(id.as_str(), admitted);
            assert_eq!(JobId::try_from(admitted.as_bytes()).unwrap(), id);
            assert!(!id.is_branded());
        }
        assert_eq!(format!("{:?}", "JOB\nline".parse::<JobId>().unwrap()), "\"JOB\\nline\"");
        for refused in ["", "JO", "job", "XJOB", "emq:{q}:delayed"] {
            assert!(
                matches!(refused.parse::<JobId>(), Err(Error { kind: ErrorKind::InvalidId, .. })),
                "{refused:?}"
            );
        }
        assert!(matches!(JobId::try_from(&b"JOB\xff"[..]), Err(Error { kind: ErrorKind::InvalidId, .. })));
    }

    #[test]
    fn serde_round_trips_and_checks() {
        let id = JobId::mint();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<JobId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<JobId>("\"JOB_nope\"").is_ok());
        assert!(serde_json::from_str::<JobId>("\"nope\"").is_err());
    }
}
