//! Flows: a parent job that runs once its children, in any queues, have
//! ended (protocol 1.6, PROTOCOL.md §7.8). [`Flows::add`] writes the
//! parent (FLOW), then its children, each with a link to it; every
//! transition that ends a child leaves a notice in the child's queue, and
//! [`relay`] (every worker's upkeep) carries the notices to their parents.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{EnqueueOptions, Queue};
use crate::executor::{execute, execute_batch, Answer, Command};
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::transition::{
    Adopt, Adopted, Children, ChildrenReply, Dependency, Enqueue, EnqueueMany, Flow as FlowCall, Flowed,
    Headers, JobRef, Link, OnFailure, Outcome, Resolve,
};
use crate::{Error, ErrorKind, Policy, Result};

/// A parent job and its children, for [`Flows::add`]: the parent
/// runs once every child has ended (done, or as each child's
/// [`OnFailure`] says), and reads what they returned
/// ([`JobContext::children_results`](crate::worker::JobContext::children_results)).
///
/// ```no_run
/// # async fn demo(reports: echomq::Queue) -> echomq::Result<()> {
/// use echomq::{Flow, OnFailure};
/// let flow = Flow::new(b"merge".to_vec())
///     .child("render", b"page 1".to_vec())
///     .child("render", b"page 2".to_vec())
///     .child_flow("thumbs", Flow::new(b"sum".to_vec()).child("resize", b"a".to_vec()), OnFailure::Ignore);
/// let added = echomq::Flows::of(&reports).add(flow).await?;
/// println!("parent {} waits for {} children", added.parent, added.children.len());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Flow {
    payload: Vec<u8>,
    id: JobId,
    priority: i64,
    policy: Option<Policy>,
    headers: Headers,
    children: ChildJobs,
}

/// One child of a [`Flow`]: a job, or a parent of its own.
#[derive(Clone, Debug)]
struct FlowChild {
    queue: String,
    on_failure: OnFailure,
    node: Node,
}

#[derive(Clone, Debug)]
enum Node {
    Job { payload: Vec<u8>, options: EnqueueOptions },
    Flow(Flow),
}

impl Flow {
    /// A parent whose job is `payload`, its id minted now: every id of a
    /// flow is fixed when it is built, so adding the same flow again (a
    /// clone, after a failure) adds only what is missing.
    #[must_use]
    pub fn new(payload: impl Into<Vec<u8>>) -> Flow {
        Flow {
            payload: payload.into(),
            id: JobId::mint(),
            priority: 0,
            policy: None,
            headers: Headers::default(),
            children: ChildJobs::new(),
        }
    }

    /// The parent's id, instead of the one minted.
    #[must_use]
    pub fn id(mut self, id: JobId) -> Flow {
        self.id = id;
        self
    }

    /// The parent is claimed before (lower) or after (higher) jobs of
    /// priority 0, once it is pending.
    #[must_use]
    pub fn priority(mut self, priority: i64) -> Flow {
        self.priority = priority;
        self
    }

    /// The parent's own policy (attempts, back-off, timeout).
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Flow {
        self.policy = Some(policy);
        self
    }

    /// A header handed to the parent's handler.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Flow {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// A child in `queue`, which fails the parent if it fails
    /// ([`OnFailure::Fail`]).
    #[must_use]
    pub fn child(self, queue: &str, payload: impl Into<Vec<u8>>) -> Flow {
        self.child_with(queue, payload, EnqueueOptions::default(), OnFailure::Fail)
    }

    /// A child in `queue` with its own options (an id, a priority, a
    /// delay, a policy, headers; not a unique key, which could leave the
    /// child unenqueued), and what the parent does if it fails.
    #[must_use]
    pub fn child_with(
        mut self,
        queue: &str,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
        on_failure: OnFailure,
    ) -> Flow {
        // Its id fixed now, as the parent's.
        let options = if options.id.is_some() { options } else { options.id(JobId::mint()) };
        self.children = self.children.child_with(queue, payload, options, on_failure);
        self
    }

    /// A child in `queue` that is a parent itself: a nested flow, which
    /// ends (for this parent) when it has run.
    #[must_use]
    pub fn child_flow(mut self, queue: &str, flow: Flow, on_failure: OnFailure) -> Flow {
        self.children.children.push(FlowChild {
            queue: queue.to_owned(),
            on_failure,
            node: Node::Flow(flow),
        });
        self
    }
}

/// Children a running job adds to itself and waits for
/// ([`JobContext::wait_for`](crate::worker::JobContext::wait_for)): jobs in
/// any queues, each with what the parent does if it fails.
///
/// A child's id, unless given one, is derived from its parent's id, its
/// place among these children, its queue and its payload: a handler that
/// runs again (after its children ended, or a crash) names the same
/// children, which are not added twice.
#[derive(Clone, Debug, Default)]
pub struct ChildJobs {
    children: Vec<FlowChild>,
}

impl ChildJobs {
    /// No children yet.
    #[must_use]
    pub fn new() -> ChildJobs {
        ChildJobs::default()
    }

    /// A child in `queue`, which fails the parent if it fails
    /// ([`OnFailure::Fail`]).
    #[must_use]
    pub fn child(self, queue: &str, payload: impl Into<Vec<u8>>) -> ChildJobs {
        self.child_with(queue, payload, EnqueueOptions::default(), OnFailure::Fail)
    }

    /// A child in `queue` with its own options (an id, a priority, a
    /// delay, a policy, headers; not a unique key), and what the parent
    /// does if it fails.
    #[must_use]
    pub fn child_with(
        mut self,
        queue: &str,
        payload: impl Into<Vec<u8>>,
        options: EnqueueOptions,
        on_failure: OnFailure,
    ) -> ChildJobs {
        let node = Node::Job { payload: payload.into(), options };
        self.children.push(FlowChild { queue: queue.to_owned(), on_failure, node });
        self
    }
}

/// What [`Flows::add`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowAdded {
    /// The parent.
    pub parent: JobRef,
    /// The parent's incarnation: what its children's links name.
    pub incarnation: u64,
    /// Whether the parent was written now (`false`: it existed, from an
    /// earlier add of the same flow, and its missing children were added).
    pub created: bool,
    /// Its children, in the order given.
    pub children: Vec<JobRef>,
}

/// A queue's flows ([`Flows::of`] the queue): adding them, and reading a
/// parent's children.
#[derive(Clone, Copy, Debug)]
pub struct Flows<'q> {
    queue: &'q Queue,
}

impl<'q> Flows<'q> {
    /// The flows whose parents are in `queue`.
    #[must_use]
    pub fn of(queue: &'q Queue) -> Flows<'q> {
        Flows { queue }
    }

    /// Add a flow: its parent in this queue, `waiting`, then each child in
    /// its own queue (on this queue's executor), nested flows the same way.
    /// Adding a flow again with the same ids adds only what is missing: a
    /// producer that died half-way adds it again.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for a flow with no child, more than
    /// [`limits::FLOW_CHILDREN`](echomq_core::limits::FLOW_CHILDREN), a child named
    /// twice, a child with a unique key, or a queue name the protocol
    /// refuses, before anything is sent; [`ErrorKind::State`] when the
    /// parent's id names a job that is no parent; as any enqueue otherwise
    /// (the parent and the children written before the failure stand, and
    /// adding the flow again completes it).
    pub async fn add(&self, flow: Flow) -> Result<FlowAdded> {
        Box::pin(self.queue.add_node(flow, None)).await
    }

    /// A parent's children, each one's state and result, as its queue
    /// holds them: `None` for a job that is no parent.
    ///
    /// # Errors
    /// A key of the wrong type, a failure of the connection or the server.
    pub async fn children(&self, id: &JobId) -> Result<Option<ChildrenReply>> {
        self.queue.run(&Children { id: id.clone() }).await
    }
}

impl Queue {
    async fn add_node(&self, flow: Flow, parent: Option<Link>) -> Result<FlowAdded> {
        let id = flow.id.clone();
        let children =
            flow.children.children.iter().map(FlowChild::named).collect::<Result<Vec<JobRef>>>()?;
        check_children(&children)?;
        let call = FlowCall {
            id: id.clone(),
            payload: flow.payload,
            children: flow
                .children
                .children
                .iter()
                .zip(&children)
                .map(|(child, named)| Dependency { child: named.clone(), on_failure: child.on_failure })
                .collect(),
            priority: flow.priority,
            policy: flow.policy,
            headers: flow.headers,
            parent,
        };
        let (incarnation, created) = match self.run(&call).await? {
            Flowed::Created(incarnation) => (incarnation, true),
            Flowed::Exists(incarnation) => (incarnation, false),
            Flowed::NoParent => {
                return Err(Error::new(
                    ErrorKind::State,
                    format!("{id} of {} exists and is no flow's parent", self.name()),
                ))
            }
        };
        self.register(false).await;
        let me = JobRef::new(self.name(), id)?;
        let link = Link { incarnation, parent: me.clone() };
        self.add_children(flow.children.children, &children, &link).await?;
        Ok(FlowAdded { parent: me, incarnation, created, children })
    }

    /// The children of a parent written with `link`: the jobs in one
    /// round trip per queue, the nested flows each in turn.
    async fn add_children(&self, children: Vec<FlowChild>, named: &[JobRef], link: &Link) -> Result<()> {
        let mut jobs: BTreeMap<String, Vec<Enqueue>> = BTreeMap::new();
        for (child, named) in children.into_iter().zip(named) {
            match child.node {
                Node::Flow(flow) => {
                    let queue = Queue::new(self.executor().clone(), &child.queue)?;
                    Box::pin(queue.add_node(flow, Some(link.clone()))).await?;
                }
                Node::Job { payload, options } => {
                    let enqueue = options.into_child(named.id.clone(), payload, link.clone());
                    jobs.entry(child.queue).or_default().push(enqueue);
                }
            }
        }
        for (queue, calls) in jobs {
            let keys = Keyspace::new(&queue)?;
            // The plain ones (an id and a payload) in ENQUEUEMANYs with the
            // link, one call a thousand; those with options one by one.
            let (plain, own): (Vec<Enqueue>, Vec<Enqueue>) = calls.into_iter().partition(is_plain);
            for chunk in plain.chunks(*echomq_core::limits::ENQUEUES.end() as usize) {
                let jobs = chunk.iter().map(|call| (call.id.clone(), call.payload.clone())).collect();
                execute(&**self.executor(), &keys, &EnqueueMany { jobs, parent: Some(link.clone()) }).await?;
            }
            for outcome in execute_batch(&**self.executor(), &keys, &own).await? {
                outcome?;
            }
            Queue::new(self.executor().clone(), &queue)?.register(false).await;
        }
        Ok(())
    }
}

impl Queue {
    /// ADOPT `children` for the job `id` its holder runs with `token`, then
    /// enqueue those open: `true` when the job now waits for them, `false`
    /// when each had ended (the holder goes on). `waits` is set as soon as
    /// the job waits, before the children are enqueued, so that the
    /// holder sends nothing more for its claim whatever follows.
    pub(crate) async fn adopt(
        &self,
        holder: (&JobId, u64, u64),
        children: ChildJobs,
        waits: &AtomicBool,
    ) -> Result<bool> {
        let (id, token, max_attempts) = holder;
        let mut children = children.children;
        for (at, child) in children.iter_mut().enumerate() {
            if let Node::Job { payload, options } = &mut child.node {
                if options.id.is_none() {
                    options.id = Some(id.child(at, &child.queue, payload));
                }
            }
        }
        let named = children.iter().map(FlowChild::named).collect::<Result<Vec<JobRef>>>()?;
        check_children(&named)?;
        let dependencies = children
            .iter()
            .zip(&named)
            .map(|(child, named)| Dependency { child: named.clone(), on_failure: child.on_failure });
        let call = Adopt { id: id.clone(), token, max_attempts, children: dependencies.collect() };
        let Adopted::Waits { incarnation, open } = self.run(&call).await? else { return Ok(false) };
        waits.store(true, Ordering::Release);
        let link = Link { incarnation, parent: JobRef::new(self.name(), id.clone())? };
        let (open_children, open_named): (Vec<FlowChild>, Vec<JobRef>) =
            children.into_iter().zip(named).filter(|(_, named)| open.contains(named)).unzip();
        self.add_children(open_children, &open_named, &link).await.map_err(|err| {
            Error::new(
                err.kind,
                format!(
                    "{id} waits for its children, and enqueueing them failed: {err}; the sweep resolves \
                     those never enqueued as gone after its grace"
                ),
            )
        })?;
        Ok(true)
    }
}

impl FlowChild {
    /// The child's reference, its id minted here when not given (so that
    /// the parent can name it before it exists).
    fn named(&self) -> Result<JobRef> {
        let id = match &self.node {
            Node::Job { options, .. } => {
                if options.unique.is_some() {
                    return Err(Error::new(
                        ErrorKind::Argument,
                        "a flow's child takes no unique key: a held key would enqueue no child",
                    ));
                }
                options.id.clone().expect("an id fixed when the child was added")
            }
            Node::Flow(flow) => flow.id.clone(),
        };
        JobRef::new(&self.queue, id)
    }
}

/// Whether a child's ENQUEUE has no option but its link: it fits in the
/// children's ENQUEUEMANY.
fn is_plain(call: &Enqueue) -> bool {
    call.priority == 0
        && matches!(call.due, crate::transition::Due::Now)
        && call.policy.is_none()
        && call.unique.is_none()
        && call.headers.is_empty()
}

/// A flow has 1 to [`limits::FLOW_CHILDREN`](echomq_core::limits::FLOW_CHILDREN)
/// children, each named once.
fn check_children(children: &[JobRef]) -> Result<()> {
    let most = *echomq_core::limits::FLOW_CHILDREN.end() as usize;
    if children.is_empty() || children.len() > most {
        return Err(Error::new(
            ErrorKind::Argument,
            format!("a flow has 1 to {most} children, not {}", children.len()),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = children.iter().find(|child| !seen.insert(*child)) {
        return Err(Error::new(ErrorKind::Argument, format!("child {twice} is named twice")));
    }
    Ok(())
}

impl EnqueueOptions {
    /// The ENQUEUE of a flow's child: these options, under `id`, linked.
    fn into_child(self, id: JobId, payload: Vec<u8>, link: Link) -> Enqueue {
        Enqueue {
            id,
            payload,
            priority: self.priority,
            due: self.due,
            policy: self.policy,
            unique: None,
            headers: self.headers,
            parent: Some(link),
        }
    }
}

/// The most notices one relay call reads, and so the most RESOLVEs it sends.
pub(crate) const RELAY_STEP: usize = 100;

/// Carry up to [`RELAY_STEP`] of `queue`'s notices after entry `after`
/// (`0-0`: from the first) to their parents: a RESOLVE each, in one round
/// trip per parent queue, then the notices that were answered deleted. How
/// many notices it read, and the last one's id: the upkeep reads on from
/// there while a read was full, so notices that stay never hide the ones
/// behind them. A notice whose RESOLVE failed stays for the next period
/// (said in the log); one that does not read as a notice stays too, said
/// each time: it is an operator's to mend.
///
/// # Errors
/// A failure of the connection or the server reading or deleting notices.
pub(crate) async fn relay(queue: &Queue, after: &str) -> Result<(u64, String)> {
    let notices = queue.keyspace().notices();
    let via = queue.executor();
    let entries = via.plain().read_stream(&notices, after, RELAY_STEP, std::time::Duration::ZERO).await?;
    let read = entries.len() as u64;
    let last = entries.last().map_or_else(|| after.to_owned(), |entry| entry.id.clone());
    let mut by_queue: BTreeMap<String, Vec<(String, Resolve)>> = BTreeMap::new();
    for entry in entries {
        match notice(&entry.fields) {
            Some((parent_queue, resolve)) => {
                by_queue.entry(parent_queue).or_default().push((entry.id, resolve))
            }
            None => tracing::warn!(
                queue = queue.name(),
                entry = %entry.id,
                "a notice that does not read as one stays in {notices}: delete it by hand once its parent is mended"
            ),
        }
    }
    let mut applied = Vec::new();
    for (parent_queue, notices) in by_queue {
        let keys = Keyspace::new(&parent_queue)?;
        let calls: Vec<Resolve> = notices.iter().map(|(_, resolve)| resolve.clone()).collect();
        let outcomes = execute_batch(&**via, &keys, &calls).await?;
        for ((id, resolve), outcome) in notices.into_iter().zip(outcomes) {
            match outcome {
                Ok(_) => applied.push(id),
                Err(err) => tracing::warn!(
                    queue = queue.name(),
                    parent = %resolve.parent,
                    child = %resolve.child,
                    error = %err,
                    "a child's notice could not reach its parent; it stays, and is tried again"
                ),
            }
        }
    }
    if !applied.is_empty() {
        for answer in via.plain().send(&[Command::StreamDelete(notices, applied)]).await? {
            answer?;
        }
    }
    Ok((read, last))
}

/// Cancel the open children of parent `id` of `queue`, each in its own
/// queue, and a nested parent's open children in turn: none for a job that
/// is no parent. A child that ended meanwhile (done, or gone) is left as it
/// is; each job is visited once, however the flows name one another.
pub(crate) async fn cancel_children(queue: &Queue, id: &JobId) -> Result<()> {
    let mut visited = std::collections::BTreeSet::from([JobRef::new(queue.name(), id.clone())?]);
    let mut parents = vec![(queue.clone(), id.clone())];
    while let Some((queue, id)) = parents.pop() {
        let Some(children) = Flows::of(&queue).children(&id).await? else { continue };
        for child in children.children.into_iter().filter(|child| child.outcome.is_none()) {
            if !visited.insert(child.child.clone()) {
                continue;
            }
            let in_queue = Queue::new(queue.executor().clone(), &child.child.queue)?;
            match in_queue.run(&crate::transition::Cancel { id: child.child.id.clone() }).await {
                Ok(_) => parents.push((in_queue, child.child.id)),
                Err(err) if matches!(err.kind, ErrorKind::NoJob | ErrorKind::State) => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(())
}

/// How long a parent waits before the sweep looks for children of its
/// that never came to be (a producer that died between its FLOW and its
/// children's ENQUEUEs), and how long before it looks again.
pub const SWEEP_GRACE: Duration = Duration::from_secs(60);

/// The most parents one sweep looks at.
const SWEEP_PARENTS: usize = 10;

/// Look at up to [`SWEEP_PARENTS`] of `queue`'s parents that have waited
/// longer than `grace` since they began to wait (or were last looked at):
/// each open child with no record in its queue is resolved `gone`, and
/// one that ended but whose parent never heard (its notice lost, or a
/// speaker before 1.6 ended it) as it ended; then the parent's score in
/// `<q>waiting` moves to now, so the next sweep looks at others. How many
/// children it resolved.
///
/// # Errors
/// A key of the wrong type, a failure of the connection or the server.
pub(crate) async fn sweep(queue: &Queue, grace: Duration) -> Result<u64> {
    let waiting = queue.keyspace().state(crate::State::Waiting);
    let via = queue.executor();
    let reads =
        [Command::Time, Command::ZRange { key: waiting.clone(), count: SWEEP_PARENTS, latest: false }];
    let mut answers = via.plain().send(&reads).await?.into_iter();
    let now = answers.next().expect("TIME's answer")?.int()? as u64;
    let Answer::Scored(head) = answers.next().expect("ZRANGE's answer")? else {
        return Err(Error::new(ErrorKind::Reply, "ZRANGE answered no members"));
    };
    let due = now.saturating_sub(grace.as_millis() as u64) as f64;
    let mut resolved = 0;
    for (member, _) in head.into_iter().filter(|(_, score)| *score <= due) {
        let parent: JobId = member.parse()?;
        resolved += sweep_one(queue, &parent).await?;
        let bump = Command::ZAdd {
            key: waiting.clone(),
            score: Some(now),
            member,
            raise_only: true,
            existing_only: true,
        };
        for answer in via.plain().send(&[bump]).await? {
            answer?;
        }
    }
    Ok(resolved)
}

/// The sweep of one parent: its open children that are gone, or ended
/// unheard, resolved. Their queues' notices are relayed first: a child
/// done, its notice on its way and its record already trimmed by
/// retention, is told as done (with its result), never taken for gone.
async fn sweep_one(queue: &Queue, parent: &JobId) -> Result<u64> {
    let Some(children) = Flows::of(queue).children(parent).await? else { return Ok(0) };
    let queues: std::collections::BTreeSet<&str> = children
        .children
        .iter()
        .filter(|child| child.outcome.is_none())
        .map(|child| child.child.queue.as_str())
        .collect();
    for name in queues {
        let in_queue = Queue::new(queue.executor().clone(), name)?;
        let mut after = "0-0".to_owned();
        loop {
            let (read, last) = relay(&in_queue, &after).await?;
            if read < RELAY_STEP as u64 {
                break;
            }
            after = last;
        }
    }
    let Some(children) = Flows::of(queue).children(parent).await? else { return Ok(0) };
    let mut resolved = 0;
    for child in children.children.into_iter().filter(|child| child.outcome.is_none()) {
        let in_queue = Queue::new(queue.executor().clone(), &child.child.queue)?;
        let (outcome, result) = match in_queue.inspect(&child.child.id).await? {
            None => (Outcome::Gone, None),
            Some(job) => match job.record.state {
                crate::State::Done => (Outcome::Done, job.result),
                crate::State::Dead => (Outcome::Dead, None),
                crate::State::Cancelled => (Outcome::Cancelled, None),
                _ => continue,
            },
        };
        let resolve = Resolve {
            parent: parent.clone(),
            incarnation: children.incarnation,
            child: child.child,
            outcome,
            result,
        };
        if queue.run(&resolve).await? {
            tracing::info!(queue = queue.name(), %parent, child = %resolve.child, outcome = outcome.as_str(),
                "the sweep told a parent of a child it had not heard of");
            resolved += 1;
        }
    }
    Ok(resolved)
}

/// A notice's RESOLVE, and the parent's queue: `None` when its fields do
/// not read as a notice (PROTOCOL.md §7.8).
fn notice(fields: &[(String, Vec<u8>)]) -> Option<(String, Resolve)> {
    let field =
        |name: &str| fields.iter().find(|(field, _)| field == name).map(|(_, value)| value.as_slice());
    let text = |name: &str| std::str::from_utf8(field(name)?).ok();
    let parent: JobRef = text("parent")?.parse().ok()?;
    let child: JobRef = text("child")?.parse().ok()?;
    let incarnation = text("incarnation")?.parse().ok()?;
    let outcome = Outcome::parse(field("outcome")?)?;
    let result = field("result").map(<[u8]>::to_vec);
    Some((parent.queue, Resolve { parent: parent.id, incarnation, child, outcome, result }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_reads_as_its_resolve_and_anything_else_as_none() {
        let fields = |pairs: &[(&str, &str)]| -> Vec<(String, Vec<u8>)> {
            pairs.iter().map(|(f, v)| ((*f).to_owned(), v.as_bytes().to_vec())).collect()
        };
        let whole = fields(&[
            ("parent", "{reports}JOB_P"),
            ("incarnation", "17"),
            ("child", "{render}JOB_C"),
            ("outcome", "done"),
            ("result", "42"),
        ]);
        let (queue, resolve) = notice(&whole).expect("a notice");
        assert_eq!(queue, "reports");
        assert_eq!(resolve.parent.as_str(), "JOB_P");
        assert_eq!(resolve.child.to_string(), "{render}JOB_C");
        assert_eq!((resolve.incarnation, resolve.outcome), (17, Outcome::Done));
        assert_eq!(resolve.result.as_deref(), Some(&b"42"[..]));
        for broken in [
            fields(&[("parent", "{reports}JOB_P"), ("incarnation", "17"), ("child", "{render}JOB_C")]),
            fields(&[
                ("parent", "reports:JOB_P"),
                ("incarnation", "17"),
                ("child", "{render}JOB_C"),
                ("outcome", "done"),
            ]),
            fields(&[
                ("parent", "{reports}JOB_P"),
                ("incarnation", "x"),
                ("child", "{render}JOB_C"),
                ("outcome", "done"),
            ]),
            fields(&[
                ("parent", "{reports}JOB_P"),
                ("incarnation", "1"),
                ("child", "{render}JOB_C"),
                ("outcome", "lost"),
            ]),
        ] {
            assert!(notice(&broken).is_none(), "{broken:?}");
        }
    }

    #[test]
    fn a_flow_names_each_child_once_and_has_one_to_a_thousand() {
        let child = |n: u32| JobRef::new("q", format!("JOB_{n:026}").parse().unwrap()).unwrap();
        assert!(check_children(&[child(1), child(2)]).is_ok());
        assert_eq!(check_children(&[]).unwrap_err().kind, ErrorKind::Argument);
        assert_eq!(check_children(&[child(1), child(1)]).unwrap_err().kind, ErrorKind::Argument);
        let many: Vec<JobRef> = (0..1001).map(child).collect();
        assert_eq!(check_children(&many).unwrap_err().kind, ErrorKind::Argument);
    }
}
