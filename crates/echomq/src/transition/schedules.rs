//! SCHEDULES: hand out the queue's schedules (or the due ones) with their
//! next ticks and the server's now.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::reply::{array_reply, bytes_reply, count_reply};
use super::Transition;
use crate::{Error, Result};

/// Read the queue's schedules (or only the due ones) and the server's now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedules {
    /// Only those whose next tick is at or before the server's now.
    pub due: bool,
    /// At most this many, 1..=1000.
    pub limit: u64,
}

/// One schedule as the server holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// Its name.
    pub name: String,
    /// Its definition's bytes.
    pub definition: Vec<u8>,
    /// Its next tick, server ms.
    pub next: u64,
}

/// What SCHEDULES read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The server's now, ms: tick times are computed against it.
    pub now: u64,
    /// The schedules, by next tick, then name.
    pub schedules: Vec<Stored>,
}

impl Transition for Schedules {
    const NAME: Name = Name::Schedules;
    type Output = Listed;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = vec![b"LIMIT".to_vec(), decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?)];
        if self.due {
            args.extend([b"DUE".to_vec(), b"1".to_vec()]);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Listed> {
        let mut items = array_reply("the reply", reply)?.into_iter();
        let now = count_reply("now", items.next().unwrap_or(Reply::Nil))?;
        let schedules = items
            .map(|item| {
                let [name, definition, next] = <[Reply; 3]>::try_from(array_reply("entry", item)?)
                    .map_err(|entry| Error::new(ErrorKind::Reply, format!("entry: got {entry:?}")))?;
                Ok(Stored {
                    name: String::from_utf8_lossy(&bytes_reply("name", name)?).into_owned(),
                    definition: bytes_reply("definition", definition)?,
                    next: count_reply("next", next)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Listed { now, schedules })
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter([false, true]
                .into_iter()
                .flat_map(|due| [e.limit_min, e.limit_max].map(|limit| Schedules { due, limit })))
    }
}
