//! ADOPT: the lease holder makes its job a parent of children it names and
//! the job waits for them (protocol 1.6, dynamic children). Fenced, as
//! DEFER is, and like DEFER it gives the attempt back.

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::flow::{written_incarnation, Dependency, JobRef};
use super::reply::{array_reply, bytes_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// The holder's job waits for `children` (those it has no entry for yet
/// are added to its dependencies), without spending its attempt; the
/// children are enqueued after, linked to the incarnation it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adopt {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// The caller's maximum attempts, for a job with none of its own: the
    /// job's own maximum becomes this plus one.
    pub max_attempts: u64,
    /// Its children, 1 to [`limits::FLOW_CHILDREN`].
    pub children: Vec<Dependency>,
}

/// What an ADOPT did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Adopted {
    /// The job waits for its children: its holder has let it go, and
    /// enqueues `open`, linked to `incarnation`.
    Waits {
        /// The parent's incarnation: what its children's links name.
        incarnation: u64,
        /// The children given that are open, in the order given: those
        /// added now, and those added before that have not ended.
        open: Vec<JobRef>,
    },
    /// None of its children is open (each was named before, and has
    /// ended): nothing changed, and its holder goes on.
    Ended,
}

impl Transition for Adopt {
    const NAME: Name = Name::Adopt;
    type Output = Adopted;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let n = checked("children", self.children.len() as u64, limits::FLOW_CHILDREN)?;
        let mut args = vec![
            self.id.as_str().into(),
            decimal(checked("token", self.token, limits::TOKEN)?),
            decimal(checked("max_attempts", self.max_attempts, limits::MAX_ATTEMPTS)?),
            decimal(n),
        ];
        for dependency in &self.children {
            args.push(dependency.child.to_string().into_bytes());
            args.push(dependency.on_failure.as_str().into());
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Adopted> {
        let (written, incarnation, mut rest) = written_incarnation(reply)?;
        let (Some(incarnation), Some(open), true) = (incarnation, rest.pop(), rest.is_empty()) else {
            return Err(unexpected("the reply's length", &Reply::Int(written)));
        };
        let open = array_reply("the open children", open)?
            .into_iter()
            .map(|child| {
                let text = bytes_reply("an open child", child)?;
                String::from_utf8_lossy(&text).parse::<JobRef>()
            })
            .collect::<Result<Vec<JobRef>>>()?;
        match written {
            1 => Ok(Adopted::Waits { incarnation, open }),
            0 => Ok(Adopted::Ended),
            n => Err(unexpected("the reply's first element", &Reply::Int(n))),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::{ends, id};
        use super::flow::OnFailure;
        let e = super::edges::Ends::new();
        let child = |n: u32| Dependency {
            child: JobRef::new("q", id(n)).expect("a queue"),
            on_failure: [OnFailure::Fail, OnFailure::Ignore, OnFailure::Continue][n as usize % 3],
        };
        let [fewest, most] = ends(limits::FLOW_CHILDREN);
        Vec::from_iter([(e.token_min, e.attempts_min, fewest), (e.token_max, e.attempts_max, most)].map(
            |(token, max_attempts, n)| Adopt {
                id: id(1),
                token,
                max_attempts,
                children: (0..n as u32).map(|n| child(n + 10)).collect(),
            },
        ))
    }
}
