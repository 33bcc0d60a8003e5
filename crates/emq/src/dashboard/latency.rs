//! A queue's latency, on its page: how long its last jobs waited (enqueue
//! to claim) and ran (claim to ack), at p50, p90, p99 and the max, from the
//! newest entries of its event log (PROTOCOL.md §7.5).
//!
//! One bounded read, `XREVRANGE <q>events + - COUNT` [`READ`], made only
//! when the page is asked for (never in the shared snapshot). A claim's
//! time is its `active` entry's id (the server's clock); a finish's, its
//! `completed` entry's, paired with the latest `active` of the same job
//! before it (a retried job's last claim). The enqueue time is the
//! producer's clock, read from the job's branded id (a ULID's first 48
//! bits): an id without the brand has no time and stays out of the waits.

use std::collections::{HashMap, HashSet};

use echomq::{EventLog, JobId, Keyspace, StreamId};
use maud::{html, Markup};

use super::snapshot::minted_ms;
use crate::connect::{Conn, Error};

/// How many of the log's newest entries one page reads.
pub const READ: usize = 2000;

/// What an entry of the log that the figures use says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `active`: the job was claimed.
    Claimed,
    /// `completed`: the job was acked.
    Completed,
}

/// One `active` or `completed` entry: when (its id's ms), what, which job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub ms: u64,
    pub step: Step,
    pub job: JobId,
}

/// The order statistics of some durations, in ms (nearest rank).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Percentiles {
    pub count: usize,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

/// The percentiles of `samples` (nearest rank: the smallest sample with at
/// least p% of them at or below it); `None` for no sample.
pub fn percentiles(mut samples: Vec<u64>) -> Option<Percentiles> {
    samples.sort_unstable();
    let n = samples.len();
    let at = |p: usize| samples[(p * n).div_ceil(100).max(1) - 1];
    (n > 0).then(|| Percentiles { count: n, p50: at(50), p90: at(90), p99: at(99), max: samples[n - 1] })
}

/// What the entries read say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Latency {
    /// Enqueue to first claim in the entries, of each job with a branded id.
    pub wait: Option<Percentiles>,
    /// Claim to ack, of each completed job whose claim is in the entries.
    pub run: Option<Percentiles>,
    /// The jobs the figures come from.
    pub jobs: usize,
    /// Jobs claimed whose id has no time (not branded): left out of the waits.
    pub unbranded: usize,
    /// The first and last entry's ms (server clock); `None` for no entry.
    pub span: Option<(u64, u64)>,
}

/// The latency the entries say, oldest first. A job's wait runs from its
/// id's time to its first claim among them; its run from its latest claim
/// before each ack to that ack (an ack whose claim is older than the
/// entries is left out).
pub fn measure(entries: &[Entry]) -> Latency {
    let (mut waits, mut runs) = (Vec::new(), Vec::new());
    let mut claimed: HashMap<&JobId, u64> = HashMap::new();
    let mut seen = HashSet::new();
    let mut jobs = HashSet::new();
    let mut unbranded = 0;
    for entry in entries {
        match entry.step {
            Step::Claimed => {
                if seen.insert(&entry.job) {
                    match minted_ms(&entry.job) {
                        Some(minted) => {
                            // A producer's clock ahead of the server's reads as no wait.
                            waits.push(entry.ms.saturating_sub(minted));
                            jobs.insert(&entry.job);
                        }
                        None => unbranded += 1,
                    }
                }
                claimed.insert(&entry.job, entry.ms);
            }
            Step::Completed => {
                if let Some(start) = claimed.remove(&entry.job) {
                    runs.push(entry.ms.saturating_sub(start));
                    jobs.insert(&entry.job);
                }
            }
        }
    }
    let span = entries.first().zip(entries.last()).map(|(first, last)| (first.ms, last.ms));
    Latency { wait: percentiles(waits), run: percentiles(runs), jobs: jobs.len(), unbranded, span }
}

/// The newest [`READ`] entries of the queue's log, the ones the figures
/// use, oldest first; and how many entries were read in all.
async fn read(conn: &mut Conn, keys: &Keyspace) -> Result<(Vec<Entry>, usize), Error> {
    let newest: Vec<(String, Vec<Vec<u8>>)> = redis::cmd("XREVRANGE")
        .arg(keys.events())
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(READ)
        .query_async(conn)
        .await?;
    let read = newest.len();
    Ok((newest.into_iter().rev().filter_map(|(id, fields)| entry(&id, &fields)).collect(), read))
}

/// The entry of a log entry's id and fields, when it is an `active` or a
/// `completed` of a job.
fn entry(id: &str, fields: &[Vec<u8>]) -> Option<Entry> {
    let field =
        |name: &str| fields.chunks_exact(2).find(|pair| pair[0] == name.as_bytes()).map(|pair| &pair[1]);
    let step = match field("event")?.as_slice() {
        b"active" => Step::Claimed,
        b"completed" => Step::Completed,
        _ => return None,
    };
    let job = JobId::try_from(field("id")?.as_slice()).ok()?;
    Some(Entry { ms: id.parse::<StreamId>().ok()?.ms, step, job })
}

/// The page's section: the figures, or why there are none.
pub async fn section(conn: &mut Conn, keys: &Keyspace, events: EventLog) -> Markup {
    if events == EventLog::Off {
        return html! {
            h2 { "Latency" }
            p.none #latency-off { "The event log is off (events 0): no latency figures, which come from it." }
        };
    }
    let (entries, read) = match read(conn, keys).await {
        Ok(read) => read,
        Err(err) => {
            return html! {
                h2 { "Latency" }
                p.bad #latency-unreadable { "Cannot read the event log: " (crate::failure::explain(err.as_ref())) }
            }
        }
    };
    let latency = measure(&entries);
    if latency.jobs == 0 {
        return html! {
            h2 { "Latency" }
            p.none #latency-none {
                @if read == 0 { "No recent jobs: the event log is empty." }
                @else { "No recent jobs: the newest " (read) " entries of the event log have no claimed job with a time." }
            }
        };
    }
    let row = |label: &str, figures: Option<Percentiles>| {
        html! {
            tr {
                th { (label) }
                @match figures {
                    Some(p) => {
                        td.n { (p.count) } td.n { (ms(p.p50)) } td.n { (ms(p.p90)) } td.n { (ms(p.p99)) } td.n { (ms(p.max)) }
                    }
                    None => td.none colspan="5" { "none in these entries" }
                }
            }
        }
    };
    let (from, to) = latency.span.unwrap_or_default();
    html! {
        h2 { "Latency of the last " span #latency-jobs { (latency.jobs) } " jobs" }
        (super::html::scroll(&html! {
            table #latency {
                tr { th { "" } th.n { "jobs" } th.n { "p50" } th.n { "p90" } th.n { "p99" } th.n { "max" } }
                (row("wait (enqueue to claim)", latency.wait))
                (row("run (claim to ack)", latency.run))
            }
        }))
        p.note #latency-note {
            "From the newest " (read) " entries of the event log, "
            (super::html::when_ms(from)) " to " (super::html::when_ms(to)) " (" (ms(to - from)) ", server clock). "
            "A wait runs from the enqueue time in the job's id, on the producer's clock (a delayed job's delay included), to its first claim here; "
            "a run from the job's last claim before its ack to the ack."
            @if latency.unbranded > 0 {
                " " (latency.unbranded) " jobs whose ids carry no time are left out of the waits."
            }
        }
    }
}

/// A duration in ms, as a reader takes it in: `840 ms`, `2.5 s`, `3m 12s`.
fn ms(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => humantime::format_duration(std::time::Duration::from_secs(ms / 1000)).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A branded id minted at `ms` (its ULID's first ten characters).
    fn minted_at(ms: u64, n: u8) -> JobId {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
        let time: String = (0..10).rev().map(|i| ALPHABET[((ms >> (5 * i)) & 31) as usize] as char).collect();
        JobId::branded(&format!("JOB_{time}{n:016}")).unwrap()
    }

    fn at(ms: u64, step: Step, job: &JobId) -> Entry {
        Entry { ms, step, job: job.clone() }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let hundred = percentiles((1..=100).rev().collect()).unwrap();
        assert_eq!(hundred, Percentiles { count: 100, p50: 50, p90: 90, p99: 99, max: 100 });
        assert_eq!(percentiles(vec![7]).unwrap(), Percentiles { count: 1, p50: 7, p90: 7, p99: 7, max: 7 });
        let ten = percentiles(vec![10, 20, 30, 40, 50, 60, 70, 80, 90, 1000]).unwrap();
        assert_eq!((ten.p50, ten.p90, ten.p99, ten.max), (50, 90, 1000, 1000));
        assert_eq!(percentiles(Vec::new()), None);
    }

    #[test]
    fn a_minted_time_reads_back() {
        assert_eq!(minted_ms(&minted_at(1_750_000_000_123, 1)), Some(1_750_000_000_123));
    }

    #[test]
    fn claims_pair_with_acks_and_a_retry_runs_from_its_last_claim() {
        let (a, b, c) = (minted_at(1_000, 1), minted_at(1_000, 2), minted_at(2_000, 3));
        let entries = [
            at(1_100, Step::Claimed, &a),
            at(1_500, Step::Claimed, &b), // its first attempt fails (no entry here counts it)
            at(1_600, Step::Completed, &a),
            at(2_000, Step::Claimed, &b), // retried
            at(2_300, Step::Claimed, &c), // still running: a wait, no run
            at(2_250, Step::Completed, &b),
        ];
        let mut sorted = entries.to_vec();
        sorted.sort_by_key(|entry| entry.ms);
        let latency = measure(&sorted);
        // Waits: a 100, b 500 (its first claim), c 300.
        assert_eq!(latency.wait, Some(Percentiles { count: 3, p50: 300, p90: 500, p99: 500, max: 500 }));
        // Runs: a 500, b 250 (from its second claim).
        assert_eq!(latency.run, Some(Percentiles { count: 2, p50: 250, p90: 500, p99: 500, max: 500 }));
        assert_eq!((latency.jobs, latency.unbranded, latency.span), (3, 0, Some((1_100, 2_300))));
    }

    #[test]
    fn an_ack_without_its_claim_and_unbranded_ids_are_left_out_of_what_they_lack() {
        let old = minted_at(500, 1);
        let plain: JobId = "JOB-plain-7".parse().unwrap();
        let entries = [
            at(1_000, Step::Completed, &old), // claimed before the entries read
            at(1_200, Step::Claimed, &plain),
            at(1_700, Step::Completed, &plain),
        ];
        let latency = measure(&entries);
        assert_eq!(latency.wait, None, "no branded claim");
        assert_eq!(latency.run, Some(Percentiles { count: 1, p50: 500, p90: 500, p99: 500, max: 500 }));
        assert_eq!((latency.jobs, latency.unbranded), (1, 1));
        assert_eq!(measure(&[]), Latency { wait: None, run: None, jobs: 0, unbranded: 0, span: None });
    }

    #[test]
    fn only_claims_and_acks_of_jobs_are_entries() {
        let id = minted_at(1, 1);
        let pairs = |pairs: &[(&str, &str)]| -> Vec<Vec<u8>> {
            pairs.iter().flat_map(|(f, v)| [f.as_bytes().to_vec(), v.as_bytes().to_vec()]).collect()
        };
        let claimed = entry("42-3", &pairs(&[("event", "active"), ("id", id.as_str()), ("attempt", "1")]));
        assert_eq!(claimed, Some(Entry { ms: 42, step: Step::Claimed, job: id.clone() }));
        assert_eq!(
            entry("43-0", &pairs(&[("event", "completed"), ("id", id.as_str())])).unwrap().step,
            Step::Completed
        );
        assert_eq!(entry("44-0", &pairs(&[("event", "failed"), ("id", id.as_str())])), None);
        assert_eq!(entry("45-0", &pairs(&[("event", "paused")])), None);
        assert_eq!(entry("46-0", &pairs(&[("event", "active"), ("id", "not a job")])), None);
        assert_eq!(entry("bad", &pairs(&[("event", "active"), ("id", id.as_str())])), None);
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(ms(840), "840 ms");
        assert_eq!(ms(2_500), "2.5 s");
        assert_eq!(ms(192_000), "3m 12s");
    }
}
