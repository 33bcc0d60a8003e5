//! BATCH (`batch.lua`), and what batches share. BATCH registers a set of enqueued jobs
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

use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{BATCH_SIZE, MAX_BATCH_ID, MAX_DIGITS, MAX_PAYLOAD};
use crate::parse::{kind, lossy, named_keys};
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
pub(super) struct State {
    pub(super) total: u64,
    pub(super) cursor: u64,
    /// done, dead, cancelled, gone.
    pub(super) counts: [u64; 4],
    pub(super) callback: Vec<u8>,
}

impl State {
    pub(super) fn text(&self) -> Vec<u8> {
        let [done, dead, cancelled, gone] = self.counts;
        let numbers = format!("{} {} {done} {dead} {cancelled} {gone} ", self.total, self.cursor);
        [numbers.as_bytes(), &self.callback].concat()
    }

    /// The stored text, or `None` when it is not a batch's state.
    pub(super) fn read(text: &[u8]) -> Option<State> {
        let text = std::str::from_utf8(text).ok()?;
        let words: Vec<&str> = text.split(' ').collect();
        let [total, cursor, done, dead, cancelled, gone, callback] = words[..] else { return None };
        // Each number 1 to MAX_DIGITS decimal digits, nothing else (no sign).
        let n = |word: &str| {
            let digits = (1..=MAX_DIGITS).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| word.parse::<u64>().ok()).flatten()
        };
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
    pub(super) fn headers(&self, batch: &[u8]) -> Vec<u8> {
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
pub(super) fn field(batch: &[u8], suffix: &str) -> Vec<u8> {
    [batch, b":", suffix.as_bytes()].concat()
}

keys! {
    /// BATCH's KEYS.
    BatchKeys {
        batches: Batches,
        batch_jobs: BatchJobs,
        batch_open: BatchOpen,
    }
}

/// A parsed BATCH.
#[derive(Debug)]
pub struct Batch<'a> {
    keys: BatchKeys<'a>,
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
        keys: BatchKeys::ROLES,
        forms: BatchKeys::FORMS,
        args: &["batch", "callback", "payload"],
        options: &[],
        effect: Effect::Grows,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: batches, batch_jobs, batch_open. ARGV: batch id, callback id,
    /// callback payload, then the batch's job ids (1 to 1000).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the callback's id or a job's id is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the batch id is not 1 to
    ///   `MAX_BATCH_ID` bytes of letters, digits, `_`, `-`, `.` and `:`, or ends in `:callback`; the
    ///   payload is missing; the jobs are not 1 to 1000.
    /// - `EMQSIZE`: the callback's payload is over `MAX_PAYLOAD` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Batch<'a>, Refusal> {
        let (keys, _) = named_keys::<BatchKeys>(keys, b"")?;
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
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: batches, batch_jobs or batch_open holds another type.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let BatchKeys { batches, batch_jobs, batch_open: open } = self.keys;
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
