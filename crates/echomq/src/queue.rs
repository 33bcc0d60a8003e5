//! [`Queue`]: the API a Rust user calls. A queue is a name and a `via`; every
//! method is one transition.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use echomq_core::{Backoff, Policy};
use redis::aio::ConnectionLike;

use crate::events::QueueEvents;
use crate::executor::{claim_waiting, execute, execute_batch, Executor, Lua};
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::record::State;
use crate::schedule::{Schedule, Scheduled};
use crate::transition::*;
use crate::Result;

/// One queue, over one executor. Cheap to clone; clones share the executor.
#[derive(Clone)]
pub struct Queue {
    keys: Arc<Keyspace>,
    via: Arc<dyn Executor>,
}

/// The header that carries a job's W3C trace context.
pub const TRACEPARENT: &str = "traceparent";

/// How many jobs a call moves or deletes when the library sweeps a set in
/// many calls (the worker's upkeep, [`Queue::drain`], [`Queue::purge_all`],
/// [`Queue::delete`]); the protocol allows up to 1000. Redis runs one call
/// at a time, and a call's time is every other client's wait: a TRIM of a
/// thousand jobs held the server 5-11 ms, one of a hundred 0.6-0.8 ms (2.5
/// at the longest; `bench/stalls.py`), and between calls others are served.
pub const SWEEP_STEP: u64 = 100;

/// How to enqueue a job; the default is now, at priority 0, under a new id.
#[derive(Clone, Debug, Default)]
pub struct EnqueueOptions {
    /// The id to use: a producer that retries re-sends the id of its first try,
    /// and the retry is a duplicate, not a second job. A new id when `None`.
    pub id: Option<JobId>,
    /// Lower is claimed first; 0 by default.
    pub priority: i64,
    /// When the job becomes claimable.
    pub due: Due,
    /// The job's own policy (attempts, back-off, timeout), honoured by every
    /// worker on the server; `None` leaves it all to the workers' options.
    pub policy: Option<Policy>,
    /// Dedup: while another job holds this key, the enqueue changes nothing
    /// and answers that job's id (as a duplicate).
    pub unique: Option<Unique>,
    /// Headers handed to the job's handler (`JobContext::headers`): trace
    /// context, tenant, correlation id.
    pub headers: Headers,
}

impl EnqueueOptions {
    /// Enqueue under this id (idempotent: the same id twice is one job).
    pub fn id(mut self, id: JobId) -> Self {
        self.id = Some(id);
        self
    }

    /// Hand the job's handler this header (at most 8192 bytes of them all,
    /// as JSON).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Join the job's trace to the producer's: the W3C `traceparent` of the
    /// producer's span (`00-<trace id>-<span id>-<flags>`), which the
    /// worker records on the job's span (`JobContext::traceparent`).
    pub fn traceparent(self, traceparent: impl Into<String>) -> Self {
        self.header(TRACEPARENT, traceparent)
    }

    /// Claim before (lower) or after (higher) jobs of priority 0.
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }

    /// Claimable only after this delay, on the server's clock.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.due = Due::After(delay);
        self
    }

    /// Claimable only from this time, compared with the server's clock.
    pub fn at(mut self, at: SystemTime) -> Self {
        self.due = Due::At(at);
        self
    }

    /// The job dies when its attempts reach `n`, whatever the worker's
    /// `max_attempts` (0 or 1: it never retries).
    pub fn attempts(mut self, n: u64) -> Self {
        self.policy.get_or_insert_with(Policy::default).attempts = Some(n);
        self
    }

    /// The job waits this long before each retry, whatever the worker's back-off.
    pub fn backoff(mut self, wait: Duration) -> Self {
        self.policy.get_or_insert_with(Policy::default).backoff = Some(Backoff::Fixed(millis_of(wait)));
        self
    }

    /// The job waits `base · 2^(attempt − 1)` before each retry.
    pub fn backoff_exponential(mut self, base: Duration) -> Self {
        self.policy.get_or_insert_with(Policy::default).backoff = Some(Backoff::Exponential(millis_of(base)));
        self
    }

    /// Dedup by `key` for `hold`: while a job holds the key, an enqueue with
    /// it is a duplicate of that job (its id comes back, nothing changes).
    pub fn unique(mut self, key: impl Into<String>, hold: Duration) -> Self {
        self.unique = Some(Unique { key: key.into(), hold, until_finished: false });
        self
    }

    /// With [`unique`](EnqueueOptions::unique): the key also frees as soon
    /// as its job finishes (done, dead or cancelled).
    pub fn unique_until_finished(mut self) -> Self {
        if let Some(unique) = &mut self.unique {
            unique.until_finished = true;
        }
        self
    }

    /// Whether nothing but an id is set: the job fits in an ENQUEUEMANY.
    fn is_plain(&self) -> bool {
        self.priority == 0
            && matches!(self.due, Due::Now)
            && self.policy.is_none()
            && self.unique.is_none()
            && self.headers.is_empty()
    }

    /// One attempt may run this long; a worker then cancels it and fails it
    /// with a timeout error (retried by the job's policy).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.policy.get_or_insert_with(Policy::default).timeout = Some(millis_of(limit));
        self
    }
}

/// What an enqueue of `id` answered, as the caller reads it.
fn enqueued(id: JobId, admission: Admission) -> Enqueued {
    match admission {
        Admission::Enqueued => Enqueued { id, duplicate: false },
        Admission::Duplicate => Enqueued { id, duplicate: true },
        Admission::HeldBy(holder) => Enqueued { id: holder, duplicate: true },
    }
}

/// Whole milliseconds, saturating (the range is checked before sending).
fn millis_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// What an enqueue did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enqueued {
    /// The job's id: the new one, or the one that holds its UNIQUE key.
    pub id: JobId,
    /// `true` when a job with this id existed already, or another job holds
    /// its UNIQUE key: nothing changed.
    pub duplicate: bool,
}

/// How many times [`Queue::enqueue_batch_with_callback`] tries to send its
/// jobs, and then to open its batch: 0.7 s of naps between the tries.
const BATCH_TRIES: usize = 4;

/// Whether a call that failed with `err` is worth sending again, when
/// sending it twice changes nothing: the server could not be reached, could
/// not serve for now, or the connection broke with the call's fate unknown.
fn worth_again(err: &crate::Error) -> bool {
    err.surely_did_nothing()
        || matches!(err, crate::Error::Redis(err) if err.is_io_error() || err.is_timeout())
}

/// `err`, when it is [`worth_again`].
fn unsure(err: &crate::Error) -> Option<&crate::Error> {
    Some(err).filter(|err| worth_again(err))
}

/// `call`'s outcome, after up to [`BATCH_TRIES`] tries, 100 ms, 200 ms and
/// 400 ms apart, while `unsure` finds in it an error worth sending the call
/// again for (`call` changes nothing when sent twice); `doing` names the
/// step for the log.
async fn again<T, F, Fut>(batch: &str, doing: &str, call: F, unsure: fn(&T) -> Option<&crate::Error>) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut nap = Duration::from_millis(100);
    for _ in 1..BATCH_TRIES {
        let outcome = call().await;
        let Some(error) = unsure(&outcome) else { return outcome };
        tracing::debug!(batch, %error, "{doing}, again");
        tokio::time::sleep(nap).await;
        nap *= 2;
    }
    call().await
}

/// A batch opened by [`Queue::enqueue_batch_with_callback`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchOpened {
    /// The batch's id.
    pub id: String,
    /// Its jobs, in the order of their payloads.
    pub jobs: Vec<JobId>,
    /// The callback job, enqueued once they have all finished.
    pub callback: JobId,
}

/// How a job ended, as [`Queue::wait`] saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Done, with its result if its handler returned one (and it was not
    /// trimmed or purged since).
    Done(Option<Vec<u8>>),
    /// Dead: out of attempts, with its last error.
    Dead(Option<String>),
    /// Cancelled by hand.
    Cancelled,
}

/// When a failed job is retried, and how often before it dies. The policy
/// travels as FAIL's arguments; nothing of it is stored in the record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// A job dies when its attempts reach this.
    pub max_attempts: u64,
    /// The back-off after the first failure; it doubles with each attempt.
    pub backoff: Duration,
    /// The back-off never grows past this.
    pub max_backoff: Duration,
    /// How much of each back-off is random, 0.0..=1.0: jobs that failed
    /// together (a dependency went down) come back spread out, not in a herd.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// Five attempts, backing off about 1 s, 2 s, 4 s, 8 s (less up to half, at random).
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(3600),
            jitter: 0.5,
        }
    }
}

impl RetryPolicy {
    /// The back-off after job `id` failed attempt `attempt`, jitter applied.
    /// The randomness is the id's own (its ULID's random bits, hashed with the
    /// attempt), so it needs no generator and differs from job to job.
    pub fn delay_for(&self, id: &JobId, attempt: u64) -> Duration {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut hasher = DefaultHasher::new();
        (id, attempt).hash(&mut hasher);
        let unit = (hasher.finish() % 10_000) as f64 / 10_000.0;
        self.backoff_after(attempt).mul_f64(1.0 - self.jitter.clamp(0.0, 1.0) * unit)
    }

    /// The back-off after failing attempt number `attempt` (1 for the first).
    pub fn backoff_after(&self, attempt: u64) -> Duration {
        let doublings = u32::try_from(attempt.saturating_sub(1)).unwrap_or(u32::MAX).min(31);
        self.backoff.saturating_mul(1 << doublings).min(self.max_backoff)
    }
}

impl Queue {
    /// The queue `name` on Redis, run by Lua scripts over `conn`.
    pub fn new<C>(conn: C, name: &str) -> Result<Queue>
    where
        C: ConnectionLike + Clone + Send + Sync + 'static,
    {
        Queue::with_executor(Arc::new(Lua::new(conn)), name)
    }

    /// The queue `name`, run by `via`.
    pub fn with_executor(via: Arc<dyn Executor>, name: &str) -> Result<Queue> {
        Ok(Queue { keys: Arc::new(Keyspace::new(name)?), via })
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        self.keys.queue()
    }

    /// The queue's keys.
    pub fn keyspace(&self) -> &Keyspace {
        &self.keys
    }

    /// The executor the queue runs on.
    pub fn executor(&self) -> &Arc<dyn Executor> {
        &self.via
    }

    /// Run one transition on this queue.
    pub(crate) async fn run<T: Transition>(&self, transition: &T) -> Result<T::Output> {
        execute(&*self.via, &self.keys, transition).await
    }

    /// Enqueue a job to run now; its new id.
    pub async fn enqueue(&self, payload: impl Into<Vec<u8>>) -> Result<JobId> {
        Ok(self.enqueue_with(payload, EnqueueOptions::default()).await?.id)
    }

    /// Enqueue a job with options: an id of the caller's, a priority, a due time.
    pub async fn enqueue_with(
        &self,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
    ) -> Result<Enqueued> {
        let call = Enqueue {
            id: options.id.unwrap_or_else(JobId::mint),
            payload: payload.into(),
            priority: options.priority,
            due: options.due,
            policy: options.policy,
            unique: options.unique,
            headers: options.headers,
        };
        let admission = self.run(&call).await?;
        Ok(enqueued(call.id, admission))
    }

    /// Enqueue `payloads` as one batch (1 to 1000 jobs, to run now) whose
    /// `callback` job is enqueued once every one of them has finished (done,
    /// dead, cancelled or gone), with the batch's counts in its headers
    /// (`batch`, `total`, `done`, `dead`, `cancelled`, `gone`). The jobs go
    /// in one round trip, then the batch is opened; the workers' upkeep
    /// (SETTLE) calls back.
    ///
    /// What can be checked here is, before anything is sent: a batch of no
    /// jobs or too many, or a payload (the callback's too) over the limit,
    /// enqueues nothing. The jobs' round trip is sent again, a few times,
    /// while the server cannot be reached or the connection broke on the
    /// way (the jobs' ids are minted first: those that went in answer
    /// `duplicate`, unless one already ran and retention removed its record
    /// in the moment between); when it still fails, or the server refused
    /// the jobs, no batch is opened and that failure is the answer: jobs it
    /// may have enqueued run without a callback. Once the jobs are in, the batch is
    /// opened, and tried again the same way (it is the same batch: opened
    /// twice, it is opened once); when replicas did not confirm the jobs or
    /// the batch, or the batch could not be opened, the answer is
    /// [`Error::Batch`](crate::Error::Batch), which names the jobs: they are
    /// enqueued, and sending the batch again would enqueue them twice.
    pub async fn enqueue_batch_with_callback<P: Into<Vec<u8>>>(
        &self,
        payloads: impl IntoIterator<Item = P>,
        callback: impl Into<Vec<u8>>,
    ) -> Result<BatchOpened> {
        let payloads: Vec<Vec<u8>> = payloads.into_iter().map(Into::into).collect();
        let batch = Batch {
            id: format!("BATCH_{}", ulid::Ulid::new()),
            callback: JobId::mint(),
            payload: callback.into(),
            jobs: payloads.iter().map(|_| JobId::mint()).collect(),
        };
        batch.args()?;
        let limit = echomq_core::limits::MAX_PAYLOAD;
        if let Some(at) = payloads.iter().position(|payload| payload.len() > limit) {
            return Err(crate::Error::TooLarge(format!("payload {at} of the batch exceeds {limit} bytes")));
        }
        // The ids are minted: sent again while the server cannot be reached
        // or the call's fate is not known, the jobs that went in the first
        // time answer `duplicate`, and none goes in twice.
        let jobs = || {
            let jobs = payloads.iter().zip(&batch.jobs);
            jobs.map(|(payload, id)| (payload.as_slice(), EnqueueOptions::default().id(id.clone())))
        };
        let unsure: fn(&Result<Vec<Result<Enqueued>>>) -> Option<&crate::Error> = |sent| match sent {
            Err(err) => unsure(err),
            Ok(outcomes) => outcomes.iter().filter_map(|outcome| outcome.as_ref().err()).find_map(unsure),
        };
        let outcomes = again(&batch.id, "enqueueing its jobs", || self.enqueue_many(jobs()), unsure).await?;
        let mut unconfirmed = None;
        for outcome in outcomes {
            match outcome {
                Ok(_) => {}
                Err(err @ crate::Error::NotReplicated { .. }) => unconfirmed = Some(err),
                Err(err) => return Err(err),
            }
        }
        let opened = self.open(&batch).await.err().or(unconfirmed);
        let batch = BatchOpened { id: batch.id, jobs: batch.jobs, callback: batch.callback };
        match opened {
            None => Ok(batch),
            Some(cause) => Err(crate::Error::Batch { batch: Box::new(batch), cause: Box::new(cause) }),
        }
    }

    /// Open `batch` over jobs already enqueued, trying again a few times
    /// while the server cannot be reached or the call's fate is not known
    /// (opening a batch that is open changes nothing).
    async fn open(&self, batch: &Batch) -> Result<()> {
        let unsure: fn(&Result<_>) -> Option<&crate::Error> = |done| done.as_ref().err().and_then(unsure);
        again(&batch.id, "opening it", || self.run(batch), unsure).await.map(drop)
    }

    /// Settle the queue's open batches (see [`Settle`]): what every
    /// worker's upkeep runs.
    pub async fn settle(&self, limit: u64) -> Result<Settled> {
        self.run(&Settle { limit }).await
    }

    /// Enqueue many jobs to run now, in one round trip: one ENQUEUEMANY for
    /// each thousand jobs (or 8 MiB of payloads), pipelined; each job's new
    /// id, or why it was refused. A payload over the limit is refused on its
    /// own and never sent; a refusal of a whole call (a key of the wrong
    /// type) is each of its jobs' refusal: it enqueued none of them.
    pub async fn enqueue_batch<P: Into<Vec<u8>>>(
        &self,
        payloads: impl IntoIterator<Item = P>,
    ) -> Result<Vec<Result<JobId>>> {
        let jobs = payloads.into_iter().map(|payload| (payload, EnqueueOptions::default()));
        let outcomes = self.enqueue_many(jobs).await?;
        Ok(outcomes.into_iter().map(|outcome| outcome.map(|enqueued| enqueued.id)).collect())
    }

    /// Enqueue many jobs, each with its own options, in one round trip; each
    /// job's outcome in order, as [`enqueue_with`](Queue::enqueue_with)
    /// answers it. The jobs whose only option is an id (or none) go in
    /// ENQUEUEMANY calls of a thousand jobs or 8 MiB of payloads, pipelined;
    /// every other job is its own ENQUEUE, in a second pipeline sent beside
    /// the first. A producer that sends a batch again with the same ids, not
    /// knowing what the first try did, gets `duplicate` for the jobs that
    /// went in then, and no job twice. A payload over the limit is refused
    /// on its own and never sent; a refusal of a whole ENQUEUEMANY (a key of
    /// the wrong type) is each of its jobs' refusal: it enqueued none of them.
    pub async fn enqueue_many<P: Into<Vec<u8>>>(
        &self,
        jobs: impl IntoIterator<Item = (P, EnqueueOptions)>,
    ) -> Result<Vec<Result<Enqueued>>> {
        let mut outcomes: Vec<Option<Result<Enqueued>>> = Vec::new();
        // Each ENQUEUEMANY, and the places of its jobs among the outcomes;
        // each ENQUEUE, and its job's place.
        let mut calls: Vec<EnqueueMany> = Vec::new();
        let mut places: Vec<Vec<usize>> = Vec::new();
        let (mut alone, mut alone_at): (Vec<Enqueue>, Vec<usize>) = (Vec::new(), Vec::new());
        let mut bytes = 0;
        for (payload, options) in jobs {
            let (payload, plain) = (payload.into(), options.is_plain());
            let id = options.id.unwrap_or_else(JobId::mint);
            if !plain {
                alone_at.push(outcomes.len());
                outcomes.push(None);
                alone.push(Enqueue {
                    id,
                    payload,
                    priority: options.priority,
                    due: options.due,
                    policy: options.policy,
                    unique: options.unique,
                    headers: options.headers,
                });
                continue;
            }
            if payload.len() > echomq_core::limits::MAX_PAYLOAD {
                let limit = echomq_core::limits::MAX_PAYLOAD;
                outcomes.push(Some(Err(crate::Error::TooLarge(format!("payload exceeds {limit} bytes")))));
                continue;
            }
            let full = |call: &EnqueueMany| {
                call.jobs.len() as u64 == *echomq_core::limits::ENQUEUES.end()
                    || bytes + payload.len() > ENQUEUE_BYTES
            };
            if calls.last().is_none_or(full) {
                calls.push(EnqueueMany { jobs: Vec::new() });
                places.push(Vec::new());
                bytes = 0;
            }
            bytes += payload.len();
            places.last_mut().expect("a call is open").push(outcomes.len());
            calls.last_mut().expect("a call is open").jobs.push((id, payload));
            outcomes.push(None);
        }
        let (many, single) = tokio::join!(
            execute_batch(&*self.via, &self.keys, &calls),
            execute_batch(&*self.via, &self.keys, &alone)
        );
        for ((call, places), reply) in calls.into_iter().zip(places).zip(many?) {
            let sent = call.jobs.len();
            let admissions = match reply {
                Ok(admissions) if admissions.len() == sent => Ok(admissions),
                Ok(admissions) => Err(crate::Error::Reply(format!(
                    "ENQUEUEMANY answered {} replies for {sent} jobs",
                    admissions.len()
                ))),
                Err(err) => Err(err),
            };
            let ids = call.jobs.into_iter().map(|(id, _)| id).zip(places);
            match admissions {
                Ok(admissions) => {
                    for ((id, at), admission) in ids.zip(admissions) {
                        outcomes[at] = Some(Ok(enqueued(id, admission)));
                    }
                }
                Err(err) => {
                    for (_, at) in ids {
                        outcomes[at] = Some(Err(err.for_each_of_many()));
                    }
                }
            }
        }
        for ((call, at), reply) in alone.into_iter().zip(alone_at).zip(single?) {
            outcomes[at] = Some(reply.map(|admission| enqueued(call.id, admission)));
        }
        Ok(outcomes.into_iter().map(|outcome| outcome.expect("every job has its outcome")).collect())
    }

    /// Claim the job at the head of pending under a lease of `lease`.
    pub async fn claim(&self, lease: Duration) -> Result<Option<Claimed>> {
        Ok(self.claim_batch(lease, 1).await?.pop())
    }

    /// Claim up to `count` jobs (1..=1000) in one round trip, each under its own lease.
    pub async fn claim_batch(&self, lease: Duration, count: u64) -> Result<Vec<Claimed>> {
        Ok(self.run(&Claim { lease, count }).await?.jobs)
    }

    /// Claim up to `count` jobs, and say whether the queue's gate (paused,
    /// its concurrency limit) held some back. With `wait`, a claim that gets
    /// nothing because nothing is pending or the queue is paused waits up to
    /// that long for an arrival or a resume, on executors that can.
    pub async fn claims(&self, lease: Duration, count: u64, wait: Option<Duration>) -> Result<Claims> {
        match wait {
            None => self.run(&Claim { lease, count }).await,
            Some(wait) => claim_waiting(&*self.via, &self.keys, &Claim { lease, count }, wait).await,
        }
    }

    /// Claim up to `count` jobs; when none is pending, wait up to `wait` for
    /// one to arrive on executors that can ([`Executor::waits`]), else return at once.
    pub async fn claim_waiting(&self, lease: Duration, count: u64, wait: Duration) -> Result<Vec<Claimed>> {
        Ok(claim_waiting(&*self.via, &self.keys, &Claim { lease, count }, wait).await?.jobs)
    }

    /// Pause the queue: every claim hands out nothing until [`resume`](Queue::resume),
    /// for every worker of every process. Enqueue, ack and the rest go on.
    pub async fn pause(&self) -> Result<Settings> {
        self.configure(Config { paused: Some(true), ..Config::default() }).await
    }

    /// Resume a paused queue; claims waiting for work wake at once.
    pub async fn resume(&self) -> Result<Settings> {
        self.configure(Config { paused: Some(false), ..Config::default() }).await
    }

    /// Whether the queue is paused.
    pub async fn is_paused(&self) -> Result<bool> {
        Ok(self.settings().await?.paused)
    }

    /// Let at most `limit` jobs of this queue be active at once, across every
    /// worker and process; `None` removes the limit.
    pub async fn limit_concurrency(&self, limit: Option<u64>) -> Result<Settings> {
        if limit == Some(0) {
            return Err(crate::Error::Argument("a concurrency limit must be at least 1".into()));
        }
        self.configure(Config { concurrency: Some(limit.unwrap_or(0)), ..Config::default() }).await
    }

    /// Let at most `claims` jobs of this queue be claimed in any `per`, across
    /// every worker and process, on the server's clock; `None` removes the limit.
    pub async fn limit_rate(&self, limit: Option<(u64, Duration)>) -> Result<Settings> {
        if limit.is_some_and(|(claims, _)| claims == 0) {
            return Err(crate::Error::Argument("a rate limit must allow at least 1 claim".into()));
        }
        self.configure(Config { rate: Some(limit.unwrap_or((0, Duration::ZERO))), ..Config::default() }).await
    }

    /// The queue's settings.
    pub async fn settings(&self) -> Result<Settings> {
        self.configure(Config::default()).await
    }

    /// Change the settings `config` names, in one transition; the settings after.
    pub async fn configure(&self, config: Config) -> Result<Settings> {
        self.run(&config).await
    }

    /// Enqueue `job` as JSON: a typed job, read back with
    /// [`JobContext::json`](crate::worker::JobContext::json).
    pub async fn enqueue_json<T: serde::Serialize>(&self, job: &T) -> Result<JobId> {
        let payload = serde_json::to_vec(job)?;
        self.enqueue(payload).await
    }

    /// Finish a claimed job. [`Error::Fence`](crate::Error::Fence) when the lease was lost.
    pub async fn ack(&self, job: &Claimed) -> Result<()> {
        self.run(&Ack::of(job)).await
    }

    /// Finish a claimed job and keep `result` beside it, for
    /// [`Queue::result`] and [`Queue::wait`]; it goes when the done job is
    /// trimmed or purged.
    pub async fn ack_with(&self, job: &Claimed, result: impl Into<Vec<u8>>) -> Result<()> {
        self.run(&Ack { id: job.id.clone(), token: job.token, result: Some(result.into()) }).await
    }

    /// Finish a claimed job (keeping `result`, if any) and claim up to
    /// `count` more under `lease`, in one atomic step and one round trip
    /// (ACKNEXT). When the ack is refused ([`Error::Fence`](crate::Error::Fence):
    /// the lease was lost), nothing is acked and nothing claimed.
    pub async fn ack_and_claim(
        &self,
        job: &Claimed,
        result: Option<Vec<u8>>,
        lease: Duration,
        count: u64,
    ) -> Result<Claims> {
        let ack = Ack { id: job.id.clone(), token: job.token, result };
        self.run(&AckNext { ack, lease, count }).await
    }

    /// Finish many claimed jobs, at most 1000 ([`limits::ACKS`](echomq_core::limits::ACKS)),
    /// in one call (ACKMANY); each ack's own outcome, in order
    /// ([`Error::Fence`](crate::Error::Fence) for a job whose lease was lost).
    /// The outer error is the call's: a refusal of the whole call (a key of
    /// the wrong type) acked nothing.
    pub async fn ack_batch(&self, jobs: &[Claimed]) -> Result<Vec<Result<()>>> {
        ack_many(&*self.via, &self.keys, &AckMany { acks: jobs.iter().map(Ack::of).collect() }).await
    }

    /// Report a claimed job's failure: it retries after the policy's back-off,
    /// or dies when its attempts reached the policy's maximum.
    pub async fn fail(&self, job: &Claimed, error: &str, policy: &RetryPolicy) -> Result<Failed> {
        let call = Fail {
            id: job.id.clone(),
            token: job.token,
            max_attempts: policy.max_attempts,
            backoff: policy.delay_for(&job.id, job.token),
            error: error.to_owned(),
        };
        self.run(&call).await
    }

    /// Renew a claimed job's lease; the new deadline in server ms.
    pub async fn extend(&self, job: &Claimed, lease: Duration) -> Result<u64> {
        self.run(&Extend { id: job.id.clone(), token: job.token, lease }).await
    }

    /// Give a claimed job back to pending without blame and without spending
    /// its attempt: the job's own maximum grows by one (from `policy`'s, for a
    /// job with none of its own), so a shutdown never brings it nearer to dead.
    pub async fn release(&self, job: &Claimed, policy: &RetryPolicy) -> Result<()> {
        self.run(&Release { id: job.id.clone(), token: job.token, max_attempts: policy.max_attempts }).await
    }

    /// Report a claimed job's progress (at most 4096 bytes), kept beside the
    /// record until the job is purged and read by [`Queue::inspect`].
    /// [`Error::Fence`](crate::Error::Fence) when the lease was lost.
    pub async fn progress(&self, job: &Claimed, value: impl Into<Vec<u8>>) -> Result<()> {
        self.run(&Progress { id: job.id.clone(), token: job.token, value: value.into() }).await
    }

    /// Take expired leases back: to pending, or to dead at `max_attempts`.
    pub async fn reap(&self, max_attempts: u64) -> Result<Reaped> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Reap { max_attempts, limit }).await
    }

    /// Move delayed jobs whose time has come to pending; how many moved.
    pub async fn promote(&self) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Promote { limit }).await
    }

    /// Delete up to 1000 finished jobs in `state` that finished at least `age` ago.
    pub async fn purge(&self, state: State, age: Duration) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Purge { state, age, limit }).await
    }

    /// Delete every finished job in `state` that finished at least `age`
    /// ago, in calls of [`SWEEP_STEP`] jobs: how many. The jobs there when
    /// it begins: under a steady stream of new ones it still ends.
    pub async fn purge_all(&self, state: State, age: Duration) -> Result<u64> {
        let there = self.stats().await?.of(state);
        self.sweep(there, |limit| Purge { state, age, limit }).await
    }

    /// Calls of `call(SWEEP_STEP)` while each moves a full step, at most as
    /// many as `there` jobs take and one more (a set a producer keeps
    /// filling would keep a sweep going for ever): how many it moved.
    async fn sweep<T: Transition<Output = u64>>(&self, there: u64, call: impl Fn(u64) -> T) -> Result<u64> {
        let mut total = 0;
        for _ in 0..=there / SWEEP_STEP {
            let moved = self.run(&call(SWEEP_STEP)).await?;
            total += moved;
            if moved < SWEEP_STEP {
                break;
            }
        }
        Ok(total)
    }

    /// The holder of `job` was told to come back after `delay` (an HTTP 429):
    /// the job waits in delayed without spending its attempt (`retry`'s
    /// maximum is the default for a job with none of its own), and with
    /// `pause_queue` the queue's claims wait as long.
    pub async fn defer(
        &self,
        job: &Claimed,
        delay: Duration,
        retry: &RetryPolicy,
        pause_queue: bool,
    ) -> Result<()> {
        let call = Defer {
            id: job.id.clone(),
            token: job.token,
            delay,
            max_attempts: retry.max_attempts,
            pause_queue,
        };
        self.run(&call).await
    }

    /// Keep finished jobs in `state` (done, dead or cancelled) as
    /// `retention` says; every worker's upkeep deletes the rest.
    pub async fn keep(&self, state: State, retention: Retention) -> Result<Settings> {
        let config = match state {
            State::Done => Config { keep_done: Some(retention), ..Config::default() },
            State::Dead => Config { keep_dead: Some(retention), ..Config::default() },
            State::Cancelled => Config { keep_cancelled: Some(retention), ..Config::default() },
            other => {
                return Err(crate::Error::Argument(format!(
                    "only finished jobs are kept or not, not {other} ones"
                )))
            }
        };
        self.configure(config).await
    }

    /// Apply the queue's retention to its finished jobs in `state`, up to
    /// 1000 of them: how many were deleted. Every worker runs it as upkeep.
    pub async fn trim(&self, state: State) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Trim { state, limit }).await
    }

    /// Delete the queue's pending and delayed jobs (and, with `active`, its
    /// running ones, whose holders are fenced): how many. Calls of DRAIN of
    /// [`SWEEP_STEP`] jobs, for the jobs there when it begins (new ones may
    /// stay: a producer that goes on is not outrun for ever).
    pub async fn drain(&self, active: bool) -> Result<u64> {
        let states: &[State] = if active {
            &[State::Pending, State::Delayed, State::Active]
        } else {
            &[State::Pending, State::Delayed]
        };
        let stats = self.stats().await?;
        let mut total = 0;
        for &state in states {
            total += self.sweep(stats.of(state), |limit| Drain { state, limit }).await?;
        }
        Ok(total)
    }

    /// Delete the whole queue: every job and every key it owns (settings,
    /// schedules, dedup keys). Refused (`Error::State`, nothing deleted)
    /// while jobs are active, unless `force`: then they go too, and their
    /// holders are fenced. How many jobs were deleted. A job enqueued while
    /// this runs is deleted with the rest; a job claimed while it runs stops
    /// it with `Error::State`, which then says how many jobs it had deleted.
    pub async fn delete(&self, force: bool) -> Result<u64> {
        let refuse_active = || async {
            let active = self.stats().await?.active;
            if active > 0 && !force {
                return Err(crate::Error::State(format!(
                    "{active} jobs of {} are active: let them finish, or force their deletion",
                    self.name()
                )));
            }
            Ok(())
        };
        refuse_active().await?;
        let mut total = 0;
        // Jobs may arrive meanwhile; a few rounds see the queue empty.
        for _ in 0..5 {
            total += self.drain(force).await?;
            for state in [State::Done, State::Dead, State::Cancelled] {
                total += self.purge_all(state, Duration::ZERO).await?;
            }
            match self.run(&Obliterate).await {
                Ok(_) => return Ok(total),
                // A claim that came meanwhile, or new jobs: see which.
                Err(crate::Error::State(_)) => refuse_active().await.map_err(|err| match err {
                    crate::Error::State(why) => crate::Error::State(format!(
                        "{why}; {total} of its jobs were deleted before one was claimed, and its keys are kept"
                    )),
                    err => err,
                })?,
                Err(err) => return Err(err),
            }
        }
        Err(crate::Error::State(format!(
            "{} still gets jobs while it is deleted: stop its producers",
            self.name()
        )))
    }

    /// Cancel a job; `false` when it was cancelled already.
    pub async fn cancel(&self, id: &JobId) -> Result<bool> {
        self.run(&Cancel { id: id.clone() }).await
    }

    /// Send a dead job back to pending.
    pub async fn retry(&self, id: &JobId) -> Result<()> {
        self.run(&Retry { id: id.clone() }).await
    }

    /// A job's record, last error and last progress; `None` when there is no such job.
    pub async fn inspect(&self, id: &JobId) -> Result<Option<Inspection>> {
        self.run(&Inspect { id: id.clone() }).await
    }

    /// What the job's handler returned, kept by its ACK: `None` when the job
    /// is not done, finished with no result, or is gone (trimmed, purged).
    pub async fn result(&self, id: &JobId) -> Result<Option<Vec<u8>>> {
        Ok(self.inspect(id).await?.and_then(|job| job.result))
    }

    /// A reader of the queue's event log from now on: the events of
    /// transitions after this call (see [`QueueEvents`]).
    pub async fn events(&self) -> Result<QueueEvents> {
        let key = self.keys.events();
        let last = self.via.stream_last(&key).await?.unwrap_or_else(|| "0-0".to_owned());
        Ok(QueueEvents::new(self.via.clone(), key, last))
    }

    /// A reader of the queue's event log after the entry `after` (`0-0`:
    /// from the oldest it keeps), to resume where an earlier reader stopped.
    pub fn events_after(&self, after: &str) -> QueueEvents {
        QueueEvents::new(self.via.clone(), self.keys.events(), after)
    }

    /// Wait until the job has finished (done, dead or cancelled), as long as
    /// `timeout`; `None` when it had not by then. It follows the queue's
    /// event log, so it does not poll; on a queue whose log is off
    /// (`events` 0) it looks at the job every 100 ms to 1 s instead.
    /// [`Error::NoJob`](crate::Error::NoJob) when there is no such job.
    pub async fn wait(&self, id: &JobId, timeout: Duration) -> Result<Option<Finished>> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Follow the log from before the first look, so that a finish
        // between the look and the first read is still seen.
        let mut events = self.events().await?;
        // A user who may not run CONFIG (a read-only monitor) follows the
        // log as if it were on: at worst its re-reads of the job find the end.
        let logged = self.settings().await.map_or(true, |settings| settings.events > 0);
        let mut nap = Duration::from_millis(100);
        loop {
            if let Some(finished) = self.finished(id).await? {
                return Ok(Some(finished));
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            if !logged {
                tokio::time::sleep(nap.min(left)).await;
                nap = (nap * 2).min(Duration::from_secs(1));
                continue;
            }
            // Until this job's final event, or a while: then look again, in
            // case its event was trimmed away before it was read.
            let until = tokio::time::Instant::now() + left.min(Duration::from_secs(5));
            while let Some(event) =
                events.next_within(until.saturating_duration_since(tokio::time::Instant::now())).await?
            {
                if event.is_final() && event.job.as_ref() == Some(id) {
                    break;
                }
            }
        }
    }

    /// How the job ended, if it has; [`Error::NoJob`](crate::Error::NoJob) when there is no such job.
    async fn finished(&self, id: &JobId) -> Result<Option<Finished>> {
        let Some(job) = self.inspect(id).await? else {
            return Err(crate::Error::NoJob(format!("no job {id} in queue {}", self.name())));
        };
        Ok(match job.record.state {
            State::Done => Some(Finished::Done(job.result)),
            State::Dead => Some(Finished::Dead(job.error)),
            State::Cancelled => Some(Finished::Cancelled),
            State::Pending | State::Active | State::Delayed => None,
        })
    }

    /// How many jobs the queue holds in each state.
    pub async fn stats(&self) -> Result<StatsReply> {
        self.run(&Stats).await
    }

    /// Add `schedule` to the queue, or replace the one of its name; its first
    /// tick is the first after the server's now. The workers of the queue
    /// fire its ticks, each once ([`Queue::fire_schedules`]).
    pub async fn schedule(&self, schedule: &Schedule) -> Result<Scheduled> {
        let now = self.run(&Schedules { due: false, limit: 1 }).await?.now;
        let next = schedule
            .next_after(now)
            .filter(|next| echomq_core::limits::AT_MS.contains(next))
            .ok_or_else(|| crate::Error::Argument(format!("schedule {:?} never ticks", schedule.name)))?;
        let call = crate::transition::Schedule {
            name: schedule.name.clone(),
            definition: schedule.definition(),
            next,
        };
        self.run(&call).await?;
        Ok(Scheduled { schedule: schedule.clone(), next })
    }

    /// Remove the schedule `name`; `false` when there was none. Jobs it fired stay.
    pub async fn unschedule(&self, name: &str) -> Result<bool> {
        self.run(&Unschedule { name: name.to_owned() }).await
    }

    /// The queue's schedules (up to 1000), by next tick.
    pub async fn schedules(&self) -> Result<Vec<Scheduled>> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        let listed = self.run(&Schedules { due: false, limit }).await?;
        listed
            .schedules
            .into_iter()
            .map(|stored| {
                let schedule = Schedule::from_definition(&stored.name, &stored.definition)?;
                Ok(Scheduled { schedule, next: stored.next })
            })
            .collect()
    }

    /// Fire the ticks of the queue's due schedules (up to 100 schedules a
    /// call), as each one's [`Missed`](crate::schedule::Missed) policy says;
    /// how many jobs were enqueued. Safe from any number of workers at once:
    /// each tick fires once. A worker runs this on its upkeep period.
    pub async fn fire_schedules(&self) -> Result<u64> {
        let due = self.run(&Schedules { due: true, limit: 100 }).await?;
        let mut enqueued = 0;
        for stored in due.schedules {
            let schedule = match Schedule::from_definition(&stored.name, &stored.definition) {
                Ok(schedule) => schedule,
                Err(err) => {
                    tracing::warn!(queue = self.name(), error = %err, "a schedule this host cannot read");
                    continue;
                }
            };
            for fire in schedule.plan(self.name(), stored.next, due.now) {
                match self.run(&fire).await? {
                    Fired::Enqueued => enqueued += 1,
                    Fired::MovedOn => {}
                    Fired::Stale => break,
                }
            }
        }
        Ok(enqueued)
    }
}

/// The most payload bytes one ENQUEUEMANY of `enqueue_batch` carries.
const ENQUEUE_BYTES: usize = 8 << 20;

/// Run `call`, one ACKMANY: each job's own outcome in order, a refusal
/// naming its job. The outer error is the call's: the connection's, or a
/// refusal of the whole call, which acked nothing.
pub(crate) async fn ack_many(via: &dyn Executor, keys: &Keyspace, call: &AckMany) -> Result<Vec<Result<()>>> {
    let outcomes = execute(via, keys, call).await?;
    if outcomes.len() != call.acks.len() {
        let (got, sent) = (outcomes.len(), call.acks.len());
        return Err(crate::Error::Reply(format!("ACKMANY answered {got} replies for {sent} jobs")));
    }
    let named = outcomes.into_iter().zip(&call.acks);
    Ok(named
        .map(|(outcome, ack)| outcome.map_err(|err| err.at(AckMany::NAME, keys.queue(), Some(&ack.id))))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sweeps in steps go on past a step: every job, in a few calls.
    #[tokio::test]
    async fn drain_and_purge_all_go_past_a_step() {
        let queue = Queue::with_executor(Arc::new(crate::Embedded::new()), "sweeps").unwrap();
        let jobs = 2 * SWEEP_STEP + SWEEP_STEP / 2;
        let payloads = || (0..jobs).map(|n| n.to_string());
        queue.enqueue_batch(payloads()).await.unwrap();
        assert_eq!(queue.drain(false).await.unwrap(), jobs);
        queue.enqueue_batch(payloads()).await.unwrap();
        for job in queue.claim_batch(Duration::from_secs(60), jobs).await.unwrap() {
            queue.ack(&job).await.unwrap();
        }
        assert_eq!(queue.purge_all(State::Done, Duration::ZERO).await.unwrap(), jobs);
        assert_eq!(queue.stats().await.unwrap(), crate::transition::StatsReply::default());
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            jitter: 0.5,
        };
        let got: Vec<u128> = (1..=6).map(|a| policy.backoff_after(a).as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.backoff_after(u64::MAX), Duration::from_millis(1000));
    }

    #[test]
    fn jitter_spreads_jobs_within_its_share() {
        let policy = RetryPolicy { jitter: 0.5, ..RetryPolicy::default() };
        let delays: Vec<Duration> = (0..200).map(|_| policy.delay_for(&JobId::mint(), 1)).collect();
        assert!(delays.iter().all(|d| *d >= Duration::from_millis(500) && *d <= Duration::from_secs(1)));
        let distinct: std::collections::BTreeSet<_> = delays.iter().collect();
        assert!(distinct.len() > 150, "only {} distinct delays", distinct.len());
        let id = JobId::mint();
        assert_eq!(
            policy.delay_for(&id, 2),
            policy.delay_for(&id, 2),
            "the same job and attempt, the same delay"
        );
        let exact = RetryPolicy { jitter: 0.0, ..policy };
        assert_eq!(exact.delay_for(&id, 3), Duration::from_secs(4));
    }
}
