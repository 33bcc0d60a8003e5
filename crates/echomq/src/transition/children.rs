//! CHILDREN: a parent's children, each one's state and result (protocol
//! 1.6). It writes nothing.

use echomq_core::Name;
use echomq_core::Reply;

use super::flow::{JobRef, Outcome};
use super::reply::{array_reply, bytes_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// Read a parent's dependencies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Children {
    /// The parent.
    pub id: JobId,
}

/// A parent's dependencies, as its queue holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildrenReply {
    /// The parent's incarnation.
    pub incarnation: u64,
    /// How many of its children it has not heard the end of.
    pub open: u64,
    /// Each child, in the byte order of its reference.
    pub children: Vec<Child>,
}

/// One child of a parent, as the parent last heard of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// The child.
    pub child: JobRef,
    /// How it ended; `None` while the parent waits to hear.
    pub outcome: Option<Outcome>,
    /// What it returned, when it was done with a result.
    pub result: Option<Vec<u8>>,
}

impl Transition for Children {
    const NAME: Name = Name::Children;
    /// `None` for a job that is no parent (or no job).
    type Output = Option<ChildrenReply>;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![self.id.as_str().into()])
    }

    fn parse(reply: Reply) -> Result<Option<ChildrenReply>> {
        let mut items = array_reply("the reply", reply)?.into_iter();
        let Some(incarnation) = items.next() else { return Ok(None) };
        let number = |what: &str, reply: Option<Reply>| -> Result<u64> {
            let reply = reply.unwrap_or(Reply::Nil);
            let text = bytes_reply(what, reply.clone())?;
            std::str::from_utf8(&text).ok().and_then(|text| text.parse().ok()).ok_or_else(|| unexpected(what, &reply))
        };
        let incarnation = number("the incarnation", Some(incarnation))?;
        let open = number("the open count", items.next())?;
        let children = items.map(child).collect::<Result<Vec<Child>>>()?;
        Ok(Some(ChildrenReply { incarnation, open, children }))
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        Vec::from_iter([Children { id: id(1) }])
    }
}

/// One `[child, state, result]` of the reply.
fn child(reply: Reply) -> Result<Child> {
    let shown = reply.clone();
    let [child, state, result] = <[Reply; 3]>::try_from(array_reply("a child", reply)?)
        .map_err(|_| unexpected("a child", &shown))?;
    let child = String::from_utf8(bytes_reply("a child's reference", child)?)
        .map_err(|_| unexpected("a child's reference", &shown))?
        .parse::<JobRef>()?;
    let state = bytes_reply("a child's state", state)?;
    let outcome = match state.as_slice() {
        b"open" => None,
        word => Some(Outcome::parse(word).ok_or_else(|| unexpected("a child's state", &shown))?),
    };
    let result = match result {
        Reply::Nil => None,
        other => Some(bytes_reply("a child's result", other)?),
    };
    Ok(Child { child, outcome, result })
}
