//! UNSCHEDULE: remove a schedule.

use echomq_core::Name;
use echomq_core::Reply;

use super::reply::count_reply;
use super::schedule::name_arg;
use super::Transition;
use crate::Result;

/// Remove a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unschedule {
    /// Its name.
    pub name: String,
}

impl Transition for Unschedule {
    const NAME: Name = Name::Unschedule;
    /// `true` when removed, `false` when there was none.
    type Output = bool;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![name_arg(&self.name)?])
    }

    fn parse(reply: Reply) -> Result<bool> {
        Ok(count_reply("the reply", reply)? == 1)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter(e.schedule_names.iter().map(|name| Unschedule { name: name.clone() }))
    }
}
