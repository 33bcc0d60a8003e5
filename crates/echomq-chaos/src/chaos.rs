//! The chaos: a plan of kills, pauses and restarts at random moments (from
//! the seed), and how each is done.
//!
//! - **Kill**: SIGKILL a random worker and start a replacement. Its jobs
//!   stay active until their leases run out and another worker reaps them.
//! - **Pause**: SIGSTOP a worker while one of its handlers runs, hold it
//!   until the other workers have reaped that job, then SIGCONT it. A killed
//!   worker never speaks again, so kills alone never send a stale token; a
//!   paused one wakes up holding tokens that are stale now, and its ack or
//!   heartbeat must be refused. Each pause catches at least one such token.
//!   The resumed worker is calmed (it kills itself after no RESOLVE) until
//!   it has answered for them.
//! - **Restart**: SIGKILL redis-server and start it again on the same
//!   directory, with `appendonly yes` and `appendfsync always`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::{JobId, Queue, State};
use echomq_test_support::RedisServer;
use tokio::time::Instant;

use crate::fleet::Fleet;
use crate::journal::{self, Entry, Event, Heard};
use crate::rng::Rng;

/// One thing the chaos does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// SIGKILL a worker.
    Kill,
    /// SIGSTOP a worker past its lease.
    Pause,
    /// SIGKILL and restart redis-server.
    Restart,
}

/// When each action happens, from the start of the run, in order. Pauses
/// fall in the first half, while jobs surely arrive, so each finds a
/// running handler to catch; kills and restarts anywhere but the very ends.
pub fn plan(
    rng: &mut Rng,
    span: Duration,
    kills: u32,
    pauses: u32,
    restarts: u32,
) -> Vec<(Duration, Action)> {
    let mut plan = Vec::new();
    for (action, count, low, high) in [
        (Action::Kill, kills, 0.05, 0.9),
        (Action::Pause, pauses, 0.1, 0.5),
        (Action::Restart, restarts, 0.05, 0.9),
    ] {
        for _ in 0..count {
            plan.push((span.mul_f64(rng.between(low, high)), action));
        }
    }
    plan.sort_by_key(|(at, _)| *at);
    plan
}

/// How long a pause looks for a worker with a running handler.
const SEARCH: Duration = Duration::from_secs(20);
/// How much longer than a lease the other workers get to reap it.
const REAP_SLACK: Duration = Duration::from_secs(20);
/// How long a resumed worker gets to answer for its stale tokens.
const ANSWER: Duration = Duration::from_secs(20);
/// How much of a journal's end shows the tokens a worker holds.
const TAIL: u64 = 256 * 1024;

/// What the pauses did.
#[derive(Debug, Default)]
pub struct Pauses {
    /// Pauses done.
    pub done: u64,
    /// Running tokens the pauses made stale (each must be refused later).
    pub caught: u64,
    /// Pauses that found no running handler in time (jobs had run out).
    pub idle: u64,
}

/// Everything an action acts on.
pub struct Stage<'a> {
    /// The workers.
    pub fleet: &'a mut Fleet,
    /// The queues, to read records: the plain jobs' first.
    pub queues: &'a [Queue],
    /// The queue of each flow's job, by its place in `queues` (a job not
    /// here is a plain one).
    pub homes: &'a HashMap<JobId, usize>,
    /// The lease the workers take.
    pub lease: Duration,
    /// Ids whose first attempt fails by design (see `worker.rs`).
    pub failing: &'a HashSet<JobId>,
    /// The seeded generator.
    pub rng: &'a mut Rng,
}

impl Stage<'_> {
    /// The queue of job `id`.
    fn queue_of(&self, id: &JobId) -> &Queue {
        &self.queues[self.homes.get(id).copied().unwrap_or(0)]
    }
}

/// SIGKILL a random worker and start its replacement; says which.
pub fn kill(stage: &mut Stage<'_>) -> std::io::Result<String> {
    stage.fleet.check()?;
    let i = stage.rng.below(stage.fleet.len() as u64) as usize;
    let name = stage.fleet.name(i);
    stage.fleet.kill(i)?;
    Ok(name)
}

/// SIGKILL redis-server and start it again on its port and directory.
pub async fn restart(server: &Arc<Mutex<RedisServer>>) -> Result<(), String> {
    let server = server.clone();
    tokio::task::spawn_blocking(move || server.lock().unwrap_or_else(|p| p.into_inner()).restart())
        .await
        .map_err(|err| format!("redis-server did not come back: {err}"))
}

/// Pause a worker that has a handler running, until those jobs are reaped,
/// then resume it and wait until it has answered for each stale token.
/// A broken promise (a lease never taken back, a token never answered for)
/// is returned as an error text.
pub async fn pause(stage: &mut Stage<'_>, pauses: &mut Pauses) -> Result<String, String> {
    let Some((victim, running)) = stop_a_runner(stage).await? else {
        pauses.idle += 1;
        return Ok("pause: no handler was running".into());
    };
    let name = stage.fleet.name(victim);
    await_reaped(stage, victim, &name, &running).await?;
    stage.fleet.calm(victim, true).map_err(|e| e.to_string())?;
    stage.fleet.pause(victim, false).map_err(|e| e.to_string())?;
    await_answered(stage, victim, &name, &running).await?;
    stage.fleet.calm(victim, false).map_err(|e| e.to_string())?;
    pauses.done += 1;
    pauses.caught += running.len() as u64;
    Ok(format!("pause {name}: {} running token(s) made stale", running.len()))
}

/// A stopped worker, by its place in the fleet, and the tokens its
/// handlers hold.
type Stopped = (usize, Vec<(JobId, u64)>);

/// Stop a worker that has a handler running, looking for one for up to
/// [`SEARCH`]: which, and the tokens its handlers hold; `None` when none
/// was found running in time.
async fn stop_a_runner(stage: &mut Stage<'_>) -> Result<Option<Stopped>, String> {
    let searching = Instant::now() + SEARCH;
    loop {
        stage.fleet.check().map_err(|e| e.to_string())?;
        if let Some(found) = stop_one(stage)? {
            return Ok(Some(found));
        }
        if Instant::now() > searching {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One look at the workers, in a random order: the first one whose handler
/// still runs once it is stopped, left stopped, with the tokens its handlers
/// hold. One whose handlers ended meanwhile is resumed.
fn stop_one(stage: &mut Stage<'_>) -> Result<Option<Stopped>, String> {
    let mut order: Vec<usize> = (0..stage.fleet.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, stage.rng.below(i as u64 + 1) as usize);
    }
    for i in order {
        if !running(stage.fleet.journal(i), stage.failing)?.is_empty() {
            match stage.fleet.pause(i, true) {
                Ok(()) => {}
                // It killed itself meanwhile (`witness.rs`): the next look replaces it.
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => return Err(err.to_string()),
            }
            // Stopped: its journal holds still now. Did a handler outlive the look?
            let frozen = running(stage.fleet.journal(i), stage.failing)?;
            if !frozen.is_empty() {
                return Ok(Some((i, frozen)));
            }
            stage.fleet.pause(i, false).map_err(|e| e.to_string())?;
        }
    }
    Ok(None)
}

/// Wait until the others have reaped each job the stopped `victim` holds,
/// once its lease runs out: then it is pending under the same token, or
/// claimed again under a newer one. Nothing else can move it: its holder
/// is stopped mid-handler. A job never reaped resumes the victim and is
/// the error.
async fn await_reaped(
    stage: &mut Stage<'_>,
    victim: usize,
    name: &str,
    running: &[(JobId, u64)],
) -> Result<(), String> {
    let reaping = Instant::now() + stage.lease + REAP_SLACK;
    for (id, token) in running {
        loop {
            // The others must live to reap it: replace any that killed itself.
            stage.fleet.check().map_err(|e| e.to_string())?;
            let record = stage.queue_of(id).inspect(id).await.ok().flatten().map(|i| i.record);
            if record
                .is_some_and(|r| r.attempts > *token || (r.state == State::Pending && r.attempts == *token))
            {
                break;
            }
            if Instant::now() > reaping {
                let _ = stage.fleet.pause(victim, false);
                return Err(format!("{id}: token {token} of paused {name} was never reaped"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Ok(())
}

/// Wait until the resumed `victim` has answered for each of its stale
/// tokens (by its journal), for up to [`ANSWER`].
async fn await_answered(
    stage: &mut Stage<'_>,
    victim: usize,
    name: &str,
    running: &[(JobId, u64)],
) -> Result<(), String> {
    let answering = Instant::now() + ANSWER;
    loop {
        stage.fleet.check().map_err(|e| e.to_string())?;
        let tail = journal::tail(stage.fleet.journal(victim), TAIL).map_err(|e| e.to_string())?;
        let answered = answered(&tail);
        if running.iter().all(|held| answered.contains(held)) {
            return Ok(());
        }
        if Instant::now() > answering {
            return Err(format!("resumed {name} did not answer for its stale tokens {running:?}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The tokens a worker's handlers hold mid-run by its journal: begun, not
/// ended, no call for them answered, and not a first attempt that fails by
/// design (its FAIL might be on its way: that one could be accepted).
fn running(path: &std::path::Path, failing: &HashSet<JobId>) -> Result<Vec<(JobId, u64)>, String> {
    let tail = journal::tail(path, TAIL).map_err(|e| e.to_string())?;
    let answered = answered(&tail);
    let mut running: HashMap<(JobId, u64), bool> = HashMap::new();
    for Entry { event, id, token } in tail {
        match event {
            Event::Start => {
                running.insert((id, token), true);
            }
            Event::End => {
                running.insert((id, token), false);
            }
            _ => {}
        }
    }
    Ok(running
        .into_iter()
        .filter(|((id, token), open)| {
            *open && !answered.contains(&(id.clone(), *token)) && !(*token == 1 && failing.contains(id))
        })
        .map(|(held, _)| held)
        .collect())
}

/// The tokens a worker is done with: an ack, fail or release answered, or a
/// heartbeat refused (the worker then drops the job).
fn answered(entries: &[Entry]) -> HashSet<(JobId, u64)> {
    entries
        .iter()
        .filter(|entry| match entry.event {
            Event::Ack(o) | Event::Fail(o) | Event::Release(o) => o != Heard::Error,
            Event::Extend(o) => matches!(o, Heard::Fence | Heard::NoJob),
            _ => false,
        })
        .map(|entry| (entry.id.clone(), entry.token))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_has_every_action_in_its_window_in_order() {
        let span = Duration::from_secs(100);
        let plan = plan(&mut Rng::new(3), span, 5, 2, 3);
        assert_eq!(plan.len(), 10);
        assert!(plan.windows(2).all(|w| w[0].0 <= w[1].0), "{plan:?}");
        let count = |a| plan.iter().filter(|(_, b)| *b == a).count();
        assert_eq!((count(Action::Kill), count(Action::Pause), count(Action::Restart)), (5, 2, 3));
        for (at, action) in &plan {
            let (low, high) = if *action == Action::Pause { (10, 50) } else { (5, 90) };
            assert!(
                *at >= Duration::from_secs(low) && *at < Duration::from_secs(high),
                "{action:?} at {at:?}"
            );
        }
    }

    #[test]
    fn running_tokens_are_those_begun_and_not_answered() {
        let dir = std::env::temp_dir().join(format!("echomq-chaos-running-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.journal");
        let _ = std::fs::remove_file(&path);
        let journal = journal::Journal::create(&path).unwrap();
        let ids: Vec<JobId> = (0..6).map(|_| JobId::mint()).collect();
        for id in &ids {
            journal.record(Event::Claim, id, 1);
            journal.record(Event::Start, id, 1);
        }
        journal.record(Event::End, &ids[0], 1); // ended: not running
        journal.record(Event::Extend(Heard::Fence), &ids[1], 1); // lease lost: dropped
        journal.record(Event::Extend(Heard::Ok), &ids[2], 1); // heartbeat: still running
        journal.record(Event::Ack(Heard::Error), &ids[3], 1); // no answer yet: still running
        journal.record(Event::Start, &ids[5], 2); // a second attempt also runs
        let failing = HashSet::from([ids[4].clone()]); // its FAIL may be on its way
        let mut found = running(&path, &failing).unwrap();
        found.sort();
        let mut wanted =
            vec![(ids[2].clone(), 1), (ids[3].clone(), 1), (ids[5].clone(), 1), (ids[5].clone(), 2)];
        wanted.sort();
        assert_eq!(found, wanted);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
