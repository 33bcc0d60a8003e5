//! OBLITERATE: the last step of deleting a queue.

use echomq_core::Name;
use echomq_core::Reply;

use super::reply::count_reply;
use super::Transition;
use crate::Result;

/// The last step of deleting a queue: refused (`EMQSTATE`) while any of its
/// sets holds a job; then every other key of the queue goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Obliterate;

impl Transition for Obliterate {
    const NAME: Name = Name::Obliterate;
    /// How many keys (besides the empty sets) were deleted.
    type Output = u64;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(Vec::new())
    }

    fn parse(reply: Reply) -> Result<u64> {
        count_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        Vec::from_iter([Obliterate])
    }
}
