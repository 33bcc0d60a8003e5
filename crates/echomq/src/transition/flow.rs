//! FLOW: a parent that waits for its children (protocol 1.6), and the names
//! a flow's parts go by across queues: a job reference, a child's link to
//! its parent, what a parent does when a child fails, how a child ended.

use std::fmt;
use std::str::FromStr;

use echomq_core::Reply;
use echomq_core::{limits, Name, Policy};

use super::argument::{checked, decimal};
use super::enqueue::policy_args;
use super::headers::{encode_headers, Headers};
use super::reply::{array_reply, int_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::keyspace::valid_queue;
use crate::{Error, ErrorKind, Result};

/// A job named across queues: its queue and its id, written
/// `{<queue>}<id>` (the queue's hashtag, then the id).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobRef {
    /// The job's queue.
    pub queue: String,
    /// The job's id.
    pub id: JobId,
}

impl JobRef {
    /// The job `id` of `queue`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Argument`] for a queue name the protocol refuses.
    pub fn new(queue: &str, id: JobId) -> Result<JobRef> {
        valid_queue(queue)?;
        Ok(JobRef { queue: queue.to_owned(), id })
    }
}

impl fmt::Display for JobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{}}}{}", self.queue, self.id)
    }
}

impl FromStr for JobRef {
    type Err = Error;

    fn from_str(text: &str) -> Result<JobRef> {
        let bad = || Error::new(ErrorKind::Argument, format!("{text:?} is not {{<queue>}}<id>"));
        let rest = text.strip_prefix('{').ok_or_else(bad)?;
        let (queue, id) = rest.split_once('}').ok_or_else(bad)?;
        JobRef::new(queue, JobId::try_from(id.as_bytes())?)
    }
}

/// A child's link to its parent: the parent, and the incarnation FLOW
/// gave it, so that a notice to an earlier life of the parent's id changes
/// nothing. Written `<incarnation> {<queue>}<id>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The parent's incarnation, as its FLOW answered it.
    pub incarnation: u64,
    /// The parent.
    pub parent: JobRef,
}

impl Link {
    /// The link as the protocol writes it.
    #[must_use]
    pub fn text(&self) -> String {
        format!("{} {}", self.incarnation, self.parent)
    }
}

/// What a parent does when a child ends otherwise than done: dead,
/// cancelled, or deleted before it finished (gone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// The parent dies at once, with an error naming the child (the default).
    #[default]
    Fail,
    /// The dependency counts as resolved: the parent waits for the others.
    Ignore,
    /// The parent runs at once, without waiting for the others.
    Continue,
}

impl OnFailure {
    /// The word the protocol writes.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OnFailure::Fail => "fail",
            OnFailure::Ignore => "ignore",
            OnFailure::Continue => "continue",
        }
    }
}

/// How a child ended, as its notice tells its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acked.
    Done,
    /// Out of attempts.
    Dead,
    /// Cancelled.
    Cancelled,
    /// Deleted before it finished (drained, removed), or never enqueued.
    Gone,
}

impl Outcome {
    /// The word the protocol writes.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Dead => "dead",
            Outcome::Cancelled => "cancelled",
            Outcome::Gone => "gone",
        }
    }

    /// The outcome the word names.
    #[must_use]
    pub fn parse(word: &[u8]) -> Option<Outcome> {
        [Outcome::Done, Outcome::Dead, Outcome::Cancelled, Outcome::Gone]
            .into_iter()
            .find(|outcome| outcome.as_str().as_bytes() == word)
    }
}

/// One child a parent waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    /// The child.
    pub child: JobRef,
    /// What the parent does if it fails.
    pub on_failure: OnFailure,
}

/// Write a parent `waiting` for its children, with an incarnation; its
/// children are enqueued after it, each with a [`Link`] to it. Idempotent:
/// a parent that exists answers its incarnation and changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flow {
    /// The parent's id.
    pub id: JobId,
    /// The parent's bytes.
    pub payload: Vec<u8>,
    /// Its children, 1 to [`limits::FLOW_CHILDREN`].
    pub children: Vec<Dependency>,
    /// Lower is claimed first, once it is pending.
    pub priority: i64,
    /// The parent's own policy.
    pub policy: Option<Policy>,
    /// The parent's headers.
    pub headers: Headers,
    /// The parent's own parent, in a nested flow.
    pub parent: Option<Link>,
    /// The parent's group (protocol 1.7), once it is pending; `None`: the
    /// default group.
    pub group: Option<String>,
}

/// What a FLOW did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flowed {
    /// The parent was written, with this incarnation.
    Created(u64),
    /// A parent with this id exists, of this incarnation: nothing changed.
    Exists(u64),
    /// A job with this id exists and is no parent: nothing changed.
    NoParent,
}

impl Transition for Flow {
    const NAME: Name = Name::Flow;
    type Output = Flowed;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.payload.len() > limits::MAX_PAYLOAD {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("payload exceeds {} bytes", limits::MAX_PAYLOAD),
            ));
        }
        let n = checked("children", self.children.len() as u64, limits::FLOW_CHILDREN)?;
        let mut args = vec![self.id.as_str().into(), self.payload.clone(), decimal(n)];
        for dependency in &self.children {
            args.push(dependency.child.to_string().into_bytes());
            args.push(dependency.on_failure.as_str().into());
        }
        if self.priority != 0 {
            args.push(b"PRIORITY".to_vec());
            args.push(decimal(checked("PRIORITY", self.priority, limits::PRIORITY)?));
        }
        if let Some(policy) = &self.policy {
            policy_args(policy, &mut args)?;
        }
        if !self.headers.is_empty() {
            args.extend([b"HEADERS".to_vec(), encode_headers(&self.headers)?]);
        }
        if let Some(link) = &self.parent {
            args.extend([b"PARENT".to_vec(), link.text().into_bytes()]);
        }
        super::enqueue::group_args(self.group.as_deref(), &mut args)?;
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Flowed> {
        match written_incarnation(reply)? {
            (1, Some(incarnation), rest) if rest.is_empty() => Ok(Flowed::Created(incarnation)),
            (0, Some(incarnation), rest) if rest.is_empty() => Ok(Flowed::Exists(incarnation)),
            (0, None, _) => Ok(Flowed::NoParent),
            (n, _, _) => Err(unexpected("the reply's first element", &Reply::Int(n))),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::{ends, id};
        let child =
            |n| Dependency { child: JobRef::new("q", id(n)).expect("a queue"), on_failure: OnFailure::Fail };
        let [_, most] = ends(limits::FLOW_CHILDREN);
        let plain = Flow {
            id: id(1),
            payload: b"p".to_vec(),
            children: vec![child(2)],
            priority: 0,
            policy: None,
            headers: Headers::new(),
            parent: None,
            group: None,
        };
        let many = (0..most as u32)
            .map(|n| Dependency {
                on_failure: [OnFailure::Fail, OnFailure::Ignore, OnFailure::Continue][n as usize % 3],
                ..child(n + 10)
            })
            .collect();
        let link = Link {
            incarnation: *limits::INCARNATION.end(),
            parent: JobRef::new("up", id(9)).expect("a queue"),
        };
        Vec::from_iter([
            plain.clone(),
            Flow { children: many, ..plain.clone() },
            Flow {
                priority: -5,
                policy: Some(Policy { attempts: Some(3), ..Policy::default() }),
                parent: Some(link),
                group: Some("g".into()),
                ..plain
            },
        ])
    }
}

/// FLOW's and ADOPT's reply: `[0 or 1, incarnation, …]`, the incarnation
/// a bulk string of decimal digits (FLOW's `[0]` has none), and what
/// follows it.
pub(super) fn written_incarnation(reply: Reply) -> Result<(i64, Option<u64>, Vec<Reply>)> {
    let mut items = array_reply("the reply", reply)?.into_iter();
    let written = int_reply("the reply's first element", items.next().unwrap_or(Reply::Nil))?;
    let incarnation = match items.next() {
        None => None,
        Some(Reply::Bulk(text)) => Some(
            std::str::from_utf8(&text)
                .ok()
                .and_then(|text| text.parse::<u64>().ok())
                .ok_or_else(|| unexpected("the incarnation", &Reply::Bulk(text.clone())))?,
        ),
        Some(other) => return Err(unexpected("the incarnation", &other)),
    };
    Ok((written, incarnation, items.collect()))
}
