//! Fair groups under chaos (protocol 1.7, PROTOCOL.md §7.9): with
//! `--groups N`, every fifth plain job is enqueued into one of N groups, each
//! capped at [`CAP`] running and [`RATE`] claims a second; after the run,
//! the queue's event log (kept whole) is replayed per group: a claim
//! (`active`) takes one of the group's leases, every way a lease ends
//! (`completed`, `failed`, `dead`, `released`, `deferred`, `cancelled`,
//! `adopted`) gives it back, and at no point may a group hold more than its
//! cap, nor any 1,000 ms hold more than its rate of claims. That every
//! grouped job was done at the end (the drain) proves no group was left
//! unable to run.

use std::collections::HashMap;
use std::time::Duration;

use echomq::{Group, Limit, Queue, QueueGroups, Rate};
use redis::aio::ConnectionManager;

/// A group's cap: at most this many of its jobs running.
pub(crate) const CAP: u64 = 2;

/// A group's rate: at most this many claims in any [`PER`].
pub(crate) const RATE: u64 = 10;

/// The rate's window.
pub(crate) const PER: Duration = Duration::from_secs(1);

/// The group of plain job `n` among `groups`, if it has one: every fifth job.
pub(crate) fn group_of(n: usize, groups: usize) -> Option<String> {
    (groups > 0 && n.is_multiple_of(5)).then(|| format!("g{}", (n / 5) % groups))
}

/// Give each of the `groups` its cap and rate.
pub(crate) async fn configure(queue: &Queue, groups: usize) -> Result<(), String> {
    let rate = Rate { claims: RATE, per: PER };
    for k in 0..groups {
        let group = Group::new(format!("g{k}")).cap(Limit::To(CAP)).rate(Limit::To(rate));
        QueueGroups::of(queue).set(group).await.map_err(|e| format!("group g{k}: {e}"))?;
    }
    Ok(())
}

/// What the replay of the event log found: claims counted, and each
/// broken promise.
#[derive(Debug, Default)]
pub struct GroupsVerdict {
    /// Claims of grouped jobs in the log.
    pub claims: u64,
    /// The most leases any group held at once.
    pub most_running: u64,
    /// The most claims of one group in any window of the rate.
    pub most_in_window: u64,
    /// What broke.
    pub violations: Vec<String>,
}

/// With `groups` (the run's `--groups`), the verdict on `queue`'s log for
/// the plain jobs `ids` (job n's group is [`group_of`]'s); none without.
pub(crate) async fn judge_run(
    reader: &mut ConnectionManager,
    queue: &str,
    ids: &[echomq::JobId],
    groups: usize,
) -> Result<Option<GroupsVerdict>, String> {
    if groups == 0 {
        return Ok(None);
    }
    let of: HashMap<String, String> = ids
        .iter()
        .enumerate()
        .filter_map(|(n, id)| group_of(n, groups).map(|group| (id.to_string(), group)))
        .collect();
    judge(reader, queue, &of).await.map(Some)
}

/// Replay `queue`'s event log (`emq:{<queue>}:events`) for the jobs whose
/// group `group_of` gives.
pub(crate) async fn judge(
    reader: &mut ConnectionManager,
    queue: &str,
    group_of: &HashMap<String, String>,
) -> Result<GroupsVerdict, String> {
    let key = format!("emq:{{{queue}}}:events");
    let mut verdict = GroupsVerdict::default();
    let mut running: HashMap<&str, u64> = HashMap::new();
    let mut claimed: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut after = "-".to_owned();
    loop {
        let page: Vec<(String, HashMap<String, String>)> = redis::cmd("XRANGE")
            .arg(&key)
            .arg(&after)
            .arg("+")
            .arg("COUNT")
            .arg(10_000)
            .query_async(reader)
            .await
            .map_err(|e| format!("read the event log: {e}"))?;
        let Some((last, _)) = page.last() else { break };
        after = format!("({last}");
        for (entry, fields) in &page {
            let (Some(event), Some(id)) = (fields.get("event"), fields.get("id")) else { continue };
            let Some(group) = group_of.get(id) else { continue };
            let held = running.entry(group.as_str()).or_default();
            match event.as_str() {
                "active" => {
                    *held += 1;
                    verdict.claims += 1;
                    verdict.most_running = verdict.most_running.max(*held);
                    if *held > CAP {
                        verdict
                            .violations
                            .push(format!("group {group} held {held} leases at {entry}, over its cap"));
                    }
                    let ms = entry.split('-').next().and_then(|ms| ms.parse().ok()).unwrap_or(0);
                    claimed.entry(group.as_str()).or_default().push(ms);
                }
                "completed" | "failed" | "dead" | "released" | "deferred" | "cancelled" | "adopted" => {
                    *held = held.saturating_sub(1);
                }
                _ => {}
            }
        }
    }
    for (group, times) in &claimed {
        verdict.windows(group, times);
    }
    Ok(verdict)
}

impl GroupsVerdict {
    /// The claims of `group` at `times` (ms, in order): at most [`RATE`] in any [`PER`].
    fn windows(&mut self, group: &str, times: &[u64]) {
        let per = PER.as_millis() as u64;
        for (at, first) in times.iter().enumerate() {
            let within = times[at..].iter().take_while(|then| **then < first + per).count() as u64;
            self.most_in_window = self.most_in_window.max(within);
            if within > RATE {
                self.violations
                    .push(format!("group {group} was claimed {within} times in the {per} ms from {first}"));
                return;
            }
        }
    }

    /// The report's line.
    pub(crate) fn print(&self) {
        println!(
            "groups: {} claims of grouped jobs; at most {} running in a group (cap {CAP}), {} claims in a second \
             (rate {RATE})",
            self.claims, self.most_running, self.most_in_window
        );
    }
}
