//! The small values a store keeps many of: scores in a sorted set's order,
//! and bytes kept in place when short. Their small methods are `#[inline]`:
//! the store in `memory.rs` calls them in every lookup, from another module
//! (and so maybe another codegen unit).

use std::cmp::Ordering;

/// A score in a sorted set's order (IEEE total order; scores are never NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Score(pub(super) f64);

impl Eq for Score {}

impl PartialOrd for Score {
    #[inline]
    fn partial_cmp(&self, other: &Score) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    #[inline]
    fn cmp(&self, other: &Score) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Bytes kept in place when short (a job id, a field's name, a number or a
/// state), else on the heap. The store's sets and records hold many of
/// these, and a job moves through several: an allocation for each member
/// and each field was much of what a transition cost the embedded executor.
#[derive(Clone)]
pub(super) enum Short {
    /// The length, then the bytes (the rest zero).
    Inline(u8, [u8; INLINE]),
    Heap(Box<[u8]>),
}

/// The bytes a [`Short`] keeps in place: a job id (`JOB_` and a ULID) fits.
const INLINE: usize = 30;

impl Short {
    #[inline]
    pub(super) fn new(bytes: &[u8]) -> Short {
        if bytes.len() <= INLINE {
            let mut inline = [0; INLINE];
            inline[..bytes.len()].copy_from_slice(bytes);
            Short::Inline(bytes.len() as u8, inline)
        } else {
            Short::Heap(bytes.into())
        }
    }
}

impl std::ops::Deref for Short {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Short::Inline(len, bytes) => &bytes[..*len as usize],
            Short::Heap(bytes) => bytes,
        }
    }
}

impl std::borrow::Borrow<[u8]> for Short {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self
    }
}

// Equal, ordered and hashed as its bytes are, as `Borrow` requires.
impl PartialEq for Short {
    #[inline]
    fn eq(&self, other: &Short) -> bool {
        **self == **other
    }
}

impl Eq for Short {}

impl PartialOrd for Short {
    #[inline]
    fn partial_cmp(&self, other: &Short) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Short {
    #[inline]
    fn cmp(&self, other: &Short) -> Ordering {
        (**self).cmp(&**other)
    }
}

impl std::hash::Hash for Short {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl std::fmt::Debug for Short {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}
