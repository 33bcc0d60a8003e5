//! SETTLE: upkeep that follows each open batch and enqueues its callback
//! exactly once when every job has finished (PROTOCOL.md §7.7; `settle.lua`).

use super::batch::{field, State};
use super::events::{emit, flush, hold, Events};
use super::{need, read_state, wake, wake_key, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::{SETTLE_BATCHES, SWEEP_LIMIT};
use crate::parse::{named_keys, options, record_key};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// SETTLE's KEYS.
    SettleKeys {
        batch_open: BatchOpen,
        batches: Batches,
        batch_jobs: BatchJobs,
        pending: Pending,
        headers: Headers,
        events: Events,
        config: Config,
        wake: Wake,
    }
    then counts: Counts
}

/// A parsed SETTLE.
#[derive(Debug)]
pub struct Settle<'a> {
    keys: SettleKeys<'a>,
    prefix: &'a [u8],
    limit: u64,
}

/// What SETTLE found for one open batch.
struct Plan {
    batch: Vec<u8>,
    /// Its new state; `None` for a stray entry of `batch_open` (no state).
    state: Option<State>,
    changed: bool,
    /// It waits on a job not finished, and goes behind the other open batches.
    waits: bool,
}

impl<'a> Settle<'a> {
    /// What SETTLE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "settle",
        command: "EMQ.SETTLE",
        keys: SettleKeys::ROLES,
        forms: SettleKeys::FORMS,
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: batch_open, batches, batch_jobs, pending, headers, events,
    /// config, wake. ARGV: `LIMIT <n>`, how many jobs it looks at in all.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; `LIMIT` is unknown, given twice
    ///   or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Settle<'a>, Refusal> {
        let (keys, prefix) = named_keys::<SettleKeys>(keys, b"")?;
        let [limit] = options(args, [("LIMIT", SWEEP_LIMIT)])?;
        Ok(Settle { keys, prefix, limit: limit.unwrap_or(*SWEEP_LIMIT.end()) })
    }

    /// Follow each open batch (up to 100, first in `batch_open`'s order:
    /// by creation, or since a SETTLE passed it over) from its cursor while
    /// its jobs have finished, looking at up to LIMIT jobs in all; enqueue
    /// the callback of each batch whose jobs all finished, and close it.
    /// Reply `[closed, looked]`: call again while `looked` is LIMIT.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key, a batch job's record or a callback's record holds another type.
    /// - `TRYAGAIN`: a batch job's record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: `<q>config`'s `events` is not an integer, or a batch's job's record's `state` is none of
    ///   the six, or it lacks its state or attempts.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        // Read everything first (each record checked): a refusal writes nothing.
        let (plans, looked) = self.plan(store)?;
        let events = Events::open_counted(
            store,
            Some((self.keys.events, self.keys.config)),
            self.keys.counts,
            &["enqueued"],
        )?;
        hold(&events);
        let wakes = wake_key(store, Some(self.keys.wake))?;
        let (closed, called) = self.settle(store, plans, &events);
        if called {
            wake(store, wakes);
        }
        flush(&events, store);
        Ok(Reply::Array(vec![Reply::count(closed), Reply::count(looked)]))
    }

    /// The keys' types, then a plan for each open batch it looks at, every
    /// record it reads checked; with how many jobs it looked at. Writes
    /// nothing.
    fn plan<S: Store>(&self, store: &mut S) -> Result<(Vec<Plan>, u64), Refusal> {
        let SettleKeys { batch_open: open, batches, batch_jobs, pending, headers, .. } = self.keys;
        need(store, open, KeyType::Zset)?;
        need(store, batches, KeyType::Hash)?;
        need(store, batch_jobs, KeyType::Hash)?;
        need(store, pending, KeyType::Zset)?;
        need(store, headers, KeyType::Hash)?;
        let mut plans = Vec::new();
        let mut looked = 0;
        let heads = store.zhead(open, SETTLE_BATCHES);
        // More open batches than a call looks at: each one it finds waiting
        // on a job not finished goes behind the others, so that the next
        // call looks at the next ones (a newer batch is not kept waiting on
        // older ones).
        let rotate = heads.len() == SETTLE_BATCHES && store.zcard(open) > SETTLE_BATCHES as u64;
        for batch in heads {
            if looked >= self.limit {
                break;
            }
            let Some(mut state) = store.hget(batches, &batch).and_then(|text| State::read(&text)) else {
                plans.push(Plan { batch, state: None, changed: true, waits: false });
                continue;
            };
            let before = state.clone();
            let waits = self.follow(store, &batch, &mut state, &mut looked)?;
            if state.cursor == state.total {
                need(store, &record_key(self.prefix, &state.callback), KeyType::Hash)?;
            }
            let changed = state != before;
            plans.push(Plan { batch, state: Some(state), changed, waits: waits && rotate });
        }
        Ok((plans, looked))
    }

    /// Follow `batch` from its cursor while its jobs have finished, each
    /// counted by how it ended (a job whose record is gone as none of the
    /// three), while `looked` is under LIMIT. Whether it stopped at a job
    /// not finished.
    fn follow<S: Store>(
        &self,
        store: &mut S,
        batch: &[u8],
        state: &mut State,
        looked: &mut u64,
    ) -> Result<bool, Refusal> {
        while state.cursor < state.total && *looked < self.limit {
            let job = store.hget(self.keys.batch_jobs, &field(batch, &state.cursor.to_string()));
            let ended = match &job {
                Some(job) => read_state(store, &record_key(self.prefix, job))?,
                None => None,
            };
            let at = match ended.as_deref() {
                Some(b"done") => 0,
                Some(b"dead") => 1,
                Some(b"cancelled") => 2,
                None => 3,
                Some(_) => return Ok(true),
            };
            state.counts[at] += 1;
            state.cursor += 1;
            *looked += 1;
        }
        Ok(false)
    }

    /// Write what each plan says: a stray entry leaves `batch_open`, a batch
    /// still open keeps its new state (and goes behind the others when it
    /// waits), a batch whose jobs all finished calls back and closes. How
    /// many closed, and whether one enqueued its callback.
    fn settle<S: Store>(&self, store: &mut S, plans: Vec<Plan>, events: &Option<Events<'_>>) -> (u64, bool) {
        let SettleKeys { batch_open: open, batches, .. } = self.keys;
        let (mut closed, mut called) = (0, false);
        for Plan { batch, state, changed, waits } in plans {
            let Some(state) = state else {
                store.zrem(open, &batch);
                continue;
            };
            if state.cursor < state.total {
                if changed {
                    store.hset(batches, &[(&batch, &state.text())]);
                }
                if waits {
                    let now = store.now_ms();
                    store.zadd(open, now as f64, &batch);
                }
                continue;
            }
            called |= self.call_back(store, &batch, &state, events);
            closed += 1;
        }
        (closed, called)
    }

    /// Enqueue the callback of a batch whose jobs all finished (unless its
    /// record exists), then forget the batch. Whether it enqueued one.
    fn call_back<S: Store>(
        &self,
        store: &mut S,
        batch: &[u8],
        state: &State,
        events: &Option<Events<'_>>,
    ) -> bool {
        let SettleKeys { batch_open: open, batches, batch_jobs, pending, headers, .. } = self.keys;
        let payload = store.hget(batches, &field(batch, "callback")).unwrap_or_default();
        let record = record_key(self.prefix, &state.callback);
        let enqueue = store.key_type(&record) == KeyType::None;
        if enqueue {
            let now = store.now_ms();
            let enqueued_at = now.to_string();
            let fields: [(&[u8], &[u8]); 4] = [
                (b"state", b"pending"),
                (b"attempts", b"0"),
                (b"payload", &payload),
                (b"enqueued_at", enqueued_at.as_bytes()),
            ];
            write_record(store, &record, &fields, now);
            store.hset(headers, &[(&state.callback, &state.headers(batch))]);
            store.zadd(pending, 0.0, &state.callback);
            emit(events, store, "enqueued", &state.callback, &[(b"state", b"pending"), (b"batch", batch)]);
        }
        store.hdel(batches, batch);
        store.hdel(batches, &field(batch, "callback"));
        for n in 0..state.total {
            store.hdel(batch_jobs, &field(batch, &n.to_string()));
        }
        store.zrem(open, batch);
        enqueue
    }
}
