//! Producing: enqueueing jobs, one, many or as a batch with a callback.

use std::time::{Duration, SystemTime};

use echomq_core::{Backoff, Policy};

use super::{Queue, TRACEPARENT};
use crate::executor::execute_batch;
use crate::id::JobId;
use crate::transition::*;
use crate::Result;

/// How to enqueue a job, built by its methods; the default is now, at
/// priority 0, under a new id, with the workers' policy.
///
/// ```
/// # use std::time::Duration;
/// let options = echomq::EnqueueOptions::default()
///     .priority(-1)
///     .delay(Duration::from_secs(30))
///     .attempts(3)
///     .unique_until_finished("invoice:42", Duration::from_secs(3600))
///     .group("tenant-7");
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct EnqueueOptions {
    /// The id to use: a producer that retries re-sends the id of its first try,
    /// and the retry is a duplicate, not a second job. A new id when `None`.
    pub(super) id: Option<JobId>,
    /// Lower is claimed first; 0 by default.
    pub(super) priority: i64,
    /// When the job becomes claimable.
    pub(super) due: Due,
    /// The job's own policy (attempts, back-off, timeout), honoured by every
    /// worker on the server; `None` leaves it all to the workers' options.
    pub(super) policy: Option<Policy>,
    /// Dedup: while another job holds this key, the enqueue changes nothing
    /// and answers that job's id (as a duplicate).
    pub(super) unique: Option<Unique>,
    /// Headers handed to the job's handler (`JobContext::headers`): trace
    /// context, tenant, correlation id.
    pub(super) headers: Headers,
    /// The job's group (a tenant, a customer, a key): claims take turns
    /// between a queue's groups. `None`: the default group.
    pub(super) group: Option<String>,
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

    /// Put the job in `group` (1 to 200 bytes: a tenant, a customer, a
    /// key): claims take turns between the groups that have work, by their
    /// weights, and each group may have a cap, a rate, a most pending and a
    /// pause of its own ([`QueueGroups`](crate::QueueGroups)). Priority
    /// orders jobs within their group.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
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

    /// Dedup by `key` until the job holding it finishes (done, dead or
    /// cancelled), and for `hold` at most: a job lost for good does not
    /// hold its key for ever.
    pub fn unique_until_finished(mut self, key: impl Into<String>, hold: Duration) -> Self {
        self.unique = Some(Unique { key: key.into(), hold, until_finished: true });
        self
    }

    /// The id [`id`](EnqueueOptions::id) gave, if any (else the enqueue mints one).
    #[must_use]
    pub fn given_id(&self) -> Option<&JobId> {
        self.id.as_ref()
    }

    /// What a partitioned queue routes the job by when no id is given
    /// (PROTOCOL.md §7.10): its group, else its unique key.
    pub(crate) fn route_key(&self) -> Option<&str> {
        self.group.as_deref().or(self.unique.as_ref().map(|unique| unique.key.as_str()))
    }

    /// Whether nothing but an id (and a group) is set: the job fits in an
    /// ENQUEUEMANY, one of its group's.
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
    matches!(err.kind, crate::ErrorKind::Unavailable | crate::ErrorKind::MayHaveLanded)
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

impl Queue {
    /// Enqueue a job to run now; its new id.
    ///
    /// # Errors
    /// [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) for a payload over
    /// the limit, before anything is sent; the server's refusal when the
    /// queue's stored state is not the protocol's
    /// ([`ErrorKind::WrongType`](crate::ErrorKind::WrongType),
    /// [`ErrorKind::Malformed`](crate::ErrorKind::Malformed),
    /// [`ErrorKind::Version`](crate::ErrorKind::Version)); a failure of the
    /// connection or the server.
    pub async fn enqueue(&self, payload: impl Into<Vec<u8>>) -> Result<JobId> {
        Ok(self.enqueue_with(payload, EnqueueOptions::default()).await?.id)
    }

    /// Enqueue a job with options: an id of the caller's, a priority, a due
    /// time, a group.
    ///
    /// # Errors
    /// As [`enqueue`](Queue::enqueue); [`ErrorKind::Argument`](crate::ErrorKind::Argument)
    /// for an option outside the protocol's limits (priority, delay, unique
    /// key, headers, a group's name), before anything is sent;
    /// [`ErrorKind::Full`](crate::ErrorKind::Full), nothing written, when
    /// the job's group holds its most pending jobs. A duplicate is no
    /// error: its [`Enqueued`] says so.
    pub async fn enqueue_with(
        &self,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
    ) -> Result<Enqueued> {
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))]
        let mut call = Enqueue {
            id: options.id.unwrap_or_else(JobId::mint),
            payload: payload.into(),
            priority: options.priority,
            due: options.due,
            policy: options.policy,
            unique: options.unique,
            headers: options.headers,
            parent: None,
            group: options.group,
        };
        #[cfg(feature = "otel")]
        let admission = {
            use tracing::Instrument;
            let span = crate::otel::producer(self.name(), call.id.as_str());
            crate::otel::inject(&span, &mut call.headers);
            self.run(&call).instrument(span).await?
        };
        #[cfg(not(feature = "otel"))]
        let admission = self.run(&call).await?;
        // Noted once it holds a job: a refused enqueue writes nothing.
        self.register(false).await;
        Ok(enqueued(call.id, admission))
    }

    /// Enqueue `job` as JSON: a typed job, read back with
    /// [`JobContext::json`](crate::worker::JobContext::json).
    ///
    /// # Errors
    /// As [`enqueue`](Queue::enqueue); [`ErrorKind::Json`](crate::ErrorKind::Json)
    /// when `job` cannot be written as JSON, before anything is sent.
    pub async fn enqueue_json<T: serde::Serialize>(&self, job: &T) -> Result<JobId> {
        let payload = serde_json::to_vec(job)?;
        self.enqueue(payload).await
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
    /// [`ErrorKind::Batch`](crate::ErrorKind::Batch), which names the jobs: they are
    /// enqueued, and sending the batch again would enqueue them twice.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) for no jobs or
    /// more than 1000, [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge)
    /// for a payload over the limit, both before anything is sent; the jobs'
    /// failure, as [`enqueue`](Queue::enqueue), when no batch was opened;
    /// [`ErrorKind::Batch`](crate::ErrorKind::Batch) once the jobs are in (above).
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
            return Err(crate::Error::new(
                crate::ErrorKind::TooLarge,
                format!("payload {at} of the batch exceeds {limit} bytes"),
            ));
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
                Err(err @ crate::Error { kind: crate::ErrorKind::NotReplicated { .. }, .. }) => {
                    unconfirmed = Some(err)
                }
                Err(err) => return Err(err),
            }
        }
        let opened = self.open(&batch).await.err().or(unconfirmed);
        let batch = BatchOpened { id: batch.id, jobs: batch.jobs, callback: batch.callback };
        match opened {
            None => Ok(batch),
            Some(cause) => Err(crate::Error::batch_not_done(batch, cause)),
        }
    }

    /// Open `batch` over jobs already enqueued, trying again a few times
    /// while the server cannot be reached or the call's fate is not known
    /// (opening a batch that is open changes nothing).
    async fn open(&self, batch: &Batch) -> Result<()> {
        let unsure: fn(&Result<_>) -> Option<&crate::Error> = |done| done.as_ref().err().and_then(unsure);
        again(&batch.id, "opening it", || self.run(batch), unsure).await.map(drop)
    }

    /// Enqueue many jobs to run now, in one round trip: one ENQUEUEMANY for
    /// each thousand jobs (or 8 MiB of payloads), pipelined; each job's new
    /// id, or why it was refused. A payload over the limit is refused on its
    /// own and never sent; a refusal of a whole call (a key of the wrong
    /// type) is each of its jobs' refusal: it enqueued none of them.
    ///
    /// # Errors
    /// A failure of the connection or the server, when no job's outcome is
    /// known; each job's own refusal is in its result.
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
    /// answers it. The jobs whose only options are an id and a group (or
    /// none) go in ENQUEUEMANY calls of a thousand jobs of one group or 8
    /// MiB of payloads, pipelined;
    /// every other job is its own ENQUEUE, in a second pipeline sent beside
    /// the first. A producer that sends a batch again with the same ids, not
    /// knowing what the first try did, gets `duplicate` for the jobs that
    /// went in then, and no job twice. A payload over the limit is refused
    /// on its own and never sent; a refusal of a whole ENQUEUEMANY (a key of
    /// the wrong type) is each of its jobs' refusal: it enqueued none of them.
    ///
    /// # Errors
    /// As [`enqueue_batch`](Queue::enqueue_batch).
    pub async fn enqueue_many<P: Into<Vec<u8>>>(
        &self,
        jobs: impl IntoIterator<Item = (P, EnqueueOptions)>,
    ) -> Result<Vec<Result<Enqueued>>> {
        let mut sorted = Sorted::default();
        for (payload, options) in jobs {
            sorted.push(payload.into(), options);
        }
        let (many, single) = tokio::join!(
            execute_batch(&*self.via, &self.keys, &sorted.calls),
            execute_batch(&*self.via, &self.keys, &sorted.alone)
        );
        let outcomes = sorted.outcomes(many?, single?);
        // Noted once it holds a job: a batch refused whole writes nothing.
        if outcomes.iter().any(Result::is_ok) {
            self.register(false).await;
        }
        Ok(outcomes)
    }
}

/// The jobs of [`enqueue_many`](Queue::enqueue_many) sorted into its two
/// pipelines, each with its place among the outcomes.
#[derive(Default)]
struct Sorted {
    /// Each job's outcome, in order: `None` until its call answers (a
    /// payload over the limit has its refusal at once).
    outcomes: Vec<Option<Result<Enqueued>>>,
    /// Each ENQUEUEMANY, and the places of its jobs among the outcomes.
    calls: Vec<EnqueueMany>,
    places: Vec<Vec<usize>>,
    /// Each ENQUEUE, and its job's place.
    alone: Vec<Enqueue>,
    alone_at: Vec<usize>,
    /// The payload bytes of the last ENQUEUEMANY.
    bytes: usize,
}

impl Sorted {
    /// Sort one job: one with options beyond an id is an ENQUEUE of its
    /// own, a payload over the limit is refused here, any other goes into
    /// the last ENQUEUEMANY.
    fn push(&mut self, payload: Vec<u8>, options: EnqueueOptions) {
        let plain = options.is_plain();
        let id = options.id.unwrap_or_else(JobId::mint);
        if !plain {
            self.alone_at.push(self.outcomes.len());
            self.outcomes.push(None);
            self.alone.push(Enqueue {
                id,
                payload,
                priority: options.priority,
                due: options.due,
                policy: options.policy,
                unique: options.unique,
                headers: options.headers,
                parent: None,
                group: options.group,
            });
            return;
        }
        if payload.len() > echomq_core::limits::MAX_PAYLOAD {
            let limit = echomq_core::limits::MAX_PAYLOAD;
            self.outcomes.push(Some(Err(crate::Error::new(
                crate::ErrorKind::TooLarge,
                format!("payload exceeds {limit} bytes"),
            ))));
            return;
        }
        self.push_many(id, payload, options.group);
    }

    /// Add a plain job to the last ENQUEUEMANY, or to a new one when that
    /// holds a thousand jobs, is another group's, or the payload would take
    /// it past [`ENQUEUE_BYTES`].
    fn push_many(&mut self, id: JobId, payload: Vec<u8>, group: Option<String>) {
        let full = |call: &EnqueueMany| {
            call.jobs.len() as u64 == *echomq_core::limits::ENQUEUES.end()
                || self.bytes + payload.len() > ENQUEUE_BYTES
                || call.group != group
        };
        if self.calls.last().is_none_or(full) {
            self.calls.push(EnqueueMany { jobs: Vec::new(), parent: None, group });
            self.places.push(Vec::new());
            self.bytes = 0;
        }
        self.bytes += payload.len();
        self.places.last_mut().expect("a call is open").push(self.outcomes.len());
        self.calls.last_mut().expect("a call is open").jobs.push((id, payload));
        self.outcomes.push(None);
    }

    /// Every job's outcome, in order, from the replies of the ENQUEUEMANY
    /// calls (`many`) and of the ENQUEUEs (`single`).
    fn outcomes(
        mut self,
        many: Vec<Result<Vec<Admission>>>,
        single: Vec<Result<Admission>>,
    ) -> Vec<Result<Enqueued>> {
        for ((call, places), reply) in self.calls.into_iter().zip(self.places).zip(many) {
            let admissions = admissions(call.jobs.len(), reply);
            let ids = call.jobs.into_iter().map(|(id, _)| id).zip(places);
            match admissions {
                Ok(admissions) => {
                    for ((id, at), admission) in ids.zip(admissions) {
                        self.outcomes[at] = Some(Ok(enqueued(id, admission)));
                    }
                }
                Err(err) => {
                    for (_, at) in ids {
                        self.outcomes[at] = Some(Err(err.clone()));
                    }
                }
            }
        }
        for ((call, at), reply) in self.alone.into_iter().zip(self.alone_at).zip(single) {
            self.outcomes[at] = Some(reply.map(|admission| enqueued(call.id, admission)));
        }
        self.outcomes.into_iter().map(|outcome| outcome.expect("every job has its outcome")).collect()
    }
}

/// The admissions of an ENQUEUEMANY of `sent` jobs, one a job: a reply of
/// another length is an error of each of them.
fn admissions(sent: usize, reply: Result<Vec<Admission>>) -> Result<Vec<Admission>> {
    match reply {
        Ok(admissions) if admissions.len() == sent => Ok(admissions),
        Ok(admissions) => Err(crate::Error::new(
            crate::ErrorKind::Reply,
            format!("ENQUEUEMANY answered {} replies for {sent} jobs", admissions.len()),
        )),
        Err(err) => Err(err),
    }
}

/// The most payload bytes one ENQUEUEMANY of `enqueue_batch` carries.
const ENQUEUE_BYTES: usize = 8 << 20;
