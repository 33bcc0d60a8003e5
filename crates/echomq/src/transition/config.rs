//! CONFIG: read and change a queue's settings, which CLAIM's gate honours
//! on the server for every worker (paused, the concurrency limit, the rate
//! limit), and how long finished jobs are kept, which every worker's TRIM applies.

use crate::ErrorKind;
use std::time::Duration;

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal, millis};
use super::reply::{array_reply, bytes_reply, count_reply};
use super::Transition;
use crate::{Error, Result};

/// Read a queue's settings, changing those given first. The default changes
/// nothing and only reads.
///
/// ```
/// # use echomq::{Config, Limit};
/// let change = Config::default().paused(true).concurrency(Limit::To(8));
/// assert_eq!(change.paused, Some(true));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Config {
    /// `Some(true)` pauses the queue's claims, `Some(false)` resumes them.
    pub paused: Option<bool>,
    /// At most this many jobs active at once (1..=2147483647), across every
    /// worker; [`Limit::Unlimited`] removes the limit; `None` leaves it.
    pub concurrency: Option<Limit<u64>>,
    /// At most so many claims in any period; [`Limit::Unlimited`] removes
    /// the limit; `None` leaves it.
    pub rate: Option<Limit<Rate>>,
    /// How many done jobs to keep, and how long; `None` leaves it as it is.
    pub keep_done: Option<Retention>,
    /// The same for dead jobs.
    pub keep_dead: Option<Retention>,
    /// The same for cancelled jobs.
    pub keep_cancelled: Option<Retention>,
    /// The queue's event log: on, and how long, or off; `None` leaves it.
    pub events: Option<EventLog>,
}

impl Config {
    /// Pause the queue's claims (`true`) or resume them.
    pub const fn paused(mut self, paused: bool) -> Config {
        self.paused = Some(paused);
        self
    }

    /// At most this many jobs active at once, across every worker.
    pub const fn concurrency(mut self, limit: Limit<u64>) -> Config {
        self.concurrency = Some(limit);
        self
    }

    /// At most so many claims in any period.
    pub const fn rate(mut self, limit: Limit<Rate>) -> Config {
        self.rate = Some(limit);
        self
    }

    /// How many done jobs to keep, and how long.
    pub const fn keep_done(mut self, keep: Retention) -> Config {
        self.keep_done = Some(keep);
        self
    }

    /// How many dead jobs to keep, and how long.
    pub const fn keep_dead(mut self, keep: Retention) -> Config {
        self.keep_dead = Some(keep);
        self
    }

    /// How many cancelled jobs to keep, and how long.
    pub const fn keep_cancelled(mut self, keep: Retention) -> Config {
        self.keep_cancelled = Some(keep);
        self
    }

    /// The queue's event log: on, and how long, or off.
    pub const fn events(mut self, events: EventLog) -> Config {
        self.events = Some(events);
        self
    }
}

/// A setting's limit, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit<T> {
    /// No limit.
    Unlimited,
    /// At most this.
    To(T),
}

/// A rate: at most `claims` claims (1..=100000) in any `per` (1 ms to a
/// day), on the server's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    /// How many claims.
    pub claims: u64,
    /// In how long a window.
    pub per: Duration,
}

/// A queue's event log (PROTOCOL.md §7.5); kept 10,000 entries long by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventLog {
    /// No events are written.
    Off,
    /// About this many entries are kept (1..=10,000,000; the server trims
    /// whole blocks); 10,000 by default.
    Keep(u64),
}

impl Default for EventLog {
    /// The protocol's default: about 10,000 entries.
    fn default() -> EventLog {
        EventLog::Keep(10_000)
    }
}

/// How many finished jobs of a state a queue keeps, and how long: every
/// worker's upkeep (TRIM) deletes the oldest past either bound. By default
/// done and cancelled jobs are kept a day and at most 10,000 of each, dead
/// ones 30 days and at most 100,000.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    /// Kept at most this long after they finished; `None`: any age.
    pub age: Option<Duration>,
    /// Only the newest this many are kept; `None`: any number.
    pub count: Option<u64>,
}

/// A queue's settings, as CONFIG replies them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Whether claims are paused.
    pub paused: bool,
    /// At most this many jobs active at once; `None`: no limit.
    pub concurrency: Option<u64>,
    /// At most so many claims in any period; `None`: no limit.
    pub rate: Option<Rate>,
    /// How many done jobs are kept, and how long.
    pub keep_done: Retention,
    /// How many dead jobs are kept, and how long.
    pub keep_dead: Retention,
    /// How many cancelled jobs are kept, and how long.
    pub keep_cancelled: Retention,
    /// The event log: how long it is kept, or off.
    pub events: EventLog,
    /// The protocol the queue records as its writer's (`<q>config`'s
    /// `protocol`), when it records one; CONFIG never writes it.
    pub protocol: Option<echomq_core::Version>,
}

impl Transition for Config {
    const NAME: Name = Name::Config;
    type Output = Settings;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = Vec::new();
        if let Some(paused) = self.paused {
            args.extend([b"PAUSED".to_vec(), decimal(u8::from(paused))]);
        }
        args.extend(limit_args("CONCURRENCY", self.concurrency, limits::CONCURRENCY)?);
        args.extend(rate_args(self.rate)?);
        let kept = [("DONE", self.keep_done), ("DEAD", self.keep_dead), ("CANCELLED", self.keep_cancelled)];
        for (state, keep) in kept {
            let Some(Retention { age, count }) = keep else { continue };
            let (age_name, count_name) = (format!("{state}_AGE"), format!("{state}_COUNT"));
            let age = age.map_or(Ok(0), |age| millis(&age_name, age, limits::KEEP_MS))?;
            let count = checked(&count_name, count.unwrap_or(0), limits::KEEP_COUNT)?;
            args.extend([age_name.into_bytes(), decimal(age), count_name.into_bytes(), decimal(count)]);
        }
        let events = self.events.map(|events| match events {
            EventLog::Off => Limit::Unlimited,
            EventLog::Keep(n) => Limit::To(n),
        });
        args.extend(limit_args("EVENTS", events, limits::EVENTS)?);
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Settings> {
        let mut values = array_reply("the reply", reply)?;
        // The queue's protocol follows the eleven integers when it has one.
        let protocol =
            match values.get(11) {
                Some(_) => {
                    let text = bytes_reply("the reply's protocol", values.remove(11))?;
                    let version = std::str::from_utf8(&text).ok().and_then(echomq_core::Version::parse);
                    Some(version.ok_or_else(|| {
                        Error::new(ErrorKind::Reply, format!("the reply's protocol: {text:?}"))
                    })?)
                }
                None => None,
            };
        let values =
            values.into_iter().map(|value| count_reply("the reply", value)).collect::<Result<Vec<_>>>()?;
        let [paused, concurrency, rate, per, kept @ .., events] = <[u64; 11]>::try_from(values)
            .map_err(|got| Error::new(ErrorKind::Reply, format!("the reply: got {got:?}")))?;
        let retention = |age: u64, count: u64| Retention {
            age: (age > 0).then(|| Duration::from_millis(age)),
            count: (count > 0).then_some(count),
        };
        Ok(Settings {
            paused: paused == 1,
            concurrency: (concurrency > 0).then_some(concurrency),
            rate: (rate > 0 && per > 0).then(|| Rate { claims: rate, per: Duration::from_millis(per) }),
            keep_done: retention(kept[0], kept[1]),
            keep_dead: retention(kept[2], kept[3]),
            keep_cancelled: retention(kept[4], kept[5]),
            events: if events == 0 { EventLog::Off } else { EventLog::Keep(events) },
            protocol,
        })
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        super::edges::configs()
    }
}

/// `NAME n` for a limit (`NAME 0` for [`Limit::Unlimited`], which removes
/// it on the wire), nothing for `None`: CONFIG's and GROUP's. A limit of 0
/// is refused: it is said as `Unlimited`.
pub(super) fn limit_args(
    name: &str,
    limit: Option<Limit<u64>>,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Vec<Vec<u8>>> {
    Ok(match limit {
        None => Vec::new(),
        Some(Limit::Unlimited) => vec![name.as_bytes().to_vec(), b"0".to_vec()],
        Some(Limit::To(n)) => vec![name.as_bytes().to_vec(), decimal(checked(name, at_least_one(name, n)?, range)?)],
    })
}

/// `RATE n PER ms` for a rate (`RATE 0` removes it), nothing for `None`:
/// CONFIG's and GROUP's.
pub(super) fn rate_args(rate: Option<Limit<Rate>>) -> Result<Vec<Vec<u8>>> {
    Ok(match rate {
        None => Vec::new(),
        Some(Limit::Unlimited) => vec![b"RATE".to_vec(), b"0".to_vec()],
        Some(Limit::To(Rate { claims, per })) => vec![
            b"RATE".to_vec(),
            decimal(checked("RATE", at_least_one("RATE", claims)?, limits::RATE)?),
            b"PER".to_vec(),
            decimal(millis("PER", per, limits::RATE_PERIOD_MS)?),
        ],
    })
}

/// A limit of 0 would remove it on the wire: said as `Unlimited` here.
fn at_least_one(name: &str, n: u64) -> Result<u64> {
    match n {
        0 => Err(Error::new(ErrorKind::Argument, format!("{name} 0: Unlimited removes the limit"))),
        n => Ok(n),
    }
}
