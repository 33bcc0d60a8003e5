//! Schedules, the host's half: what a schedule is ([`Schedule`]: a name, a
//! cron expression in a time zone or a fixed interval, a payload, what to
//! do about [`Missed`] ticks, and whether it is paused), its definition's
//! bytes as the server stores them, its tick times, each tick's job id, and
//! the plan of FIREs that runs the due ticks. The server stores and hands out (SCHEDULE, SCHEDULES) and
//! fires each tick once (FIRE); everything here is computed on the host, from
//! the server's now, exactly as PROTOCOL.md §11.6 writes it for any speaker.

use crate::ErrorKind;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, TimeZone};
use chrono_tz::Tz;
use croner::Cron;
use echomq_core::limits;

use crate::id::JobId;
use crate::transition::Fire;
use crate::{Error, Result};

/// How late a tick may fire under [`Missed::Skip`], in ms: older ones were missed.
pub const SKIP_GRACE_MS: u64 = 60_000;

/// The largest `Missed::All` bound.
pub const MAX_CATCH_UP: u32 = 1000;

/// When a schedule's ticks fall.
#[derive(Clone, Debug, PartialEq)]
pub enum When {
    /// Every interval, at the multiples of it since the Unix epoch (a whole
    /// number of ms, at least 1): every 1 h ticks on the hour, UTC.
    Every(Duration),
    /// At the times a cron expression names in a time zone (5 fields, or 6
    /// with seconds first; DST-aware), as [croner](https://docs.rs/croner) reads it.
    Cron {
        /// The expression, e.g. `0 9 * * MON-FRI`.
        expr: String,
        /// The IANA zone, e.g. `Europe/Paris`.
        zone: Tz,
    },
}

/// What to do with ticks that came due while no worker ran the schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Missed {
    /// Fire only the latest of them, once (the default).
    #[default]
    Last,
    /// Fire none: only a tick at most [`SKIP_GRACE_MS`] late fires.
    Skip,
    /// Fire each of them, at most the latest `n` (1..=1000).
    All(u32),
}

/// A schedule: a name, when its ticks fall, the payload of each tick's job.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// Its name in the queue, 1 to 200 bytes, no LF.
    pub name: String,
    /// When it ticks.
    pub when: When,
    /// Each tick's job's bytes.
    pub payload: Vec<u8>,
    /// What to do with missed ticks.
    pub missed: Missed,
    /// Paused: its due ticks fire no job, they only move on (so a resume
    /// fires no backlog).
    pub paused: bool,
}

/// A schedule as the queue holds it, with its next tick.
#[derive(Clone, Debug, PartialEq)]
pub struct Scheduled {
    /// The schedule.
    pub schedule: Schedule,
    /// Its next tick, server ms since the Unix epoch.
    pub next: u64,
}

impl Schedule {
    /// Every `interval` (a whole number of ms, at least 1), at its multiples
    /// since the Unix epoch.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for a name that is empty, too long or holds
    /// LF, or an interval that is zero, not whole ms, or past the protocol's
    /// delay limit; [`ErrorKind::TooLarge`] for a payload over the limit.
    pub fn every(name: &str, interval: Duration, payload: impl Into<Vec<u8>>) -> Result<Schedule> {
        let schedule = Schedule {
            name: name.to_owned(),
            when: When::Every(interval),
            payload: payload.into(),
            missed: Missed::Last,
            paused: false,
        };
        schedule.check()?;
        Ok(schedule)
    }

    /// At the times `expr` names in time zone `zone` (an IANA name, `UTC`).
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for an unknown time zone, a cron expression
    /// that is not one line or does not parse, or a name as in
    /// [`every`](Schedule::every);
    /// [`ErrorKind::TooLarge`] for a payload over the limit.
    pub fn cron(name: &str, expr: &str, zone: &str, payload: impl Into<Vec<u8>>) -> Result<Schedule> {
        let zone = Tz::from_str(zone)
            .map_err(|_| Error::new(ErrorKind::Argument, format!("unknown time zone {zone:?}")))?;
        let schedule = Schedule {
            name: name.to_owned(),
            when: When::Cron { expr: expr.trim().to_owned(), zone },
            payload: payload.into(),
            missed: Missed::Last,
            paused: false,
        };
        schedule.check()?;
        Ok(schedule)
    }

    /// With this policy for missed ticks.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for [`Missed::All`] of 0, or of more than [`MAX_CATCH_UP`].
    pub fn missed(mut self, missed: Missed) -> Result<Schedule> {
        self.missed = missed;
        self.check()?;
        Ok(self)
    }

    /// Paused, or not: a paused schedule's ticks fire no job (PROTOCOL.md §11.6).
    #[must_use]
    pub fn paused(mut self, paused: bool) -> Schedule {
        self.paused = paused;
        self
    }

    /// Every field within its limits, the expression readable.
    fn check(&self) -> Result<()> {
        let bad = |why: String| Err(Error::new(ErrorKind::Argument, why));
        check_name(&self.name)?;
        if self.payload.len() > limits::MAX_PAYLOAD {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("payload exceeds {} bytes", limits::MAX_PAYLOAD),
            ));
        }
        if let Missed::All(n) = self.missed {
            if !(1..=MAX_CATCH_UP).contains(&n) {
                return bad(format!("missed ticks: all must be bounded by 1..={MAX_CATCH_UP}"));
            }
        }
        match &self.when {
            When::Every(interval) => {
                let ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
                if ms == 0 || *interval != Duration::from_millis(ms) || ms > *limits::DELAY_MS.end() {
                    return bad(format!("interval must be whole ms in 1..={}", limits::DELAY_MS.end()));
                }
            }
            When::Cron { expr, .. } => {
                if expr.contains('\n') || expr.is_empty() {
                    return bad("cron expression must be one line".into());
                }
                Cron::from_str(expr)
                    .map_err(|e| Error::new(ErrorKind::Argument, format!("cron expression {expr:?}: {e}")))?;
            }
        }
        Ok(())
    }

    /// The definition's bytes, as the server stores them (PROTOCOL.md
    /// §11.6): a header line (`paused ` first when it is), LF, the payload verbatim.
    #[must_use]
    pub fn definition(&self) -> Vec<u8> {
        let missed = match self.missed {
            Missed::Last => "last".to_owned(),
            Missed::Skip => "none".to_owned(),
            Missed::All(n) => format!("all:{n}"),
        };
        let header = match &self.when {
            When::Every(interval) => format!("every {} {missed}", interval.as_millis()),
            When::Cron { expr, zone } => format!("cron {} {missed} {expr}", zone.name()),
        };
        let paused: &[u8] = if self.paused { PAUSED.as_bytes() } else { b"" };
        [paused, header.as_bytes(), b"\n", &self.payload].concat()
    }

    /// Read a definition back (the schedule `name`'s).
    ///
    /// # Errors
    /// [`ErrorKind::Record`] for a definition this host cannot read: no
    /// header line, an unknown word (one leading `paused ` is known), kind
    /// or missed policy, or a schedule that breaks the checks of
    /// [`every`](Schedule::every) or [`cron`](Schedule::cron).
    pub fn from_definition(name: &str, definition: &[u8]) -> Result<Schedule> {
        let unreadable = |why: &str| Error::new(ErrorKind::Record, format!("schedule {name:?}: {why}"));
        let at = definition.iter().position(|b| *b == b'\n').ok_or_else(|| unreadable("no header line"))?;
        let header = std::str::from_utf8(&definition[..at]).map_err(|_| unreadable("header is not text"))?;
        let payload = definition[at + 1..].to_vec();
        let (paused, header) = match header.strip_prefix(PAUSED) {
            Some(rest) => (true, rest),
            None => (false, header),
        };
        let mut words = header.splitn(4, ' ');
        let (kind, first, missed, rest) = (words.next(), words.next(), words.next(), words.next());
        let missed = match missed {
            Some("last") => Missed::Last,
            Some("none") => Missed::Skip,
            Some(all) if all.starts_with("all:") => {
                Missed::All(all[4..].parse().map_err(|_| unreadable("bad all:<n>"))?)
            }
            _ => return Err(unreadable("unknown missed policy")),
        };
        let schedule = match (kind, first, rest) {
            (Some("every"), Some(ms), None) => {
                let ms: u64 = ms.parse().map_err(|_| unreadable("bad interval"))?;
                Schedule::every(name, Duration::from_millis(ms), payload)
            }
            (Some("cron"), Some(zone), Some(expr)) => Schedule::cron(name, expr, zone, payload),
            _ => return Err(unreadable("unknown header")),
        };
        schedule
            .and_then(|s| s.missed(missed))
            .map(|s| s.paused(paused))
            .map_err(|e| unreadable(&e.to_string()))
    }

    /// The first tick after `ms` (server ms), if there is one.
    #[must_use]
    pub fn next_after(&self, ms: u64) -> Option<u64> {
        match &self.when {
            When::Every(interval) => {
                let every = interval.as_millis() as u64;
                (ms / every + 1).checked_mul(every)
            }
            When::Cron { expr, zone } => {
                let cron = Cron::from_str(expr).ok()?;
                let at = at(zone, ms)?;
                cron.find_next_occurrence(&at, false).ok().map(|t| t.timestamp_millis() as u64)
            }
        }
    }

    /// The last tick at or before `ms`, if there is one.
    #[must_use]
    pub fn last_at_or_before(&self, ms: u64) -> Option<u64> {
        match &self.when {
            When::Every(interval) => {
                let every = interval.as_millis() as u64;
                Some(ms / every * every)
            }
            When::Cron { expr, zone } => {
                let cron = Cron::from_str(expr).ok()?;
                let at = at(zone, ms)?;
                cron.find_previous_occurrence(&at, true).ok().map(|t| t.timestamp_millis() as u64)
            }
        }
    }

    /// The FIREs that run this schedule's due ticks, in order, given its
    /// stored next tick `next` and the server's `now` (PROTOCOL.md §11.6).
    /// The first carries `next` as its tick; each later one the `next` of the one before.
    /// A paused schedule's is one FIRE with `SKIP 1`: its ticks move on, no job.
    #[must_use]
    pub fn plan(&self, queue: &str, next: u64, now: u64) -> Vec<Fire> {
        let never = *limits::AT_MS.end();
        let latest = self.last_at_or_before(now).filter(|t| *t >= next).unwrap_or(next);
        let after = self.next_after(latest).unwrap_or(never).max(latest + 1).min(never);
        let fired: Vec<u64> = match self.missed {
            _ if self.paused => vec![], // fire nothing: the ticks move on
            Missed::Last => vec![latest],
            Missed::Skip if now.saturating_sub(latest) <= SKIP_GRACE_MS => vec![latest],
            Missed::Skip => vec![],
            Missed::All(n) => {
                let mut ticks = vec![latest];
                while ticks.len() < n as usize {
                    let last = *ticks.last().unwrap_or(&latest);
                    match last.checked_sub(1).and_then(|t| self.last_at_or_before(t)) {
                        Some(t) if t >= next => ticks.push(t),
                        _ => break,
                    }
                }
                ticks.reverse();
                ticks
            }
        };
        let fire = |tick: u64, from: u64, to: u64, skip: bool| Fire {
            id: tick_id(queue, &self.name, tick),
            payload: self.payload.clone(),
            name: self.name.clone(),
            tick: from,
            next: to,
            skip,
        };
        if fired.is_empty() {
            return vec![fire(latest, next, after.max(next + 1), true)];
        }
        let mut from = next;
        let mut plan = Vec::with_capacity(fired.len());
        for (i, tick) in fired.iter().enumerate() {
            let to = fired.get(i + 1).copied().unwrap_or(after).max(from + 1);
            plan.push(fire(*tick, from, to, false));
            from = to;
        }
        plan
    }
}

/// The word a paused schedule's header line begins with, and its space.
const PAUSED: &str = "paused ";

/// A schedule's name: 1 to 200 bytes, no LF.
///
/// # Errors
/// [`ErrorKind::Argument`] for one that is not.
pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > limits::MAX_SCHEDULE_NAME || name.contains('\n') {
        return Err(Error::new(
            ErrorKind::Argument,
            format!("schedule name must be 1 to {} bytes, no LF", limits::MAX_SCHEDULE_NAME),
        ));
    }
    Ok(())
}

/// `ms` as a time in `zone`.
fn at(zone: &Tz, ms: u64) -> Option<DateTime<Tz>> {
    zone.timestamp_millis_opt(i64::try_from(ms).ok()?).single()
}

/// The job id of a schedule's tick (PROTOCOL.md §11.6): `JOB_` and a ULID
/// whose time is the tick (48 bits, ms) and whose 80 random bits are the
/// first 10 bytes of SHA-1(queue, 0x00, schedule name, 0x00, the tick in
/// decimal). The same from every process, so a tick is one job.
#[must_use]
pub fn tick_id(queue: &str, schedule: &str, tick: u64) -> JobId {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(queue.as_bytes());
    sha.update(&[0]);
    sha.update(schedule.as_bytes());
    sha.update(&[0]);
    sha.update(tick.to_string().as_bytes());
    let digest = sha.digest().bytes();
    let random = digest[..10].iter().fold(0u128, |acc, byte| acc << 8 | u128::from(*byte));
    let ulid = ulid::Ulid::from_parts(tick, random);
    format!("JOB_{ulid}").parse().expect("a ULID after JOB_ passes the kind gate")
}

/// The tick time a tick id carries: its ULID's time (ms), if it is a branded id.
#[must_use]
pub fn tick_of(id: &JobId) -> Option<u64> {
    let ulid = ulid::Ulid::from_string(id.as_str().strip_prefix("JOB_")?).ok()?;
    Some(ulid.timestamp_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_id_is_specified_byte_for_byte() {
        // PROTOCOL.md §11.6's worked example.
        let id = tick_id("emails", "digest", 1_764_522_000_000);
        assert_eq!(id.as_str(), TICK_EXAMPLE);
        assert!(id.is_branded());
        assert_eq!(tick_of(&id), Some(1_764_522_000_000));
        assert_ne!(tick_id("emails", "digest", 1_764_522_000_001), id);
        assert_ne!(tick_id("email", "sdigest", 1_764_522_000_000), id);
    }

    const TICK_EXAMPLE: &str = "JOB_01KBAV9ZM00CJXR9ZKBFE946CW";

    #[test]
    fn definitions_round_trip() {
        let every = Schedule::every("tick", Duration::from_secs(1), b"p\nq".to_vec()).unwrap();
        assert_eq!(every.definition(), b"every 1000 last\np\nq");
        let cron = Schedule::cron("daily", "0 9 * * MON-FRI", "Europe/Paris", "{}")
            .unwrap()
            .missed(Missed::All(3))
            .unwrap();
        assert_eq!(cron.definition(), b"cron Europe/Paris all:3 0 9 * * MON-FRI\n{}");
        for schedule in [every, cron, Schedule::every("n", Duration::from_millis(7), "").unwrap()] {
            let back = Schedule::from_definition(&schedule.name, &schedule.definition()).unwrap();
            assert_eq!(back, schedule);
        }
    }

    #[test]
    fn paused_definitions_round_trip() {
        let every = Schedule::every("tick", Duration::from_secs(1), "p").unwrap().paused(true);
        assert_eq!(every.definition(), b"paused every 1000 last\np");
        let cron = Schedule::cron("daily", "0 9 * * *", "UTC", "{}").unwrap().paused(true);
        assert_eq!(cron.definition(), b"paused cron UTC last 0 9 * * *\n{}");
        for schedule in [every, cron] {
            let back = Schedule::from_definition(&schedule.name, &schedule.definition()).unwrap();
            assert!(back.paused);
            assert_eq!(back, schedule);
            assert_eq!(back.clone().paused(false).definition(), schedule.definition()[b"paused ".len()..]);
        }
        // Exactly one leading `paused ` word: anything else stays unreadable.
        for unknown in [
            &b"paused paused every 1000 last\n"[..],
            b"Paused every 1000 last\n",
            b"paused  every 1000 last\n",
            b"paused\n",
            b"every 1000 last paused\n",
            b"pausedevery 1000 last\n",
        ] {
            let err = Schedule::from_definition("x", unknown).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Record, "{:?}", String::from_utf8_lossy(unknown));
        }
    }

    #[test]
    fn a_paused_plan_is_one_skip_whatever_the_policy() {
        for missed in [Missed::Last, Missed::Skip, Missed::All(1), Missed::All(3), Missed::All(100)] {
            let every = Schedule::every("s", Duration::from_secs(1), "").unwrap().missed(missed).unwrap();
            let paused = every.paused(true);
            // (stored next, now, the latest tick by now, the first after it)
            for (next, now, latest, after) in [(5000, 5200, 5000, 6000), (5000, 8300, 8000, 9000)] {
                let plan = paused.plan("q", next, now);
                assert_eq!(plan.len(), 1, "{missed:?} at {now}");
                let fire = &plan[0];
                assert!(fire.skip, "{missed:?} at {now}");
                assert_eq!((fire.tick, fire.next), (next, after), "{missed:?} at {now}");
                assert_eq!(fire.id, tick_id("q", "s", latest), "{missed:?} at {now}");
            }
        }
        // A cron schedule, long missed: the same one skip, to the first tick after now.
        let daily = Schedule::cron("d", "0 9 * * *", "UTC", "").unwrap().paused(true);
        let day = 86_400_000;
        let nine = 1_767_600_000_000 + 3_600_000; // 2026-01-05 09:00 UTC
        let plan = daily.plan("q", nine, nine + 3 * day + 1);
        assert_eq!(
            plan.iter().map(|f| (f.tick, f.next, f.skip)).collect::<Vec<_>>(),
            [(nine, nine + 4 * day, true)]
        );
        assert_eq!(plan[0].id, tick_id("q", "d", nine + 3 * day));
    }

    #[test]
    fn bad_schedules_are_refused() {
        assert!(Schedule::every("", Duration::from_secs(1), "").is_err());
        assert!(Schedule::every("x", Duration::ZERO, "").is_err());
        assert!(Schedule::every("x", Duration::from_micros(1500), "").is_err());
        assert!(Schedule::cron("x", "not cron", "UTC", "").is_err());
        assert!(Schedule::cron("x", "* * * * *", "Mars/Olympus", "").is_err());
        assert!(Schedule::every("x", Duration::from_secs(1), "").unwrap().missed(Missed::All(0)).is_err());
    }

    #[test]
    fn cron_ticks_follow_the_zone() {
        // 09:00 in Paris on 2026-01-05 (a Monday) is 08:00 UTC.
        let s = Schedule::cron("d", "0 9 * * *", "Europe/Paris", "").unwrap();
        let jan5_0800_utc = 1_767_600_000_000;
        assert_eq!(s.next_after(jan5_0800_utc - 1), Some(jan5_0800_utc));
        assert_eq!(s.last_at_or_before(jan5_0800_utc), Some(jan5_0800_utc));
        assert_eq!(s.next_after(jan5_0800_utc), Some(jan5_0800_utc + 86_400_000));
    }

    #[test]
    fn plans_fire_the_missed_ticks_as_told() {
        let every =
            |missed| Schedule::every("s", Duration::from_secs(1), "").unwrap().missed(missed).unwrap();
        let ticks = |plan: Vec<Fire>| plan.iter().map(|f| (f.tick, f.next, f.skip)).collect::<Vec<_>>();
        // On time: the stored tick fires and the next is the one after.
        assert_eq!(ticks(every(Missed::Last).plan("q", 5000, 5200)), [(5000, 6000, false)]);
        // Three missed: the last fires once.
        let last = every(Missed::Last).plan("q", 5000, 8300);
        assert_eq!(ticks(last.clone()), [(5000, 9000, false)]);
        assert_eq!(last[0].id, tick_id("q", "s", 8000));
        // All, bounded: the latest two.
        let all = every(Missed::All(2)).plan("q", 5000, 8300);
        assert_eq!(ticks(all.clone()), [(5000, 8000, false), (8000, 9000, false)]);
        assert_eq!(
            (all[0].id.clone(), all[1].id.clone()),
            (tick_id("q", "s", 7000), tick_id("q", "s", 8000))
        );
        // None: on time fires, a long miss skips to after now.
        assert_eq!(ticks(every(Missed::Skip).plan("q", 5000, 5200)), [(5000, 6000, false)]);
        let hourly =
            Schedule::every("s", Duration::from_secs(1000), "").unwrap().missed(Missed::Skip).unwrap();
        assert_eq!(ticks(hourly.plan("q", 1_000_000, 1_100_000)), [(1_000_000, 2_000_000, true)]);
        assert_eq!(ticks(hourly.plan("q", 1_000_000, 1_050_000)), [(1_000_000, 2_000_000, false)]);
    }
}
