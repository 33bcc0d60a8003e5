//! The queue's event log, `emq:{q}:events` (PROTOCOL.md §7.5; the Lua twin is
//! `includes/events.lua`): a capped stream each transition appends to in the
//! same atomic step as its change, for `QueueEvents`, `emq events` and
//! `Queue::wait`. A call writes events only when it passes the events key
//! (and the config key, which holds the log's length: `events`, 0 for off).

use super::{need, protocol};
use crate::limits::{EVENTS_KEEP, MAX_EVENT_ERROR};
use crate::parse::stored;
use crate::store::{KeyType, Store};
use crate::Refusal;

/// Where a call's events go, and how many entries the log keeps.
#[derive(Debug)]
pub(crate) struct Events<'k> {
    key: &'k [u8],
    keep: u64,
}

impl<'k> Events<'k> {
    /// The log a call writes to: `None` when it passed no events key, or the
    /// queue turned its log off. The last check before a write: the events
    /// key must hold a stream and the config key a hash (or nothing).
    pub(crate) fn open<S: Store>(
        store: &mut S,
        keys: Option<(&'k [u8], &[u8])>,
    ) -> Result<Option<Events<'k>>, Refusal> {
        let Some((key, config)) = keys else { return Ok(None) };
        need(store, key, KeyType::Stream)?;
        need(store, config, KeyType::Hash)?;
        let keep = events_setting(store, config)?;
        Ok((keep > 0).then_some(Events { key, keep }))
    }

    /// Append `event` about job `id` (none when empty) with `more` fields.
    pub(crate) fn emit<S: Store>(&self, store: &mut S, event: &str, id: &[u8], more: &[(&[u8], &[u8])]) {
        let mut fields: Vec<(&[u8], &[u8])> = Vec::with_capacity(2 + more.len());
        fields.push((b"event", event.as_bytes()));
        if !id.is_empty() {
            fields.push((b"id", id));
        }
        fields.extend_from_slice(more);
        store.xadd(self.key, self.keep, &fields);
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

/// Emit through `events` when the call has a log.
pub(crate) fn emit<S: Store>(
    events: &Option<Events<'_>>,
    store: &mut S,
    event: &str,
    id: &[u8],
    more: &[(&[u8], &[u8])],
) {
    if let Some(events) = events {
        events.emit(store, event, id, more);
    }
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
