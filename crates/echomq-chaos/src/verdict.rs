//! The verdict: the journals of every worker process that ever ran, read
//! against the final records. Pure logic, so each check is tested on
//! made-up histories below.
//!
//! What a journal line proves rests on two orders: a worker writes `end`
//! before its handler returns Ok, and only then does the worker send ACK;
//! the witness writes a call's line after the server answered it. So:
//! - A done job's final token `a` was handed to exactly one claimer, and the
//!   ACK that completed it must have carried `a` if fencing holds. Then
//!   that claimer's handler finished first, and `end <id> a` is on disk
//!   whatever happened to the worker after. No such line: the job was
//!   completed with another token, a stale ack was accepted.
//! - Every accepted ACK seen (`ack … ok`) must carry the job's final token,
//!   follow its own `end` line, and be the job's only accepted ACK.
//! - A lease ends once: per (id, token) at most one accepted ACK, FAIL or
//!   RELEASE; and an accepted FAIL or RELEASE must be followed by a newer
//!   claim, so its token is below the final one.
//! - A token is handed out once: no (id, token) claimed twice, none above
//!   the record's final `attempts` (that would be a claim the server forgot).
//! - Nothing but its holder ends a lease: a call carrying a job's final
//!   token may be refused only as the repeat of that worker's own ack, fail
//!   or release whose answer was lost (it had landed). Any other refusal of
//!   the final token means the job was completed behind its holder's back.
//!
//! What stays unseen: a stale ack whose answer was lost, landing just as the
//! final holder died between its `end` and its own ack. Everything else a
//! stale ack could do shows in one of the checks above.

use std::collections::{HashMap, HashSet};

use echomq::JobId;

use crate::audit::Row;
use crate::journal::{Entry, Event, Heard};

/// What the journals and records show.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Claims journaled.
    pub claims: u64,
    /// Handler runs begun.
    pub starts: u64,
    /// Handler runs that returned Ok.
    pub ends: u64,
    /// Jobs whose handler began more than once.
    pub rerun_jobs: u64,
    /// Runs beyond the first of each job.
    pub reruns: u64,
    /// ACKs the server accepted, as journaled.
    pub acks_seen: u64,
    /// Calls refused because their token was older than the job's final one:
    /// ack, fail, extend (heartbeat), release.
    pub stale_refused: [u64; 4],
    /// Calls refused with the job's final token: repeats of an ack, fail or
    /// release whose answer was lost and which had landed.
    pub repeats_refused: u64,
    /// Calls whose answer was lost with the connection.
    pub unanswered: u64,
    /// Every broken promise, described.
    pub violations: Vec<String>,
}

impl Verdict {
    /// Judge `journals` (each one process's entries, in order) against the
    /// final `records` of the acknowledged jobs.
    pub fn judge(journals: &[Vec<Entry>], records: &HashMap<JobId, Row>) -> Verdict {
        let mut judging = Judging::new(records);
        for journal in journals {
            judging.read(journal);
        }
        judging.totals()
    }
}

/// The calls a journal records, as indexes of [`Verdict::stale_refused`]
/// and of [`CALLS`].
const ACK: usize = 0;
const FAIL: usize = 1;
const EXTEND: usize = 2;
const RELEASE: usize = 3;
/// Each call's name, by its index.
const CALLS: [&str; 4] = ["ack", "fail", "extend", "release"];

/// A judging under way: the verdict so far, the records it judges against,
/// and what the journals read so far show of every worker.
struct Judging<'j> {
    verdict: Verdict,
    records: &'j HashMap<JobId, Row>,
    /// How many times each token was claimed.
    claimed: HashMap<(&'j JobId, u64), u64>,
    /// The tokens whose handler ended Ok.
    ended: HashSet<(&'j JobId, u64)>,
    /// Each job's tokens whose handler began.
    started: HashMap<&'j JobId, HashSet<u64>>,
    /// How many ACKs of each job were accepted.
    accepted_acks: HashMap<&'j JobId, u64>,
    /// How many times each token's lease was ended by an accepted ack, fail
    /// or release.
    lease_ends: HashMap<(&'j JobId, u64), u64>,
}

/// What one journal shows of its own worker, so far.
#[derive(Default)]
struct Worker<'j> {
    /// The tokens whose handler ended Ok in this worker.
    ended: HashSet<(&'j JobId, u64)>,
    /// Ack, fail and release calls of this worker answered `error`.
    unanswered: HashSet<(usize, &'j JobId, u64)>,
}

impl<'j> Judging<'j> {
    fn new(records: &'j HashMap<JobId, Row>) -> Judging<'j> {
        Judging {
            verdict: Verdict::default(),
            records,
            claimed: HashMap::new(),
            ended: HashSet::new(),
            started: HashMap::new(),
            accepted_acks: HashMap::new(),
            lease_ends: HashMap::new(),
        }
    }

    /// A job's final token, by its record.
    fn last(&self, id: &JobId) -> Option<u64> {
        self.records.get(id).and_then(|row| row.attempts)
    }

    /// Read one worker's journal, in order.
    fn read(&mut self, journal: &'j [Entry]) {
        let mut here = Worker::default();
        for Entry { event, id, token } in journal {
            let key = (id, *token);
            let (kind, outcome) = match event {
                Event::Claim => {
                    self.verdict.claims += 1;
                    *self.claimed.entry(key).or_default() += 1;
                    continue;
                }
                Event::Start => {
                    self.verdict.starts += 1;
                    self.started.entry(id).or_default().insert(*token);
                    continue;
                }
                Event::End => {
                    self.verdict.ends += 1;
                    self.ended.insert(key);
                    here.ended.insert(key);
                    continue;
                }
                Event::Ack(o) => (ACK, *o),
                Event::Fail(o) => (FAIL, *o),
                Event::Extend(o) => (EXTEND, *o),
                Event::Release(o) => (RELEASE, *o),
                // The flows' lines: `flow_verdict.rs` judges them.
                Event::Children(_) | Event::Resolve(_) | Event::Abort(_) => continue,
                Event::Unjudged => {
                    self.verdict
                        .violations
                        .push(format!("{id}: token {token} went through a call the witness cannot judge"));
                    continue;
                }
            };
            match outcome {
                Heard::Ok if kind == EXTEND => {}
                Heard::Ok => self.accepted(kind, id, *token, &here),
                Heard::Fence | Heard::NoJob => self.refused(kind, id, *token, &here),
                Heard::Error => {
                    self.verdict.unanswered += 1;
                    here.unanswered.insert((kind, id, *token));
                }
                Heard::Refused => {
                    let name = CALLS[kind];
                    self.verdict.violations.push(format!("{id}: {name} of token {token} refused oddly"))
                }
            }
        }
    }

    /// An ack, fail or release the server accepted: it ends the lease; an
    /// ack follows its handler's end and carries the final token, a fail or
    /// release is followed by a newer claim.
    fn accepted(&mut self, kind: usize, id: &'j JobId, token: u64, here: &Worker<'j>) {
        let (last, name) = (self.last(id), CALLS[kind]);
        let v = &mut self.verdict;
        *self.lease_ends.entry((id, token)).or_default() += 1;
        if kind == ACK {
            v.acks_seen += 1;
            *self.accepted_acks.entry(id).or_default() += 1;
            if !here.ended.contains(&(id, token)) {
                v.violations.push(format!("{id}: ack of token {token} before its handler ended"));
            }
        }
        match last {
            Some(a) if kind == ACK && token != a => {
                v.violations.push(format!("{id}: a stale ack was accepted (token {token}, final token {a})"))
            }
            Some(a) if kind != ACK && token >= a => v.violations.push(format!(
                "{id}: {name} with token {token} accepted, yet no newer claim followed (final {a})"
            )),
            _ => {}
        }
    }

    /// A call refused for its token: stale, or the repeat of this worker's
    /// own call whose answer was lost; any other refusal pushed its holder
    /// aside.
    fn refused(&mut self, kind: usize, id: &JobId, token: u64, here: &Worker<'_>) {
        let (last, name) = (self.last(id), CALLS[kind]);
        let v = &mut self.verdict;
        match last {
            Some(a) if token < a => v.stale_refused[kind] += 1,
            Some(a) if token == a && kind != EXTEND && here.unanswered.contains(&(kind, id, a)) => {
                v.repeats_refused += 1
            }
            a => v.violations.push(format!(
                "{id}: {name} of token {token} refused, final token {a:?}: its holder was pushed aside"
            )),
        }
    }

    /// The checks over every journal at once: each token handed out once and
    /// not past the record's, each lease ended once, each job acked once,
    /// the re-runs counted, and every done job's final holder ended.
    fn totals(self) -> Verdict {
        let Judging { mut verdict, records, claimed, ended, started, accepted_acks, lease_ends } = self;
        let v = &mut verdict;
        let last = |id: &JobId| records.get(id).and_then(|row| row.attempts);
        for ((id, token), times) in &claimed {
            if *times > 1 {
                v.violations.push(format!("{id}: token {token} handed out {times} times"));
            }
            match last(id) {
                Some(a) if *token <= a => {}
                a => v.violations.push(format!("{id}: token {token} was claimed, but the record says {a:?}")),
            }
        }
        for ((id, token), times) in &lease_ends {
            if *times > 1 {
                v.violations.push(format!("{id}: the lease of token {token} ended {times} times"));
            }
        }
        for (id, times) in &accepted_acks {
            if *times > 1 {
                v.violations.push(format!("{id}: acked {times} times"));
            }
        }
        for tokens in started.values() {
            if tokens.len() > 1 {
                v.rerun_jobs += 1;
                v.reruns += tokens.len() as u64 - 1;
            }
        }
        for (id, row) in records {
            if let (Some(a), "done") = (row.attempts, row.state.as_str()) {
                if !ended.contains(&(id, a)) {
                    v.violations.push(format!(
                        "{id}: done with final token {a}, but no handler holding {a} ended: completed by a stale ack"
                    ));
                }
            }
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(attempts: u64) -> Row {
        Row { state: "done".into(), attempts: Some(attempts), sets: vec!["done".into()], lease: None, now: 0 }
    }

    fn line(event: Event, id: &JobId, token: u64) -> Entry {
        Entry { event, id: id.clone(), token }
    }

    /// Job `id` claimed with token 1 by worker one, which stalls; reaped,
    /// claimed with token 2 by worker two, which finishes and acks; worker
    /// one wakes, finishes and acks late, and is refused.
    fn history(id: &JobId) -> Vec<Vec<Entry>> {
        vec![
            vec![
                line(Event::Claim, id, 1),
                line(Event::Start, id, 1),
                line(Event::End, id, 1),
                line(Event::Ack(Heard::Fence), id, 1),
            ],
            vec![
                line(Event::Claim, id, 2),
                line(Event::Start, id, 2),
                line(Event::Extend(Heard::Ok), id, 2),
                line(Event::End, id, 2),
                line(Event::Ack(Heard::Ok), id, 2),
            ],
        ]
    }

    fn records(id: &JobId, row: Row) -> HashMap<JobId, Row> {
        HashMap::from([(id.clone(), row)])
    }

    #[test]
    fn a_fenced_late_ack_is_counted_and_breaks_nothing() {
        let id = JobId::mint();
        let v = Verdict::judge(&history(&id), &records(&id, done(2)));
        assert_eq!(v.violations, Vec::<String>::new());
        assert_eq!((v.claims, v.starts, v.ends, v.acks_seen), (2, 2, 2, 1));
        assert_eq!(v.stale_refused, [1, 0, 0, 0]);
        assert_eq!((v.rerun_jobs, v.reruns), (1, 1));
    }

    /// A fenced call the witness cannot judge is never taken as fine.
    #[test]
    fn a_call_the_witness_cannot_judge_is_a_violation() {
        let id = JobId::mint();
        let mut seen = history(&id);
        seen[1].insert(3, line(Event::Unjudged, &id, 2));
        let v = Verdict::judge(&seen, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("cannot judge")), "{:?}", v.violations);
    }

    #[test]
    fn an_accepted_stale_ack_is_caught_from_either_side() {
        let id = JobId::mint();
        // Seen: worker one's late ack was accepted.
        let mut seen = history(&id);
        seen[0][3] = line(Event::Ack(Heard::Ok), &id, 1);
        let v = Verdict::judge(&seen, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("stale ack was accepted")), "{:?}", v.violations);
        assert!(v.violations.iter().any(|v| v.contains("acked 2 times")), "{:?}", v.violations);

        // Unseen: worker one died before journaling the ack's answer, and
        // worker two died mid-handler; the job is done all the same.
        let mut unseen = history(&id);
        unseen[0].truncate(3);
        unseen[1].truncate(3);
        let v = Verdict::judge(&unseen, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("completed by a stale ack")), "{:?}", v.violations);
    }

    #[test]
    fn an_ack_without_its_own_end_is_caught() {
        let id = JobId::mint();
        let mut journals = history(&id);
        journals[1].remove(3);
        journals[0].push(line(Event::End, &id, 2));
        let v = Verdict::judge(&journals, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("before its handler ended")), "{:?}", v.violations);
    }

    #[test]
    fn a_token_handed_out_twice_or_forgotten_is_caught() {
        let id = JobId::mint();
        let mut twice = history(&id);
        twice[1][0] = line(Event::Claim, &id, 1);
        let v = Verdict::judge(&twice, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("token 1 handed out 2 times")), "{:?}", v.violations);

        let mut forgotten = history(&id);
        forgotten[1].insert(0, line(Event::Claim, &id, 3));
        let v = Verdict::judge(&forgotten, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("token 3 was claimed")), "{:?}", v.violations);
    }

    #[test]
    fn a_lease_ended_twice_or_a_stale_fail_accepted_is_caught() {
        let id = JobId::mint();
        let mut journals = history(&id);
        journals[0][3] = line(Event::Fail(Heard::Ok), &id, 1);
        let v = Verdict::judge(&journals, &records(&id, done(2)));
        assert_eq!(v.violations, Vec::<String>::new(), "a fail of token 1, then a claim of 2: fine");

        journals[0].push(line(Event::Release(Heard::Ok), &id, 1));
        journals[1].push(line(Event::Fail(Heard::Ok), &id, 2));
        let v = Verdict::judge(&journals, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("token 1 ended 2 times")), "{:?}", v.violations);
        assert!(v.violations.iter().any(|v| v.contains("fail with token 2 accepted")), "{:?}", v.violations);
    }

    #[test]
    fn refusals_are_sorted_by_their_token_and_odd_ones_are_violations() {
        let id = JobId::mint();
        let mut journals = history(&id);
        // Worker two's first ack lost its answer, yet landed: its retry is refused.
        journals[1][4] = line(Event::Ack(Heard::Error), &id, 2);
        journals[1].push(line(Event::Ack(Heard::Fence), &id, 2));
        journals[0].push(line(Event::Extend(Heard::NoJob), &id, 1));
        let v = Verdict::judge(&journals, &records(&id, done(2)));
        assert_eq!(v.violations, Vec::<String>::new());
        assert_eq!((v.stale_refused, v.repeats_refused, v.unanswered), ([1, 0, 1, 0], 1, 1));

        journals[1].push(line(Event::Release(Heard::Refused), &id, 2));
        journals[1].push(line(Event::Ack(Heard::Fence), &id, 3));
        let v = Verdict::judge(&journals, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("refused oddly")), "{:?}", v.violations);
        assert!(v.violations.iter().any(|v| v.contains("ack of token 3 refused")), "{:?}", v.violations);
    }

    #[test]
    fn the_final_holder_pushed_aside_is_caught() {
        // A stale ack landed unseen (its answer lost); the final holder's own
        // ack, never tried before, is then refused.
        let id = JobId::mint();
        let mut journals = history(&id);
        journals[0][3] = line(Event::Ack(Heard::Error), &id, 1);
        journals[1][4] = line(Event::Ack(Heard::Fence), &id, 2);
        let v = Verdict::judge(&journals, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("pushed aside")), "{:?}", v.violations);

        // A heartbeat of the final token is never a repeat: refused, it is caught too.
        let mut journals = history(&id);
        journals[1].insert(2, line(Event::Extend(Heard::Error), &id, 2));
        journals[1].insert(3, line(Event::Extend(Heard::Fence), &id, 2));
        let v = Verdict::judge(&journals, &records(&id, done(2)));
        assert!(v.violations.iter().any(|v| v.contains("extend of token 2 refused")), "{:?}", v.violations);
    }
}
