//! Acks, gathered: under load many jobs finish at once, and their acks go to
//! the server in one round trip (`ack_batch`, a pipeline). Under light load a
//! batch is one ack, sent at once: gathering never waits.

use tokio::sync::{mpsc, oneshot};

use crate::queue::Queue;
use crate::transition::Claimed;
use crate::Result;

/// The most acks one round trip carries.
const MOST: usize = 256;

type Request = (Claimed, oneshot::Sender<Result<()>>);

/// A handle to a queue's ack gatherer. Cheap to clone.
#[derive(Clone)]
pub(super) struct Acker {
    requests: mpsc::UnboundedSender<Request>,
}

impl Acker {
    /// A gatherer for `queue`, and the task that sends its batches.
    pub(super) fn start(queue: Queue) -> (Acker, impl std::future::Future<Output = ()> + Send) {
        let (requests, inbox) = mpsc::unbounded_channel();
        (Acker { requests }, gather(queue, inbox))
    }

    /// Ack `job`, in whatever batch it joins; its own outcome.
    pub(super) async fn ack(&self, queue: &Queue, job: &Claimed) -> Result<()> {
        let (reply, outcome) = oneshot::channel();
        if self.requests.send((job.clone(), reply)).is_err() {
            return queue.ack(job).await;
        }
        match outcome.await {
            Ok(outcome) => outcome,
            Err(_) => queue.ack(job).await,
        }
    }
}

async fn gather(queue: Queue, mut inbox: mpsc::UnboundedReceiver<Request>) {
    while let Some(first) = inbox.recv().await {
        let mut batch = vec![first];
        while batch.len() < MOST {
            match inbox.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let jobs: Vec<Claimed> = batch.iter().map(|(job, _)| job.clone()).collect();
        match queue.ack_batch(&jobs).await {
            Ok(outcomes) => {
                for ((_, reply), outcome) in batch.into_iter().zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            // The round trip failed as a whole: each job tries alone.
            Err(_) => {
                for (job, reply) in batch {
                    let _ = reply.send(queue.ack(&job).await);
                }
            }
        }
    }
}
