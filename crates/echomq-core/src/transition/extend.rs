//! EXTEND: the holder renews its lease (PROTOCOL.md §7; `extend.lua`).

use super::fenced::Fenced;
use crate::description::{keys, Description, Effect};
use crate::limits::LEASE_MS;
use crate::parse::{count, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// EXTEND's KEYS.
    ExtendKeys { job: Job, active: Active }
}

/// A parsed EXTEND.
#[derive(Debug)]
pub struct Extend<'a> {
    fenced: Fenced<'a, ExtendKeys<'a>>,
    lease: u64,
}

impl<'a> Extend<'a> {
    /// What EXTEND is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "extend",
        command: "EMQ.EXTEND",
        keys: ExtendKeys::ROLES,
        forms: ExtendKeys::FORMS,
        args: &["id", "token", "lease"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: job, active. ARGV: id, token, lease.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the token or the lease is
    ///   missing or out of range; an argument follows them.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Extend<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args)?;
        let lease = count(args.get(2).copied(), "lease", LEASE_MS)?;
        options(args.get(3..).unwrap_or_default(), [])?;
        Ok(Extend { fenced, lease })
    }

    /// Move the lease deadline to now + lease; reply the deadline.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: active or the record holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` or `attempts` is malformed.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys: ExtendKeys { job, active }, id, .. } = self.fenced;
        self.fenced.check(store, job, &[(active, KeyType::Zset)])?;
        let deadline = store.now_ms() + self.lease;
        store.zadd(active, deadline as f64, id);
        Ok(Reply::count(deadline))
    }
}
