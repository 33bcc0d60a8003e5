//! Where a walk that changes the set as it goes resumes: after an anchor,
//! the last job of the page before that is still in the set, found by its
//! rank (checked) or, when it left the set, by its score.

use super::PAGE;
use crate::connect::{Conn, Error};

/// A member's place in a sorted set: by score, then by its bytes.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Position {
    pub(super) score: f64,
    pub(super) id: String,
}

impl Position {
    /// Whether `self` comes before `other` in the set's order.
    pub(super) fn before(&self, other: &Position) -> bool {
        self.score < other.score || (self.score == other.score && self.id.as_bytes() < other.id.as_bytes())
    }
}

/// How many times a page is read again when the set moved between reading
/// the anchor's rank and reading from it.
const TRIES: usize = 5;

/// The (at most) [`PAGE`] members after `anchor`, or the first ones, and
/// whether they are the set's last. By the anchor's rank while it is in the
/// set (checked: the page read holds it); when it left the set, by its
/// score, passing over the members of equal score at or before it.
pub(super) async fn after(
    conn: &mut Conn,
    set: &str,
    anchor: Option<&Position>,
) -> Result<(Vec<Position>, bool), Error> {
    let Some(anchor) = anchor else {
        let page = range(conn, set, 0, PAGE).await?;
        let last = page.len() < PAGE;
        return Ok((page, last));
    };
    for _ in 0..TRIES {
        let rank: Option<i64> = redis::cmd("ZRANK").arg(set).arg(&anchor.id).query_async(conn).await?;
        let Some(rank) = rank else { break };
        let mut page = range(conn, set, rank, PAGE + 1).await?;
        let last = page.len() < PAGE + 1;
        // Not there: the ranks moved between the two reads; read again.
        if let Some(at) = page.iter().position(|p| p.id == anchor.id) {
            let rest = page.split_off(at + 1);
            if !rest.is_empty() || last {
                return Ok((rest, last));
            }
        }
    }
    // From the anchor's score, always from the first member of that score:
    // members before the anchor may leave the set meanwhile (workers claim
    // from the head), so a read at an offset past them could skip members
    // after it. Each read takes twice as many as the last until one goes
    // past the anchor: bounded by the members of the anchor's score.
    let mut count = PAGE;
    loop {
        let page: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(set)
            .arg(anchor.score)
            .arg("+inf")
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(count)
            .arg("WITHSCORES")
            .query_async(conn)
            .await?;
        let cut = page.len() == count;
        let mut rest: Vec<Position> =
            page.into_iter().map(|(id, score)| Position { score, id }).filter(|p| anchor.before(p)).collect();
        // The set's last page only when the read was not cut and all of
        // what follows the anchor fits in one page.
        let last = !cut && rest.len() <= PAGE;
        rest.truncate(PAGE);
        if !rest.is_empty() || last {
            return Ok((rest, last));
        }
        count *= 2;
    }
}

/// `count` members of `set` from rank `start` (negative: from the end), lowest first.
pub(super) async fn range(
    conn: &mut Conn,
    set: &str,
    start: i64,
    count: usize,
) -> Result<Vec<Position>, Error> {
    let stop = if start < 0 { -1 } else { start + count as i64 - 1 };
    let members: Vec<(String, f64)> =
        redis::cmd("ZRANGE").arg(set).arg(start).arg(stop).arg("WITHSCORES").query_async(conn).await?;
    Ok(members.into_iter().map(|(id, score)| Position { score, id }).collect())
}
