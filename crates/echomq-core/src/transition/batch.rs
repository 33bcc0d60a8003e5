//! Batches (see the `.lua` twins): BATCH registers a set of enqueued jobs
//! and a callback job; SETTLE, run by every worker as upkeep, follows each
//! open batch's jobs in order and, once every one has finished (done, dead,
//! cancelled, or gone), enqueues its callback exactly once, its counts in
//! the callback's headers (PROTOCOL.md §7.7).
//!
//! A batch's state is one field of `batches`, `<batch>` → `<total> <cursor>
//! <done> <dead> <cancelled> <gone> <callback id>`, and its callback's
//! payload another, `<batch>:callback`; its jobs are `batch_jobs` fields
//! `<batch>:<n>`, n from 0; `batch_open` holds the open batches by creation
//! time, or by when a SETTLE passed them over. Finished is final for a
//! batch: a dead job retried by hand after SETTLE counted it stays counted
//! dead.

use super::events::{emit, Events};
use super::{need, read_field, wake, wake_key, write_record};
use crate::description::{Description, Effect, Role};
use crate::limits::{BATCH_SIZE, MAX_BATCH_ID, MAX_PAYLOAD, SETTLE_BATCHES, SWEEP_LIMIT};
use crate::parse::{kind, lossy, options, queue_prefix, record_key};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

/// A batch id: 1 to [`MAX_BATCH_ID`] bytes of letters, digits, `_`, `-`,
/// `.` and `:` (so it needs no escaping in the callback's JSON headers),
/// not ending in `:callback` (the field of another batch's callback payload).
fn batch_id(value: Option<&[u8]>) -> Result<&[u8], Refusal> {
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':');
    match value {
        Some(id)
            if !id.is_empty()
                && id.len() <= MAX_BATCH_ID
                && id.iter().all(allowed)
                && !id.ends_with(b":callback") =>
        {
            Ok(id)
        }
        _ => Err(Refusal::arg(format!(
            "batch id must be 1 to {MAX_BATCH_ID} bytes of letters, digits, _, -, . and :, and not end in :callback"
        ))),
    }
}

/// A batch's state, as `batches` keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    total: u64,
    cursor: u64,
    /// done, dead, cancelled, gone.
    counts: [u64; 4],
    callback: Vec<u8>,
}

impl State {
    fn text(&self) -> Vec<u8> {
        let [done, dead, cancelled, gone] = self.counts;
        let numbers = format!("{} {} {done} {dead} {cancelled} {gone} ", self.total, self.cursor);
        [numbers.as_bytes(), &self.callback].concat()
    }

    /// The stored text, or `None` when it is not a batch's state.
    fn read(text: &[u8]) -> Option<State> {
        let text = std::str::from_utf8(text).ok()?;
        let words: Vec<&str> = text.split(' ').collect();
        let [total, cursor, done, dead, cancelled, gone, callback] = words[..] else { return None };
        let n = |word: &str| word.parse::<u64>().ok();
        let (total, cursor) = (n(total)?, n(cursor)?);
        (cursor <= total && callback.starts_with("JOB")).then_some(())?;
        Some(State {
            total,
            cursor,
            counts: [n(done)?, n(dead)?, n(cancelled)?, n(gone)?],
            callback: callback.into(),
        })
    }

    /// The callback's headers: a JSON object of strings (§7.6).
    fn headers(&self, batch: &[u8]) -> Vec<u8> {
        let [done, dead, cancelled, gone] = self.counts;
        format!(
            r#"{{"batch":"{}","total":"{}","done":"{done}","dead":"{dead}","cancelled":"{cancelled}","gone":"{gone}"}}"#,
            lossy(batch),
            self.total
        )
        .into_bytes()
    }
}

/// `<batch>:<suffix>`: a field of `batches` or `batch_jobs`.
fn field(batch: &[u8], suffix: &str) -> Vec<u8> {
    [batch, b":", suffix.as_bytes()].concat()
}

/// A parsed BATCH.
#[derive(Debug)]
pub struct Batch<'a> {
    keys: &'a [&'a [u8]],
    batch: &'a [u8],
    callback: &'a [u8],
    payload: &'a [u8],
    jobs: &'a [&'a [u8]],
}

impl<'a> Batch<'a> {
    /// What BATCH is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "batch",
        command: "EMQ.BATCH",
        keys: &[Role::Batches, Role::BatchJobs, Role::BatchOpen],
        forms: &[3],
        args: &["batch", "callback", "payload"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: batches, batch_jobs, batch_open. ARGV: batch id, callback id,
    /// callback payload, then the batch's job ids (1 to 1000).
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Batch<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
        let batch = batch_id(args.first().copied())?;
        let callback = kind(args.get(1).copied())?;
        let payload = *args.get(2).ok_or_else(|| Refusal::arg("payload is missing"))?;
        if payload.len() > MAX_PAYLOAD {
            return Err(Refusal::new(Code::Size, format!("payload exceeds {MAX_PAYLOAD} bytes")));
        }
        let jobs = args.get(3..).unwrap_or_default();
        if !BATCH_SIZE.contains(&(jobs.len() as u64)) {
            return Err(Refusal::arg(format!(
                "a batch has {} to {} jobs",
                BATCH_SIZE.start(),
                BATCH_SIZE.end()
            )));
        }
        for job in jobs {
            kind(Some(job))?;
        }
        Ok(Batch { keys, batch, callback, payload, jobs })
    }

    /// Open the batch; 1, or 0 when a batch of that id is open already
    /// (nothing changed: a retried BATCH).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [batches, batch_jobs, open] = [self.keys[0], self.keys[1], self.keys[2]];
        need(store, batches, KeyType::Hash)?;
        need(store, batch_jobs, KeyType::Hash)?;
        need(store, open, KeyType::Zset)?;
        if store.hget(batches, self.batch).is_some() {
            return Ok(Reply::Int(0));
        }
        let state = State {
            total: self.jobs.len() as u64,
            cursor: 0,
            counts: [0; 4],
            callback: self.callback.to_vec(),
        };
        store.hset(batches, &[(self.batch, &state.text()), (&field(self.batch, "callback"), self.payload)]);
        let fields: Vec<(Vec<u8>, &[u8])> =
            self.jobs.iter().enumerate().map(|(n, job)| (field(self.batch, &n.to_string()), *job)).collect();
        let fields: Vec<(&[u8], &[u8])> = fields.iter().map(|(f, v)| (f.as_slice(), *v)).collect();
        store.hset(batch_jobs, &fields);
        let now = store.now_ms();
        store.zadd(open, now as f64, self.batch);
        Ok(Reply::Int(1))
    }
}

/// A parsed SETTLE.
#[derive(Debug)]
pub struct Settle<'a> {
    keys: &'a [&'a [u8]],
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
        keys: &[
            Role::BatchOpen,
            Role::Batches,
            Role::BatchJobs,
            Role::Pending,
            Role::Headers,
            Role::Events,
            Role::Config,
            Role::Wake,
        ],
        forms: &[8],
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: batch_open, batches, batch_jobs, pending, headers, events,
    /// config, wake. ARGV: `LIMIT <n>`, how many jobs it looks at in all.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Settle<'a>, Refusal> {
        let prefix = queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, b"")?;
        let [limit] = options(args, [("LIMIT", SWEEP_LIMIT)])?;
        Ok(Settle { keys, prefix, limit: limit.unwrap_or(*SWEEP_LIMIT.end()) })
    }

    /// Follow each open batch (up to 100, first in `batch_open`'s order:
    /// by creation, or since a SETTLE passed it over) from its cursor while
    /// its jobs have finished, looking at up to LIMIT jobs in all; enqueue
    /// the callback of each batch whose jobs all finished, and close it.
    /// Reply `[closed, looked]`: call again while `looked` is LIMIT.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [open, batches, batch_jobs, pending, headers] =
            [self.keys[0], self.keys[1], self.keys[2], self.keys[3], self.keys[4]];
        need(store, open, KeyType::Zset)?;
        need(store, batches, KeyType::Hash)?;
        need(store, batch_jobs, KeyType::Hash)?;
        need(store, pending, KeyType::Zset)?;
        need(store, headers, KeyType::Hash)?;
        // Read everything first (each record checked): a refusal writes nothing.
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
            let mut waits = false;
            while state.cursor < state.total && looked < self.limit {
                let job = store.hget(batch_jobs, &field(&batch, &state.cursor.to_string()));
                let ended = match &job {
                    Some(job) => read_field(store, &record_key(self.prefix, job), b"state")?,
                    None => None,
                };
                let at = match ended.as_deref() {
                    Some(b"done") => 0,
                    Some(b"dead") => 1,
                    Some(b"cancelled") => 2,
                    None => 3,
                    Some(_) => {
                        waits = true;
                        break;
                    }
                };
                state.counts[at] += 1;
                state.cursor += 1;
                looked += 1;
            }
            if state.cursor == state.total {
                need(store, &record_key(self.prefix, &state.callback), KeyType::Hash)?;
            }
            let changed = state != before;
            plans.push(Plan { batch, state: Some(state), changed, waits: waits && rotate });
        }
        let events = Events::open(store, self.keys.get(5..7).map(|keys| (keys[0], keys[1])))?;
        let wakes = wake_key(store, self.keys, 7)?;
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
            called |= self.call_back(store, &batch, &state, &events);
            closed += 1;
        }
        if called {
            wake(store, wakes);
        }
        Ok(Reply::Array(vec![Reply::count(closed), Reply::count(looked)]))
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
        let [open, batches, batch_jobs, pending, headers] =
            [self.keys[0], self.keys[1], self.keys[2], self.keys[3], self.keys[4]];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_state_reads_back_as_written() {
        let state = State { total: 3, cursor: 1, counts: [1, 0, 0, 0], callback: b"JOB_CB".to_vec() };
        assert_eq!(state.text(), b"3 1 1 0 0 0 JOB_CB");
        assert_eq!(State::read(&state.text()), Some(state));
        for bad in
            [&b""[..], b"3 1 1 0 0 JOB_CB", b"3 4 0 0 0 0 JOB_CB", b"3 1 1 0 0 0 CB", b"x 1 1 0 0 0 JOB_CB"]
        {
            assert_eq!(State::read(bad), None, "{}", lossy(bad));
        }
    }
}
