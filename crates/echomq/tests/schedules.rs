//! Schedules run by workers: three workers, each with its own connection
//! (two on Lua, one on the native module), fire a 250 ms schedule together, and
//! each tick becomes exactly one job (no duplicate, no gap) over more than 20
//! ticks. Missed ticks while nothing ran fire as the schedule's policy says.
//! Triggering a schedule enqueues its job at once, on every executor. A
//! paused schedule's ticks fire nothing and move on, and a resume fires the
//! next tick alone (no backlog), on every executor.

mod common;

use echomq::Upkeep;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::executor::execute;
use echomq::schedule::{tick_id, tick_of};
use echomq::transition::{Listed, Schedules};
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Embedded, Executor, JobId, Lua, Missed, Native, Queue, Schedule, State};
use echomq_core::memory::ManualClock;
use echomq_test_support::{unique_queue, RedisServer};

/// A queue named `name` over a connection of its own.
async fn queue(server: &RedisServer, native: bool, name: &str) -> Queue {
    let conn = server.client().get_multiplexed_async_connection().await.unwrap();
    let via: Arc<dyn Executor> = if native { Arc::new(Native::new(conn)) } else { Arc::new(Lua::new(conn)) };
    Queue::new(via, name).unwrap()
}

/// Every job id in the queue's six sets.
async fn all_jobs(server: &RedisServer, q: &Queue) -> Vec<JobId> {
    let mut conn = server.client().get_multiplexed_async_connection().await.unwrap();
    let mut ids = Vec::new();
    for state in State::ALL {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(q.keyspace().state(state))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        ids.extend(members.into_iter().map(|id| id.parse::<JobId>().unwrap()));
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_fire_each_tick_of_a_schedule_once() {
    let server = RedisServer::start_with_module();
    let name = unique_queue("cron");
    let admin = queue(&server, false, &name).await;
    // A quarter-second beat: the workers' upkeep (every 100 ms) races for
    // each tick, and 21 of them pass in about five seconds.
    let beat = Duration::from_millis(250);
    let every = Schedule::every("beat", beat, "tick").unwrap().missed(Missed::All(100)).unwrap();
    let first = admin.schedules().add(&every).await.unwrap().next;

    let handled = Arc::new(Mutex::new(Vec::<JobId>::new()));
    let mut running = Vec::new();
    for native in [false, true, false] {
        let q = queue(&server, native, &name).await;
        let seen = handled.clone();
        let worker = Worker::with_options(
            q,
            move |job: JobContext| {
                seen.lock().unwrap().push(job.id.clone());
                async { Ok::<_, HandlerError>(()) }
            },
            WorkerOptions::default().upkeep(Duration::from_millis(100)),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        running.push((
            stop,
            tokio::spawn(worker.run_until(async move {
                let _ = stopped.await;
            })),
        ));
    }

    // Until 21 ticks were handled; bounded, whatever the machine's load.
    let deadline = Instant::now() + Duration::from_secs(90);
    while handled.lock().unwrap().len() < 21 {
        assert!(Instant::now() < deadline, "only {} ticks in 90 s", handled.lock().unwrap().len());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (stop, task) in running {
        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
    }

    let handled = handled.lock().unwrap().clone();
    let distinct: BTreeSet<&JobId> = handled.iter().collect();
    assert_eq!(distinct.len(), handled.len(), "a tick's job ran twice: {handled:?}");
    // Every job of the queue is a tick's, and the ticks run on from the first without a gap.
    let ids = all_jobs(&server, &admin).await;
    let ticks: BTreeSet<u64> = ids.iter().map(|id| tick_of(id).expect("a tick's id")).collect();
    assert_eq!(ticks.len(), ids.len(), "one job per tick");
    let last = *ticks.last().unwrap();
    let want: BTreeSet<u64> = (first..=last).step_by(beat.as_millis() as usize).collect();
    assert_eq!(ticks, want, "every tick from the first to the last, once");
    assert!(ticks.len() >= 21);
    for id in &ids {
        assert_eq!(*id, tick_id(&name, "beat", tick_of(id).unwrap()), "the id is the tick's");
    }
}

/// On the embedded executor, whose clock the test moves: no worker ran for
/// ten and a half hours of an hourly schedule.
#[tokio::test]
async fn missed_ticks_fire_as_the_policy_says() {
    const HOUR: u64 = 3_600_000;
    let start = 1_764_500_000_000 / HOUR * HOUR + 1000;
    for (missed, fired) in [(Missed::Last, 1), (Missed::Skip, 0), (Missed::All(3), 3), (Missed::All(100), 10)]
    {
        let clock = Arc::new(ManualClock::new(start));
        let q = Queue::new(Arc::new(Embedded::with_clock(clock.clone())), "missed").unwrap();
        let hourly = Schedule::every("h", Duration::from_millis(HOUR), "x").unwrap().missed(missed).unwrap();
        let scheduled = q.schedules().add(&hourly).await.unwrap();
        assert_eq!(scheduled.next, start - 1000 + HOUR);
        clock.advance(10 * HOUR + HOUR / 2);

        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), fired, "{missed:?}");
        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), 0, "{missed:?}: each tick once");
        let listed = q.schedules().list().await.unwrap();
        assert_eq!(listed[0].next, scheduled.next + 10 * HOUR, "{missed:?}: the first tick after now");
        assert_eq!(q.stats().await.unwrap().pending, fired, "{missed:?}");
        let latest = q.inspect(&tick_id("missed", "h", scheduled.next + 9 * HOUR)).await.unwrap();
        assert_eq!(latest.is_some(), fired > 0, "{missed:?}: the latest missed tick is among those fired");
        let earliest = q.inspect(&tick_id("missed", "h", scheduled.next)).await.unwrap();
        assert_eq!(earliest.is_some(), fired == 10, "{missed:?}");

        // On time again: the next tick fires under every policy.
        clock.advance(HOUR / 2);
        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), 1, "{missed:?}");
        assert!(q.schedules().remove("h").await.unwrap());
        assert!(!q.schedules().remove("h").await.unwrap());
        assert!(q.schedules().list().await.unwrap().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_enqueues_the_schedules_job_now_on_every_executor() {
    let (_server, executors) = common::three_executors().await;
    for (via_name, via) in executors {
        let name = unique_queue("trigger");
        let q = Queue::new(via, &name).unwrap();
        let hourly = Schedule::every("hourly", Duration::from_secs(3600), "the payload").unwrap();
        let next = q.schedules().add(&hourly).await.unwrap().next;

        let first = q.schedules().trigger("hourly").await.unwrap().expect("a schedule of that name");
        let second = q.schedules().trigger("hourly").await.unwrap().expect("a schedule of that name");
        assert_ne!(first, second, "{via_name}: each trigger is a job of its own");
        for id in [&first, &second] {
            let job = q.inspect(id).await.unwrap().expect("the triggered job");
            assert_eq!(job.record.state, State::Pending, "{via_name}");
            assert_eq!(job.record.payload, b"the payload", "{via_name}");
            assert_ne!(tick_of(id), Some(next), "{via_name}: not the next tick's id");
        }
        // The schedule is as it was: its next tick did not move.
        let listed = q.schedules().list().await.unwrap();
        assert_eq!((listed.len(), listed[0].next), (1, next), "{via_name}");

        // No such schedule: nothing enqueued.
        let before = q.stats().await.unwrap();
        assert_eq!(q.schedules().trigger("nightly").await.unwrap(), None, "{via_name}");
        // A bad name: refused, nothing enqueued.
        for bad in [String::new(), "a\nb".to_owned(), "x".repeat(201)] {
            let err = q.schedules().trigger(&bad).await.unwrap_err();
            assert_eq!(err.kind, echomq::ErrorKind::Argument, "{via_name}: {bad:?}");
        }
        assert_eq!(q.stats().await.unwrap(), before, "{via_name}: a refused trigger enqueued something");
    }
}

/// On the embedded executor, whose clock the test moves: an hourly schedule
/// paused for ten and a half hours, under each policy.
#[tokio::test]
async fn a_paused_schedule_fires_nothing_and_a_resume_no_backlog() {
    const HOUR: u64 = 3_600_000;
    let start = 1_764_500_000_000 / HOUR * HOUR + 1000;
    for missed in [Missed::Last, Missed::Skip, Missed::All(3), Missed::All(100)] {
        let clock = Arc::new(ManualClock::new(start));
        let q = Queue::new(Arc::new(Embedded::with_clock(clock.clone())), "paused").unwrap();
        let hourly = Schedule::every("h", Duration::from_millis(HOUR), "x").unwrap().missed(missed).unwrap();
        q.schedules().add(&hourly).await.unwrap();
        let paused = q.schedules().pause("h").await.unwrap().expect("the schedule");
        assert_eq!(paused.schedule, hourly.clone().paused(true), "{missed:?}");

        // Ten ticks come due while it is paused: none fires, and its next moves past now.
        clock.advance(10 * HOUR + HOUR / 2);
        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), 0, "{missed:?}");
        let listed = q.schedules().list().await.unwrap().remove(0);
        assert!(listed.schedule.paused, "{missed:?}");
        assert_eq!(listed.next, start - 1000 + 11 * HOUR, "{missed:?}: the first tick after now");
        assert_eq!(q.stats().await.unwrap().pending, 0, "{missed:?}");
        // Paused already: left as it is.
        assert_eq!(q.schedules().pause("h").await.unwrap().as_ref(), Some(&listed), "{missed:?}");

        // Resumed: the next tick fires, alone.
        let resumed = q.schedules().resume("h").await.unwrap().expect("the schedule");
        assert_eq!((resumed.schedule, resumed.next), (hourly.clone(), listed.next), "{missed:?}");
        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), 0, "{missed:?}: not due yet");
        clock.advance(HOUR / 2);
        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), 1, "{missed:?}: the next tick alone");
        assert!(q.inspect(&tick_id("paused", "h", resumed.next)).await.unwrap().is_some(), "{missed:?}");

        // Paused again with no upkeep at all for five ticks: a resume starts
        // from the first tick after now, and no missed tick fires.
        q.schedules().pause("h").await.unwrap().expect("the schedule");
        clock.advance(5 * HOUR);
        let resumed = q.schedules().resume("h").await.unwrap().expect("the schedule");
        assert_eq!(resumed.next, listed.next + 6 * HOUR, "{missed:?}");
        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), 0, "{missed:?}: no backlog");
        clock.advance(HOUR);
        assert_eq!(Upkeep::of(&q).fire_schedules().await.unwrap(), 1, "{missed:?}");
        assert_eq!(q.stats().await.unwrap().pending, 2, "{missed:?}: one job per resume");
    }
}

/// What SCHEDULES reads of the queue, as the server stores it.
async fn listed(q: &Queue, via: &dyn Executor) -> Listed {
    execute(via, q.keyspace(), &Schedules { due: false, limit: 10 }).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_schedule_skips_its_ticks_on_every_executor() {
    let (_server, executors) = common::three_executors().await;
    let mut running = tokio::task::JoinSet::new();
    for (via_name, via) in executors {
        running.spawn(pause_and_resume(via_name, via));
    }
    while let Some(done) = running.join_next().await {
        done.unwrap();
    }
}

/// Pause a 2 s schedule that fires every missed tick, let two ticks pass
/// under the upkeep, resume it: one job, the first tick after the resume.
async fn pause_and_resume(via_name: &'static str, via: Arc<dyn Executor>) {
    let beat = 2000;
    let name = unique_queue("pause");
    let q = Queue::new(via.clone(), &name).unwrap();
    let every =
        Schedule::every("beat", Duration::from_millis(beat), "b").unwrap().missed(Missed::All(100)).unwrap();
    q.schedules().add(&every).await.unwrap();

    // No such schedule, or a bad name: nothing written.
    let before = listed(&q, &*via).await.schedules;
    assert_eq!(q.schedules().pause("nightly").await.unwrap(), None, "{via_name}");
    for bad in [String::new(), "a\nb".to_owned(), "x".repeat(201)] {
        for err in [q.schedules().pause(&bad).await, q.schedules().resume(&bad).await] {
            assert_eq!(err.unwrap_err().kind, echomq::ErrorKind::Argument, "{via_name}: {bad:?}");
        }
    }
    assert_eq!(listed(&q, &*via).await.schedules, before, "{via_name}: a refused pause wrote something");

    let paused = q.schedules().pause("beat").await.unwrap().expect("the schedule");
    let stored = listed(&q, &*via).await.schedules.remove(0);
    assert_eq!(stored.definition, b"paused every 2000 all:100\nb", "{via_name}");
    // Two ticks come due while it is paused: each upkeep moves it on and fires none.
    let upkeep = Upkeep::of(&q);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert_eq!(upkeep.fire_schedules().await.unwrap(), 0, "{via_name}: a paused tick fired");
        let Listed { now, schedules } = listed(&q, &*via).await;
        if schedules[0].next >= paused.next + 2 * beat && schedules[0].next > now {
            break;
        }
        assert!(Instant::now() < deadline, "{via_name}: the paused ticks did not move on in 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(q.stats().await.unwrap(), Default::default(), "{via_name}: no job while paused");

    // Resumed: the first tick after now fires, alone, though all:100 would
    // fire every missed one.
    let resumed = q.schedules().resume("beat").await.unwrap().expect("the schedule");
    assert_eq!(resumed.schedule, every, "{via_name}");
    assert_eq!(listed(&q, &*via).await.schedules[0].definition, every.definition(), "{via_name}");
    let fired = loop {
        let fired = upkeep.fire_schedules().await.unwrap();
        if fired > 0 {
            break fired;
        }
        assert!(Instant::now() < deadline, "{via_name}: the resumed schedule did not fire in 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(fired, 1, "{via_name}");
    assert_eq!(q.stats().await.unwrap().pending, 1, "{via_name}");
    let job = q.inspect(&tick_id(&name, "beat", resumed.next)).await.unwrap();
    assert!(job.is_some(), "{via_name}: the job is the first tick's after the resume");
}
