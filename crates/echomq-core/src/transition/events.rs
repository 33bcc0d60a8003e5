//! The queue's event log, `emq:{q}:events` (PROTOCOL.md §7.5; the Lua twin is
//! `includes/events.lua`): a capped stream each transition appends to in the
//! same atomic step as its change, for `QueueEvents`, `emq events` and
//! `Queue::wait`. A call writes events only when it passes the events key
//! (and the config key, which holds the log's length: `events`, 0 for off).

use std::cell::{Cell, RefCell};

use super::{need, protocol};
use crate::limits::{COUNT_HOURS, COUNT_MINUTES, EVENTS_KEEP, HOUR_MS, MAX_EVENT_ERROR, MINUTE_MS};
use crate::parse::{malformed, stored};
use crate::store::{KeyType, Store};
use crate::Refusal;

/// Where a call's events go, how many entries the log keeps, and the
/// queue's counters (protocol 1.4) when the call passed their key.
#[derive(Debug)]
pub(crate) struct Events<'k> {
    /// The log and its length; `None` when the queue turned it off.
    log: Option<(&'k [u8], u64)>,
    counter: Option<Counter<'k>>,
}

impl<'k> Events<'k> {
    /// The log a call writes to: `None` when it passed no events key, or the
    /// queue turned its log off. The last check before a write: the events
    /// key must hold a stream and the config key a hash (or nothing).
    pub(crate) fn open<S: Store>(
        store: &mut S,
        keys: Option<(&'k [u8], &[u8])>,
    ) -> Result<Option<Events<'k>>, Refusal> {
        Events::open_counted(store, keys, None, &[])
    }

    /// [`open`](Events::open), and the counters at `counts` when given
    /// (only with the events keys), for `counted`, the events of
    /// [`COUNTED`] the transition may write: checked after the events keys,
    /// and kept even when the log is off.
    pub(crate) fn open_counted<S: Store>(
        store: &mut S,
        keys: Option<(&'k [u8], &[u8])>,
        counts: Option<&'k [u8]>,
        counted: &[&str],
    ) -> Result<Option<Events<'k>>, Refusal> {
        let Some((key, config)) = keys else { return Ok(None) };
        need(store, key, KeyType::Stream)?;
        need(store, config, KeyType::Hash)?;
        let keep = events_setting(store, config)?;
        let counter = counts.map(|counts| Counter::open(store, counts, counted)).transpose()?;
        let log = (keep > 0).then_some((key, keep));
        Ok((log.is_some() || counter.is_some()).then_some(Events { log, counter }))
    }

    /// Hold the counts until [`flush`](Events::flush): a call that counts
    /// many jobs (ACKMANY, ENQUEUEMANY, REAP, SETTLE) writes them once, at
    /// its end, where one job's call writes at each count.
    pub(crate) fn hold(&self) {
        if let Some(counter) = &self.counter {
            counter.holding.set(true);
        }
    }

    /// Write the counts held since [`hold`](Events::hold).
    pub(crate) fn flush<S: Store>(&self, store: &mut S) {
        if let Some(counter) = &self.counter {
            counter.flush(store);
        }
    }

    /// Append `event` about job `id` (none when empty) with `more` fields,
    /// and count it when it is one the counters keep: the entry's time
    /// (its id's first part), or `None` when the log is off.
    pub(crate) fn emit<S: Store>(
        &self,
        store: &mut S,
        event: &str,
        id: &[u8],
        more: &[(&[u8], &[u8])],
    ) -> Option<u64> {
        if let Some(counter) = &self.counter {
            counter.count(store, event);
        }
        let (key, keep) = self.log?;
        let mut fields: Vec<(&[u8], &[u8])> = Vec::with_capacity(2 + more.len());
        fields.push((b"event", event.as_bytes()));
        if !id.is_empty() {
            fields.push((b"id", id));
        }
        fields.extend_from_slice(more);
        store.xadd(key, keep, &fields)
    }
}

/// A stream that is never trimmed (`<q>notices`, protocol 1.6): an XADD
/// with no MAXLEN. The module's trim takes it as "keep everything".
pub(crate) const KEEP_ALL: u64 = i64::MAX as u64;

/// The events the counters keep, by name: a job's failure counts once, as
/// `failed` (another attempt follows) or as `dead`.
pub(crate) const COUNTED: [&str; 4] = ["enqueued", "completed", "failed", "dead"];

/// The queue's counters, `<q>counts` (PROTOCOL.md §7.5): for each of
/// [`COUNTED`], its total (field `<event>`), and its count in the current
/// minute's slot (`<event>:m<minute mod 60>`) and hour's slot
/// (`<event>:h<hour mod 168>`); `minute` and `hour` name the minute and
/// hour (since the epoch) the slots were last written for. The first count
/// of a call in a later minute (or hour) empties the slots of the minutes
/// since, up to all of them, first: bounded work, once a minute.
///
/// Every call that counts reads, at its open, the fields it may write, so a
/// count is one write of the sums (the three fields in one `HSET`), never a
/// read and a write a field.
#[derive(Debug)]
pub(crate) struct Counter<'k> {
    key: &'k [u8],
    minute: Slot,
    hour: Slot,
    /// Whether this call already moved the slots to now.
    moved: Cell<bool>,
    /// What each field the call read holds now (counted events' totals and
    /// now's slots), counts added.
    held: RefCell<Vec<(Vec<u8>, u64)>>,
    /// The fields changed since the last write, in the order first changed.
    unwritten: RefCell<Vec<usize>>,
    /// Now's minute and hour, when this call moved the slots and has not
    /// written them yet.
    stamps: RefCell<Option<[String; 2]>>,
    /// Whether the call writes its counts only at its end.
    holding: Cell<bool>,
}

/// One of the two rings: where now falls, and the last one written.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// `m` or `h`.
    tag: char,
    /// The slots in the ring.
    len: u64,
    /// Now's minute (or hour) since the epoch, never before `last`.
    now: u64,
    /// The one `minute` (or `hour`) names: `None` on a new queue.
    last: Option<u64>,
}

impl Slot {
    fn field(self, event: &str, at: u64) -> Vec<u8> {
        format!("{event}:{}{}", self.tag, at % self.len).into_bytes()
    }

    /// The fields to empty before counting now: every slot after the last
    /// one written, up to now, at most the whole ring.
    fn stale(self) -> Vec<Vec<u8>> {
        let from = match self.last {
            Some(last) if last >= self.now => return Vec::new(),
            Some(last) => (last + 1).max(self.now.saturating_sub(self.len - 1)),
            None => self.now,
        };
        (from..=self.now).flat_map(|at| COUNTED.map(|event| self.field(event, at))).collect()
    }
}

impl<'k> Counter<'k> {
    /// The counters at `key`: a hash or nothing (`EMQTYPE`), whose `minute`
    /// and `hour`, then the totals and now's slot fields of the `counted`
    /// events, are integers of 0 or more (`EMQDATA`). Reads only.
    fn open<S: Store>(store: &mut S, key: &'k [u8], counted: &[&str]) -> Result<Counter<'k>, Refusal> {
        need(store, key, KeyType::Hash)?;
        let now = store.now_ms();
        let [minute, hour] = <[Option<Vec<u8>>; 2]>::try_from(store.hmget(key, &[b"minute", b"hour"]))
            .expect("a value a field");
        let slot = |tag, len, now: u64, stored: Option<Vec<u8>>, field: &[u8]| {
            let last = natural(stored.as_deref(), key, field)?;
            Ok::<_, Refusal>(Slot { tag, len, now: last.map_or(now, |last| now.max(last)), last })
        };
        let minute = slot('m', COUNT_MINUTES, now / MINUTE_MS, minute, b"minute")?;
        let hour = slot('h', COUNT_HOURS, now / HOUR_MS, hour, b"hour")?;
        let fields: Vec<Vec<u8>> = counted
            .iter()
            .flat_map(|event| {
                [event.as_bytes().to_vec(), minute.field(event, minute.now), hour.field(event, hour.now)]
            })
            .collect();
        let names: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        let values = store.hmget(key, &names);
        let mut held = Vec::with_capacity(fields.len());
        for (field, value) in fields.into_iter().zip(values) {
            let n = natural(value.as_deref(), key, &field)?.unwrap_or(0);
            held.push((field, n));
        }
        Ok(Counter {
            key,
            minute,
            hour,
            moved: Cell::new(false),
            held: RefCell::new(held),
            unwritten: RefCell::default(),
            stamps: RefCell::default(),
            holding: Cell::new(false),
        })
    }

    /// Count one `event`, when it is one of [`COUNTED`]: its total and
    /// now's two slots, each one more; written at once unless the call
    /// holds. The first count of a call in a later minute (or hour) empties
    /// the slots since, and writes the stamps with the counts.
    fn count<S: Store>(&self, store: &mut S, event: &str) {
        if !COUNTED.contains(&event) {
            return;
        }
        let moves = [self.minute, self.hour].iter().any(|slot| slot.last != Some(slot.now));
        let mut held = self.held.borrow_mut();
        if moves && !self.moved.replace(true) {
            for slot in [self.minute, self.hour] {
                for field in slot.stale() {
                    store.hdel(self.key, &field);
                    // Now's slots were among the emptied ones.
                    if let Some((_, n)) = held.iter_mut().find(|(name, _)| *name == field) {
                        *n = 0;
                    }
                }
            }
            *self.stamps.borrow_mut() = Some([self.minute.now.to_string(), self.hour.now.to_string()]);
        }
        // The fields were read in threes, each event's total first.
        match held.iter().position(|(name, _)| name.as_slice() == event.as_bytes()) {
            Some(total) => {
                let mut unwritten = self.unwritten.borrow_mut();
                for at in total..total + 3 {
                    held[at].1 += 1;
                    if !unwritten.contains(&at) {
                        unwritten.push(at);
                    }
                }
            }
            // An event the call did not read (no transition counts one):
            // each field added to on its own.
            None => {
                for field in [
                    event.as_bytes().to_vec(),
                    self.minute.field(event, self.minute.now),
                    self.hour.field(event, self.hour.now),
                ] {
                    store.hincrby(self.key, &field, 1);
                }
            }
        }
        drop(held);
        if !self.holding.get() {
            self.flush(store);
        }
    }

    /// Write the stamps and every count changed since the last write, in
    /// one `HSET`: the stamps first, then the counts in the order first
    /// changed.
    fn flush<S: Store>(&self, store: &mut S) {
        let stamps = self.stamps.borrow_mut().take();
        let held = self.held.borrow();
        let sums: Vec<(&[u8], String)> = self
            .unwritten
            .borrow_mut()
            .drain(..)
            .map(|at| (held[at].0.as_slice(), held[at].1.to_string()))
            .collect();
        let mut pairs: Vec<(&[u8], &[u8])> = Vec::with_capacity(sums.len() + 2);
        if let Some([minute, hour]) = &stamps {
            pairs.extend([(&b"minute"[..], minute.as_bytes()), (&b"hour"[..], hour.as_bytes())]);
        }
        pairs.extend(sums.iter().map(|(field, sum)| (*field, sum.as_bytes())));
        if !pairs.is_empty() {
            store.hset(self.key, &pairs);
        }
    }
}

/// A stored counter: absent, or an integer of 0 or more (`EMQDATA`).
pub(crate) fn natural(value: Option<&[u8]>, key: &[u8], field: &[u8]) -> Result<Option<u64>, Refusal> {
    match stored(value, key, field) {
        Ok(Some(n)) if n >= 0 => Ok(Some(n as u64)),
        Ok(None) => Ok(None),
        _ => Err(malformed(key, field, "an integer of 0 or more")),
    }
}

/// The event log's length as `config` sets it (`events`; [`EVENTS_KEEP`]
/// unset, 0 or less: off), read with the queue's `protocol` and both
/// checked (`EMQVERSION`, `EMQDATA`): `config` holds a hash or nothing.
pub(crate) fn events_setting<S: Store>(store: &mut S, config: &[u8]) -> Result<u64, Refusal> {
    let [events, version] = <[Option<Vec<u8>>; 2]>::try_from(store.hmget(config, &[b"events", b"protocol"]))
        .expect("a value a field");
    protocol(config, version.as_deref())?;
    Ok(stored(events.as_deref(), config, b"events")?.map_or(EVENTS_KEEP, |n| n.max(0) as u64))
}

/// Hold the counts of a call that counts many jobs until [`flush`]:
/// ACKMANY, ENQUEUEMANY, REAP and SETTLE write them once, at their end.
pub(crate) fn hold(events: &Option<Events<'_>>) {
    if let Some(events) = events {
        events.hold();
    }
}

/// Write the counts [`hold`] kept back: the call's last write.
pub(crate) fn flush<S: Store>(events: &Option<Events<'_>>, store: &mut S) {
    if let Some(events) = events {
        events.flush(store);
    }
}

/// Emit through `events` when the call has a log: the entry's time, as
/// [`Events::emit`].
pub(crate) fn emit<S: Store>(
    events: &Option<Events<'_>>,
    store: &mut S,
    event: &str,
    id: &[u8],
    more: &[(&[u8], &[u8])],
) -> Option<u64> {
    events.as_ref().and_then(|events| events.emit(store, event, id, more))
}

/// An error text as an event carries it: at most its first
/// [`MAX_EVENT_ERROR`] bytes, cut back before a UTF-8 character the cut
/// would split (PROTOCOL.md §7.5): while the first byte left out continues a
/// character (`10xxxxxx`), the cut moves back one byte, at most three times.
pub(crate) fn error_text(text: &[u8]) -> &[u8] {
    let mut cut = MAX_EVENT_ERROR;
    if text.len() <= cut {
        return text;
    }
    while cut > MAX_EVENT_ERROR - 3 && text[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    &text[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_text_is_cut_at_a_character() {
        let short = "é".repeat(10);
        assert_eq!(error_text(short.as_bytes()), short.as_bytes());
        // 1023 ASCII bytes, then a two-byte character across the cut.
        let text = format!("{}é", "a".repeat(MAX_EVENT_ERROR - 1));
        assert_eq!(error_text(text.as_bytes()), "a".repeat(MAX_EVENT_ERROR - 1).as_bytes());
        // A four-byte character ending right at the cut stays whole.
        let whole = format!("{}😀x", "a".repeat(MAX_EVENT_ERROR - 4));
        assert_eq!(error_text(whole.as_bytes()).len(), MAX_EVENT_ERROR);
        // A four-byte character split after its first byte goes.
        let split = format!("{}😀", "a".repeat(MAX_EVENT_ERROR - 1));
        assert_eq!(error_text(split.as_bytes()).len(), MAX_EVENT_ERROR - 1);
        // Not UTF-8: at most three bytes back.
        let bytes = [vec![b'a'; MAX_EVENT_ERROR - 8], vec![0x80; 20]].concat();
        assert_eq!(error_text(&bytes).len(), MAX_EVENT_ERROR - 3);
    }
}
