//! Arguments as they travel: integers as decimal text, each checked
//! against its range in [`echomq_core::limits`] with the server's own words
//! before anything is sent.

use crate::ErrorKind;
use std::ops::RangeInclusive;
use std::time::Duration;

use echomq_core::{limits, Name};

use crate::{Error, Result};

/// An integer argument as it travels: decimal text.
pub(super) fn decimal(n: impl ToString) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// A number checked against its range, failing with the server's own words.
pub(super) fn checked<T>(name: &str, value: T, range: RangeInclusive<T>) -> Result<T>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(Error::new(
            ErrorKind::Argument,
            format!("{name} must be an integer in {}..={}", range.start(), range.end()),
        ))
    }
}

/// The number of jobs one call of a many-jobs transition (ACKMANY,
/// ENQUEUEMANY) carries: past `range`'s end in the server's words; none at
/// all is the host's own mistake, never sent.
pub(super) fn jobs_a_call(name: Name, jobs: usize, range: RangeInclusive<u64>) -> Result<()> {
    match jobs as u64 {
        0 => Err(Error::new(
            ErrorKind::Argument,
            format!("{} needs at least one job", name.describe().command),
        )),
        n if n > *range.end() => {
            Err(Error::new(ErrorKind::Argument, format!("at most {} jobs a call", range.end())))
        }
        _ => Ok(()),
    }
}

/// A duration in whole milliseconds, checked against its range.
pub(super) fn millis(name: &str, duration: Duration, range: RangeInclusive<u64>) -> Result<u64> {
    let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    checked(name, ms, range)
}

/// A fencing token, checked against its range.
pub(super) fn token(token: u64) -> Result<Vec<u8>> {
    Ok(decimal(checked("token", token, limits::TOKEN)?))
}
