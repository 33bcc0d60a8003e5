//! Flows: a parent job that runs once its children, in any queues, have
//! ended (protocol 1.6, PROTOCOL.md §7.8). [`Flows::add`] writes the
//! parent (FLOW), then its children, each with a link to it; every
//! transition that ends a child leaves a notice in the child's queue, and
//! [`relay`](super::relay) (every worker's upkeep) carries the notices to their parents.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{EnqueueOptions, Queue};
use crate::executor::{execute, execute_batch};
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::transition::{
    Adopt, Adopted, Children, ChildrenReply, Dependency, Enqueue, EnqueueMany, Flow as FlowCall, Flowed,
    Headers, JobRef, Link, OnFailure, Outcome,
};
use crate::State;
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
    group: Option<String>,
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
            group: None,
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

    /// The parent's group (1 to 200 bytes), whose turn and limits it
    /// takes once it is pending; a child's is its options'
    /// ([`EnqueueOptions::group`]).
    #[must_use]
    pub fn group(mut self, group: impl Into<String>) -> Flow {
        self.group = Some(group.into());
        self
    }

    /// A child in `queue`, which fails the parent if it fails
    /// ([`OnFailure::Fail`]).
    #[must_use]
    pub fn child(self, queue: &str, payload: impl Into<Vec<u8>>) -> Flow {
        self.child_with(queue, payload, EnqueueOptions::default(), OnFailure::Fail)
    }

    /// A child in `queue` with its own options (an id, a priority, a
    /// delay, a policy, headers, a group; not a unique key, which could
    /// leave the child unenqueued), and what the parent does if it fails.
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
    /// delay, a policy, headers, a group; not a unique key), and what the
    /// parent does if it fails.
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

    /// How many children so far: the place of the next.
    pub(crate) fn len(&self) -> usize {
        self.children.len()
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
    /// twice, a child with a unique key, a group's name that is not 1 to
    /// 200 bytes (anywhere in the flow), or a queue name the protocol
    /// refuses, before anything is sent; [`ErrorKind::State`] when the
    /// parent's id names a job that is no parent; as any enqueue otherwise
    /// (the parent and the children written before the failure stand, and
    /// adding the flow again completes it).
    pub async fn add(&self, flow: Flow) -> Result<FlowAdded> {
        flow.check_groups()?;
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

    /// Send a dead job of this queue back to pending at once: RETRY alone,
    /// without [`Queue::retry`]'s look at a parent's children (a parent
    /// then reads a child it heard died as dead, even one that runs again).
    ///
    /// # Errors
    /// [`ErrorKind::NoJob`] when there is no such job;
    /// [`ErrorKind::State`] for a job that is not dead; as
    /// [`Queue::cancel`] otherwise.
    pub async fn retry_now(&self, id: &JobId) -> Result<()> {
        self.queue.run(&crate::transition::Retry { id: id.clone() }).await
    }

    /// The children of a parent, as [`children`](Flows::children) read
    /// them, that it heard died and that were retried since without its
    /// hearing their end yet, each with its state in its queue (`done`
    /// while its notice is still to be relayed). RETRY counts a child
    /// recorded dead as ended: retried now, the parent would run before
    /// their second ends, and read them dead. One read a child it heard died.
    ///
    /// # Errors
    /// A key of the wrong type, a failure of the connection or the server.
    pub async fn running_again(&self, children: &ChildrenReply) -> Result<Vec<(JobRef, State)>> {
        let mut again = Vec::new();
        for child in children.children.iter().filter(|child| child.outcome == Some(Outcome::Dead)) {
            let theirs = Queue::new(self.queue.executor().clone(), &child.child.queue)?;
            if let Some(found) = theirs.inspect(&child.child.id).await? {
                if !matches!(found.record.state, State::Dead | State::Cancelled) {
                    again.push((child.child.clone(), found.record.state));
                }
            }
        }
        Ok(again)
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
            group: flow.group,
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
            // The plain ones (an id, a payload, a group) in ENQUEUEMANYs
            // with the link, one call a thousand of a group; those with
            // options one by one.
            let (plain, own): (Vec<Enqueue>, Vec<Enqueue>) = calls.into_iter().partition(is_plain);
            let mut groups: BTreeMap<Option<String>, Vec<Enqueue>> = BTreeMap::new();
            for call in plain {
                groups.entry(call.group.clone()).or_default().push(call);
            }
            for (group, plain) in groups {
                for chunk in plain.chunks(*echomq_core::limits::ENQUEUES.end() as usize) {
                    let jobs = chunk.iter().map(|call| (call.id.clone(), call.payload.clone())).collect();
                    let call = EnqueueMany { jobs, parent: Some(link.clone()), group: group.clone() };
                    execute(&**self.executor(), &keys, &call).await?;
                }
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
        children.check_groups()?;
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

impl Flow {
    /// Every group the flow names, its nested flows' too, 1 to 200 bytes:
    /// checked before its first parent is written.
    fn check_groups(&self) -> Result<()> {
        if let Some(group) = &self.group {
            crate::transition::group_name(group)?;
        }
        self.children.check_groups()
    }
}

impl ChildJobs {
    /// Every group the children name, nested flows' too, 1 to 200 bytes.
    fn check_groups(&self) -> Result<()> {
        for child in &self.children {
            match &child.node {
                Node::Job { options: EnqueueOptions { group: Some(group), .. }, .. } => {
                    crate::transition::group_name(group)?
                }
                Node::Job { .. } => {}
                Node::Flow(flow) => flow.check_groups()?,
            }
        }
        Ok(())
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

/// Whether a child's ENQUEUE has no option but its link and its group: it
/// fits in the children's ENQUEUEMANY of its group.
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
            group: self.group,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
