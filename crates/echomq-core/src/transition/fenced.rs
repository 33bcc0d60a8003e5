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
        match result {
            Some(result) => {
                store.hset(self.results, &[(id, result)]);
                let bytes = result.len().to_string();
                emit(self.events, store, "completed", id, &[(b"result_bytes", bytes.as_bytes())]);
            }
            _ => emit(self.events, store, "completed", id, &[]),
        }
    }
}

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
