//! Fair groups through the host's API (protocol 1.7) on Lua, Native and
//! Embedded: a grouped enqueue (one, many, a flow's parent and child)
//! lands in its group; GROUP and GROUPS through [`QueueGroups`] round-trip
//! every setting and page by name; EMQFULL is [`ErrorKind::Full`]; bad
//! input is refused by the host before anything is sent.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomq::executor::{Call, Plain, Ran, Setup};

use echomq::{
    EnqueueOptions, ErrorKind, Executor, Flow, Flows, Group, Groups, Limit, Lua, OnFailure, Queue,
    QueueGroups, Rate, Standing, State, Upkeep,
};
use echomq_test_support::unique_queue;
use redis::aio::MultiplexedConnection;

const LEASE: Duration = Duration::from_secs(60);

fn grouped(group: &str) -> EnqueueOptions {
    EnqueueOptions::default().group(group)
}

/// Until a claim blocks on `server` (INFO's `blocked_clients`).
async fn until_a_claim_waits(server: &echomq_test_support::RedisServer) {
    let probe = server.connection().await;
    echomq_test_support::eventually("a claim waits on the server", || {
        let mut probe = probe.clone();
        async move {
            let info: String = redis::cmd("INFO").arg("clients").query_async(&mut probe).await.unwrap();
            info.lines().any(|line| line.starts_with("blocked_clients:") && line != "blocked_clients:0")
        }
    })
    .await;
}

/// A group's pending and running jobs.
async fn depth(q: &Queue, group: &str) -> (u64, u64) {
    let info = QueueGroups::of(q).get(group).await.unwrap();
    (info.pending, info.running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grouped_enqueue_lands_in_its_group_on_every_executor() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("grouped")).unwrap();
        q.enqueue_with(b"one".to_vec(), grouped("tenant-7")).await.unwrap();
        // One ENQUEUEMANY a group, and the ungrouped jobs apart.
        let many = [("a", grouped("tenant-8")), ("b", grouped("tenant-8")), ("c", EnqueueOptions::default())];
        for outcome in q.enqueue_many(many).await.unwrap() {
            assert!(!outcome.unwrap().duplicate, "{name}");
        }
        assert_eq!(depth(&q, "tenant-7").await, (1, 0), "{name}");
        assert_eq!(depth(&q, "tenant-8").await, (2, 0), "{name}");
        assert_eq!(q.stats().await.unwrap().pending, 4, "{name}: pending stays whole");
        let names: Vec<String> =
            QueueGroups::of(&q).all().await.unwrap().into_iter().map(|g| g.group).collect();
        assert_eq!(names, ["tenant-7", "tenant-8"], "{name}: the default group is no row");
        let claimed = q.claim_many(LEASE, 4, None).await.unwrap().jobs;
        assert_eq!(claimed.len(), 4, "{name}");
        assert_eq!(depth(&q, "tenant-7").await, (0, 1), "{name}: its lease is its running count");
        assert_eq!(depth(&q, "tenant-8").await, (0, 2), "{name}");
        for job in claimed {
            job.ack().await.unwrap();
        }
        assert_eq!(depth(&q, "tenant-8").await, (0, 0), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flows_parent_and_children_carry_their_groups() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("flowgroups")).unwrap();
        let flow = Flow::new(b"merge".to_vec())
            .group("parents")
            .child_with(q.name(), b"own".to_vec(), grouped("kids").priority(1), OnFailure::Fail)
            .child_with(q.name(), b"plain".to_vec(), grouped("kids"), OnFailure::Fail);
        Flows::of(&q).add(flow).await.unwrap();
        assert_eq!(depth(&q, "kids").await, (2, 0), "{name}: both children in their group");
        assert_eq!(depth(&q, "parents").await, (0, 0), "{name}: the parent waits");
        for job in q.claim_many(LEASE, 2, None).await.unwrap().jobs {
            job.ack().await.unwrap();
        }
        Upkeep::of(&q).relay().await.unwrap();
        assert_eq!(q.stats().await.unwrap().of(State::Pending), 1, "{name}: the parent runs");
        assert_eq!(depth(&q, "parents").await, (1, 0), "{name}: in its group");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_and_groups_round_trip_every_setting() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("settings")).unwrap();
        let groups = QueueGroups::of(&q);
        let rate = Rate { claims: 10, per: Duration::from_secs(1) };
        let change = Group::new("b").weight(3).cap(Limit::To(2)).rate(Limit::To(rate)).max(Limit::To(1000));
        let set = groups.set(change.paused(true)).await.unwrap();
        assert_eq!(
            (set.weight, set.cap, set.rate, set.max, set.paused),
            (3, Some(2), Some(rate), Some(1000), true)
        );
        assert_eq!(groups.get("b").await.unwrap(), set, "{name}: read back as set");
        q.enqueue_with(b"p".to_vec(), grouped("b")).await.unwrap();
        assert_eq!(groups.get("b").await.unwrap().standing, Standing::Paused, "{name}");
        assert_eq!(groups.resume("b").await.unwrap().standing, Standing::Ready, "{name}");
        let cleared = groups.set(Group::new("b").cap(Limit::Unlimited).rate(Limit::Unlimited)).await.unwrap();
        assert_eq!((cleared.cap, cleared.rate, cleared.max), (None, None, Some(1000)), "{name}");
        for group in ["a", "c"] {
            groups.set(Group::new(group).weight(2)).await.unwrap();
        }
        let first = groups.page(Groups::new().limit(2)).await.unwrap();
        let names: Vec<&str> = first.groups.iter().map(|g| g.group.as_str()).collect();
        assert_eq!((names, first.next.as_deref()), (vec!["a", "b"], Some("b")), "{name}: by name");
        let rest = groups.page(Groups::new().after("b")).await.unwrap();
        assert_eq!((rest.groups.len(), rest.groups[0].group.as_str(), rest.next), (1, "c", None), "{name}");
        assert_eq!(groups.all().await.unwrap().len(), 3, "{name}");
        assert!(groups.pause("c").await.unwrap().paused, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_at_its_most_pending_refuses_with_full() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("full")).unwrap();
        QueueGroups::of(&q).set(Group::new("g").max(Limit::To(2))).await.unwrap();
        for _ in 0..2 {
            q.enqueue_with(b"p".to_vec(), grouped("g")).await.unwrap();
        }
        let err = q.enqueue_with(b"p".to_vec(), grouped("g")).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Full, "{name}: {err}");
        // ENQUEUEMANY is refused whole: each of its jobs says so.
        for outcome in q.enqueue_many([("x", grouped("g")), ("y", grouped("g"))]).await.unwrap() {
            assert_eq!(outcome.unwrap_err().kind, ErrorKind::Full, "{name}");
        }
        // Another group, and the default one, are not held by it.
        q.enqueue_with(b"p".to_vec(), grouped("h")).await.unwrap();
        q.enqueue(b"p".to_vec()).await.unwrap();
        assert_eq!(depth(&q, "g").await, (2, 0), "{name}: nothing written");
        assert_eq!(q.stats().await.unwrap().pending, 4, "{name}");
    }
}

/// A claim waiting for work (on the wake-up key on Lua, blocked on the
/// server on Native, on the store's notice on Embedded) wakes when a capped
/// group's lease ends and the group is ready again (1.9): it takes the
/// group's next job long before its wait is over. A stale wake-up member
/// is there before it waits, as a native worker leaves it: a ZADD that
/// changes nothing must still wake a native waiter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_claim_wakes_when_a_capped_groups_lease_ends() {
    let (server, executors) = common::three_executors().await;
    let mut redis = server.connection().await;
    for (name, via) in executors {
        let on_server = name != "embedded";
        let q = Queue::new(via, &unique_queue("capped-wake")).unwrap();
        QueueGroups::of(&q).set(Group::new("t").cap(Limit::To(1))).await.unwrap();
        let first = q.enqueue_with(b"a".to_vec(), grouped("t")).await.unwrap().id;
        let next = q.enqueue_with(b"b".to_vec(), grouped("t")).await.unwrap().id;
        let running = q.claim(LEASE).await.unwrap().expect("the group's first job");
        assert_eq!(running.id, first, "{name}");
        if on_server {
            let wake = format!("emq:{{{}}}:wake", q.name());
            let _: () = redis::cmd("ZADD").arg(&wake).arg(0).arg(1).query_async(&mut redis).await.unwrap();
        }
        let waiting = {
            let q = q.clone();
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                let claimed = q.claim_many(LEASE, 1, Some(Duration::from_secs(60))).await.unwrap();
                (claimed.jobs.into_iter().map(|job| job.id.clone()).collect::<Vec<_>>(), started.elapsed())
            })
        };
        if on_server {
            until_a_claim_waits(&server).await;
        }
        running.ack().await.unwrap();
        let (claimed, took) = waiting.await.unwrap();
        assert_eq!(claimed, [next], "{name}: the group's next job");
        assert!(took < Duration::from_secs(30), "{name}: woken after {took:?}, not at the wait's end");
    }
}

/// Beside the scripts, a native claim waiting for work (pending not
/// empty: a paused group's jobs stay there) wakes for a job a script
/// enqueued, though the wake-up key held a stale member before it waited:
/// the waiting claim took it, so the script's ZADD creates the key again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_waiter_wakes_for_a_scripts_arrival() {
    let (server, [(_, lua), (_, native), _]) = common::three_executors().await;
    let name = unique_queue("mixed");
    let (by_lua, by_native) = (Queue::new(lua, &name).unwrap(), Queue::new(native, &name).unwrap());
    QueueGroups::of(&by_lua).set(Group::new("held").paused(true)).await.unwrap();
    by_lua.enqueue_with(b"held".to_vec(), grouped("held")).await.unwrap();
    let mut redis = server.connection().await;
    let wake = format!("emq:{{{name}}}:wake");
    let _: () = redis::cmd("ZADD").arg(&wake).arg(0).arg(1).query_async(&mut redis).await.unwrap();
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let claimed = by_native.claim_many(LEASE, 1, Some(Duration::from_secs(60))).await.unwrap();
        (claimed.jobs.into_iter().map(|job| job.id.clone()).collect::<Vec<_>>(), started.elapsed())
    });
    until_a_claim_waits(&server).await;
    let id = by_lua.enqueue(b"now".to_vec()).await.unwrap();
    let (claimed, took) = waiting.await.unwrap();
    assert_eq!(claimed, [id], "the script's arrival");
    assert!(took < Duration::from_secs(30), "woken after {took:?}, not at the wait's end");
}

/// A native claim woken for nothing it can take (a paused group's job
/// arrived by a script, which sets the wake-up key) writes nothing while it
/// stays blocked: on a server that keeps an AOF, a write in that callback
/// would abort Redis 7.0 (`server.also_propagate.numops == 0`). It answers
/// the empty claim instead, and the server lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_waiter_woken_for_nothing_writes_nothing() {
    use echomq_test_support::{RedisServer, ServerOptions};
    let server = RedisServer::start_with(ServerOptions {
        module: Some(echomq_test_support::module_path()),
        args: ["--appendonly", "yes"].map(String::from).to_vec(),
        ..ServerOptions::default()
    });
    let conn = server.connection().await;
    let (lua, native) = (echomq::Lua::new(conn.clone()), echomq::Native::new(conn.clone()));
    let name = unique_queue("woken");
    let by_lua = Queue::new(std::sync::Arc::new(lua), &name).unwrap();
    let by_native =
        Queue::new(std::sync::Arc::new(native.with_blocking_connection(server.connection().await)), &name)
            .unwrap();
    QueueGroups::of(&by_lua).set(Group::new("held").paused(true)).await.unwrap();
    by_lua.enqueue_with(b"held".to_vec(), grouped("held")).await.unwrap();
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let claimed = by_native.claim_many(LEASE, 1, Some(Duration::from_secs(60))).await.unwrap();
        (claimed.jobs.len(), started.elapsed())
    });
    until_a_claim_waits(&server).await;
    by_lua.enqueue_with(b"also held".to_vec(), grouped("held")).await.unwrap();
    let (claimed, took) = waiting.await.unwrap();
    assert_eq!(claimed, 0, "nothing it can take");
    assert!(took < Duration::from_secs(30), "answered at the script's arrival, after {took:?}");
    let pong: String = redis::cmd("PING").query_async(&mut server.connection().await).await.unwrap();
    assert_eq!(pong, "PONG", "the server lives on");
}

/// Every call with a bad group or setting, refused by the host with
/// [`ErrorKind::Argument`].
async fn refusals(q: &Queue) -> Vec<(&'static str, echomq::Error)> {
    let long = "g".repeat(echomq::limits::MAX_GROUP + 1);
    let groups = QueueGroups::of(q);
    let flow = |group: &str| Flow::new(b"p".to_vec()).group(group).child(q.name(), b"c".to_vec());
    let child = Flow::new(b"p".to_vec()).child_with(q.name(), b"c".to_vec(), grouped(""), OnFailure::Fail);
    let many = q.enqueue_many([("a", grouped("")), ("b", grouped(&long))]).await.unwrap();
    let [a, b] = <[_; 2]>::try_from(many).unwrap();
    vec![
        ("an empty group", q.enqueue_with(b"p".to_vec(), grouped("")).await.unwrap_err()),
        ("a group of 201 bytes", q.enqueue_with(b"p".to_vec(), grouped(&long)).await.unwrap_err()),
        ("many, an empty group", a.unwrap_err()),
        ("many, a long group", b.unwrap_err()),
        ("a flow's parent's", Flows::of(q).add(flow("")).await.unwrap_err()),
        ("a flow's child's", Flows::of(q).add(child).await.unwrap_err()),
        ("weight 0", groups.set(Group::new("g").weight(0)).await.unwrap_err()),
        ("weight 1001", groups.set(Group::new("g").weight(1001)).await.unwrap_err()),
        ("cap 0", groups.set(Group::new("g").cap(Limit::To(0))).await.unwrap_err()),
        ("max 0", groups.set(Group::new("g").max(Limit::To(0))).await.unwrap_err()),
        ("reading an empty group", groups.get("").await.unwrap_err()),
        ("reading a long group", groups.get(&long).await.unwrap_err()),
        ("a page of 0", groups.page(Groups::new().limit(0)).await.unwrap_err()),
        ("a page of 1001", groups.page(Groups::new().limit(1001)).await.unwrap_err()),
    ]
}

#[tokio::test]
async fn bad_groups_and_settings_are_refused_before_anything_is_sent() {
    let h = common::harness().await;
    let counting = Arc::new(Counting { lua: h.lua.clone(), calls: AtomicUsize::new(0) });
    let q = Queue::new(counting.clone(), h.queue.name()).unwrap();
    for (what, err) in refusals(&q).await {
        assert_eq!(err.kind, ErrorKind::Argument, "{what}: {err}");
    }
    assert_eq!(counting.calls.load(Ordering::SeqCst), 0, "nothing was sent");
    assert_eq!(h.dbsize().await, 0, "nothing was written");
}

/// Lua, counting the calls it is given.
struct Counting {
    lua: Arc<Lua<MultiplexedConnection>>,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Executor for Counting {
    async fn run(&self, calls: &[Call]) -> echomq::Result<Ran> {
        self.calls.fetch_add(calls.len(), Ordering::SeqCst);
        self.lua.run(calls).await
    }

    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> echomq::Result<echomq_core::Reply> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.lua.claim_waiting(claim, wait).await
    }

    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> echomq::Result<Option<usize>> {
        self.lua.wait_on_many(wakes, wait).await
    }

    async fn interrupt_waits(&self) {
        self.lua.interrupt_waits().await;
    }

    fn setup(&self) -> Setup {
        self.lua.setup()
    }

    fn plain(&self) -> &dyn Plain {
        self.lua.plain()
    }
}
