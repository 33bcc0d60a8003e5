//! Partitioned queues (PROTOCOL.md §7.10, protocol 1.8): one logical queue
//! over N ordinary queues, its **partitions**, whose names are chosen so
//! that their Cluster slots spread evenly over the slot space, and so over
//! the primaries of a Cluster whose primaries hold equal ranges. A queue is
//! one slot, so one Redis main thread; a partitioned queue is N of them.
//!
//! Every partition is an ordinary queue: every transition, fencing, groups
//! and flows hold in it as in any queue. What the partitioned queue adds is
//! where a job goes, decided by its id alone, so any tool finds a job from
//! its id: partition `CRC16(id) mod N`. A producer that wants jobs together
//! (a group's, whose cap and order then hold exactly; a unique key's, which
//! is then exact; a batch's) routes them by a key: the partition
//! `CRC16(key) mod N`, and each job's id is minted until it names that
//! partition. What is lost: FIFO and priority across partitions, and a
//! queue's settings are each partition's own. One rate and one
//! concurrency may still hold across them all, exactly, on request
//! ([`Partitioned::exact_rate`], [`Partitioned::exact_concurrency`]): each
//! claim then asks the queue's coordinator for permits first, and under a
//! concurrency each job keeps its permit until it ends.
//!
//! ```no_run
//! # async fn demo(via: std::sync::Arc<dyn echomq::Executor>) -> echomq::Result<()> {
//! use echomq::Partitioned;
//! let orders = Partitioned::create(via, "orders", 12).await?;
//! let id = orders.enqueue(b"{\"sku\":42}".to_vec()).await?;
//! assert_eq!(orders.partition_of(&id).name(), orders.partitions()[orders.index_of(&id)].name());
//! # Ok(()) }
//! ```

use std::sync::Arc;

mod exact;
mod settings;

pub(crate) use exact::Coordinator;

use crate::executor::{Command, Executor};
use crate::keyspace::{self, valid_queue};
use crate::queue::{EnqueueOptions, Enqueued};
use crate::transition::StatsReply;
use crate::worker::{Handler, Worker, WorkerOptions};
use crate::{ChildJobs, Error, ErrorKind, Flow, JobId, OnFailure, Queue, Rate, Result};
use echomq_core::limits;

/// The most partitions a queue may have: each then spans 16 slots.
pub const MAX_PARTITIONS: usize = 1024;

/// The longest partitioned queue's name, in bytes: its partitions' names
/// (`<name>~<k>~<s>`) stay within a queue name's 255.
pub const MAX_PARTITIONED_NAME: usize = 240;

/// The rule that maps an id to its partition, as the definition names it.
const ROUTING: &str = "crc16";

/// A job of [`Partitioned::enqueue_many`]: its payload and options.
type Job = (Vec<u8>, EnqueueOptions);

/// The most jobs [`Partitioned::enqueue_many`] puts in one partition in a
/// row: one ENQUEUEMANY's worth (`ENQUEUES`).
const RUN: usize = 1000;

/// Redis Cluster's slots.
const SLOTS: usize = 16384;

/// CRC16-XMODEM, the checksum Redis Cluster hashes keys with.
fn crc16(bytes: &[u8]) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(bytes)
}

/// The Cluster slot of every key of queue `queue` (its `{queue}` hashtag).
#[must_use]
pub fn queue_slot(queue: &str) -> u16 {
    crc16(queue.as_bytes()) % SLOTS as u16
}

/// The partition, of `count`, that routing by `key` (an id, a group, a
/// unique key, any text) names: `CRC16(key) mod count`.
#[must_use]
pub fn partition_index(key: &str, count: usize) -> usize {
    usize::from(crc16(key.as_bytes())) % count.max(1)
}

/// The name of partition `k` of `count` of the partitioned queue `name`:
/// `<name>~<k>~<s>`, `s` the least number from 0 up whose name's slot lies
/// in the `k`-th of `count` equal ranges of the 16,384 slots.
#[must_use]
pub fn partition_name(name: &str, k: usize, count: usize) -> String {
    let count = count.clamp(1, MAX_PARTITIONS);
    let range = k * SLOTS / count..(k + 1) * SLOTS / count;
    (0u64..)
        .map(|s| format!("{name}~{k}~{s}"))
        .find(|candidate| range.contains(&usize::from(queue_slot(candidate))))
        .unwrap_or_default() // every range of 16 slots or more holds one: tests/partitions.rs
}

/// Check a partitioned queue's name and its count of partitions.
fn check(name: &str, count: usize) -> Result<()> {
    valid_queue(name)?;
    if name.len() > MAX_PARTITIONED_NAME {
        return Err(Error::new(
            ErrorKind::InvalidQueue,
            format!("{name:?}: a partitioned queue's name is at most {MAX_PARTITIONED_NAME} bytes"),
        ));
    }
    if !(1..=MAX_PARTITIONS).contains(&count) {
        return Err(Error::new(
            ErrorKind::Argument,
            format!("a queue has 1 to {MAX_PARTITIONS} partitions, not {count}"),
        ));
    }
    Ok(())
}

/// The exact rate a definition holds: its `rate` (none when missing or 0)
/// and `per`, as PERMIT reads them (PROTOCOL.md §7.10); none for one that
/// is malformed too, which PERMIT refuses (`EMQDATA`), so claims say it.
fn exact_of<'a>(field: &impl Fn(&str) -> Option<&'a str>) -> Option<Rate> {
    let number = |name: &str| field(name).and_then(|text| text.parse::<u64>().ok());
    let (claims, per) = (number("rate")?, number("per")?);
    (claims > 0 && limits::RATE.contains(&claims) && limits::EXACT_PERIOD_MS.contains(&per))
        .then(|| Rate { claims, per: std::time::Duration::from_millis(per) })
}

/// One logical queue over its partitions (see the [module](self)).
#[derive(Clone, Debug)]
pub struct Partitioned {
    name: String,
    partitions: Vec<Queue>,
    /// Its exact limits' coordinator, which every queue it works asks.
    coordinator: Arc<Coordinator>,
    /// Its exact rate when it was opened.
    exact: Option<Rate>,
    /// Its exact concurrency when it was opened.
    running_cap: Option<u64>,
}

impl Partitioned {
    /// Partition the queue `name` over `count` queues, or open it when it
    /// is partitioned so already: its definition (`emq:{name}:partitions`)
    /// is written once, and a second creator with the same count writes
    /// the same.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidQueue`] for a bad name; [`ErrorKind::Argument`]
    /// for a count outside 1 to 1,024, when `name` is partitioned another
    /// way, or when `name` is an ordinary queue holding jobs (nothing
    /// written); what [`open`](Partitioned::open) refuses; a failure of the
    /// connection or the server.
    pub async fn create(via: Arc<dyn Executor>, name: &str, count: usize) -> Result<Partitioned> {
        check(name, count)?;
        let ordinary = Queue::new(via.clone(), name)?;
        let held =
            [ordinary.keyspace().pending(), ordinary.keyspace().active(), ordinary.keyspace().delayed()];
        let answers = via.plain().send(&held.map(Command::Exists)).await?;
        for answer in answers {
            if answer?.int()? != 0 {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!("{name:?} is an ordinary queue holding jobs: partition another name"),
                ));
            }
        }
        let key = keyspace::partitions(name);
        via.plain().one(Command::HSetNx(key.clone(), "count".into(), count.to_string())).await?;
        let found = Partitioned::open(via.clone(), name).await?;
        if found.partitions.len() != count {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("{name:?} is partitioned {} ways, not {count}", found.partitions.len()),
            ));
        }
        let mut fields = vec![("routing".to_owned(), ROUTING.to_owned()), ("protocol".into(), "1.8".into())];
        fields.extend(
            found.partitions.iter().enumerate().map(|(k, q)| (format!("queue:{k}"), q.name().into())),
        );
        via.plain().one(Command::HSet(key, fields)).await?;
        Ok(found)
    }

    /// The partitioned queue `name`, as its definition says.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] when `name` is not partitioned; [`ErrorKind::Malformed`] for a definition whose count or
    /// partition names break the protocol; [`ErrorKind::Version`] for a
    /// routing rule this speaker does not know; a failure of the connection
    /// or the server ([`ErrorKind::Server`] for a key of another type).
    pub async fn open(via: Arc<dyn Executor>, name: &str) -> Result<Partitioned> {
        Partitioned::find(via, name).await?.ok_or_else(|| {
            Error::new(
                ErrorKind::Argument,
                format!("{name:?} is not a partitioned queue (no {})", keyspace::partitions(name)),
            )
        })
    }

    /// The partitioned queue `name`, or `None` when it is not partitioned.
    ///
    /// # Errors
    /// As [`open`](Partitioned::open), but for a name that is not partitioned.
    pub async fn find(via: Arc<dyn Executor>, name: &str) -> Result<Option<Partitioned>> {
        valid_queue(name)?;
        let key = keyspace::partitions(name);
        let fields = via.plain().one(Command::HGetAll(key.clone())).await?.fields()?;
        if fields.is_empty() {
            return Ok(None);
        }
        let field =
            |wanted: &str| fields.iter().find(|(field, _)| field == wanted).map(|(_, value)| value.as_str());
        let malformed = |why: String| Error::new(ErrorKind::Malformed, format!("{key}: {why}"));
        let count = field("count")
            .and_then(|text| text.parse::<usize>().ok())
            .filter(|count| (1..=MAX_PARTITIONS).contains(count))
            .ok_or_else(|| malformed(format!("count {:?} is not 1 to {MAX_PARTITIONS}", field("count"))))?;
        if let Some(routing) = field("routing").filter(|routing| *routing != ROUTING) {
            return Err(Error::new(
                ErrorKind::Version,
                format!("{key}: routing {routing:?} is unknown to this speaker (it routes by {ROUTING})"),
            ));
        }
        let coordinator = Arc::new(Coordinator::new(Queue::new(via.clone(), name)?));
        let mut partitions = Vec::with_capacity(count);
        for k in 0..count {
            // Written with the count, or derived by the rule that chose them.
            let name =
                field(&format!("queue:{k}")).map_or_else(|| partition_name(name, k, count), str::to_owned);
            let queue = Queue::new(via.clone(), &name).map_err(|err| malformed(err.to_string()))?;
            partitions.push(queue.coordinated(coordinator.clone()));
        }
        // A malformed one does not close the queue: its claims are refused (PERMIT's EMQDATA).
        let exact = exact_of(&field);
        let running_cap = field("concurrency")
            .and_then(|text| text.parse::<u64>().ok())
            .filter(|cap| *cap > 0 && limits::EXACT_CONCURRENCY.contains(cap));
        Ok(Some(Partitioned { name: name.to_owned(), partitions, coordinator, exact, running_cap }))
    }

    /// The partitioned queue's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its exact rate across the partitions ([`exact_rate`](Partitioned::exact_rate)),
    /// as the definition held it when this was opened; `None` for none.
    #[must_use]
    pub fn exact(&self) -> Option<Rate> {
        self.exact
    }

    /// Its partitions, in order: partition `k` is the `k`-th.
    #[must_use]
    pub fn partitions(&self) -> &[Queue] {
        &self.partitions
    }

    /// The index of the partition that holds the job `id`.
    #[must_use]
    pub fn index_of(&self, id: &JobId) -> usize {
        partition_index(id.as_str(), self.partitions.len())
    }

    /// The partition that holds the job `id`: read, cancel or retry it there.
    #[must_use]
    pub fn partition_of(&self, id: &JobId) -> &Queue {
        &self.partitions[self.index_of(id)]
    }

    /// The partition that routing by `key` names.
    #[must_use]
    pub fn partition_for(&self, key: &str) -> &Queue {
        &self.partitions[partition_index(key, self.partitions.len())]
    }

    /// A new id of partition `k`: minted until `CRC16(id) mod N` is `k`
    /// (N tries on average), so mint order, and FIFO, hold within it.
    #[must_use]
    pub fn mint_in(&self, k: usize) -> JobId {
        let count = self.partitions.len();
        loop {
            let id = JobId::mint();
            if partition_index(id.as_str(), count) == k % count {
                return id;
            }
        }
    }

    /// The id a job enqueued with `options` takes, which names its
    /// partition: the id the options give; else one minted in the
    /// partition its group's name routes to (the group's cap, rate and
    /// order hold exactly, all its jobs being in one partition), else its
    /// unique key's (the key is exact); else a new id, spreading jobs evenly.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for a given id of another partition than the
    /// one its group or unique key routes to.
    pub fn place(&self, options: &EnqueueOptions) -> Result<JobId> {
        self.place_by(options.route_key(), options)
    }

    fn place_by(&self, key: Option<&str>, options: &EnqueueOptions) -> Result<JobId> {
        let Some(key) = key else {
            return Ok(options.given_id().cloned().unwrap_or_else(JobId::mint));
        };
        let k = partition_index(key, self.partitions.len());
        match options.given_id() {
            None => Ok(self.mint_in(k)),
            Some(id) if self.index_of(id) == k => Ok(id.clone()),
            Some(id) => Err(Error::new(
                ErrorKind::Argument,
                format!("job {id} belongs to partition {}, not {k} where {key:?} routes", self.index_of(id)),
            )),
        }
    }

    /// Enqueue a job to run now, in its id's partition; its new id.
    ///
    /// # Errors
    /// As [`Queue::enqueue`].
    pub async fn enqueue(&self, payload: impl Into<Vec<u8>>) -> Result<JobId> {
        Ok(self.enqueue_with(payload, EnqueueOptions::default()).await?.id)
    }

    /// Enqueue a job with options, in the partition [`place`](Partitioned::place) names.
    ///
    /// # Errors
    /// As [`Queue::enqueue_with`], and [`place`](Partitioned::place)'s refusal (nothing sent).
    pub async fn enqueue_with(
        &self,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
    ) -> Result<Enqueued> {
        let id = self.place(&options)?;
        self.partition_of(&id).enqueue_with(payload, options.id(id)).await
    }

    /// Enqueue a job in the partition routing by `key` names (jobs that
    /// must stay together: a customer's, a batch's), its id minted there.
    ///
    /// # Errors
    /// As [`enqueue_with`](Partitioned::enqueue_with), for an id of another
    /// partition than `key`'s.
    pub async fn enqueue_routed(
        &self,
        key: &str,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
    ) -> Result<Enqueued> {
        let id = self.place_by(Some(key), &options)?;
        self.partition_of(&id).enqueue_with(payload, options.id(id)).await
    }

    /// Enqueue many jobs, each partition's share as [`Queue::enqueue_many`]
    /// sends them, the partitions at once; each job's outcome, in order. A
    /// job with an id, a group or a unique key goes where
    /// [`place`](Partitioned::place) says; the others are sticky, a run of
    /// up to a thousand in the partition of the run's first new id: one
    /// ENQUEUEMANY for the run, as one queue's would be, where spreading
    /// it would send a smaller one to each partition; the runs, each in a
    /// partition of its own choosing, spread evenly.
    ///
    /// # Errors
    /// As [`Queue::enqueue_many`], for any partition; a job `place`
    /// refuses has that refusal as its outcome, and is not sent.
    pub async fn enqueue_many<P: Into<Vec<u8>>>(
        &self,
        jobs: impl IntoIterator<Item = (P, EnqueueOptions)>,
    ) -> Result<Vec<Result<Enqueued>>> {
        let mut outcomes: Vec<Option<Result<Enqueued>>> = Vec::new();
        // Each partition's share: where its jobs stand among the outcomes, and the jobs.
        let mut shares: Vec<(Vec<usize>, Vec<Job>)> = vec![Default::default(); self.partitions.len()];
        // The sticky run: its partition, and how many jobs it has taken.
        let mut run: Option<(usize, usize)> = None;
        for (payload, options) in jobs {
            let placed = match run {
                _ if options.given_id().is_some() || options.route_key().is_some() => self.place(&options),
                Some((k, taken)) if taken < RUN => {
                    run = Some((k, taken + 1));
                    Ok(self.mint_in(k))
                }
                _ => {
                    let id = JobId::mint();
                    run = Some((self.index_of(&id), 1));
                    Ok(id)
                }
            };
            match placed {
                Ok(id) => {
                    let (places, share) = &mut shares[self.index_of(&id)];
                    places.push(outcomes.len());
                    share.push((payload.into(), options.id(id)));
                    outcomes.push(None);
                }
                Err(refused) => outcomes.push(Some(Err(refused))),
            }
        }
        let sent = shares
            .into_iter()
            .zip(&self.partitions)
            .filter(|((places, _), _)| !places.is_empty())
            .map(|((places, share), queue)| async move { (places, queue.enqueue_many(share).await) });
        for (places, answered) in futures_util::future::join_all(sent).await {
            for (at, outcome) in places.into_iter().zip(answered?) {
                outcomes[at] = Some(outcome);
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|outcome| outcome.unwrap_or_else(|| Err(Error::new(ErrorKind::Reply, "no answer"))))
            .collect())
    }

    /// `flow` with a child in this partitioned queue: its id placed as
    /// [`place`](Partitioned::place) places a job's (a given one, or one
    /// minted in its group's partition, or anywhere), and the child in that
    /// id's partition, so that the id rule holds for it too. The flow's
    /// parent and other children may be in any queues or partitions.
    ///
    /// # Errors
    /// [`place`](Partitioned::place)'s refusal.
    pub fn flow_child(
        &self,
        flow: Flow,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
        on_failure: OnFailure,
    ) -> Result<Flow> {
        let id = self.place(&options)?;
        Ok(flow.child_with(self.partition_of(&id).name(), payload, options.id(id), on_failure))
    }

    /// `children` and one more in this partitioned queue, for the running
    /// job `parent` to [`wait_for`](crate::worker::JobContext::wait_for):
    /// its id, unless the options give one, derived from `parent`, its
    /// place among `children` and its payload, as `wait_for` derives a
    /// child's, so that a handler that runs again names the same child; in
    /// its group's partition when it has a group (derived until it lands
    /// there), else in its id's. `parent` may be in any queue or partition.
    ///
    /// # Errors
    /// [`place`](Partitioned::place)'s refusal of a given id.
    pub fn job_child(
        &self,
        children: ChildJobs,
        parent: &JobId,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
        on_failure: OnFailure,
    ) -> Result<ChildJobs> {
        let payload = payload.into();
        let id = match options.given_id() {
            Some(_) => self.place(&options)?,
            None => self.derive_child(parent, children.len(), &payload, options.route_key()),
        };
        Ok(children.child_with(self.partition_of(&id).name(), payload, options.id(id), on_failure))
    }

    /// The id of `parent`'s child at `at`: `JobId::child` of this queue's
    /// name, or with `key` of the name and the first salt (`<name>~<salt>`)
    /// whose id lies in the partition `key` routes to (N tries on average).
    fn derive_child(&self, parent: &JobId, at: usize, payload: &[u8], key: Option<&str>) -> JobId {
        let Some(key) = key else { return parent.child(at, &self.name, payload) };
        let k = partition_index(key, self.partitions.len());
        (0u64..)
            .map(|salt| parent.child(at, &format!("{}~{salt}", self.name), payload))
            .find(|id| self.index_of(id) == k)
            .expect("an unbounded search finds an id in every partition")
    }

    /// Its exact concurrency ([`exact_concurrency`](Partitioned::exact_concurrency)),
    /// as the definition held it when this was opened; `None` for none.
    #[must_use]
    pub fn running_cap(&self) -> Option<u64> {
        self.running_cap
    }

    /// How many of its jobs hold running permits now under its exact
    /// concurrency ([`exact_concurrency`](Partitioned::exact_concurrency)):
    /// the permits that run at the server's now; 0 with none set.
    ///
    /// # Errors
    /// A failure of the connection or the server.
    pub async fn running(&self) -> Result<u64> {
        let plain = self.partitions[0].executor().plain();
        let now = plain.one(Command::Time).await?.int()? as f64;
        let count = usize::try_from(*limits::EXACT_CONCURRENCY.end()).unwrap_or(usize::MAX);
        let range = Command::ZRange { key: keyspace::running(&self.name), count, latest: true };
        let permits = plain.one(range).await?.scored()?;
        Ok(permits.iter().take_while(|(_, ends)| *ends > now).count() as u64)
    }

    /// How many jobs it holds in each state: its partitions' and the
    /// ordinary queue of its name's (where a speaker before 1.8 enqueues),
    /// summed; one STATS a queue, at once.
    ///
    /// # Errors
    /// As [`Queue::stats`], of any of them.
    pub async fn stats(&self) -> Result<StatsReply> {
        let queues = self.worked();
        let each = futures_util::future::try_join_all(queues.iter().map(Queue::stats)).await?;
        Ok(each.into_iter().fold(StatsReply::default(), |sum, stats| sum + stats))
    }

    /// Every queue a worker of the partitioned queue works: its partitions,
    /// then the ordinary queue of its own name, where a speaker that does
    /// not know protocol 1.8 enqueues (PROTOCOL.md §7.10).
    #[must_use]
    pub fn worked(&self) -> Vec<Queue> {
        let via = self.partitions[0].executor().clone();
        let ordinary = Queue::new(via, &self.name).expect("the name was checked");
        let ordinary = ordinary.coordinated(self.coordinator.clone());
        self.partitions.iter().cloned().chain([ordinary]).collect()
    }

    /// A worker running `handler` on the jobs of every queue
    /// [`worked`](Partitioned::worked) names, its concurrency shared by them all.
    /// The workers of a partitioned queue keep each of those queues' upkeep
    /// one at a time, under the queue's upkeep lease (PROTOCOL.md §11.3),
    /// given back when the worker stops.
    pub fn worker(&self, handler: impl Handler, options: WorkerOptions) -> Worker {
        let mut queues = self.worked().into_iter();
        let first = queues.next().expect("a partitioned queue has a partition");
        queues.fold(Worker::with_options(first, handler, options), Worker::queue)
    }
}
