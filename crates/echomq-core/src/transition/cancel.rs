//! CANCEL: an operator takes a job out of the running (PROTOCOL.md §7;
//! `cancel.lua`).

use super::events::{emit, Events};
use super::grouped::Grouped;
use super::notice::Notify;
use super::{need, read_state, write_record};
use crate::description::{keys, Description, Effect};
use crate::parse::{kind, lossy, named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// CANCEL's KEYS.
    CancelKeys {
        job: Job,
        pending: Pending,
        active: Active,
        delayed: Delayed,
        dead: Dead,
        cancelled: Cancelled,
        events: Events,
        config: Config,
    }
    flow
    /// The flows' keys (protocol 1.6, §7.8): a child tells its parent, a
    /// waiting parent leaves `waiting`.
    CancelTold { parents: Parents, notices: Notices, waiting: Waiting }
}

/// A parsed CANCEL.
#[derive(Debug)]
pub struct Cancel<'a> {
    keys: CancelKeys<'a>,
    prefix: &'a [u8],
    id: &'a [u8],
}

impl<'a> Cancel<'a> {
    /// What CANCEL is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "cancel",
        command: "EMQ.CANCEL",
        keys: CancelKeys::ROLES,
        forms: CancelKeys::FORMS,
        args: &["id"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, pending, active, delayed, dead, cancelled, events, config. ARGV: id.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles, or an argument follows the id.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Cancel<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, prefix) = named_keys::<CancelKeys>(keys, id)?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Cancel { keys, prefix, id })
    }

    /// From pending, active, delayed or dead to cancelled; 0 when cancelled already.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a set, the record, events or config holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` is none of the six, the record lacks its state or attempts, or
    ///   `<q>config`'s `events` is not an integer.
    /// - `EMQSTATE`: the job is done (`cannot cancel a done job`).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let CancelKeys { pending, active, delayed, dead, cancelled, flow, .. } = self.keys;
        for key in [pending, active, delayed, dead, cancelled] {
            need(store, key, KeyType::Zset)?;
        }
        let waiting = flow.map(|told| told.waiting);
        let from = match read_state(store, self.keys.job)?.as_deref() {
            None => return Err(Refusal::new(Code::NoJob, "no such job")),
            Some(b"cancelled") => return Ok(Reply::Int(0)),
            Some(b"pending") => pending,
            Some(b"active") => active,
            Some(b"delayed") => delayed,
            Some(b"dead") => dead,
            Some(b"waiting") => waiting.ok_or_else(|| {
                let p = lossy(self.prefix);
                Refusal::arg(format!(
                    "{} waits for its children: the call needs {p}parents, {p}notices and {p}waiting",
                    lossy(self.id)
                ))
            })?,
            // `done`: read_state refuses a state none of the seven.
            Some(state) => {
                let state = String::from_utf8_lossy(state);
                return Err(Refusal::new(Code::State, format!("cannot cancel a {state} job")));
            }
        };
        let events = Events::open(store, Some((self.keys.events, self.keys.config)))?;
        if let Some(waiting) = waiting {
            need(store, waiting, KeyType::Zset)?;
        }
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), self.prefix)?;
        let link = notify.link(store, self.id)?;
        let grouped = Grouped::read(store, self.prefix, self.id)?;
        store.zrem(from, self.id);
        if from == self.keys.pending {
            grouped.off_pending(store, self.id);
        } else if from == self.keys.active {
            grouped.off_active(store, self.id, false);
        }
        let now = store.now_ms();
        write_record(store, self.keys.job, &[(b"state", b"cancelled")], now);
        store.zadd(cancelled, now as f64, self.id);
        emit(&events, store, "cancelled", self.id, &[]);
        if let Some(link) = link {
            notify.tell(store, self.id, &link, "cancelled", None);
        }
        Ok(Reply::Int(1))
    }
}
