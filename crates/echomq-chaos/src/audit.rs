//! The audit: read each job's record and every set that holds its id, in
//! one atomic script call per chunk of ids, and judge what was read. Atomic,
//! so a job caught between two transitions cannot look inconsistent; per
//! chunk, so the server is never held for long. The script only reads.
//!
//! A job is sound when its record exists, exactly one of the seven sets
//! holds it (a flow's parent waits in `waiting`), and that set is the one
//! its `state` names. An `active` job is sound
//! only with a live lease: a deadline in `active` (the one REAP acts on) no
//! later than now plus the longest lease the workers ask for, give or take
//! [`CLOCK_SLACK`]. Once the run has settled, a sound job is also `done`.

use std::time::Duration;

use echomq::{JobId, Keyspace, State};
use redis::aio::ConnectionManager;

/// The ids one script call reads.
const CHUNK: usize = 500;

/// Leases follow the server's wall clock, which a time daemon may step back
/// a little between a claim and an audit; a lease off by its unit would be
/// off by far more than this.
const CLOCK_SLACK: Duration = Duration::from_secs(1);

/// KEYS[1..7]: the seven state sets; KEYS[8..]: the records of ARGV's ids.
const SCRIPT: &str = r#"
local names = {'pending', 'active', 'delayed', 'done', 'dead', 'cancelled', 'waiting'}
local rows = {}
for i, id in ipairs(ARGV) do
  local record = redis.call('HMGET', KEYS[7 + i], 'state', 'attempts')
  local sets = {}
  for s, name in ipairs(names) do
    if redis.call('ZSCORE', KEYS[s], id) then sets[#sets + 1] = name end
  end
  local lease = redis.call('ZSCORE', KEYS[2], id)
  rows[i] = {record[1] or '', record[2] or '', table.concat(sets, ' '), lease or ''}
end
local time = redis.call('TIME')
return {time[1], time[2], rows}
"#;

/// The script's reply: the server's time (seconds, microseconds) and per
/// id its state, attempts, sets (space-separated) and lease, as text.
type Reply = (u64, u64, Vec<(String, String, String, String)>);

/// One job as the audit read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The record's `state`; empty when there is no record.
    pub state: String,
    /// The record's `attempts`, the last token handed out.
    pub attempts: Option<u64>,
    /// The sets holding the id.
    pub sets: Vec<String>,
    /// The lease deadline in `active`, server ms.
    pub lease: Option<u64>,
    /// The server's clock when it was read, ms.
    pub now: u64,
}

/// Read `ids`, a chunk per call, in order.
pub async fn read(
    conn: &mut ConnectionManager,
    keys: &Keyspace,
    ids: &[JobId],
) -> redis::RedisResult<Vec<Row>> {
    let script = redis::Script::new(SCRIPT);
    let sets = [
        State::Pending,
        State::Active,
        State::Delayed,
        State::Done,
        State::Dead,
        State::Cancelled,
        State::Waiting,
    ];
    let mut rows = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(CHUNK) {
        let mut call = script.prepare_invoke();
        for state in sets {
            call.key(keys.state(state));
        }
        for id in chunk {
            call.key(keys.job(id));
        }
        for id in chunk {
            call.arg(id.as_str());
        }
        let (seconds, micros, read): Reply = call.invoke_async(conn).await?;
        let now = seconds * 1000 + micros / 1000;
        rows.extend(read.into_iter().map(|(state, attempts, sets, lease)| Row {
            state,
            attempts: attempts.parse().ok(),
            sets: sets.split_whitespace().map(str::to_owned).collect(),
            lease: lease.parse::<f64>().ok().map(|ms| ms as u64),
            now,
        }));
    }
    Ok(rows)
}

/// What is wrong with a job, if anything. `lease` is the longest lease the
/// workers ask for; `settled`: the run is over and every job should be done.
pub fn problem(row: &Row, lease: Duration, settled: bool) -> Option<String> {
    if row.state.is_empty() {
        return Some("lost: no record".into());
    }
    if row.attempts.is_none() {
        return Some(format!("its attempts are not a number (state {})", row.state));
    }
    if row.sets != [row.state.as_str()] {
        return Some(format!("state {} but held by [{}]", row.state, row.sets.join(", ")));
    }
    if row.state == State::Active.as_str() {
        let latest = row.now + (lease + CLOCK_SLACK).as_millis() as u64;
        match row.lease {
            Some(deadline) if deadline <= latest => {}
            other => {
                return Some(format!("active without a live lease: deadline {other:?}, now {}", row.now))
            }
        }
    }
    if settled && row.state != State::Done.as_str() {
        return Some(format!("left {} once the run settled", row.state));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(state: &str, sets: &[&str], lease: Option<u64>) -> Row {
        let sets = sets.iter().map(|s| s.to_string()).collect();
        Row { state: state.into(), attempts: Some(2), sets, lease, now: 10_000 }
    }

    #[test]
    fn a_sound_job_passes_and_each_fault_is_named() {
        let lease = Duration::from_secs(2);
        assert_eq!(problem(&row("pending", &["pending"], None), lease, false), None);
        assert_eq!(problem(&row("waiting", &["waiting"], None), lease, false), None);
        assert_eq!(problem(&row("active", &["active"], Some(11_000)), lease, false), None);
        assert_eq!(
            problem(&row("active", &["active"], Some(13_000)), lease, false),
            None,
            "within the slack"
        );
        assert_eq!(
            problem(&row("active", &["active"], Some(9_000)), lease, false),
            None,
            "expired, not yet reaped"
        );
        assert_eq!(problem(&row("done", &["done"], None), lease, true), None);

        let faults = [
            (row("", &[], None), false, "lost"),
            (Row { attempts: None, ..row("done", &["done"], None) }, false, "not a number"),
            (row("done", &[], None), false, "held by []"),
            (row("done", &["done", "pending"], None), false, "held by [done, pending]"),
            (row("pending", &["active"], Some(11_000)), false, "held by [active]"),
            (row("active", &["active"], Some(13_001)), false, "without a live lease"),
            (row("pending", &["pending"], None), true, "left pending"),
            (row("waiting", &["waiting"], None), true, "left waiting"),
            (row("waiting", &["waiting", "pending"], None), false, "held by [waiting, pending]"),
            (row("active", &["active"], Some(11_000)), true, "left active"),
        ];
        for (row, settled, why) in faults {
            let found = problem(&row, lease, settled);
            assert!(found.as_deref().is_some_and(|p| p.contains(why)), "{row:?}: {found:?}, wanted {why:?}");
        }
    }
}
