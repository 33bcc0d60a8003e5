//! SCHEDULE: keep a schedule, or replace the one of its name. What a
//! definition means and when its ticks fall is the host's
//! ([`crate::schedule`]); the server stores and hands out.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::reply::count_reply;
use super::Transition;
use crate::{Error, Result};

/// A schedule's name, checked as the server checks it.
pub(super) fn name_arg(name: &str) -> Result<Vec<u8>> {
    if name.is_empty() || name.len() > limits::MAX_SCHEDULE_NAME {
        let max = limits::MAX_SCHEDULE_NAME;
        return Err(Error::new(ErrorKind::Argument, format!("schedule name must be 1 to {max} bytes")));
    }
    Ok(name.as_bytes().to_vec())
}

/// Add a schedule, or replace the one of that name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Its name, 1 to 200 bytes.
    pub name: String,
    /// Its definition, as [`crate::schedule::Schedule::definition`] writes it.
    pub definition: Vec<u8>,
    /// Its first tick, server ms.
    pub next: u64,
}

impl Transition for Schedule {
    const NAME: Name = Name::Schedule;
    /// `true` when added, `false` when it replaced one.
    type Output = bool;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.definition.len() > limits::MAX_DEFINITION {
            let max = limits::MAX_DEFINITION;
            return Err(Error::new(ErrorKind::TooLarge, format!("definition exceeds {max} bytes")));
        }
        Ok(vec![
            name_arg(&self.name)?,
            self.definition.clone(),
            decimal(checked("next", self.next, limits::AT_MS)?),
        ])
    }

    fn parse(reply: Reply) -> Result<bool> {
        Ok(count_reply("the reply", reply)? == 1)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter(e.schedule_names.iter().flat_map(|name| {
            [(Vec::new(), e.at_min), (vec![b'd'; limits::MAX_DEFINITION], e.at_max)]
                .map(|(definition, next)| Schedule { name: name.clone(), definition, next })
        }))
    }
}
