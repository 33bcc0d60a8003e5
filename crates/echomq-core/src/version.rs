//! The protocol's version (PROTOCOL.md §12): what every speaker reports and
//! checks. A minor version only adds (a transition, an ARGV option, a key of
//! its own); anything that changes what an existing call means is a new
//! major, and a speaker that meets another major refuses and writes nothing.

/// A protocol version, `major.minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Changes only when an existing call changes meaning.
    pub major: u32,
    /// Grows with each addition within a major.
    pub minor: u32,
}

/// The version this crate speaks.
pub const PROTOCOL: Version = Version { major: 1, minor: 11 };

/// The earliest module a host of this version uses: the last minor that
/// added a call, an option or a key form it may send (1.11's RETRY of nine
/// keys). PROTOCOL.md §11.1's `MODULE_MINOR`.
pub const MODULE_SINCE: Version = Version { major: 1, minor: 11 };

impl Version {
    /// Read `major.minor` (both decimal, no sign, no spaces), as
    /// [`Display`](std::fmt::Display) writes it.
    #[must_use]
    pub fn parse(text: &str) -> Option<Version> {
        let (major, minor) = text.split_once('.')?;
        let number = |part: &str| -> Option<u32> {
            if part.is_empty() || part.len() > 9 || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            part.parse().ok()
        };
        Some(Version { major: number(major)?, minor: number(minor)? })
    }

    /// Whether a speaker of `self` may work keys written by `other`: the
    /// same major.
    #[must_use]
    pub const fn compatible(self, other: Version) -> bool {
        self.major == other.major
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_reads_back_as_written() {
        assert_eq!(Version::parse(&PROTOCOL.to_string()), Some(PROTOCOL));
        assert_eq!(Version::parse("2.13"), Some(Version { major: 2, minor: 13 }));
        for bad in ["", "1", "1.", ".0", "1.0.0", "+1.0", "1.-0", " 1.0", "1.0 ", "a.b", "1234567890.0"] {
            assert_eq!(Version::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_the_major_decides_who_may_speak() {
        let next_minor = Version { minor: PROTOCOL.minor + 1, ..PROTOCOL };
        let next_major = Version { major: PROTOCOL.major + 1, minor: 0 };
        assert!(PROTOCOL.compatible(next_minor));
        assert!(!PROTOCOL.compatible(next_major));
    }
}
