//! Streams as the store keeps them: ids, and entries packed in one buffer.

use std::collections::VecDeque;

/// A stream entry's id, `<ms>-<seq>`: ordered as Redis orders them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence within that millisecond.
    pub seq: u64,
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

impl std::str::FromStr for StreamId {
    type Err = ();

    /// `<ms>-<seq>`, or `<ms>` alone (sequence 0), as XREAD takes them.
    fn from_str(text: &str) -> Result<StreamId, ()> {
        let (ms, seq) = text.split_once('-').unwrap_or((text, "0"));
        Ok(StreamId { ms: ms.parse().map_err(drop)?, seq: seq.parse().map_err(drop)? })
    }
}

/// A stream entry: its id and its fields, in order.
pub type Entry = (StreamId, Vec<(Vec<u8>, Vec<u8>)>);

#[derive(Clone, Debug, Default)]
pub(super) struct Stream {
    pub(super) entries: VecDeque<Packed>,
    /// The last id handed out: ids only grow, even after a trim.
    pub(super) last: StreamId,
}

/// An entry as a stream keeps it: its fields in one buffer, each field and
/// value a little-endian u32 length and its bytes. One allocation an entry,
/// not two a field: the event log gains an entry with nearly every
/// transition and drops its oldest (in a profile of the embedded worker,
/// the entries' allocations and frees were a sixth of its time).
type Packed = (StreamId, Box<[u8]>);

pub(super) fn pack(fields: &[(&[u8], &[u8])]) -> Box<[u8]> {
    let size = fields.iter().map(|(field, value)| 8 + field.len() + value.len()).sum();
    let mut packed = Vec::with_capacity(size);
    for part in fields.iter().flat_map(|(field, value)| [field, value]) {
        let len = u32::try_from(part.len()).expect("a field under 4 GiB");
        packed.extend_from_slice(&len.to_le_bytes());
        packed.extend_from_slice(part);
    }
    packed.into_boxed_slice()
}

pub(super) fn unpack((id, packed): &Packed) -> Entry {
    fn part(rest: &mut &[u8]) -> Vec<u8> {
        let (len, tail) = rest.split_at(4);
        let len = u32::from_le_bytes(len.try_into().expect("four bytes")) as usize;
        let (part, tail) = tail.split_at(len);
        *rest = tail;
        part.to_vec()
    }
    let (mut rest, mut fields) = (&packed[..], Vec::new());
    while !rest.is_empty() {
        let field = part(&mut rest);
        fields.push((field, part(&mut rest)));
    }
    (*id, fields)
}
