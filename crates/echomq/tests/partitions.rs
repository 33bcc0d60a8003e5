//! Partitioned queues (protocol 1.8, PROTOCOL.md §7.10) on Lua, Native
//! and Embedded: the partitions' names land in their slot ranges; the
//! definition is written once and read back; a job goes to its id's
//! partition, or with its group or unique key to the key's; a worker
//! works them all; a flow's children and a running job's go to their
//! partitions; bad input and a malformed definition are refused, nothing
//! written. (tests/cluster.rs spreads one over three nodes.)

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomq::executor::Command;
use echomq::partition::{partition_index, partition_name, queue_slot, MAX_PARTITIONS};
use echomq::worker::{HandlerError, JobContext, WorkerOptions};
use echomq::{EnqueueOptions, ErrorKind, Executor, JobId, Partitioned, Queue};
use echomq_test_support::{eventually, unique_queue};

#[test]
fn each_partition_name_lies_in_its_own_range_of_slots() {
    let counts = (1..=32).chain([100, 1000, MAX_PARTITIONS]);
    for count in counts {
        for k in 0..count {
            let name = partition_name("orders", k, count);
            let slot = usize::from(queue_slot(&name));
            assert!(
                (k * 16384 / count..(k + 1) * 16384 / count).contains(&slot),
                "{name} (partition {k} of {count}) is in slot {slot}"
            );
            assert!(name.starts_with(&format!("orders~{k}~")), "{name}");
        }
    }
    // As Redis itself has them (CLUSTER KEYSLOT): the rule any speaker follows.
    assert_eq!(queue_slot("orders"), 105);
    assert_eq!(queue_slot("orders~0~20"), 719);
    assert_eq!(partition_name("orders", 0, 12), "orders~0~20");
    assert_eq!(partition_name("orders", 1, 12), "orders~1~0");
    assert_eq!(partition_name("orders", 2, 12), "orders~2~22");
    // CRC16 0x5e3a (slot 7738): partition 2 of 12.
    assert_eq!(partition_index("JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R", 12), 2);
}

/// The stored definition, field by field, sorted.
async fn definition(via: &Arc<dyn Executor>, name: &str) -> Vec<(String, String)> {
    let mut fields = via
        .plain()
        .one(Command::HGetAll(format!("emq:{{{name}}}:partitions")))
        .await
        .unwrap()
        .fields()
        .unwrap();
    fields.sort();
    fields
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_definition_is_written_once_and_read_back_on_every_executor() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let name = unique_queue("orders");
        let made = Partitioned::create(via.clone(), &name, 12).await.unwrap();
        assert_eq!(made.partitions().len(), 12);
        let stored = definition(&via, &name).await;
        let field = |wanted: &str| stored.iter().find(|(f, _)| f == wanted).map(|(_, v)| v.clone());
        assert_eq!(field("count").as_deref(), Some("12"), "{via_name}");
        assert_eq!(field("routing").as_deref(), Some("crc16"), "{via_name}");
        assert_eq!(field("protocol").as_deref(), Some("1.8"), "{via_name}");
        for (k, queue) in made.partitions().iter().enumerate() {
            assert_eq!(queue.name(), partition_name(&name, k, 12), "{via_name}");
            assert_eq!(field(&format!("queue:{k}")).as_deref(), Some(queue.name()), "{via_name}");
        }
        assert_eq!(stored.len(), 3 + 12, "{via_name}: count, routing, protocol and the twelve names");

        // A second creator of the same count opens it; of another is refused.
        let again = Partitioned::create(via.clone(), &name, 12).await.unwrap();
        let names = |p: &Partitioned| p.partitions().iter().map(|q| q.name().to_owned()).collect::<Vec<_>>();
        assert_eq!(names(&again), names(&made), "{via_name}");
        let other = Partitioned::create(via.clone(), &name, 8).await.unwrap_err();
        assert_eq!(other.kind, ErrorKind::Argument, "{via_name}: {other}");
        assert!(other.to_string().contains("partitioned 12 ways, not 8"), "{via_name}: {other}");
        assert_eq!(definition(&via, &name).await, stored, "{via_name}: the refusal wrote nothing");
        let opened = Partitioned::open(via.clone(), &name).await.unwrap();
        assert_eq!(names(&opened), names(&made), "{via_name}");

        // A definition holding only its count (a creator stopped half-way)
        // reads the names by the rule that chose them.
        let half = unique_queue("half");
        via.plain()
            .one(Command::HSet(format!("emq:{{{half}}}:partitions"), vec![("count".into(), "3".into())]))
            .await
            .unwrap();
        let read = Partitioned::open(via.clone(), &half).await.unwrap();
        assert_eq!(names(&read), (0..3).map(|k| partition_name(&half, k, 3)).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_goes_to_its_ids_partition_or_with_its_key() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let orders = Partitioned::create(via.clone(), &unique_queue("orders"), 6).await.unwrap();
        let mut per_partition = [0usize; 6];
        for n in 0..600 {
            let id = orders.enqueue(format!("{n}").into_bytes()).await.unwrap();
            per_partition[orders.index_of(&id)] += 1;
            assert_eq!(orders.index_of(&id), partition_index(id.as_str(), 6));
            let home = orders.partition_of(&id).inspect(&id).await.unwrap();
            assert!(home.is_some(), "{via_name}: job {id} is in its id's partition");
        }
        // 100 a partition on average; 40 to 160 is six sigmas either way.
        assert!(per_partition.iter().all(|n| (40..=160).contains(n)), "{via_name}: {per_partition:?}");

        // A group's jobs stay together, in the partition its name routes to.
        let tenant = orders.partition_for("tenant-7").name().to_owned();
        for n in 0..20 {
            let job =
                orders.enqueue_with(vec![n], EnqueueOptions::default().group("tenant-7")).await.unwrap();
            assert_eq!(orders.partition_of(&job.id).name(), tenant, "{via_name}");
        }
        // A unique key is exact: a second job with it is a duplicate, wherever its new id would go.
        let unique = || EnqueueOptions::default().unique("invoice:42", Duration::from_secs(60));
        let first = orders.enqueue_with(b"a".to_vec(), unique()).await.unwrap();
        let second = orders.enqueue_with(b"b".to_vec(), unique()).await.unwrap();
        assert!(!first.duplicate && second.duplicate, "{via_name}");
        assert_eq!(second.id, first.id, "{via_name}");

        // A given id decides; routing it by a key of another partition is refused, nothing sent.
        let given = JobId::mint();
        let placed =
            orders.enqueue_with(b"g".to_vec(), EnqueueOptions::default().id(given.clone())).await.unwrap();
        assert_eq!(placed.id, given);
        assert!(orders.partition_of(&given).inspect(&given).await.unwrap().is_some(), "{via_name}");
        let key = "tenant-9";
        let stray =
            (0..).map(|_| JobId::mint()).find(|id| orders.index_of(id) != partition_index(key, 6)).unwrap();
        let refused = orders
            .enqueue_routed(key, b"x".to_vec(), EnqueueOptions::default().id(stray.clone()))
            .await
            .unwrap_err();
        assert_eq!(refused.kind, ErrorKind::Argument, "{via_name}: {refused}");
        let grouped = EnqueueOptions::default().group(key).id(stray.clone());
        let refused = orders.enqueue_with(b"x".to_vec(), grouped).await.unwrap_err();
        assert_eq!(refused.kind, ErrorKind::Argument, "{via_name}: {refused}");
        for queue in orders.partitions() {
            assert!(queue.inspect(&stray).await.unwrap().is_none(), "{via_name}: nothing written");
        }

        // Many at once: the outcomes in order, a refused one among them.
        let jobs = (0..300u32).map(|n| match n {
            7 => (vec![0], EnqueueOptions::default().group(key).id(stray.clone())),
            n if n % 3 == 0 => (n.to_be_bytes().to_vec(), EnqueueOptions::default().group("tenant-3")),
            n => (n.to_be_bytes().to_vec(), EnqueueOptions::default()),
        });
        let outcomes = orders.enqueue_many(jobs).await.unwrap();
        assert_eq!(outcomes.len(), 300);
        for (n, outcome) in outcomes.iter().enumerate() {
            let Ok(job) = outcome else {
                assert_eq!(n, 7, "{via_name}: only the stray id is refused: {outcome:?}");
                continue;
            };
            let home = orders.partition_of(&job.id);
            let found = home.inspect(&job.id).await.unwrap().expect("in its partition");
            assert_eq!(found.record.payload, (n as u32).to_be_bytes(), "{via_name}: job {n} in order");
            if n % 3 == 0 {
                assert_eq!(
                    home.name(),
                    orders.partition_for("tenant-3").name(),
                    "{via_name}: with its group"
                );
            }
        }
        assert!(outcomes[7].is_err());
        // The jobs without a key are one run, in one partition.
        let plain: HashSet<usize> = outcomes
            .iter()
            .enumerate()
            .filter(|(n, _)| n % 3 != 0 && *n != 7)
            .map(|(_, outcome)| orders.index_of(&outcome.as_ref().unwrap().id))
            .collect();
        assert_eq!(plain.len(), 1, "{via_name}: {plain:?}");
    }
}

/// `workers` started, each until the sender says `true`: it, and their tasks.
fn spawned<const N: usize>(
    workers: [echomq::worker::Worker; N],
) -> (tokio::sync::watch::Sender<bool>, Vec<tokio::task::JoinHandle<echomq::Result<()>>>) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running = workers
        .into_iter()
        .map(|worker| {
            let mut stopped = stopped.clone();
            tokio::spawn(worker.run_until(async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            }))
        })
        .collect();
    (stop, running)
}

/// A worker of `concurrency` slots over `p` until `jobs` jobs ran: how many ran.
async fn work(p: &Partitioned, jobs: usize, concurrency: usize) -> usize {
    let ran = Arc::new(AtomicUsize::new(0));
    run_until(p.worker(counting(ran.clone()), slots(concurrency)), &ran, jobs).await
}

/// A handler that counts its runs in `ran`.
fn counting(ran: Arc<AtomicUsize>) -> impl echomq::worker::Handler {
    move |_job: JobContext| {
        let ran = ran.clone();
        async move {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, HandlerError>(())
        }
    }
}

fn slots(concurrency: usize) -> WorkerOptions {
    WorkerOptions::default().concurrency(concurrency).idle_wait(Duration::from_millis(50))
}

/// Run `worker` until `ran` counts `jobs`: how many ran.
async fn run_until(worker: echomq::worker::Worker, ran: &AtomicUsize, jobs: usize) -> usize {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let working = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    eventually("every job ran", || async { ran.load(Ordering::SeqCst) >= jobs }).await;
    let _ = stop.send(());
    working.await.unwrap().unwrap();
    ran.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_works_every_partition() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let orders = Partitioned::create(via.clone(), &unique_queue("orders"), 4).await.unwrap();
        let mut ids = HashSet::new();
        for n in 0..200 {
            ids.insert(orders.enqueue(format!("{n}").into_bytes()).await.unwrap());
        }
        // And one job a speaker before 1.8 put in the ordinary queue of the name.
        let ordinary = Queue::new(via.clone(), orders.name()).unwrap();
        let stray = ordinary.enqueue(b"stray".to_vec()).await.unwrap();
        let counted = orders.stats().await.unwrap();
        assert_eq!((counted.pending, counted.done), (201, 0), "{via_name}: every partition's and its own");
        assert_eq!(work(&orders, 201, 8).await, 201, "{via_name}: each job once");
        let counted = orders.stats().await.unwrap();
        assert_eq!((counted.pending, counted.done), (0, 201), "{via_name}");
        let done = ordinary.inspect(&stray).await.unwrap().unwrap().record.state;
        assert_eq!(done, echomq::State::Done, "{via_name}: the ordinary queue's job ran too");
        for id in &ids {
            let done = orders.partition_of(id).inspect(id).await.unwrap().unwrap();
            assert_eq!(done.record.state, echomq::State::Done, "{via_name}: {id}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_a_malformed_definition_are_refused() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let name = unique_queue("bad");
        for count in [0, MAX_PARTITIONS + 1] {
            let err = Partitioned::create(via.clone(), &name, count).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::Argument, "{via_name}: {err}");
        }
        for bad in ["".to_owned(), "a{b}".to_owned(), "x".repeat(241)] {
            let err = Partitioned::create(via.clone(), &bad, 4).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidQueue, "{via_name}: {bad:?}: {err}");
        }
        assert!(definition(&via, &name).await.is_empty(), "{via_name}: nothing written");
        let missing = Partitioned::open(via.clone(), &name).await.unwrap_err();
        assert_eq!(missing.kind, ErrorKind::Argument, "{via_name}: {missing}");
        assert!(Partitioned::find(via.clone(), &name).await.unwrap().is_none());

        // An ordinary queue holding jobs is not partitioned over them.
        Queue::new(via.clone(), &name).unwrap().enqueue(b"j".to_vec()).await.unwrap();
        let err = Partitioned::create(via.clone(), &name, 4).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Argument, "{via_name}: {err}");
        assert!(definition(&via, &name).await.is_empty(), "{via_name}: nothing written");

        let key = |name: &str| format!("emq:{{{name}}}:partitions");
        let set = |name: String, fields: &[(&str, &str)]| {
            let fields = fields.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect();
            Command::HSet(key(&name), fields)
        };
        let cases: [(&[(&str, &str)], ErrorKind); 4] = [
            (&[("count", "x")], ErrorKind::Malformed),
            (&[("count", "0")], ErrorKind::Malformed),
            (&[("count", "2"), ("queue:1", "a{b")], ErrorKind::Malformed),
            (&[("count", "2"), ("routing", "jump")], ErrorKind::Version),
        ];
        for (fields, kind) in cases {
            let name = unique_queue("malformed");
            via.plain().one(set(name.clone(), fields)).await.unwrap();
            let err = Partitioned::open(via.clone(), &name).await.unwrap_err();
            assert_eq!(err.kind, kind, "{via_name}: {fields:?}: {err}");
        }
        // A key of another type.
        let name = unique_queue("wrongtype");
        via.plain().one(Command::Exists(key(&name))).await.unwrap();
        via.plain()
            .one(Command::ZAdd {
                key: key(&name),
                score: Some(1),
                member: "m".into(),
                raise_only: false,
                existing_only: false,
            })
            .await
            .unwrap();
        let err = Partitioned::open(via.clone(), &name).await.unwrap_err();
        assert!(err.to_string().contains("WRONGTYPE"), "{via_name}: {err}");
        let err = Partitioned::create(via.clone(), &name, 4).await.unwrap_err();
        assert!(err.to_string().contains("WRONGTYPE"), "{via_name}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_split_over_the_partitions_and_pause_holds_them_all() {
    use echomq::{Config, Limit, Rate};
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let orders = Partitioned::create(via.clone(), &unique_queue("limits"), 4).await.unwrap();
        let per = Duration::from_secs(1);
        let config = Config::default().concurrency(Limit::To(10)).rate(Limit::To(Rate { claims: 10, per }));
        let settings = orders.configure(config).await.unwrap();
        let shares: Vec<(Option<u64>, Option<u64>)> =
            settings.iter().map(|s| (s.concurrency, s.rate.map(|rate| rate.claims))).collect();
        let want = [(Some(3), Some(3)), (Some(3), Some(3)), (Some(2), Some(2)), (Some(2), Some(2))];
        assert_eq!(shares, want, "{via_name}: 10 over 4 partitions");
        for tight in [
            Config::default().concurrency(Limit::To(3)),
            Config::default().rate(Limit::To(Rate { claims: 2, per })),
        ] {
            let err = orders.configure(tight).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::Argument, "{via_name}: {err}");
            assert!(err.to_string().contains("cannot be split over 4 partitions"), "{via_name}: {err}");
        }
        let unchanged: Vec<Option<u64>> =
            futures_util::future::join_all(orders.partitions().iter().map(Queue::settings))
                .await
                .into_iter()
                .map(|s| s.unwrap().concurrency)
                .collect();
        assert_eq!(unchanged, [Some(3), Some(3), Some(2), Some(2)], "{via_name}: a refusal changes nothing");

        assert!(orders.pause().await.unwrap().iter().all(|s| s.paused), "{via_name}");
        let ordinary = orders.worked().pop().unwrap();
        assert!(ordinary.settings().await.unwrap().paused, "{via_name}: the ordinary queue of its name too");
        assert!(orders.resume().await.unwrap().iter().all(|s| !s.paused), "{via_name}");
        assert!(!ordinary.settings().await.unwrap().paused, "{via_name}");
        let lifted = Config::default().concurrency(Limit::Unlimited).rate(Limit::Unlimited);
        assert!(orders
            .configure(lifted)
            .await
            .unwrap()
            .iter()
            .all(|s| s.concurrency.is_none() && s.rate.is_none()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_partitioned_queue_deletes_all_of_it_or_nothing() {
    use echomq::{Delete, Limit, Rate};
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let name = unique_queue("deleted");
        let orders = Partitioned::create(via.clone(), &name, 4).await.unwrap();
        orders.exact_rate(Limit::To(Rate { claims: 100, per: Duration::from_secs(1) })).await.unwrap();
        for n in 0..8 {
            orders.enqueue(format!("job {n}")).await.unwrap();
        }
        // One job of the ordinary queue of the name, as a speaker before 1.8 sends it.
        Queue::new(via.clone(), &name).unwrap().enqueue(b"old".to_vec()).await.unwrap();
        // Claimed under the exact rate: its permit logged.
        let home = orders.worked().pop().unwrap();
        let running = home.claim(Duration::from_secs(60)).await.unwrap().expect("the old job");
        let permits = echomq::keyspace::permits(&name);
        assert_eq!(via.plain().one(Command::Exists(permits.clone())).await.unwrap().int().unwrap(), 1);

        let err = orders.delete(Delete::IfIdle).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::State, "{via_name}: {err}");
        assert!(err.to_string().contains("1 jobs of"), "{via_name}: {err}");
        let held = |stats: echomq::transition::StatsReply| (stats.pending, stats.active);
        assert_eq!(held(orders.stats().await.unwrap()), (8, 1), "{via_name}: nothing deleted");
        assert!(Partitioned::find(via.clone(), &name).await.unwrap().is_some(), "{via_name}");

        assert_eq!(orders.delete(Delete::Force).await.unwrap(), 9, "{via_name}");
        assert!(
            Partitioned::find(via.clone(), &name).await.unwrap().is_none(),
            "{via_name}: definition gone"
        );
        assert_eq!(via.plain().one(Command::Exists(permits)).await.unwrap().int().unwrap(), 0, "{via_name}");
        assert_eq!(held(orders.stats().await.unwrap()), (0, 0), "{via_name}");
        let err = running.ack().await.unwrap_err();
        assert!(
            matches!(err.kind, ErrorKind::NoJob | ErrorKind::Fence),
            "{via_name}: its holder fenced: {err}"
        );
        // The name is free: partitioned again, another way.
        let again = Partitioned::create(via.clone(), &name, 3).await.unwrap();
        assert_eq!(again.partitions().len(), 3, "{via_name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_s_children_go_to_their_partitions_and_its_parent_runs_after_them() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let kids = Partitioned::create(via.clone(), &unique_queue("kids"), 4).await.unwrap();
        let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
        let mut flow = echomq::Flow::new(b"parent".to_vec());
        for n in 0..8u8 {
            let options =
                if n < 2 { EnqueueOptions::default().group("t") } else { EnqueueOptions::default() };
            flow = kids.flow_child(flow, vec![n], options, echomq::OnFailure::Fail).unwrap();
        }
        let added = echomq::Flows::of(&parents).add(flow).await.unwrap();
        assert_eq!(added.children.len(), 8, "{via_name}");
        for child in &added.children {
            let home = kids.partition_of(&child.id);
            assert_eq!(child.queue, home.name(), "{via_name}: a child in its id's partition");
            assert!(home.inspect(&child.id).await.unwrap().is_some(), "{via_name}");
        }
        let grouped: HashSet<&str> = added.children[..2].iter().map(|child| child.queue.as_str()).collect();
        assert_eq!(grouped, HashSet::from([kids.partition_for("t").name()]), "{via_name}: with its group");

        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = order.clone();
        let handler = move |job: JobContext| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(job.payload.clone());
                Ok::<_, HandlerError>(())
            }
        };
        let options = WorkerOptions::default().concurrency(4).idle_wait(Duration::from_millis(50));
        let worker = kids.worker(handler, options).queue(parents.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let working = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("the parent ran", || async { order.lock().unwrap().contains(&b"parent".to_vec()) }).await;
        let _ = stop.send(());
        working.await.unwrap().unwrap();
        let order = order.lock().unwrap();
        assert_eq!(order.len(), 9, "{via_name}: {order:?}");
        assert_eq!(
            order.last().map(Vec::as_slice),
            Some(b"parent".as_slice()),
            "{via_name}: the parent last"
        );
    }
}

/// The six children a parent names on every run, two of group "t".
fn six_children(kids: &Partitioned, parent: &JobId) -> echomq::ChildJobs {
    (0..6u8).fold(echomq::ChildJobs::new(), |children, n| {
        let options = if n < 2 { EnqueueOptions::default().group("t") } else { EnqueueOptions::default() };
        kids.job_child(children, parent, vec![n], options, echomq::OnFailure::Fail).unwrap()
    })
}

#[tokio::test]
async fn a_running_job_s_children_take_the_ids_the_python_package_derives() {
    let via: Arc<dyn Executor> = Arc::new(echomq::Embedded::new());
    let kids = Partitioned::create(via, "kids", 4).await.unwrap();
    let parent: JobId = "JOB_01KBVZ6Q2R8N5X4W3T2S1P0M9K".parse().unwrap();
    let children = (0..3u8).fold(echomq::ChildJobs::new(), |children, n| {
        let options = if n < 1 { EnqueueOptions::default().group("t") } else { EnqueueOptions::default() };
        kids.job_child(children, &parent, vec![n], options, echomq::OnFailure::Fail).unwrap()
    });
    // clients/python/tests/test_partitions.py pins the same three.
    let named = format!("{children:?}");
    for (queue, id) in [
        ("kids~3~3", "JOB_01KBVZ6Q2R000DGNE1Q3WR0REK"),
        ("kids~0~1", "JOB_01KBVZ6Q2R000ZXMG1103A9X90"),
        ("kids~2~1", "JOB_01KBVZ6Q2R001008RC04AWBKNR"),
    ] {
        assert!(named.contains(&format!("{queue:?}")) && named.contains(id), "{queue} {id} in {named}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_waits_for_children_in_their_partitions() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        // A fixed name and parent id, so that the derived ids, and their
        // spread over the partitions, are the same every run.
        let kids = Partitioned::create(via.clone(), &format!("kids-of-a-job-{via_name}"), 4).await.unwrap();
        let parents = Queue::new(via.clone(), &unique_queue("parents")).unwrap();
        let parent: JobId = "JOB_01KBVZ6Q2R8N5X4W3T2S1P0M9K".parse().unwrap();
        parents.enqueue_with(b"parent".to_vec(), EnqueueOptions::default().id(parent.clone())).await.unwrap();
        let (first, again) = (six_children(&kids, &parent), six_children(&kids, &parent));
        assert_eq!(format!("{first:?}"), format!("{again:?}"), "{via_name}: the same children each time");
        let elsewhere = kids.mint_in(partition_index("t", 4) + 1);
        let options = EnqueueOptions::default().group("t").id(elsewhere);
        let refused = kids.job_child(
            echomq::ChildJobs::new(),
            &parent,
            b"x".to_vec(),
            options,
            echomq::OnFailure::Fail,
        );
        assert_eq!(refused.unwrap_err().kind, ErrorKind::Argument, "{via_name}: an id of another partition");

        // Every run: (queue, id, payload). The parent waits on its first run
        // and goes on on its next, once its children ended.
        let runs = Arc::new(std::sync::Mutex::new(Vec::<(String, JobId, Vec<u8>)>::new()));
        let (seen, of) = (runs.clone(), kids.clone());
        let handler = move |job: JobContext| {
            let (seen, kids) = (seen.clone(), of.clone());
            async move {
                seen.lock().unwrap().push((job.queue.clone(), job.id.clone(), job.payload.clone()));
                if job.payload == b"parent" {
                    let children = six_children(&kids, &job.id);
                    job.wait_for(children).await?;
                }
                Ok::<_, HandlerError>(())
            }
        };
        let worker = kids.worker(handler, slots(4)).queue(parents.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let working = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        let went_on =
            || async { parents.inspect(&parent).await.unwrap().unwrap().record.state == echomq::State::Done };
        eventually("the parent went on", went_on).await;
        let _ = stop.send(());
        working.await.unwrap().unwrap();

        let runs = runs.lock().unwrap();
        let (parent_runs, children): (Vec<_>, Vec<_>) =
            runs.iter().partition(|(_, _, payload)| payload == b"parent");
        assert_eq!((parent_runs.len(), children.len()), (2, 6), "{via_name}: {runs:?}");
        for (queue, id, payload) in &children {
            assert_eq!(queue, kids.partition_of(id).name(), "{via_name}: a child in its id's partition");
            if payload[0] < 2 {
                assert_eq!(queue, kids.partition_for("t").name(), "{via_name}: a child with its group");
            }
        }
        let spread: HashSet<&String> = children.iter().map(|(queue, _, _)| queue).collect();
        assert!(spread.len() > 1, "{via_name}: the children spread over the partitions: {spread:?}");
    }
}

/// The seed of a randomized test: `ECHOMQ_SEED`, or the clock's; printed,
/// so that a failure replays.
fn seed() -> u64 {
    let seed = std::env::var("ECHOMQ_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    println!("ECHOMQ_SEED={seed}");
    seed
}

/// xorshift64: reproducible from its seed.
fn xorshift(x: &mut u64, below: u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x % below
}

/// A clock that moves on at every reading, by a few ms, or one time in 25
/// by 60 to 150: a claim runs a while after the permits it asked for,
/// sometimes near the end of their hold or past it.
struct Ticking(std::sync::Mutex<(u64, u64)>);

impl echomq_core::memory::Clock for Ticking {
    fn now_ms(&self) -> u64 {
        let mut state = self.0.lock().unwrap();
        let (now, mut x) = *state;
        let step = xorshift(&mut x, 1000);
        let now = now + if step.is_multiple_of(25) { 60 + step % 91 } else { step % 8 };
        *state = (now, x);
        now
    }
}

/// The server times of the claims the partitions' event logs recorded.
async fn claim_times(queues: &[Queue]) -> Vec<u64> {
    let mut claimed = Vec::new();
    for queue in queues {
        let mut events = queue.events(echomq::EventsFrom::Oldest).await.unwrap();
        while let Some(event) = events.next_within(Duration::from_millis(1)).await.unwrap() {
            if event.kind == echomq::EventKind::Active {
                claimed.push(event.id.ms);
            }
        }
    }
    claimed
}

/// The most claims of `claimed` in any `per` ms.
fn busiest(claimed: &[u64], per: u64) -> usize {
    claimed
        .iter()
        .map(|at| claimed.iter().filter(|t| (*at..at + per).contains(*t)).count())
        .max()
        .unwrap_or(0)
}

/// Claims of random sizes from random partitions and the ordinary queue of
/// the name (which holds nothing, so its permits come back), on an embedded
/// clock that moves on at every reading: no window of PER ms holds more
/// claims than the exact rate, across the partitions, as the event logs
/// record them; and the rate is used, not lost to permits never given
/// back. Lifted, the claims run freely.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exact_rate_holds_in_every_window_across_the_partitions() {
    use echomq::{Embedded, Limit, Rate};
    let mut x = seed();
    let start = 1_750_000_000_000;
    let clock = Arc::new(Ticking(std::sync::Mutex::new((start, x | 1))));
    let via: Arc<dyn Executor> = Arc::new(Embedded::with_clock(clock.clone()));
    let rated = Partitioned::create(via.clone(), "rated", 6).await.unwrap();
    let per = Duration::from_secs(1);
    rated.exact_rate(Limit::To(Rate { claims: 50, per })).await.unwrap();
    // One at a time, each in its id's partition (a batch would stick to one).
    for n in 0..600 {
        rated.enqueue(format!("{n}").into_bytes()).await.unwrap();
    }
    let queues = rated.worked();
    let lease = Duration::from_secs(600);
    let began = echomq_core::memory::Clock::now_ms(&*clock);
    // Half the claims ask the empty ordinary queue.
    let mut taken = Vec::new();
    while echomq_core::memory::Clock::now_ms(&*clock) - began < 10_000 {
        let at = if xorshift(&mut x, 2) == 0 { 6 } else { xorshift(&mut x, 6) as usize };
        let leases = queues[at].claim_many(lease, 1 + xorshift(&mut x, 8), None).await.unwrap();
        taken.extend(leases.jobs.into_iter().map(|lease| (at, lease.into_job().id)));
    }
    // When each claim ran: its record's stamp, the claim's own now (the
    // event log's stamps are the store's later readings of this clock).
    let mut claimed = Vec::new();
    for (at, id) in &taken {
        let record = queues[*at].inspect(id).await.unwrap().unwrap().record;
        claimed.push(record.updated_at.unwrap());
    }
    assert!(busiest(&claimed, 1000) <= 50, "{} claims in one second", busiest(&claimed, 1000));
    // A busy queue runs at up to 50 a PER + hold (1100 ms), some 450 in
    // 10 s; with the permits of the empty queue's claims lost, half that.
    assert!(claimed.len() >= 350, "only {} claims in 10 s under a rate of 50/s", claimed.len());
    rated.exact_rate(Limit::Unlimited).await.unwrap();
    // Workers read the definition again within a second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut freely = 0;
    for queue in rated.partitions() {
        freely += queue.claim_many(lease, 1000, None).await.unwrap().jobs.len();
    }
    assert_eq!(freely, 600 - claimed.len(), "lifted, the claims take what pending holds");
    let bad = rated.exact_rate(Limit::To(Rate { claims: 0, per })).await.unwrap_err();
    assert_eq!(bad.kind, ErrorKind::Argument, "{bad}");
    // Refused before anything is sent: no claims, a period under 100 ms, a rate over 100,000.
    for refused in
        [Rate { claims: 5, per: Duration::ZERO }, Rate { claims: 5, per: Duration::from_millis(99) }]
            .into_iter()
            .chain([Rate { claims: 100_001, per }])
    {
        let bad = rated.exact_rate(Limit::To(refused)).await.unwrap_err();
        assert_eq!(bad.kind, ErrorKind::Argument, "{bad}");
    }
    let stored =
        via.plain().one(Command::HGet("emq:{rated}:partitions".into(), "rate".into())).await.unwrap();
    assert_eq!(
        stored.text().unwrap().as_deref(),
        Some("0"),
        "a refusal writes nothing: the lifted rate stays"
    );
}

/// A worker over the partitions under an exact rate, on every executor:
/// every job runs once, and the claims the partitions' event logs record,
/// by the server's clock, never exceed the rate in any window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_holds_an_exact_rate_on_every_executor() {
    use echomq::{Limit, Rate};
    let (_server, executors) = common::three_executors().await;
    let per = Duration::from_millis(300);
    for (via_name, via) in executors {
        let rated = Partitioned::create(via.clone(), &unique_queue("rated"), 4).await.unwrap();
        rated.exact_rate(Limit::To(Rate { claims: 20, per })).await.unwrap();
        let jobs = (0..80).map(|n| (format!("{n}").into_bytes(), EnqueueOptions::default()));
        assert!(rated.enqueue_many(jobs).await.unwrap().iter().all(Result::is_ok));
        assert_eq!(work(&rated, 80, 16).await, 80, "{via_name}: each job once");
        let claimed = claim_times(rated.partitions()).await;
        assert_eq!(claimed.len(), 80, "{via_name}: a claim a job");
        let busiest = busiest(&claimed, 300);
        assert!(busiest <= 20, "{via_name}: {busiest} claims in one 300 ms");
    }
}

/// A handler that runs `hold` and keeps in `peak` the most runs at once.
fn overlapping(
    now: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    ran: Arc<AtomicUsize>,
    hold: Duration,
) -> impl echomq::worker::Handler {
    move |_job: JobContext| {
        let (now, peak, ran) = (now.clone(), peak.clone(), ran.clone());
        async move {
            let running = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(running, Ordering::SeqCst);
            tokio::time::sleep(hold).await;
            now.fetch_sub(1, Ordering::SeqCst);
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, HandlerError>(())
        }
    }
}

/// The running permits of `p`'s coordinator that run now (scored after
/// the server's now: one that lapsed and was not trimmed yet runs no more).
async fn running_permits(via: &Arc<dyn Executor>, p: &Partitioned) -> i64 {
    let key = echomq::keyspace::running(p.name());
    let now = via.plain().one(Command::Time).await.unwrap().int().unwrap() as f64;
    let range = Command::ZRange { key, count: 100_000, latest: true };
    let permits = via.plain().one(range).await.unwrap().scored().unwrap();
    permits.iter().filter(|(_, ends)| *ends > now).count() as i64
}

/// Wait until every running permit of `p` was given back, or stopped
/// running: within `within`. A claim that a worker stopping cut short
/// keeps its permits until they lapse (a hold, the lease and a slack
/// after their grant); one not given back at its job's end would run on
/// for as long after the job's last renewal.
async fn given_back_within(via: &Arc<dyn Executor>, p: &Partitioned, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    while running_permits(via, p).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "running permits not given back: {}",
            running_permits(via, p).await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// [`given_back_within`] ten seconds: a worker's lease of 30 s, so a
/// permit not given back would run on past it.
async fn given_back(via: &Arc<dyn Executor>, p: &Partitioned) {
    given_back_within(via, p, Duration::from_secs(10)).await;
}

/// Two workers of eight slots each over four partitions under an exact
/// concurrency of 3, on every executor: every job runs once, never more
/// than three at once across the partitions and the workers, and every
/// running permit is given back at its job's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_hold_an_exact_concurrency_on_every_executor() {
    use echomq::Limit;
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let capped = Partitioned::create(via.clone(), &unique_queue("capped"), 4).await.unwrap();
        capped.exact_concurrency(Limit::To(3)).await.unwrap();
        let jobs = (0..30).map(|n| (format!("{n}").into_bytes(), EnqueueOptions::default()));
        assert!(capped.enqueue_many(jobs).await.unwrap().iter().all(Result::is_ok));
        let capped = Partitioned::open(via.clone(), capped.name()).await.unwrap();
        assert_eq!(capped.running_cap(), Some(3), "{via_name}");
        let [now, peak, ran]: [Arc<AtomicUsize>; 3] = Default::default();
        let hold = Duration::from_millis(40);
        let workers = [0, 1]
            .map(|_| capped.worker(overlapping(now.clone(), peak.clone(), ran.clone(), hold), slots(8)));
        let (stop, running) = spawned(workers);
        eventually("every job ran", || async { ran.load(Ordering::SeqCst) >= 30 }).await;
        stop.send(true).unwrap();
        for worker in running {
            worker.await.unwrap().unwrap();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 30, "{via_name}: each job once");
        let peak = peak.load(Ordering::SeqCst);
        assert!((2..=3).contains(&peak), "{via_name}: {peak} jobs ran at once under a cap of 3");
        given_back(&via, &capped).await;
        for bad in [0, 100_001] {
            let err = capped.exact_concurrency(Limit::To(bad)).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::Argument, "{via_name}: {err}");
        }
    }
}

/// A job that runs past its lease under an exact concurrency of 1 keeps
/// its running permit, renewed before each renewal of its lease: the next
/// job waits for it to end, where an unrenewed permit would have stopped
/// running 4 s after its grant (its hold, the 2 s lease and the slack),
/// with 1.5 s of the job still to run (Lua).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_job_keeps_its_running_permit_past_its_first_lease() {
    use echomq::Limit;
    let (_server, executors) = common::three_executors().await;
    let via = executors[0].1.clone();
    let capped = Partitioned::create(via.clone(), &unique_queue("long"), 2).await.unwrap();
    capped.exact_concurrency(Limit::To(1)).await.unwrap();
    for n in 0..2 {
        capped.enqueue(format!("{n}").into_bytes()).await.unwrap();
    }
    let [now, peak, ran]: [Arc<AtomicUsize>; 3] = Default::default();
    let options = slots(2).lease(Duration::from_secs(2));
    let worker =
        capped.worker(overlapping(now, peak.clone(), ran.clone(), Duration::from_millis(5500)), options);
    assert_eq!(run_until(worker, &ran, 2).await, 2, "each job once, its lease kept");
    assert_eq!(peak.load(Ordering::SeqCst), 1, "the second job waited for the first");
    given_back_within(&via, &capped, Duration::from_secs(10)).await;
}

/// Claims by hand under an exact concurrency of 1, on every executor: the
/// first takes the one permit, a second gets nothing and is told when to
/// come back; an extension renews the permit with the lease; the ack gives
/// it back, and the next claim takes a job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_job_holds_its_permit_until_it_ends() {
    use echomq::Limit;
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let capped = Partitioned::create(via.clone(), &unique_queue("held"), 2).await.unwrap();
        capped.exact_concurrency(Limit::To(1)).await.unwrap();
        for n in 0..4 {
            capped.enqueue(format!("{n}").into_bytes()).await.unwrap();
        }
        let queues = capped.worked();
        let lease = Duration::from_secs(60);
        let claim = |at: usize| queues[at].claim_many(lease, 2, None);
        let mut first = claim(0).await.unwrap();
        if first.jobs.is_empty() {
            first = claim(1).await.unwrap();
        }
        assert_eq!(first.jobs.len(), 1, "{via_name}: one permit, one job");
        for at in 0..3 {
            let held = claim(at).await.unwrap();
            assert!(held.jobs.is_empty(), "{via_name}: the cap is taken");
            assert!(matches!(held.held, Some(echomq::Held::Wait(_))), "{via_name}: {:?}", held.held);
        }
        assert_eq!(running_permits(&via, &capped).await, 1, "{via_name}");
        assert_eq!(capped.running().await.unwrap(), 1, "{via_name}: as the coordinator counts it");
        let job = first.jobs.pop().unwrap();
        job.extend(lease).await.unwrap();
        job.ack().await.unwrap();
        given_back(&via, &capped).await;
        // A permit that stopped running and was not trimmed yet is not counted.
        let key = echomq::keyspace::running(capped.name());
        let lapsed = Command::ZAdd {
            key,
            score: Some(1),
            member: "99".into(),
            raise_only: false,
            existing_only: false,
        };
        via.plain().one(lapsed).await.unwrap();
        assert_eq!(capped.running().await.unwrap(), 0, "{via_name}: a lapsed permit runs no more");
        // One at a time: a claim of an empty partition gives its permit back.
        let mut took = 0;
        for at in 0..2 {
            took += claim(at).await.unwrap().jobs.len();
            if took > 0 {
                break;
            }
        }
        assert_eq!(took, 1, "{via_name}: the next claim took the permit back");
    }
}

/// A worker's reading of the definition lags by up to a second, and the
/// coordinator corrects it, on every executor: a concurrency set since a
/// claim read only a rate is refused to the claim's PERMIT, which reads it
/// and takes a running permit; a concurrency lifted since a claim took one
/// leaves a RENEW finding the permit gone, and the lease is renewed all
/// the same, the limit no longer binding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_set_or_lifted_since_the_last_read_binds_as_it_stands() {
    use echomq::{Limit, Rate};
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let capped = Partitioned::create(via.clone(), &unique_queue("lagged"), 1).await.unwrap();
        capped.exact_rate(Limit::To(Rate { claims: 1000, per: Duration::from_secs(1) })).await.unwrap();
        for n in 0..4 {
            capped.enqueue(format!("{n}").into_bytes()).await.unwrap();
        }
        let queue = capped.partitions()[0].clone();
        let lease = Duration::from_secs(60);
        let first = queue.claim_many(lease, 1, None).await.unwrap();
        assert_eq!(first.jobs.len(), 1, "{via_name}: under the rate alone");
        assert_eq!(running_permits(&via, &capped).await, 0, "{via_name}: no concurrency yet");
        capped.exact_concurrency(Limit::To(2)).await.unwrap();
        let second = queue.claim_many(lease, 3, None).await.unwrap();
        assert_eq!(second.jobs.len(), 2, "{via_name}: the new cap read at once, not a second later");
        assert_eq!(running_permits(&via, &capped).await, 2, "{via_name}");
        capped.exact_concurrency(Limit::Unlimited).await.unwrap();
        // As if granted after the lift: no running permit behind the job.
        via.plain().one(Command::Del(echomq::keyspace::running(capped.name()))).await.unwrap();
        let held = &second.jobs[0];
        held.extend(lease).await.expect("the cap lifted, a gone permit binds no longer");
    }
}

/// A worker of a partitioned queue waits for a claim's acks, which come
/// together, to send them in one call. On one thread, where each turn of
/// the runtime runs every job that is ready, that is deterministic: for
/// the same jobs it makes at most 0.8 of the ack calls of a worker of one
/// queue, which sends them as they come (refilling its slots); sending as
/// they came, the partitioned worker made as many. Counted by the server,
/// on Native. On many threads it is as far as the runtime's turns go:
/// `echomq-partitions --commands` shows the counts there.
#[tokio::test]
async fn a_partitioned_worker_gathers_a_claims_acks_into_one_call() {
    let (server, executors) = common::three_executors().await;
    let via = executors[1].1.clone();
    let jobs = 12_000;
    let mut admin = server.client().get_multiplexed_async_connection().await.unwrap();
    let mut ack_calls = Vec::new();
    for partitions in [None, Some(12)] {
        let name = unique_queue("acked");
        let batch = (0..jobs).map(|n: usize| (n.to_be_bytes().to_vec(), EnqueueOptions::default()));
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut admin).await.unwrap();
        let ran = match partitions {
            None => {
                let queue = Queue::new(via.clone(), &name).unwrap();
                assert!(queue.enqueue_many(batch).await.unwrap().iter().all(Result::is_ok));
                let ran = Arc::new(AtomicUsize::new(0));
                let worker = echomq::worker::Worker::with_options(queue, counting(ran.clone()), slots(256));
                run_until(worker, &ran, jobs).await
            }
            Some(n) => {
                let queue = Partitioned::create(via.clone(), &name, n).await.unwrap();
                assert!(queue.enqueue_many(batch).await.unwrap().iter().all(Result::is_ok));
                work(&queue, jobs, 256).await
            }
        };
        assert_eq!(ran, jobs);
        let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut admin).await.unwrap();
        let calls = |command: &str| {
            let line = stats.lines().find(|line| line.starts_with(&format!("cmdstat_{command}:")));
            line.and_then(|line| line.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        ack_calls.push(calls("emq.ackmany") + calls("emq.ack") + calls("emq.acknext"));
    }
    let (one, parted) = (ack_calls[0], ack_calls[1]);
    println!("{jobs} jobs, a worker of 256 slots: {one} ack calls for one queue, {parted} for 12 partitions");
    assert!(parted * 10 <= one * 8, "12 partitions took {parted} ack calls, one queue {one}");
}

/// Each queue of a partitioned queue is kept by one of its workers at a
/// time, under its upkeep lease (PROTOCOL.md §11.3), on every executor:
/// two workers share the leases; a partition whose lease another holds is
/// not kept (its due delayed job stays delayed, while two rounds of the
/// other partitions' run), and once that lease is gone a worker takes it
/// and keeps the partition; workers that stop give their leases back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_partition_is_kept_by_one_worker_at_a_time() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let kept = Partitioned::create(via.clone(), &unique_queue("kept"), 4).await.unwrap();
        let lease = |queue: &Queue| format!("emq:{{{}}}:upkeep", queue.name());
        let holder = |queue: &Queue| {
            let (via, key) = (via.clone(), lease(queue));
            async move { via.plain().one(Command::Get(key)).await.unwrap().text().unwrap() }
        };
        let held = &kept.partitions()[0];
        let elsewhere = Command::SetIfAbsent { key: lease(held), value: "elsewhere".into(), ms: 600_000 };
        assert_eq!(via.plain().one(elsewhere).await.unwrap().text().unwrap(), None, "{via_name}");
        let soon = || EnqueueOptions::default().delay(Duration::from_millis(1));
        let waiting = held.enqueue_with(b"held".to_vec(), soon()).await.unwrap().id;
        let ran = Arc::new(AtomicUsize::new(0));
        let options = slots(4).upkeep(Duration::from_millis(50));
        let workers = [0, 1].map(|_| kept.worker(counting(ran.clone()), options.clone()));
        let ids: Vec<String> = workers.iter().map(|worker| worker.id().to_owned()).collect();
        let (stop, running) = spawned(workers);
        // Two rounds, the second enqueued once the first ran: partition 0's
        // lease was asked for in the periods between.
        for round in 1..=2 {
            for partition in &kept.partitions()[1..] {
                partition.enqueue_with(b"due".to_vec(), soon()).await.unwrap();
            }
            eventually("each kept partition's due job ran", || async {
                ran.load(Ordering::SeqCst) >= 3 * round
            })
            .await;
        }
        let state = held.inspect(&waiting).await.unwrap().unwrap().record.state;
        assert_eq!(
            state,
            echomq::State::Delayed,
            "{via_name}: kept by no worker here while another holds its lease"
        );
        for queue in &kept.worked()[1..] {
            let keeper = holder(queue).await;
            assert!(
                keeper.as_ref().is_some_and(|id| ids.contains(id)),
                "{via_name}: {keeper:?} keeps {}",
                queue.name()
            );
        }
        assert_eq!(
            via.plain().one(Command::Del(lease(held))).await.unwrap(),
            echomq::executor::Answer::Int(1)
        );
        eventually("a worker took the lease and kept the partition", || async {
            ran.load(Ordering::SeqCst) >= 7
        })
        .await;
        let keeper = holder(held).await;
        assert!(keeper.as_ref().is_some_and(|id| ids.contains(id)), "{via_name}: {keeper:?}");
        stop.send(true).unwrap();
        for worker in running {
            worker.await.unwrap().unwrap();
        }
        for queue in kept.worked() {
            assert_eq!(holder(&queue).await, None, "{via_name}: {} given back", queue.name());
        }
    }
}

/// A change that fails on some partitions is made on the others all the
/// same, and its error names those (here an ACL lets a user reach two).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_refused_on_some_partitions_names_those_it_made() {
    use echomq::{Config, Lua};
    let server = echomq_test_support::RedisServer::start();
    let q = unique_queue("acl");
    let orders = Partitioned::create(Arc::new(Lua::new(server.connection().await)), &q, 4).await.unwrap();
    let mut acl = redis::cmd("ACL");
    acl.arg(&["SETUSER", "two", "on", ">pw", "+@all", "~emq:queues"]).arg(format!("~emq:{{{q}}}:partitions"));
    for k in 0..2 {
        acl.arg(format!("~emq:{{{}}}:*", partition_name(&q, k, 4)));
    }
    let _: () = acl.query_async(&mut server.connection().await).await.unwrap();
    let url = server.url().replacen("redis://", "redis://two:pw@", 1);
    let conn = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
    let two = Partitioned::open(Arc::new(Lua::new(conn)), &q).await.unwrap();
    let err = two.configure(Config::default().paused(true)).await.unwrap_err();
    let (first, second) = (partition_name(&q, 0, 4), partition_name(&q, 1, 4));
    let said = format!("changed on 2 of its 4 partitions ({first}, {second}) all the same");
    assert!(err.to_string().contains(&said), "{err}");
    let paused: Vec<bool> = futures_util::future::join_all(orders.partitions().iter().map(Queue::settings))
        .await
        .into_iter()
        .map(|settings| settings.unwrap().paused)
        .collect();
    assert_eq!(paused, [true, true, false, false]);
}
