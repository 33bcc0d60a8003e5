//! Acks, gathered: under load many jobs finish at once, and their acks go to
//! the server in one call, ACKMANY, which answers each job on its own and
//! costs the server far less a job than as many ACKs (BENCHMARKS.md). A lone
//! ack waits one turn of the runtime for the jobs that end with it (a
//! claim's jobs start together and, short, end together); no longer.
//!
//! A finished job hands its concurrency slot along with its ack. When the
//! worker works one queue and, after a batch, would run no job (its other
//! slots free, or held by the claim loop while it gathers a claim's worth),
//! one ack of the batch becomes an ACKNEXT that claims a job for each slot
//! the batch frees, in the same round trip: a worker about to go idle for a
//! round trip (CLAIM after ACK) does not. At concurrency 10 a claim's jobs
//! mostly end while the claim loop holds a slot or two: counting those as
//! idle was 1.2-1.3x the jobs/s (BENCHMARKS.md). The jobs it claims go back
//! to the claim loop, each with one of those slots, and start there; slots
//! it could not fill are freed.
//! While other jobs run, slots go back to the claim loop as the batch's
//! call leaves, so its claim rides the acks' round trip; it gathers them
//! into bigger claims (at concurrency 10 and 100, ACKNEXT for every batch
//! was measured 10-15% slower: its claims were for two or three jobs). A
//! worker of several queues only acks, so that one busy queue cannot keep
//! the slots from the others, and waits while each turn of the runtime
//! brings more acks, so that a claim's jobs share one call.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};

use super::super::slots::Refills;
use crate::executor::execute;
use crate::queue::{ack_many, Queue};
use crate::transition::{Ack, AckMany, AckNext, Claimed, Claims, Release};
use crate::{Error, ErrorKind, JobId, Result};

/// The most acks one call carries (ACKMANY takes up to 1000).
const MOST: usize = 256;

/// The most result bytes one call carries: a batch ends at the ack that
/// passes it, so a few large results do not make one huge call.
const MOST_BYTES: usize = 4 << 20;

/// An ack (the job's id, token and result: never its payload), the slot it
/// frees, if it hands it on, and where its outcome goes.
pub(super) struct Request {
    ack: Ack,
    slot: Option<OwnedSemaphorePermit>,
    reply: oneshot::Sender<Result<()>>,
}

/// A handle to a queue's ack gatherer. Cheap to clone.
#[derive(Clone)]
pub(super) struct Acker {
    requests: mpsc::UnboundedSender<Request>,
}

/// The acks sent to a gatherer, for it to send.
type Inbox = mpsc::UnboundedReceiver<Request>;

/// A queue's ack gatherer: it sends the acks of its inbox as they come, in
/// batches; with `refills`, the last ack of a batch whose jobs were the
/// worker's last running ones claims the next jobs (ACKNEXT) for the slots
/// the batch frees, under `lease`.
pub(super) struct Gatherer {
    queue: Queue,
    inbox: Inbox,
    refills: Option<Refills>,
    lease: Duration,
    /// The worker's policy's maximum, for the jobs it gives back.
    max_attempts: u64,
}

impl Acker {
    /// A gatherer for `queue`, and its handle.
    pub(super) fn channel(
        queue: Queue,
        refills: Option<Refills>,
        lease: Duration,
        max_attempts: u64,
    ) -> (Acker, Gatherer) {
        let (requests, inbox) = mpsc::unbounded_channel();
        (Acker { requests }, Gatherer { queue, inbox, refills, lease, max_attempts })
    }

    /// Ack `job`, keeping `result`, in whatever batch it joins; its own
    /// outcome. `slot`, when given, may be filled with the next job.
    pub(super) async fn ack(
        &self,
        queue: &Queue,
        job: &Claimed,
        result: Option<Vec<u8>>,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Result<()> {
        let ack = Ack { id: job.id.clone(), token: job.token, result };
        let (reply, outcome) = oneshot::channel();
        if let Err(mpsc::error::SendError(request)) = self.requests.send(Request { ack, slot, reply }) {
            return execute(&**queue.executor(), queue.keyspace(), &request.ack).await;
        }
        outcome.await.unwrap_or_else(|_| Err(Error::new(ErrorKind::Reply, "the ack gatherer stopped")))
    }
}

impl Gatherer {
    /// Send the acks as they come, in batches, for as long as the worker runs.
    pub(super) async fn run(mut self) {
        while let Some(first) = self.inbox.recv().await {
            let mut batch = vec![first];
            take_waiting(&mut self.inbox, &mut batch);
            if self.refills.is_none() {
                gather_the_burst(&mut self.inbox, &mut batch).await;
            } else if batch.len() == 1 {
                // A lone ack waits one turn of the runtime: jobs started
                // together (a claim's) end together, and their acks, sent a
                // moment after this one, join its call. Only a lone one:
                // under load the batch is already many, and each turn delays
                // them all.
                tokio::task::yield_now().await;
                take_waiting(&mut self.inbox, &mut batch);
            }
            self.send(batch).await;
        }
    }

    /// Send one batch: its slots freed as it leaves, or, when the worker
    /// would otherwise go idle for a round trip (`Refills::fills`), its last
    /// ack an ACKNEXT that claims the next jobs for them. Under load the
    /// claim loop's gathered claims serve more jobs a call (measured:
    /// BENCHMARKS.md).
    async fn send(&self, mut batch: Vec<Request>) {
        let queue = &self.queue;
        let mut slots: Vec<OwnedSemaphorePermit> = batch.iter_mut().filter_map(|r| r.slot.take()).collect();
        let refilling = match &self.refills {
            Some(refills) if refills.fills(slots.len()) => batch.pop().map(|next| (refills, next)),
            _ => None,
        };
        let (acks, replies): (Vec<Ack>, Vec<_>) = batch.into_iter().map(|r| (r.ack, r.reply)).unzip();
        let Some((refills, next)) = refilling else {
            // The jobs have ended: their slots go back to the claim loop as
            // their acks leave, not when the reply comes, so that its claim
            // shares their round trip (ACKMANY, CLAIM) rather than take the
            // next one. At concurrency 10 and 100 that was 1.08-1.39x the
            // jobs/s (BENCHMARKS.md).
            freeing(send_acks(queue, acks, replies), slots).await;
            return;
        };
        let fetch = ack_next(queue, next.ack, self.lease, slots.len() as u64);
        let ((), (outcome, jobs)) = tokio::join!(send_acks(queue, acks, replies), fetch);
        let _ = next.reply.send(outcome);
        for job in jobs {
            match slots.pop() {
                Some(slot) => refill(queue, refills, self.max_attempts, job, slot).await,
                None => give_back(queue, self.max_attempts, job.id, job.token).await,
            }
        }
        // Slots nothing filled are freed.
        drop(slots);
    }
}

/// Run `sending` to its end, giving `slots` back after its first poll: by
/// then its call is on the connection, ahead of any claim the slots make
/// (a claim that overtook the acks would find their jobs still active, and
/// a queue's concurrency limit counts those).
async fn freeing(sending: impl std::future::Future<Output = ()>, slots: Vec<OwnedSemaphorePermit>) {
    let mut sending = std::pin::pin!(sending);
    let mut slots = Some(slots);
    std::future::poll_fn(|cx| {
        let polled = sending.as_mut().poll(cx);
        slots = None;
        polled
    })
    .await;
}

/// A worker of several queues (a partitioned queue's partitions) claims
/// from each in turn, and the jobs of a claim, started together, end
/// together on the runtime's threads: while each turn of the runtime
/// brings `batch` more of them, wait one more, so that they share one call.
/// Sent as soon as the first came, they went in two or three: a partitioned
/// queue made half as many ACKMANYs again as one queue of the same jobs
/// (`echomq-partitions --commands`). A lone ack waits one turn, as in a
/// worker of one queue; a full batch none.
async fn gather_the_burst(inbox: &mut Inbox, batch: &mut Vec<Request>) {
    while batch.len() < MOST {
        let before = batch.len();
        tokio::task::yield_now().await;
        take_waiting(inbox, batch);
        if batch.len() == before {
            return;
        }
    }
}

/// Add the acks waiting in `inbox` to `batch`, up to a call's [`MOST`]
/// acks and [`MOST_BYTES`] of results.
fn take_waiting(inbox: &mut Inbox, batch: &mut Vec<Request>) {
    let mut bytes: usize = batch.iter().map(result_bytes).sum();
    while batch.len() < MOST && bytes < MOST_BYTES {
        match inbox.try_recv() {
            Ok(request) => {
                bytes += result_bytes(&request);
                batch.push(request);
            }
            Err(_) => break,
        }
    }
}

/// Ack with ACKNEXT, claiming up to `count` jobs under `lease` in the same
/// round trip: the ack's outcome, and the jobs claimed. Refused (the lease
/// was lost), or applied but unconfirmed by the replicas: that is the ack's
/// outcome, and no job is known claimed (any it claimed sit out their
/// leases and are reaped). The round trip failed: the ack alone, once
/// more, as a failed batch's acks are.
pub(super) async fn ack_next(
    queue: &Queue,
    ack: Ack,
    lease: Duration,
    count: u64,
) -> (Result<()>, Vec<Claimed>) {
    let (via, keys) = (&**queue.executor(), queue.keyspace());
    let call = AckNext { ack, lease, count };
    match execute(via, keys, &call).await {
        Ok(Claims { jobs, .. }) => (Ok(()), jobs),
        Err(err)
            if err.code().is_some() || matches!(err, Error { kind: ErrorKind::NotReplicated { .. }, .. }) =>
        {
            (Err(err), Vec::new())
        }
        Err(err) => (tried_alone_after(&err, execute(via, keys, &call.ack).await), Vec::new()),
    }
}

/// The bytes of `request`'s result, if it keeps one.
fn result_bytes(request: &Request) -> usize {
    request.ack.result.as_ref().map_or(0, Vec::len)
}

/// Send `acks` in one call and hand each its outcome: one ack as ACK, more
/// as one ACKMANY.
async fn send_acks(queue: &Queue, acks: Vec<Ack>, replies: Vec<oneshot::Sender<Result<()>>>) {
    let (via, keys) = (&**queue.executor(), queue.keyspace());
    let mut replies = replies.into_iter();
    match acks.len() {
        0 => {}
        1 => {
            let outcome = execute(via, keys, &acks[0]).await;
            if let Some(reply) = replies.next() {
                let _ = reply.send(outcome);
            }
        }
        _ => {
            let call = AckMany { acks };
            match ack_many(via, keys, &call).await {
                Ok(outcomes) => {
                    for (reply, outcome) in replies.zip(outcomes) {
                        let _ = reply.send(outcome);
                    }
                }
                // Applied, but no replica confirmed it in time, said of the
                // whole call (by an executor that does not answer for each
                // job, as this crate's do): so is each job's ack. Sent again
                // alone, each would only wait as long for the same replicas
                // (and be refused: its job is done).
                Err(err @ Error { kind: ErrorKind::NotReplicated { .. }, .. }) => {
                    for reply in replies {
                        let _ = reply.send(Err(err.clone()));
                    }
                }
                // The call failed as a whole (the round trip, or a refusal of
                // the whole call): each job tries alone, and gets its own outcome.
                Err(err) => {
                    tracing::debug!(error = %err, jobs = call.acks.len(), "gathered acks go alone");
                    for (ack, reply) in call.acks.iter().zip(replies) {
                        let _ = reply.send(tried_alone_after(&err, execute(via, keys, ack).await));
                    }
                }
            }
        }
    }
}

/// The outcome of an ack tried alone after its call failed as a whole with
/// `first`. When that call may have got there (it was not refused: a
/// refusal wrote nothing) and this try surely did nothing, the error says
/// the ack may have landed: the job's run must not renew its lease any more
/// (a renewal after a landed ack is refused), which it would on the later
/// try's "surely did nothing" alone.
fn tried_alone_after(first: &Error, alone: Result<()>) -> Result<()> {
    match alone {
        Err(err) if err.surely_did_nothing() && !first.surely_did_nothing() && first.code().is_none() => {
            let said =
                format!("the ack may have reached the server ({first}); trying it again failed ({err})");
            Err(Error::new(ErrorKind::MayHaveLanded, said))
        }
        other => other,
    }
}

/// Send `job`, an ACKNEXT claimed, back to the claim loop to run in `slot`;
/// when the claim loop has ended (the worker stopped), give it back.
pub(super) async fn refill(
    queue: &Queue,
    refills: &Refills,
    max_attempts: u64,
    job: Claimed,
    slot: OwnedSemaphorePermit,
) {
    if let Some(job) = refills.send_back(job, slot) {
        give_back(queue, max_attempts, job.id, job.token).await;
    }
}

/// Give a job claimed while the worker stopped back to pending (RELEASE);
/// when that fails, its lease runs out and it is reaped.
pub(super) async fn give_back(queue: &Queue, max_attempts: u64, id: JobId, token: u64) {
    let release = Release { id, token, max_attempts };
    if let Err(err) = execute(&**queue.executor(), queue.keyspace(), &release).await {
        tracing::warn!(
            id = %release.id,
            error = %err,
            "a job claimed while the worker stopped could not be given back; it is reaped when its lease ends"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(kind: std::io::ErrorKind) -> Error {
        Error::from(redis::RedisError::from(std::io::Error::new(kind, "the round trip failed")))
    }

    /// A batch's slots go back once its call has been handed on (its
    /// first poll), while the reply is still to come.
    #[tokio::test]
    async fn a_batch_gives_its_slots_back_as_its_acks_leave() {
        let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(3));
        let held =
            vec![slots.clone().acquire_owned().await.unwrap(), slots.clone().acquire_owned().await.unwrap()];
        let (replied, reply) = oneshot::channel::<()>();
        let polled = std::sync::atomic::AtomicBool::new(false);
        let sending = async {
            polled.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = reply.await;
        };
        let mut batch = std::pin::pin!(freeing(sending, held));
        assert_eq!(slots.available_permits(), 1, "held until the call leaves");
        // Timeout polls the batch once before it looks at its deadline.
        assert!(
            tokio::time::timeout(Duration::ZERO, &mut batch).await.is_err(),
            "the reply is still to come"
        );
        assert!(polled.load(std::sync::atomic::Ordering::Relaxed));
        assert_eq!(slots.available_permits(), 3, "both slots back while the reply is awaited");
        replied.send(()).unwrap();
        batch.await;
    }

    /// A gathered ack's job renews its lease while its ack waits only when
    /// no try of it may have landed: the batch's error counts, not only the
    /// later try's own.
    #[test]
    fn an_ack_tried_alone_says_so_when_its_batch_may_have_landed() {
        let (refused, broken) = (std::io::ErrorKind::ConnectionRefused, std::io::ErrorKind::BrokenPipe);
        assert!(tried_alone_after(&failed(refused), Err(failed(refused))).unwrap_err().surely_did_nothing());
        let after_broken = tried_alone_after(&failed(broken), Err(failed(refused))).unwrap_err();
        assert!(!after_broken.surely_did_nothing(), "{after_broken}");
        assert!(after_broken.to_string().contains("may have reached the server"), "{after_broken}");
        assert!(tried_alone_after(&failed(broken), Ok(())).is_ok());
        let fenced =
            tried_alone_after(&failed(broken), Err(Error::new(ErrorKind::Fence, "stale"))).unwrap_err();
        assert!(fenced.is_lost_lease(), "a refusal is the ack's own outcome");
        // A whole ACKMANY refused (a record of the wrong type) wrote nothing.
        let whole = Error::new(ErrorKind::WrongType, "emq:{q}:job:JOB_1 holds a string, not a hash");
        assert!(tried_alone_after(&whole, Err(failed(refused))).unwrap_err().surely_did_nothing());
    }
}
