//! The producer: enqueues the jobs, spread evenly over the run so the chaos
//! falls among them, each under an id minted up front. An enqueue that got
//! no answer (the server was restarting) is sent again with the same id: a
//! `duplicate` reply then means the first try had landed. Only an `Ok` reply
//! makes an enqueue acknowledged, and only acknowledged jobs are owed a run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::{EnqueueOptions, JobId, Queue};
use tokio::time::Instant;

/// How many enqueues are in flight at once.
const PRODUCERS: usize = 16;

/// How long one job's enqueue is retried before the run counts it as a
/// violation; once one job gave up, later failures give up at once.
const GIVE_UP: Duration = Duration::from_secs(60);

/// What the producer did.
#[derive(Debug, Default)]
pub struct Produced {
    /// Enqueues sent again after an error.
    pub retries: u64,
    /// Retries answered `duplicate`: the try before had landed.
    pub landed: u64,
    /// Enqueues that broke a promise (never acknowledged, or a fresh id refused).
    pub violations: Vec<String>,
}

/// Enqueue job `n` (payload: its number) under `ids[n]`, starting it at
/// `span * n / len` after `start`; acknowledged ids are pushed to `acked`
/// as their replies come.
pub async fn produce(
    queue: Queue,
    ids: Arc<Vec<JobId>>,
    (start, span, groups): (Instant, Duration, usize),
    acked: Arc<Mutex<Vec<JobId>>>,
) -> Produced {
    let mut tasks = tokio::task::JoinSet::new();
    let gave_up = Arc::new(AtomicBool::new(false));
    for first in 0..PRODUCERS {
        let (queue, ids, acked, gave_up) = (queue.clone(), ids.clone(), acked.clone(), gave_up.clone());
        tasks.spawn(async move {
            let mut produced = Produced::default();
            let count = ids.len() as u32;
            for n in (first..ids.len()).step_by(PRODUCERS) {
                tokio::time::sleep_until(start + span * n as u32 / count.max(1)).await;
                let group = crate::groups::group_of(n, groups);
                let job = Job { queue: &queue, id: &ids[n], n, group, acked: &acked, gave_up: &gave_up };
                enqueue(job, &mut produced).await;
            }
            produced
        });
    }
    let mut all = Produced::default();
    while let Some(produced) = tasks.join_next().await {
        let produced = produced.expect("a producer task panicked");
        all.retries += produced.retries;
        all.landed += produced.landed;
        all.violations.extend(produced.violations);
    }
    all
}

/// One enqueue and what it reports to.
struct Job<'a> {
    queue: &'a Queue,
    id: &'a JobId,
    n: usize,
    group: Option<String>,
    acked: &'a Mutex<Vec<JobId>>,
    gave_up: &'a AtomicBool,
}

async fn enqueue(Job { queue, id, n, group, acked, gave_up }: Job<'_>, produced: &mut Produced) {
    let first = Instant::now();
    let mut retried = false;
    loop {
        let mut options = EnqueueOptions::default().id(id.clone());
        if let Some(group) = &group {
            options = options.group(group.clone());
        }
        match queue.enqueue_with(n.to_string(), options).await {
            Ok(enqueued) => {
                if enqueued.duplicate && !retried {
                    produced.violations.push(format!("{id}: a fresh id was refused as a duplicate"));
                }
                produced.landed += u64::from(enqueued.duplicate);
                acked.lock().unwrap_or_else(|p| p.into_inner()).push(id.clone());
                return;
            }
            // No answer: the call may or may not have landed; send it again.
            Err(err)
                if err.code().is_none() && first.elapsed() < GIVE_UP && !gave_up.load(Ordering::Relaxed) =>
            {
                produced.retries += 1;
                retried = true;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => {
                gave_up.store(true, Ordering::Relaxed);
                produced.violations.push(format!("{id}: enqueue never acknowledged: {err}"));
                return;
            }
        }
    }
}
