//! Flows (protocol 1.6) on Lua, Native and Embedded: a parent runs once,
//! after its children in other queues, and reads their results; every way
//! a child can end tells its parent; notices sent twice, late or to a
//! parent that ended change nothing.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::executor::execute;
use echomq::transition::Resolve;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{
    ChildJobs, Config, EnqueueOptions, ErrorKind, Flow, JobId, JobRef, OnFailure, Outcome, Queue, Retention,
    RetryPolicy, State, Upkeep,
};
use echomq_test_support::{eventually, unique_queue};

fn options() -> WorkerOptions {
    WorkerOptions::default()
        .concurrency(4)
        .lease(Duration::from_secs(30))
        .upkeep(Duration::from_millis(50))
        .retry(RetryPolicy::new().max_attempts(1))
}

/// Run `worker` until the returned sender is dropped or sent to.
fn spawn(worker: Worker) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        worker
            .run_until(async move {
                let _ = stopped.await;
            })
            .await
            .expect("the worker runs");
    });
    (stop, task)
}

/// What a parent saw when it ran: its children's results, by child.
type Seen = Arc<Mutex<Vec<Vec<(JobRef, Vec<u8>)>>>>;

/// A worker of `queue` whose jobs return `done <payload>`, but a parent,
/// which notes its children's results in `seen` and returns `parent`.
fn worker(queue: &Queue, seen: &Seen) -> Worker {
    let seen = seen.clone();
    Worker::with_options(
        queue.clone(),
        move |job: JobContext| {
            let seen = seen.clone();
            async move {
                if job.payload.starts_with(b"parent") {
                    let results =
                        job.children_results().await.map_err(|err| HandlerError::from(err.to_string()))?;
                    seen.lock().unwrap().push(results);
                    return Ok::<_, HandlerError>(b"parent".to_vec());
                }
                Ok([b"done ".as_slice(), &job.payload].concat())
            }
        },
        options(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_runs_once_after_its_children_in_other_queues_and_reads_their_results() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let queues: Vec<Queue> = ["parents", "render", "thumbs"]
            .map(|q| Queue::new(via.clone(), &unique_queue(q)).unwrap())
            .into();
        let [parents, render, thumbs] = [&queues[0], &queues[1], &queues[2]];
        let nested = Flow::new(b"parent nested".to_vec()).child(thumbs.name(), b"t1".to_vec());
        let flow = Flow::new(b"parent top".to_vec())
            .child(render.name(), b"r1".to_vec())
            .child(render.name(), b"r2".to_vec())
            .child_flow(thumbs.name(), nested, OnFailure::Fail);
        let added = echomq::Flows::of(parents).add(flow.clone()).await.unwrap();
        assert!(added.created, "{name}");
        assert_eq!(added.children.len(), 3, "{name}");
        let stats = parents.stats().await.unwrap();
        assert_eq!((stats.waiting, stats.pending), (1, 0), "{name}: the parent waits");

        let seen: Seen = Arc::default();
        let running: Vec<_> = queues.iter().map(|queue| spawn(worker(queue, &seen))).collect();
        let parent = added.parent.id.clone();
        eventually("the parent ran", || async {
            parents.inspect(&parent).await.unwrap().is_some_and(|job| job.record.state == State::Done)
        })
        .await;
        // A few more upkeep periods: nothing runs the parent again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        for (stop, task) in running {
            stop.send(()).unwrap();
            task.await.unwrap();
        }
        let runs = seen.lock().unwrap().clone();
        assert_eq!(runs.len(), 2, "{name}: the nested parent and the top one, each once: {runs:?}");
        let top = runs.iter().find(|results| results.len() == 3).expect("the top parent's run");
        let results: Vec<&[u8]> = top.iter().map(|(_, result)| result.as_slice()).collect();
        for want in [&b"done r1"[..], b"done r2", b"parent"] {
            assert!(results.contains(&want), "{name}: {results:?} lacks {want:?}");
        }
        assert_eq!(parents.result(&parent).await.unwrap().as_deref(), Some(&b"parent"[..]), "{name}");
        // Adding the same flow again (its ids fixed when it was built)
        // adds nothing: the parent is there, its children are duplicates.
        let again = echomq::Flows::of(parents).add(flow).await.unwrap();
        assert_eq!((again.created, &again.parent), (false, &added.parent), "{name}");
        let stats = parents.stats().await.unwrap();
        assert_eq!((stats.waiting, stats.pending, stats.done), (0, 0, 1), "{name}");
        let render = render.stats().await.unwrap();
        assert_eq!((render.pending, render.done), (0, 2), "{name}: no child twice");
    }
}

/// A worker of `parents` whose jobs add two children in `render` and wait
/// for them, then return their results joined; `runs` counts the runs.
fn adopting_worker(parents: &Queue, render: &str, runs: &Arc<Mutex<u32>>) -> Worker {
    let (render, runs) = (render.to_owned(), runs.clone());
    Worker::with_options(
        parents.clone(),
        move |job: JobContext| {
            let (render, runs) = (render.clone(), runs.clone());
            async move {
                *runs.lock().unwrap() += 1;
                let pages = ChildJobs::new().child(&render, b"r1".to_vec()).child(&render, b"r2".to_vec());
                job.wait_for(pages).await?;
                let mut results: Vec<Vec<u8>> =
                    job.children_results().await?.into_iter().map(|(_, result)| result).collect();
                results.sort();
                Ok::<_, HandlerError>(results.join(&b'+'))
            }
        },
        options(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_adds_children_waits_for_them_and_goes_on_without_spending_an_attempt() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
        let render = Queue::new(via.clone(), &unique_queue("render")).unwrap();
        let id = parents.enqueue(b"report".to_vec()).await.unwrap();
        let runs = Arc::new(Mutex::new(0));
        let seen: Seen = Arc::default();
        let running = [spawn(adopting_worker(&parents, render.name(), &runs)), spawn(worker(&render, &seen))];
        eventually("the parent ran to its end", || async {
            parents.inspect(&id).await.unwrap().is_some_and(|job| job.record.state == State::Done)
        })
        .await;
        for (stop, task) in running {
            stop.send(()).unwrap();
            task.await.unwrap();
        }
        let job = parents.inspect(&id).await.unwrap().unwrap();
        assert_eq!(job.result.as_deref(), Some(&b"done r1+done r2"[..]), "{name}");
        assert_eq!(*runs.lock().unwrap(), 2, "{name}: once to add its children, once to go on");
        // The wait gave its attempt back (the worker allows one), and the
        // handler's answer while it waited failed nothing.
        assert_eq!(job.policy.and_then(|policy| policy.attempts), Some(2), "{name}");
        assert_eq!(job.error, None, "{name}");
        let render = render.stats().await.unwrap();
        assert_eq!((render.pending, render.done), (0, 2), "{name}: each child once");
    }
}

#[tokio::test]
async fn a_stale_holder_cannot_adopt_and_bad_children_change_nothing() {
    use echomq::transition::{Adopt, Dependency};
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
        let id = parents.enqueue(b"report".to_vec()).await.unwrap();
        let token = parents.claim(Duration::from_secs(30)).await.unwrap().expect("the job").into_job().token;
        let child = |queue: &str, id: JobId| Dependency {
            child: JobRef::new(queue, id).unwrap(),
            on_failure: OnFailure::Fail,
        };
        let adopt = |token: u64, children: Vec<Dependency>| Adopt {
            id: id.clone(),
            token,
            max_attempts: 3,
            children,
        };
        let refused = |call: Adopt| {
            let via = via.clone();
            let keys = parents.keyspace().clone();
            async move { execute(&*via, &keys, &call).await.unwrap_err().kind }
        };
        assert_eq!(
            refused(adopt(token + 1, vec![child("render", JobId::mint())])).await,
            ErrorKind::Fence,
            "{name}"
        );
        assert_eq!(
            refused(adopt(token, vec![child(parents.name(), id.clone())])).await,
            ErrorKind::Argument,
            "{name}"
        );
        assert_eq!(refused(adopt(token, Vec::new())).await, ErrorKind::Argument, "{name}");
        let job = parents.inspect(&id).await.unwrap().unwrap();
        assert_eq!(job.record.state, State::Active, "{name}: nothing changed");
        assert!(echomq::Flows::of(&parents).children(&id).await.unwrap().is_none(), "{name}: no parent");
    }
}

/// One parent of one child in another queue, the child's end chosen by
/// `end`, then relayed: the parent's state and what it heard.
async fn one_child_ends(
    via: &Arc<dyn echomq::Executor>,
    on_failure: OnFailure,
    end: impl AsyncFnOnce(&Queue, &JobId),
) -> (State, Option<Outcome>) {
    let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
    let children = Queue::new(via.clone(), &unique_queue("children")).unwrap();
    let child = JobId::mint();
    let flow = Flow::new(b"parent".to_vec()).child_with(
        children.name(),
        b"child".to_vec(),
        EnqueueOptions::default().id(child.clone()),
        on_failure,
    );
    let added = echomq::Flows::of(&parents).add(flow).await.unwrap();
    end(&children, &child).await;
    assert_eq!(Upkeep::of(&children).relay().await.unwrap(), 1, "one notice");
    // Relayed and deleted: a second relay finds none.
    assert_eq!(Upkeep::of(&children).relay().await.unwrap(), 0, "the notice was deleted");
    let state = parents.inspect(&added.parent.id).await.unwrap().expect("the parent").record.state;
    let heard = echomq::Flows::of(&parents).children(&added.parent.id).await.unwrap().expect("a parent");
    (state, heard.children[0].outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_a_child_ends_tells_its_parent() {
    let (_server, executors) = common::three_executors().await;
    let lease = Duration::from_secs(30);
    let once = RetryPolicy::new().max_attempts(1);
    for (name, via) in executors {
        let acked = one_child_ends(&via, OnFailure::Fail, async |q, _| {
            q.claim(lease).await.unwrap().expect("the child").ack_with(b"42".to_vec()).await.unwrap();
        })
        .await;
        assert_eq!(acked, (State::Pending, Some(Outcome::Done)), "{name}: ack");

        let failed = one_child_ends(&via, OnFailure::Fail, async |q, _| {
            q.claim(lease).await.unwrap().expect("the child").fail("boom", &once).await.unwrap();
        })
        .await;
        assert_eq!(failed, (State::Dead, Some(Outcome::Dead)), "{name}: fail to dead");

        let reaped = one_child_ends(&via, OnFailure::Continue, async |q, _| {
            let _lost = q.claim(Duration::from_millis(1)).await.unwrap().expect("the child");
            eventually("the lease ran out and was reaped", || async {
                Upkeep::of(q).reap(1).await.unwrap().dead == 1
            })
            .await;
        })
        .await;
        assert_eq!(reaped, (State::Pending, Some(Outcome::Dead)), "{name}: reaped to dead, continued");

        let cancelled = one_child_ends(&via, OnFailure::Ignore, async |q, id| {
            assert!(q.cancel(id).await.unwrap());
        })
        .await;
        assert_eq!(cancelled, (State::Pending, Some(Outcome::Cancelled)), "{name}: cancel, ignored");

        let removed = one_child_ends(&via, OnFailure::Fail, async |q, id| {
            assert_eq!(q.remove(State::Pending, std::slice::from_ref(id)).await.unwrap(), 1);
        })
        .await;
        assert_eq!(removed, (State::Dead, Some(Outcome::Gone)), "{name}: remove");

        let drained = one_child_ends(&via, OnFailure::Ignore, async |q, _| {
            assert_eq!(q.drain(echomq::Drain::Waiting).await.unwrap(), 1);
        })
        .await;
        assert_eq!(drained, (State::Pending, Some(Outcome::Gone)), "{name}: drain, ignored");

        // Retention trims the done child before the relay runs: the notice
        // carries its result all the same.
        let trimmed = one_child_ends(&via, OnFailure::Fail, async |q, id| {
            q.claim(lease).await.unwrap().expect("the child").ack_with(b"kept".to_vec()).await.unwrap();
            let briefly = Retention { age: Some(Duration::from_millis(1)), count: None };
            q.configure(Config::default().keep_done(briefly)).await.unwrap();
            eventually("retention trimmed the child", || async {
                Upkeep::of(q).trim(State::Done).await.unwrap() == 1
            })
            .await;
            assert!(q.inspect(id).await.unwrap().is_none(), "trimmed");
        })
        .await;
        assert_eq!(trimmed, (State::Pending, Some(Outcome::Done)), "{name}: trimmed after ack");
    }
}

/// A parent in a queue of its own, of two children (`a`, `b`) in another.
async fn parent_of_two(via: &Arc<dyn echomq::Executor>) -> (Queue, Queue, echomq::FlowAdded) {
    let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
    let children = Queue::new(via.clone(), &unique_queue("children")).unwrap();
    let flow = Flow::new(b"parent".to_vec())
        .child(children.name(), b"a".to_vec())
        .child(children.name(), b"b".to_vec());
    let added = echomq::Flows::of(&parents).add(flow).await.unwrap();
    (parents, children, added)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notices_twice_late_or_to_an_ended_parent_change_nothing() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let (parents, children, added) = parent_of_two(&via).await;
        let resolve = |child: &JobRef, outcome, incarnation| Resolve {
            parent: added.parent.id.clone(),
            incarnation,
            child: child.clone(),
            outcome,
            result: None,
        };
        let keys = parents.keyspace();
        let send = |call: Resolve| {
            let via = via.clone();
            async move { execute(&*via, keys, &call).await.unwrap() }
        };
        let [a, b] = [&added.children[0], &added.children[1]];
        assert!(send(resolve(a, Outcome::Done, added.incarnation)).await, "{name}: applied");
        assert!(!send(resolve(a, Outcome::Done, added.incarnation)).await, "{name}: twice");
        assert!(!send(resolve(a, Outcome::Dead, added.incarnation)).await, "{name}: out of order");
        assert!(!send(resolve(b, Outcome::Done, added.incarnation + 1)).await, "{name}: another incarnation");
        let other = JobRef::new(children.name(), JobId::mint()).unwrap();
        assert!(!send(resolve(&other, Outcome::Done, added.incarnation)).await, "{name}: not its child");
        assert_eq!(parents.stats().await.unwrap().waiting, 1, "{name}: still waiting for b");
        // Cancelled: b's notice changes nothing, and nothing runs it.
        assert!(parents.cancel(&added.parent.id).await.unwrap());
        assert!(!send(resolve(b, Outcome::Done, added.incarnation)).await, "{name}: after the cancel");
        let stats = parents.stats().await.unwrap();
        assert_eq!((stats.cancelled, stats.pending, stats.waiting), (1, 0, 0), "{name}");
        let heard = echomq::Flows::of(&parents).children(&added.parent.id).await.unwrap().expect("a parent");
        assert_eq!(heard.open, 1, "{name}: b stays open");
        // The parent took its open child with it; a's run had ended (the
        // parent heard), so it is left as it was.
        let state = |id: &JobId| {
            let children = children.clone();
            let id = id.clone();
            async move { children.inspect(&id).await.unwrap().unwrap().record.state }
        };
        assert_eq!(state(&b.id).await, State::Cancelled, "{name}");
        assert_eq!(state(&a.id).await, State::Pending, "{name}: a's end was told by hand here, not run");
    }
}

/// A producer that died between its parent and its children: the sweep
/// resolves the child that never came `gone`, and one that ended with no
/// link (enqueued by a speaker that did not link it) as it ended; a child
/// still pending is left to tell its parent itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_resolves_children_that_never_came_or_ended_unheard() {
    use echomq::transition::{Dependency, Flow as FlowCall, Flowed};
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
        let children = Queue::new(via.clone(), &unique_queue("children")).unwrap();
        let [never, unheard, later] = [JobId::mint(), JobId::mint(), JobId::mint()];
        let dependency = |id: &JobId, on_failure| Dependency {
            child: JobRef::new(children.name(), id.clone()).unwrap(),
            on_failure,
        };
        let parent = JobId::mint();
        let call = FlowCall {
            id: parent.clone(),
            payload: b"parent".to_vec(),
            children: vec![
                dependency(&never, OnFailure::Ignore),
                dependency(&unheard, OnFailure::Fail),
                dependency(&later, OnFailure::Fail),
            ],
            priority: 0,
            policy: None,
            headers: Default::default(),
            parent: None,
            group: None,
        };
        assert!(
            matches!(execute(&*via, parents.keyspace(), &call).await.unwrap(), Flowed::Created(_)),
            "{name}"
        );
        // `unheard` enqueued with no link, and done; `later` pending.
        children.enqueue_with(b"u".to_vec(), EnqueueOptions::default().id(unheard.clone())).await.unwrap();
        children
            .claim(Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap()
            .ack_with(b"r".to_vec())
            .await
            .unwrap();
        children.enqueue_with(b"l".to_vec(), EnqueueOptions::default().id(later.clone())).await.unwrap();

        let sweep = Upkeep::of(&parents);
        assert_eq!(
            sweep.sweep_flows(Duration::from_secs(3600)).await.unwrap(),
            0,
            "{name}: not past its grace"
        );
        assert_eq!(sweep.sweep_flows(Duration::ZERO).await.unwrap(), 2, "{name}");
        assert_eq!(sweep.sweep_flows(Duration::ZERO).await.unwrap(), 0, "{name}: once");
        let heard = echomq::Flows::of(&parents).children(&parent).await.unwrap().expect("a parent");
        let outcome = |id: &JobId| heard.children.iter().find(|child| &child.child.id == id).unwrap().clone();
        assert_eq!(outcome(&never).outcome, Some(Outcome::Gone), "{name}");
        assert_eq!(
            (outcome(&unheard).outcome, outcome(&unheard).result),
            (Some(Outcome::Done), Some(b"r".to_vec()))
        );
        assert_eq!(outcome(&later).outcome, None, "{name}: still pending, it tells its parent itself");
        assert_eq!(parents.stats().await.unwrap().waiting, 1, "{name}");
    }
}

/// Flows that name each other (a parent a child of its own child) are
/// cancelled each job once: the walk ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_flows_that_name_each_other_ends() {
    use echomq::transition::{Dependency, Flow as FlowCall};
    let via: Arc<dyn echomq::Executor> = Arc::new(echomq::Embedded::new());
    let q = Queue::new(via.clone(), &unique_queue("cycle")).unwrap();
    let (a, b) = (JobId::mint(), JobId::mint());
    for (parent, child) in [(&a, &b), (&b, &a)] {
        let call = FlowCall {
            id: parent.clone(),
            payload: b"p".to_vec(),
            children: vec![Dependency {
                child: JobRef::new(q.name(), child.clone()).unwrap(),
                on_failure: OnFailure::Fail,
            }],
            priority: 0,
            policy: None,
            headers: Default::default(),
            parent: None,
            group: None,
        };
        execute(&*via, q.keyspace(), &call).await.unwrap();
    }
    assert!(q.cancel(&a).await.unwrap());
    for id in [&a, &b] {
        assert_eq!(q.inspect(id).await.unwrap().unwrap().record.state, State::Cancelled);
    }
}

/// A child done and trimmed by retention before its notice was relayed is
/// not taken for gone by the sweep: the sweep relays the children's queues
/// first, so the parent hears it done, with its result, and waits on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_tells_a_trimmed_child_done_not_gone() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let (parents, children, added) = parent_of_two(&via).await;
        let a = children.claim(Duration::from_secs(30)).await.unwrap().expect("a");
        let a_id = a.id.clone();
        a.ack_with(b"r".to_vec()).await.unwrap();
        let briefly = Retention { age: Some(Duration::from_millis(1)), count: None };
        children.configure(Config::default().keep_done(briefly)).await.unwrap();
        eventually("retention trimmed a", || async {
            Upkeep::of(&children).trim(State::Done).await.unwrap() == 1
        })
        .await;
        Upkeep::of(&parents).sweep_flows(Duration::ZERO).await.unwrap();
        let heard = echomq::Flows::of(&parents).children(&added.parent.id).await.unwrap().expect("a parent");
        let a = heard.children.iter().find(|child| child.child.id == a_id).unwrap();
        assert_eq!((a.outcome, a.result.as_deref()), (Some(Outcome::Done), Some(&b"r"[..])), "{name}");
        let state = parents.inspect(&added.parent.id).await.unwrap().unwrap().record.state;
        assert_eq!(state, State::Waiting, "{name}: b is still pending");
    }
}

/// A parent in a queue of its own, of three children in another, each
/// with `on_failure`, enqueued in order, each child's payload its id.
async fn parent_of_three(
    via: &Arc<dyn echomq::Executor>,
    on_failure: OnFailure,
) -> (Queue, Queue, JobId, [JobId; 3]) {
    let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
    let children = Queue::new(via.clone(), &unique_queue("children")).unwrap();
    let ids = [JobId::mint(), JobId::mint(), JobId::mint()];
    let mut flow = Flow::new(b"parent".to_vec());
    for id in &ids {
        let options = EnqueueOptions::default().id(id.clone());
        flow = flow.child_with(children.name(), id.as_str().as_bytes().to_vec(), options, on_failure);
    }
    let parent = echomq::Flows::of(&parents).add(flow).await.unwrap().parent.id;
    (parents, children, parent, ids)
}

/// A parent that died of a child records the ends of the others (1.11);
/// retried while one still runs, it waits for it; a child retried after it
/// died tells its parent again, and its `done` replaces its death.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_parent_retried_waits_for_its_children_and_a_retried_child_tells_again() {
    let (_server, executors) = common::three_executors().await;
    let lease = Duration::from_secs(30);
    let once = RetryPolicy::new().max_attempts(1);
    for (name, via) in executors {
        let (parents, children, parent, [a, b, c]) = parent_of_three(&via, OnFailure::Fail).await;
        let claim = || async {
            let job = children.claim(lease).await.unwrap().expect("a child");
            (String::from_utf8(job.payload.clone()).unwrap(), job)
        };
        let relay = || async { Upkeep::of(&children).relay().await.unwrap() };
        let state = |queue: &Queue, id: &JobId| {
            let (queue, id) = (queue.clone(), id.clone());
            async move { queue.inspect(&id).await.unwrap().expect("the job").record.state }
        };
        let heard =
            || async { echomq::Flows::of(&parents).children(&parent).await.unwrap().expect("a parent") };
        let of = |read: &echomq::transition::ChildrenReply, id: &JobId| {
            let entry = read.children.iter().find(|entry| entry.child.id == *id).expect("its child");
            (entry.outcome, entry.result.clone())
        };

        let (named, first) = claim().await;
        assert_eq!(named, a.as_str(), "{name}: the children run in order");
        first.fail("boom", &once).await.unwrap();
        let (_, second) = claim().await;
        let (_, third) = claim().await;
        third.ack_with(b"c".to_vec()).await.unwrap();
        assert_eq!(relay().await, 2, "{name}: a's death and c's end");
        assert_eq!(state(&parents, &parent).await, State::Dead, "{name}: a failed it");
        let read = heard().await;
        assert_eq!(read.open, 1, "{name}: b still runs");
        assert_eq!(of(&read, &c), (Some(Outcome::Done), Some(b"c".to_vec())), "{name}: recorded while dead");

        parents.retry(&parent).await.unwrap();
        assert_eq!(state(&parents, &parent).await, State::Waiting, "{name}: it waits for b");
        assert_eq!(parents.stats().await.unwrap().pending, 0, "{name}: nothing to run yet");
        children.retry(&a).await.unwrap();
        let (named, again) = claim().await;
        assert_eq!(named, a.as_str(), "{name}");
        again.ack_with(b"a".to_vec()).await.unwrap();
        assert_eq!(relay().await, 1, "{name}: the retried child told its parent again");
        assert_eq!(of(&heard().await, &a), (Some(Outcome::Done), Some(b"a".to_vec())), "{name}: done now");
        assert_eq!(state(&parents, &parent).await, State::Waiting, "{name}: b still runs");

        second.ack_with(b"b".to_vec()).await.unwrap();
        assert_eq!(relay().await, 1, "{name}");
        assert_eq!(state(&parents, &parent).await, State::Pending, "{name}: its children have all ended");
        let read = heard().await;
        assert_eq!(read.open, 0, "{name}");
        for (id, result) in [(&a, b"a"), (&b, b"b"), (&c, b"c")] {
            assert_eq!(of(&read, id), (Some(Outcome::Done), Some(result.to_vec())), "{name}");
        }
    }
}

/// A parent that died of a child is refused a retry while that child,
/// retried, has not told it its end (RETRY would count it ended and run the
/// parent first); `Flows::retry_now` sends it all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrying_a_parent_before_its_retried_child_ends_is_refused() {
    let (_server, executors) = common::three_executors().await;
    let lease = Duration::from_secs(30);
    let once = RetryPolicy::new().max_attempts(1);
    for (name, via) in executors {
        let (parents, children, parent, [a, ..]) = parent_of_three(&via, OnFailure::Fail).await;
        children.claim(lease).await.unwrap().expect("a").fail("boom", &once).await.unwrap();
        for _ in 0..2 {
            children.claim(lease).await.unwrap().expect("b, c").ack().await.unwrap();
        }
        assert_eq!(Upkeep::of(&children).relay().await.unwrap(), 3, "{name}");
        children.retry(&a).await.unwrap();

        let err = parents.retry(&parent).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::State, "{name}: {err}");
        assert!(err.to_string().contains(&format!("({{{}}}{a} pending)", children.name())), "{name}: {err}");
        let state = parents.inspect(&parent).await.unwrap().expect("the parent").record.state;
        assert_eq!(state, State::Dead, "{name}: nothing changed");
        echomq::Flows::of(&parents).retry_now(&parent).await.unwrap();
        let state = parents.inspect(&parent).await.unwrap().expect("the parent").record.state;
        assert_eq!(state, State::Pending, "{name}: it reads a dead, as RETRY alone does");
    }
}

/// Cancelling a parent cancels its open children and those it heard died
/// that run again (retried); a child still dead stays dead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_parent_cancels_a_retried_child_and_leaves_a_dead_one() {
    let (_server, executors) = common::three_executors().await;
    let lease = Duration::from_secs(30);
    let once = RetryPolicy::new().max_attempts(1);
    for (name, via) in executors {
        let (parents, children, parent, [retried, dead, open]) =
            parent_of_three(&via, OnFailure::Ignore).await;
        for _ in 0..2 {
            children.claim(lease).await.unwrap().expect("a child").fail("boom", &once).await.unwrap();
        }
        assert_eq!(Upkeep::of(&children).relay().await.unwrap(), 2, "{name}");
        children.retry(&retried).await.unwrap();

        assert!(parents.cancel(&parent).await.unwrap(), "{name}");
        let state = |id: &JobId| {
            let (children, id) = (children.clone(), id.clone());
            async move { children.inspect(&id).await.unwrap().expect("the child").record.state }
        };
        assert_eq!(state(&retried).await, State::Cancelled, "{name}: it ran again");
        assert_eq!(state(&open).await, State::Cancelled, "{name}: open");
        assert_eq!(state(&dead).await, State::Dead, "{name}: left as it ended");
    }
}
