//! The worker's slots, the last stop of a job's path: one semaphore's
//! permits, one for each running job, shared by its queues' claim loops.
//! A claim loop gathers them for its claims ([`gather`]); a job's slot is
//! freed once the sink has delivered its outcome. When an ACKNEXT claimed
//! the next jobs for the slots its batch freed, each goes back to the claim
//! loop with its slot ([`Refills`]), which starts it as any claim's job:
//! nothing downstream starts a job.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::options::Shared;
use crate::transition::Claimed;

/// How long a claim loop waits for more free slots before it claims with fewer.
const GATHER: Duration = Duration::from_millis(5);

/// A slot, then within [`GATHER`] enough for `floor` jobs if they free up
/// (under load slots free up together: one claim then serves many; long
/// jobs lose at most that moment), then any others free; one permit a job.
/// `None` when the worker stops.
pub(super) async fn gather(
    slots: &Arc<Semaphore>,
    shared: &Shared,
    floor: u32,
) -> Option<Vec<OwnedSemaphorePermit>> {
    let first = tokio::select! {
        permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        () = shared.stopping.cancelled() => return None,
    };
    let mut permits = vec![first];
    if floor > 1 {
        if let Ok(Ok(more)) = tokio::time::timeout(GATHER, slots.clone().acquire_many_owned(floor - 1)).await
        {
            permits.push(more);
        }
    }
    let mut held: usize = permits.iter().map(|p| p.num_permits()).sum();
    while held < shared.options.concurrency {
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                permits.push(permit);
                held += 1;
            }
            Err(_) => break,
        }
    }
    Some(split(permits))
}

/// The fewest slots a claim under load is for: a quarter of the worker's
/// concurrency (1 to 250), so that one claim's cost serves many jobs, as
/// a share of each of its `queues`' claim loops. The slots are one
/// semaphore, first come first served: a loop waiting for more than its
/// share holds every other queue's claim behind it.
pub(super) fn claim_floor(concurrency: usize, queues: usize) -> usize {
    (concurrency / 4 / queues.max(1)).clamp(1, 250)
}

/// One permit per job: the batch's first permit split into singles.
fn split(mut permits: Vec<OwnedSemaphorePermit>) -> Vec<OwnedSemaphorePermit> {
    let mut singles = Vec::with_capacity(permits.len());
    for mut permit in permits.drain(..) {
        while permit.num_permits() > 1 {
            singles.push(permit.split(1).expect("more than one permit"));
        }
        singles.push(permit);
    }
    singles
}

/// A job an ACKNEXT claimed, and the slot it is to run in.
pub(super) type Refilled = (Claimed, OwnedSemaphorePermit);

/// The jobs an ACKNEXT claimed, come back to the claim loop to start.
pub(super) type RefillInbox = mpsc::UnboundedReceiver<Refilled>;

/// For a worker whose acks claim its next jobs (one queue, no replicas to
/// wait for): when an ack claims, and the way back to the claim loop for
/// the jobs it claimed. Cheap to clone.
#[derive(Clone)]
pub(super) struct Refills {
    slots: Arc<Semaphore>,
    concurrency: usize,
    stopping: CancellationToken,
    back: mpsc::UnboundedSender<Refilled>,
}

impl Refills {
    /// The refills of a worker of `slots`, and the inbox its claim loop reads.
    pub(super) fn channel(slots: &Arc<Semaphore>, shared: &Shared) -> (Refills, RefillInbox) {
        let (back, inbox) = mpsc::unbounded_channel();
        let refills = Refills {
            slots: slots.clone(),
            concurrency: shared.options.concurrency,
            stopping: shared.stopping.clone(),
            back,
        };
        (refills, inbox)
    }

    /// Whether a job that ends now, holding its slot, is the worker's only
    /// running one while it takes new ones: its ack then claims the next
    /// (ACKNEXT), for its slot.
    pub(super) fn last(&self) -> bool {
        self.slots.available_permits() + 1 >= self.concurrency && !self.stopping.is_cancelled()
    }

    /// Whether a batch that frees `freed` slots claims their next jobs in
    /// its round trip: when, after it, the worker would run no job, its
    /// other slots free or held by the claim loop while it gathers a
    /// claim's worth (fewer than its floor, at most). Then no other job
    /// frees a slot soon, and a claim would wait for this batch's acks.
    pub(super) fn fills(&self, freed: usize) -> bool {
        idle_after(freed, self.slots.available_permits(), self.concurrency) && !self.stopping.is_cancelled()
    }

    /// Send `job` back to the claim loop, to run in `slot`; the job again
    /// when the claim loop has ended (the worker stopped): it is the
    /// sender's to give back.
    #[must_use]
    pub(super) fn send_back(&self, job: Claimed, slot: OwnedSemaphorePermit) -> Option<Claimed> {
        self.back.send((job, slot)).err().map(|mpsc::error::SendError((job, _))| job)
    }
}

/// Whether a worker of `concurrency` slots, `free` of them free, runs no
/// job once a batch frees `freed` more, counting as idle the slots its
/// claim loop may hold while it gathers (its floor less one, at most).
fn idle_after(freed: usize, free: usize, concurrency: usize) -> bool {
    let gathering = claim_floor(concurrency, 1) - 1;
    freed > 0 && freed + free + gathering >= concurrency
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_loop_waits_for_its_queues_share_of_the_slots() {
        assert_eq!(claim_floor(100, 1), 25, "one queue: a quarter");
        assert_eq!(claim_floor(100, 5), 5, "five queues: a fifth of that each");
        assert_eq!(claim_floor(100, 100), 1, "a hundred: no wait for more");
        assert_eq!(claim_floor(10_000, 1), 250, "at most 250");
        assert_eq!(claim_floor(0, 0), 1, "at least 1");
    }

    #[test]
    fn a_batch_refills_when_the_worker_would_otherwise_run_no_job() {
        assert!(idle_after(1, 0, 1), "concurrency 1: every ack");
        // Concurrency 10: the claim loop gathers two, so holds at most one.
        assert!(idle_after(10, 0, 10), "a claim's ten jobs, ended together");
        assert!(idle_after(9, 0, 10), "nine, the claim loop holding the tenth slot");
        assert!(!idle_after(8, 0, 10), "two slots may be running jobs");
        assert!(idle_after(3, 6, 10), "the others are free");
        assert!(!idle_after(0, 10, 10), "a batch that frees no slot has none to fill");
        // Concurrency 100: the claim loop gathers 25, so holds at most 24.
        assert!(idle_after(76, 0, 100));
        assert!(!idle_after(75, 0, 100), "a job may still run");
        assert!(!idle_after(50, 0, 100), "under load the claim loop claims");
    }
}
