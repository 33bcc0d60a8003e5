//! RESOLVE: a parent hears how one of its children ended (protocol 1.6).
//! The relay (a worker's upkeep) sends one for each notice it carries.

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::flow::{JobRef, Outcome};
use super::reply::{int_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::{Error, ErrorKind, Result};

/// Tell a parent how a child ended: applied once per (parent,
/// incarnation, child); a notice sent again, late, or to a parent that
/// ended changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolve {
    /// The parent.
    pub parent: JobId,
    /// The parent's incarnation, as the child's link names it.
    pub incarnation: u64,
    /// The child.
    pub child: JobRef,
    /// How it ended.
    pub outcome: Outcome,
    /// What it returned, when it was done with a result.
    pub result: Option<Vec<u8>>,
}

impl Transition for Resolve {
    const NAME: Name = Name::Resolve;
    /// `true` when the notice was applied, `false` when it changed nothing.
    type Output = bool;

    fn job(&self) -> Option<&JobId> {
        Some(&self.parent)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let incarnation = checked("incarnation", self.incarnation, limits::INCARNATION)?;
        let mut args = vec![
            self.parent.as_str().into(),
            decimal(incarnation),
            self.child.to_string().into_bytes(),
            self.outcome.as_str().into(),
        ];
        if let Some(result) = &self.result {
            if result.len() > limits::MAX_RESULT {
                return Err(Error::new(ErrorKind::TooLarge, format!("result exceeds {} bytes", limits::MAX_RESULT)));
            }
            args.extend([b"RESULT".to_vec(), result.clone()]);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<bool> {
        match int_reply("the reply", reply)? {
            1 => Ok(true),
            0 => Ok(false),
            n => Err(unexpected("the reply", &Reply::Int(n))),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::{ends, id};
        let [least, most] = ends(limits::INCARNATION);
        let child = JobRef::new("other", id(2)).expect("a queue");
        let plain = Resolve { parent: id(1), incarnation: least, child, outcome: Outcome::Done, result: None };
        Vec::from_iter([
            plain.clone(),
            Resolve { incarnation: most, outcome: Outcome::Gone, ..plain.clone() },
            Resolve { result: Some(vec![b'r'; limits::MAX_RESULT]), ..plain.clone() },
            Resolve { result: Some(Vec::new()), outcome: Outcome::Dead, ..plain },
        ])
    }
}
