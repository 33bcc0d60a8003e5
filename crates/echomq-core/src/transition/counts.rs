//! COUNTS: the queue's counters, in all and per minute or hour; writes
//! nothing (PROTOCOL.md §7.5; `counts.lua`). The transitions that write
//! `enqueued`, `completed`, `failed` and `dead` events keep them
//! (`events.rs`, [`Counter`](super::events)).

use super::events::{natural, COUNTED};
use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{COUNT_HOURS, COUNT_MINUTES, HOUR_MS, MINUTE_MS};
use crate::parse::{lossy, named_keys};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// COUNTS's KEYS.
    CountsKeys { counts: Counts }
}

/// A parsed COUNTS.
#[derive(Debug)]
pub struct Counts<'a> {
    keys: CountsKeys<'a>,
    ring: Ring,
}

/// Minutes or hours: a ring of `<q>counts`.
#[derive(Clone, Copy, Debug)]
struct Ring {
    /// The field that names the last one written: `minute` or `hour`.
    stamp: &'static str,
    /// `m` or `h`, in the slots' field names.
    tag: char,
    len: u64,
    ms: u64,
}

const MINUTES: Ring = Ring { stamp: "minute", tag: 'm', len: COUNT_MINUTES, ms: MINUTE_MS };
const HOURS: Ring = Ring { stamp: "hour", tag: 'h', len: COUNT_HOURS, ms: HOUR_MS };

impl<'a> Counts<'a> {
    /// What COUNTS is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "counts",
        command: "EMQ.COUNTS",
        keys: CountsKeys::ROLES,
        forms: CountsKeys::FORMS,
        args: &["span"],
        options: &[],
        effect: Effect::Reads,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: counts. ARGV: `minute` or `hour` (any case).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the key is not a queue's `counts`, the argument is neither `minute` nor `hour`, or
    ///   another follows it.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Counts<'a>, Refusal> {
        let (keys, _) = named_keys::<CountsKeys>(keys, b"")?;
        // The positional argument first, then anything after it (§5).
        let ring = match args.first() {
            Some(unit) if unit.eq_ignore_ascii_case(b"minute") => MINUTES,
            Some(unit) if unit.eq_ignore_ascii_case(b"hour") => HOURS,
            Some(unit) => return Err(Refusal::arg(format!("{} is not minute or hour", lossy(unit)))),
            None => return Err(Refusal::arg("takes minute or hour")),
        };
        if let Some(extra) = args.get(1) {
            return Err(Refusal::arg(format!("unknown option {}", lossy(extra))));
        }
        Ok(Counts { keys, ring })
    }

    /// The server's time, the totals, and the ring's slots oldest first,
    /// the last holding now: each `[enqueued, completed, failed, dead]`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal) (it writes nothing):
    /// - `EMQTYPE`: counts holds another type than a hash.
    /// - `EMQDATA`: a field it reads is not an integer of 0 or more.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let key = self.keys.counts;
        let ring = self.ring;
        need(store, key, KeyType::Hash)?;
        let now = store.now_ms();
        let last = natural(store.hget(key, ring.stamp.as_bytes()).as_deref(), key, ring.stamp.as_bytes())?;
        let current = now / ring.ms;
        // A slot holds its minute (hour) when it is one of the ring's last
        // `len` up to the last one written; any other reads as nothing.
        let held = |at: u64| last.is_some_and(|last| at <= last && at + ring.len > last);
        let buckets: Vec<u64> = (current.saturating_sub(ring.len - 1)..=current).collect();
        let mut fields: Vec<Vec<u8>> = COUNTED.iter().map(|event| event.as_bytes().to_vec()).collect();
        for &at in buckets.iter().filter(|&&at| held(at)) {
            for event in COUNTED {
                fields.push(format!("{event}:{}{}", ring.tag, at % ring.len).into_bytes());
            }
        }
        let names: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        let mut values = Vec::with_capacity(names.len());
        for (field, value) in names.iter().zip(store.hmget(key, &names)) {
            values.push(natural(value.as_deref(), key, field)?.unwrap_or(0));
        }
        let four = |values: &[u64]| Reply::Array(values.iter().map(|&n| Reply::count(n)).collect());
        let totals = four(&values[..4]);
        let mut stored = values[4..].chunks(4);
        let slots = buckets
            .iter()
            .map(|&at| if held(at) { four(stored.next().expect("a slot read")) } else { four(&[0; 4]) })
            .collect();
        Ok(Reply::Array(vec![Reply::count(now), totals, Reply::Array(slots)]))
    }
}
