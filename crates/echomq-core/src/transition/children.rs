//! CHILDREN: a parent's dependencies, each child's state and result
//! (PROTOCOL.md §7.8; `children.lua`). Writes nothing.

use super::need;
use crate::description::{keys, Description, Effect};
use crate::parse::{kind, named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// CHILDREN's KEYS.
    ChildrenKeys { children: Children }
}

/// A parsed CHILDREN.
#[derive(Debug)]
pub struct Children<'a> {
    keys: ChildrenKeys<'a>,
}

impl<'a> Children<'a> {
    /// What CHILDREN is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "children",
        command: "EMQ.CHILDREN",
        keys: ChildrenKeys::ROLES,
        forms: ChildrenKeys::FORMS,
        args: &["id"],
        options: &[],
        effect: Effect::Reads,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: children. ARGV: id.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id is not `JOB`-namespaced.
    /// - `EMQARG`: the key is not the id's, or an argument follows the id.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Children<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, _) = named_keys::<ChildrenKeys>(keys, id)?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Children { keys })
    }

    /// `[incarnation, open, [child, state, result]…]`, the children in byte
    /// order, each `open` or how it ended, with its result (or nil); `[]`
    /// for a job that is no parent.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal):
    /// - `EMQTYPE`: the key holds another type.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let key = self.keys.children;
        need(store, key, KeyType::Hash)?;
        let fields = store.hgetall(key);
        if fields.is_empty() {
            return Ok(Reply::Array(Vec::new()));
        }
        let value =
            |name: &[u8]| fields.iter().find(|(field, _)| field == name).map(|(_, value)| value.clone());
        let bulk = |value: Option<Vec<u8>>| value.map_or(Reply::Nil, Reply::Bulk);
        let mut named: Vec<&(Vec<u8>, Vec<u8>)> =
            fields.iter().filter(|(field, _)| field.starts_with(b"{")).collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let mut reply = vec![bulk(value(b"incarnation")), bulk(value(b"open"))];
        for (child, dependency) in named {
            let state = if dependency.starts_with(b"open") { b"open".to_vec() } else { dependency.clone() };
            let result = value(&[b"result:", child.as_slice()].concat());
            reply.push(Reply::Array(vec![Reply::Bulk(child.clone()), Reply::Bulk(state), bulk(result)]));
        }
        Ok(Reply::Array(reply))
    }
}
