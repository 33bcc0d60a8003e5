//! What the fenced transitions share (PROTOCOL.md §6; `includes/fenced.lua`):
//! the id and token, the fence on the record, and where a finished job goes.

use super::events::{emit, Events};
use super::{fence, need, write_stamped, Stamped};
use crate::description::Keys;
use crate::limits::{MAX_RESULT, TOKEN};
use crate::parse::{count, kind, named_keys};
use crate::store::{KeyType, Store};
use crate::{Code, Refusal};

/// The part every fenced transition shares: its keys, id and token.
#[derive(Debug)]
pub(super) struct Fenced<'a, K> {
    pub(super) keys: K,
    pub(super) prefix: &'a [u8],
    pub(super) id: &'a [u8],
    pub(super) token: u64,
}

impl<'a, K: Keys<'a>> Fenced<'a, K> {
    /// The first steps, as `includes/fenced.lua` takes them: the id's kind
    /// (ARGV[1]), the keys (the record's is the id's), the token (ARGV[2]).
    pub(super) fn parse(keys: &[&'a [u8]], args: &[&'a [u8]]) -> Result<Fenced<'a, K>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, prefix) = named_keys::<K>(keys, id)?;
        let token = count(args.get(1).copied(), "token", TOKEN)?;
        Ok(Fenced { keys, prefix, id, token })
    }
}

impl<K> Fenced<'_, K> {
    /// The last check: the keys `typed` lists hold their types (or
    /// nothing), in KEYS order, then the fence on `record`: its stamp, for
    /// its write.
    pub(super) fn check<S: Store>(
        &self,
        store: &mut S,
        record: &[u8],
        typed: &[(&[u8], KeyType)],
    ) -> Result<Stamped, Refusal> {
        for (key, want) in typed {
            need(store, key, *want)?;
        }
        fence(store, record, self.token)
    }
}

/// Where ACK, ACKNEXT and ACKMANY put a finished job.
pub(super) struct Finish<'k, 'e> {
    pub(super) active: &'k [u8],
    pub(super) done: &'k [u8],
    pub(super) results: &'k [u8],
    pub(super) events: &'e Option<Events<'k>>,
}

impl Finish<'_, '_> {
    /// The job `id`, whose record is at `record` (`stamped` as the fence
    /// read it), to done, its result (if any) kept in results, with its
    /// `completed` event. After every check.
    pub(super) fn finish<S: Store>(
        &self,
        store: &mut S,
        record: &[u8],
        stamped: Stamped,
        id: &[u8],
        result: Option<&[u8]>,
    ) {
        store.zrem(self.active, id);
        let now = store.now_ms();
        write_stamped(store, record, &[(b"state", b"done")], now, stamped);
        store.zadd(self.done, now as f64, id);
        self.completed(store, id, result);
    }

    /// Finish many jobs, each `(record, stamped, id, result)` as
    /// [`finish`](Finish::finish) does one, with the sets written once for
    /// them all: out of active, their records and events, then into done
    /// in one ZADD (ACKMANY, as `finish_jobs` in includes/ack.lua).
    pub(super) fn finish_many<S: Store>(&self, store: &mut S, jobs: &[Finished<'_>]) {
        if jobs.is_empty() {
            return;
        }
        for &(_, _, id, _) in jobs {
            store.zrem(self.active, id);
        }
        let now = store.now_ms();
        for &(record, stamped, id, result) in jobs {
            write_stamped(store, record, &[(b"state", b"done")], now, stamped);
            self.completed(store, id, result);
        }
        // The last first, as a claim's into active (`Claim::take`).
        let finished: Vec<(f64, &[u8])> = jobs.iter().rev().map(|&(_, _, id, _)| (now as f64, id)).collect();
        store.zadd_many(self.done, &finished);
    }

    /// The job's result kept, if any, and its `completed` event.
    fn completed<S: Store>(&self, store: &mut S, id: &[u8], result: Option<&[u8]>) {
        let Some(result) = result else {
            emit(self.events, store, "completed", id, &[]);
            return;
        };
        store.hset(self.results, &[(id, result)]);
        let bytes = result.len().to_string();
        emit(self.events, store, "completed", id, &[(b"result_bytes", bytes.as_bytes())]);
    }
}

/// A job an ACKMANY finishes: its record's key, whether the record is
/// stamped, its id and its result.
pub(super) type Finished<'a> = (&'a [u8], Stamped, &'a [u8], Option<&'a [u8]>);

/// RESULT's bytes, the first time it is given and within its limit.
pub(super) fn ack_result<'a>(given: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Result<&'a [u8], Refusal> {
    if given.is_some() {
        return Err(Refusal::arg("RESULT given twice"));
    }
    let value = value.ok_or_else(|| Refusal::arg("RESULT is missing its bytes"))?;
    if value.len() > MAX_RESULT {
        return Err(Refusal::new(Code::Size, format!("result exceeds {MAX_RESULT} bytes")));
    }
    Ok(value)
}
