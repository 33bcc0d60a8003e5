//! GROUP and GROUPS (protocol 1.7): one group's settings, read or changed,
//! and a page of a queue's groups. A queue's jobs may carry a group (a
//! tenant, a customer, a key); claims interleave the groups that have work
//! by weight, and each group may have a cap, a rate, a most pending and a
//! pause of its own (PROTOCOL.md §7.9).

use std::time::Duration;

use echomq_core::{limits, Name, Reply};

use super::argument::{checked, decimal};
use super::config::{limit_args, rate_args, Limit, Rate};
use super::reply::{array_reply, bytes_reply, count_reply, unexpected};
use super::Transition;
use crate::{Error, ErrorKind, Result};

/// Read one group's settings, changing those given first (the default
/// changes nothing).
///
/// ```
/// # use echomq::{Group, Limit};
/// let change = Group::new("tenant-7").weight(3).cap(Limit::To(2));
/// assert_eq!(change.weight, Some(3));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Group {
    /// The group: 1 to 200 bytes.
    pub group: String,
    /// Its share against the others (1..=1000; 1 by default).
    pub weight: Option<u64>,
    /// At most this many of its jobs running at once.
    pub cap: Option<Limit<u64>>,
    /// At most so many of its jobs claimed in any period.
    pub rate: Option<Limit<Rate>>,
    /// At most this many of its jobs pending: an enqueue past it is refused
    /// ([`ErrorKind::Full`]).
    pub max: Option<Limit<u64>>,
    /// `Some(true)` pauses the group's claims, `Some(false)` resumes them.
    pub paused: Option<bool>,
}

impl Group {
    /// Read `group`'s settings; the methods below change them.
    pub fn new(group: impl Into<String>) -> Group {
        Group { group: group.into(), weight: None, cap: None, rate: None, max: None, paused: None }
    }

    /// Its share against the other groups' (1..=1000).
    pub const fn weight(mut self, weight: u64) -> Group {
        self.weight = Some(weight);
        self
    }

    /// At most this many of its jobs running at once (1 keeps its jobs in order).
    pub const fn cap(mut self, cap: Limit<u64>) -> Group {
        self.cap = Some(cap);
        self
    }

    /// At most so many of its jobs claimed in any period.
    pub const fn rate(mut self, rate: Limit<Rate>) -> Group {
        self.rate = Some(rate);
        self
    }

    /// At most this many of its jobs pending.
    pub const fn max(mut self, max: Limit<u64>) -> Group {
        self.max = Some(max);
        self
    }

    /// Pause its claims (`true`) or resume them.
    pub const fn paused(mut self, paused: bool) -> Group {
        self.paused = Some(paused);
        self
    }
}

/// Where a group stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Standing {
    /// A claim may take its next job.
    Ready,
    /// Nothing pending.
    Idle,
    /// Paused.
    Paused,
    /// As many running as its cap.
    Capped,
    /// Its rate spent for now.
    Limited,
}

impl Standing {
    /// The word the protocol answers.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Standing::Ready => "ready",
            Standing::Idle => "idle",
            Standing::Paused => "paused",
            Standing::Capped => "capped",
            Standing::Limited => "limited",
        }
    }
}

/// One group as its queue holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInfo {
    /// The group.
    pub group: String,
    /// Its jobs pending.
    pub pending: u64,
    /// Its jobs running (its leases).
    pub running: u64,
    /// Where it stands.
    pub standing: Standing,
    /// Its share (1 by default).
    pub weight: u64,
    /// Its cap, if it has one.
    pub cap: Option<u64>,
    /// Its rate, if it has one.
    pub rate: Option<Rate>,
    /// Its most pending, if it has one.
    pub max: Option<u64>,
    /// Whether it is paused.
    pub paused: bool,
}

impl Transition for Group {
    const NAME: Name = Name::Group;
    type Output = GroupInfo;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        group_name(&self.group)?;
        let mut args = vec![self.group.as_bytes().to_vec()];
        if let Some(weight) = self.weight {
            args.extend([b"WEIGHT".to_vec(), decimal(checked("WEIGHT", weight, limits::GROUP_WEIGHT)?)]);
        }
        args.extend(limit_args("CAP", self.cap, limits::CONCURRENCY)?);
        args.extend(limit_args("MAX", self.max, limits::KEEP_COUNT)?);
        args.extend(rate_args(self.rate)?);
        if let Some(paused) = self.paused {
            args.extend([b"PAUSED".to_vec(), decimal(u8::from(paused))]);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<GroupInfo> {
        group_info(reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let per = Duration::from_millis(*limits::RATE_PERIOD_MS.end());
        vec![
            Group::new("g"),
            Group::new("x".repeat(limits::MAX_GROUP))
                .weight(1000)
                .cap(Limit::To(*limits::CONCURRENCY.end()))
                .rate(Limit::To(Rate { claims: *limits::RATE.end(), per }))
                .max(Limit::To(*limits::KEEP_COUNT.end()))
                .paused(true),
            Group::new("g").cap(Limit::Unlimited).rate(Limit::Unlimited).max(Limit::Unlimited).paused(false),
        ]
    }
}

/// A group's name: 1 to 200 bytes.
pub(crate) fn group_name(group: &str) -> Result<()> {
    if group.is_empty() || group.len() > limits::MAX_GROUP {
        return Err(Error::new(ErrorKind::Argument, format!("GROUP must be 1 to {} bytes", limits::MAX_GROUP)));
    }
    Ok(())
}

pub(super) fn text(what: &str, reply: Reply) -> Result<String> {
    let shown = reply.clone();
    String::from_utf8(bytes_reply(what, reply)?).map_err(|_| unexpected(what, &shown))
}

/// One `[group, pending, running, standing, settings]`.
pub(super) fn group_info(reply: Reply) -> Result<GroupInfo> {
    let shown = reply.clone();
    let [group, pending, running, standing, settings] =
        <[Reply; 5]>::try_from(array_reply("a group", reply)?).map_err(|_| unexpected("a group", &shown))?;
    let standing = match text("a group's standing", standing)?.as_str() {
        "ready" => Standing::Ready,
        "idle" => Standing::Idle,
        "paused" => Standing::Paused,
        "capped" => Standing::Capped,
        "limited" => Standing::Limited,
        _ => return Err(unexpected("a group's standing", &shown)),
    };
    let mut info = GroupInfo {
        group: text("a group's name", group)?,
        pending: count_reply("a group's pending", pending)?,
        running: count_reply("a group's running", running)?,
        standing,
        weight: 1,
        cap: None,
        rate: None,
        max: None,
        paused: false,
    };
    let settings = text("a group's settings", settings)?;
    let words: Vec<&str> = settings.split_whitespace().collect();
    let mut per = None;
    for pair in words.chunks(2) {
        let [name, value] = pair else { return Err(unexpected("a group's settings", &shown)) };
        let n: u64 = value.parse().map_err(|_| unexpected("a group's settings", &shown))?;
        match *name {
            "WEIGHT" => info.weight = n,
            "CAP" => info.cap = Some(n),
            "RATE" => info.rate = Some(Rate { claims: n, per: Duration::ZERO }),
            "PER" => per = Some(Duration::from_millis(n)),
            "MAX" => info.max = Some(n),
            "PAUSED" => info.paused = n == 1,
            _ => return Err(unexpected("a group's settings", &shown)),
        }
    }
    if let (Some(rate), Some(per)) = (info.rate.as_mut(), per) {
        rate.per = per;
    }
    Ok(info)
}
