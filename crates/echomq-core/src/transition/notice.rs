//! What a flow's child tells its parent (PROTOCOL.md §7.8;
//! `includes/notice.lua`): every transition that ends a job (to done, dead
//! or cancelled, or deleted unfinished) and finds its link in
//! `<q>parents` writes a notice in the child's own queue, in the same
//! atomic step, and drops the link, but for a child that died in its set
//! (FAIL, REAP, RESOLVE): a retry may run it again, and its next end tells
//! its parent again (1.11). The relay carries notices to the
//! parent's queue (RESOLVE); none is ever lost with a call that forgot it:
//! a call without the flows' keys that would end a linked job is refused.

use super::events::KEEP_ALL;
use super::need;
use crate::parse::{lossy, malformed};
use crate::store::{KeyType, Store};
use crate::Refusal;

/// The flows' keys a call that ends jobs was passed (protocol 1.6), or the
/// queue's prefix to look for links with when it was not.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Notify<'k> {
    keys: Option<(&'k [u8], &'k [u8])>,
    prefix: &'k [u8],
}

impl<'k> Notify<'k> {
    /// The last check before the links are read: `<q>parents` must hold a
    /// hash and `<q>notices` a stream (or nothing), when passed.
    pub(crate) fn open<S: Store>(
        store: &mut S,
        keys: Option<(&'k [u8], &'k [u8])>,
        prefix: &'k [u8],
    ) -> Result<Notify<'k>, Refusal> {
        if let Some((parents, notices)) = keys {
            need(store, parents, KeyType::Hash)?;
            need(store, notices, KeyType::Stream)?;
        }
        Ok(Notify { keys, prefix })
    }

    /// The link of job `id`, which the call is about to end: `None` when it
    /// is no flow's child (or its parent was told already). Read before any
    /// write: a link that does not read as one is `EMQDATA`; a linked job
    /// in a call without the flows' keys is `EMQARG`, so that no speaker
    /// ends a child and leaves its parent waiting for ever.
    pub(crate) fn link<S: Store>(&self, store: &mut S, id: &[u8]) -> Result<Option<Vec<u8>>, Refusal> {
        let Some((parents, _)) = self.keys else {
            let parents = [self.prefix, b"parents"].concat();
            need(store, &parents, KeyType::Hash)?;
            if store.hget(&parents, id).is_some() {
                return Err(Refusal::arg(format!(
                    "{} has a parent: the call needs {p}parents and {p}notices",
                    lossy(id),
                    p = lossy(self.prefix)
                )));
            }
            return Ok(None);
        };
        let Some(link) = store.hget(parents, id) else { return Ok(None) };
        if Link::parse(&link).is_none() {
            return Err(malformed(parents, id, "a link"));
        }
        Ok(Some(link))
    }

    /// Tell the parent of job `id`, linked by `link`, how its child ended
    /// (`done`, `dead`, `cancelled` or `gone`), with the child's result
    /// when it kept one: the notice, then the link dropped. After every
    /// check.
    pub(crate) fn tell<S: Store>(
        &self,
        store: &mut S,
        id: &[u8],
        link: &[u8],
        outcome: &str,
        result: Option<&[u8]>,
    ) {
        self.notice(store, id, link, outcome, result);
        if let Some((parents, _)) = self.keys {
            store.hdel(parents, id);
        }
    }

    /// Tell the parent of job `id`, linked by `link`, that its child died
    /// and stays in the dead set: the notice, the link kept, so that a
    /// retry of the child tells again (1.11). After every check.
    pub(crate) fn tell_died<S: Store>(&self, store: &mut S, id: &[u8], link: &[u8]) {
        self.notice(store, id, link, "dead", None);
    }

    /// The notice of [`tell`](Notify::tell) alone.
    fn notice<S: Store>(&self, store: &mut S, id: &[u8], link: &[u8], outcome: &str, result: Option<&[u8]>) {
        let Some((_, notices)) = self.keys else { return };
        let Some(link) = Link::parse(link) else { return };
        let child = child_ref(self.prefix, id);
        let mut fields: Vec<(&[u8], &[u8])> = vec![
            (b"parent", link.parent),
            (b"incarnation", link.incarnation),
            (b"child", &child),
            (b"outcome", outcome.as_bytes()),
        ];
        if let Some(result) = result {
            fields.push((b"result", result));
        }
        store.xadd(notices, KEEP_ALL, &fields);
    }
}

/// A child's link to its parent, as `<q>parents` holds it and ENQUEUE's
/// and FLOW's `PARENT` give it: `<incarnation> {<queue>}<id>`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link<'a> {
    /// The parent's incarnation, 1 to 15 decimal digits.
    pub(crate) incarnation: &'a [u8],
    /// The parent, `{<queue>}<id>`.
    pub(crate) parent: &'a [u8],
}

impl<'a> Link<'a> {
    /// A link, or `None` when `text` does not read as one.
    pub(crate) fn parse(text: &'a [u8]) -> Option<Link<'a>> {
        let space = text.iter().position(|b| *b == b' ')?;
        let (incarnation, parent) = (&text[..space], &text[space + 1..]);
        let digits = !incarnation.is_empty()
            && incarnation.len() <= crate::limits::MAX_DIGITS
            && incarnation.iter().all(u8::is_ascii_digit);
        (digits && JobRef::parse(parent).is_some()).then_some(Link { incarnation, parent })
    }
}

/// A job named across queues, `{<queue>}<id>`: the queue's hashtag, then
/// the id (a queue name holds no brace, so the first `}` ends it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JobRef<'a> {
    /// The queue's name.
    pub(crate) queue: &'a [u8],
    /// The job's id, `JOB`-namespaced.
    pub(crate) id: &'a [u8],
}

impl<'a> JobRef<'a> {
    /// A job reference, or `None` when `text` is not one: a queue name of
    /// 1 to 255 bytes with no brace or NUL, and an id that passes the kind gate.
    pub(crate) fn parse(text: &'a [u8]) -> Option<JobRef<'a>> {
        JobRef::split(text).filter(|named| named.id.starts_with(b"JOB"))
    }

    /// A queue name and whatever follows it, the id not yet through the kind gate.
    pub(crate) fn split(text: &'a [u8]) -> Option<JobRef<'a>> {
        let rest = text.strip_prefix(b"{")?;
        let close = rest.iter().position(|b| *b == b'}')?;
        let (queue, id) = (&rest[..close], &rest[close + 1..]);
        let queue_ok = (1..=255).contains(&queue.len()) && !queue.iter().any(|b| matches!(b, b'{' | 0));
        queue_ok.then_some(JobRef { queue, id })
    }
}

/// The reference of job `id` of the queue whose prefix is `emq:{<q>}:`:
/// `{<q>}<id>`.
pub(crate) fn child_ref(prefix: &[u8], id: &[u8]) -> Vec<u8> {
    let tag = prefix.strip_prefix(b"emq:").and_then(|rest| rest.strip_suffix(b":")).unwrap_or(prefix);
    [tag, id].concat()
}

/// `PARENT`'s value: a link (`EMQARG` otherwise).
pub(crate) fn parent_option(value: Option<&[u8]>) -> Result<&[u8], Refusal> {
    match value {
        Some(link) if Link::parse(link).is_some() => Ok(link),
        Some(link) => {
            Err(Refusal::arg(format!("PARENT must be <incarnation> {{<queue>}}<id>, not {}", lossy(link))))
        }
        None => Err(Refusal::arg("PARENT is missing its link")),
    }
}
