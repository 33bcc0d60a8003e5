//! Acks, gathered: under load many jobs finish at once, and their acks go to
//! the server in one round trip (`ack_batch`, a pipeline). Under light load a
//! batch is one ack, sent at once: gathering never waits.

use tokio::sync::{mpsc, oneshot};

use crate::executor::{execute, execute_batch};
use crate::queue::Queue;
use crate::transition::{Ack, Claimed};
use crate::Result;

/// The most acks one round trip carries.
const MOST: usize = 256;

/// An ack (the job's id, token and result: never its payload) and where its outcome goes.
type Request = (Ack, oneshot::Sender<Result<()>>);

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

    /// Ack `job`, keeping `result`, in whatever batch it joins; its own outcome.
    pub(super) async fn ack(&self, queue: &Queue, job: &Claimed, result: Option<Vec<u8>>) -> Result<()> {
        let ack = Ack { id: job.id.clone(), token: job.token, result };
        let (reply, outcome) = oneshot::channel();
        if let Err(mpsc::error::SendError((ack, _))) = self.requests.send((ack, reply)) {
            return execute(&**queue.executor(), queue.keyspace(), &ack).await;
        }
        outcome.await.unwrap_or_else(|_| Err(crate::Error::Reply("the ack gatherer stopped".into())))
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
        let (acks, replies): (Vec<Ack>, Vec<_>) = batch.into_iter().unzip();
        let (via, keys) = (&**queue.executor(), queue.keyspace());
        match execute_batch(via, keys, &acks).await {
            Ok(outcomes) => {
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            // The round trip failed as a whole: each job tries alone.
            Err(_) => {
                for (ack, reply) in acks.iter().zip(replies) {
                    let _ = reply.send(execute(via, keys, ack).await);
                }
            }
        }
    }
}
