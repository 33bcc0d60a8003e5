//! Flow control: CONFIG reads and changes a queue's settings, which CLAIM's
//! gate honours on the server for every worker: paused, the concurrency
//! limit, and the rate limit.

use std::time::Duration;

use echomq_core::{limits, Name};
use redis::Value;

use super::{array_reply, checked, count_reply, decimal, millis, Transition};
use crate::{Error, Result};

/// Read a queue's settings, changing those given first. The default changes
/// nothing and only reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// `Some(true)` pauses the queue's claims, `Some(false)` resumes them.
    pub paused: Option<bool>,
    /// `Some(n)`: at most `n` jobs active at once, 0..=2147483647; `Some(0)`
    /// removes the limit.
    pub concurrency: Option<u64>,
    /// `Some((n, per))`: at most `n` claims (1..=100000) in any `per` (1 ms
    /// to a day); `Some((0, _))` removes the limit.
    pub rate: Option<(u64, Duration)>,
}

/// A queue's settings, as CONFIG replies them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Whether claims are paused.
    pub paused: bool,
    /// At most this many jobs active at once; `None`: no limit.
    pub concurrency: Option<u64>,
    /// At most this many claims in any such period; `None`: no limit.
    pub rate: Option<(u64, Duration)>,
}

impl Transition for Config {
    const NAME: Name = Name::Config;
    type Output = Settings;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = Vec::new();
        if let Some(paused) = self.paused {
            args.extend([b"PAUSED".to_vec(), decimal(u8::from(paused))]);
        }
        if let Some(concurrency) = self.concurrency {
            args.extend([
                b"CONCURRENCY".to_vec(),
                decimal(checked("CONCURRENCY", concurrency, limits::CONCURRENCY)?),
            ]);
        }
        match self.rate {
            Some((0, _)) => args.extend([b"RATE".to_vec(), b"0".to_vec()]),
            Some((n, per)) => args.extend([
                b"RATE".to_vec(),
                decimal(checked("RATE", n, limits::RATE)?),
                b"PER".to_vec(),
                decimal(millis("PER", per, limits::RATE_PERIOD_MS)?),
            ]),
            None => {}
        }
        Ok(args)
    }

    fn parse(reply: Value) -> Result<Settings> {
        let values = array_reply("CONFIG", reply)?
            .into_iter()
            .map(|value| count_reply("CONFIG", value))
            .collect::<Result<Vec<_>>>()?;
        let [paused, concurrency, rate, per] =
            <[u64; 4]>::try_from(values).map_err(|got| Error::Reply(format!("CONFIG: got {got:?}")))?;
        Ok(Settings {
            paused: paused == 1,
            concurrency: (concurrency > 0).then_some(concurrency),
            rate: (rate > 0 && per > 0).then(|| (rate, Duration::from_millis(per))),
        })
    }
}
