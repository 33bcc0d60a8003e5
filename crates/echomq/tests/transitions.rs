//! Every transition, table-driven, on a real redis-server: seed the keys, run
//! the transition, then check its reply and every key of the queue.

mod common;

use std::time::{Duration, SystemTime};

use common::{check, harness, run, Call, A};
use echomq::transition::*;
use echomq::{JobId, State};

struct Case {
    name: &'static str,
    seed: &'static [&'static str],
    call: Call,
    reply: &'static str,
    after: &'static [&'static str],
}

fn a() -> JobId {
    A.parse().unwrap()
}
fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
fn enqueue(priority: i64, due: Due) -> Call {
    Call::Enqueue(Enqueue { id: a(), payload: b"p".to_vec(), priority, due })
}
fn fail(token: u64, max_attempts: u64) -> Call {
    Call::Fail(Fail { id: a(), token, max_attempts, backoff: secs(1), error: "boom".into() })
}

const ACTIVE_A: &[&str] = &["HSET $q:job:$A state active attempts 1 payload p", "ZADD $q:active 5 $A"];
const ACTIVE_A_AFTER: &[&str] = &["active $A@5", "job:$A attempts=1 payload=p state=active"];

fn cases() -> Vec<Case> {
    vec![
        // ENQUEUE
        Case {
            name: "enqueue writes the seed's record and pending at score 0",
            seed: &[],
            call: enqueue(0, Due::Now),
            reply: "Ok(true)",
            after: &["job:$A attempts=0 payload=p state=pending", "pending $A@0"],
        },
        Case {
            name: "enqueue of an existing id is a duplicate and changes nothing",
            seed: &["HSET $q:job:$A state done attempts 1 payload old", "ZADD $q:done 5 $A"],
            call: enqueue(0, Due::Now),
            reply: "Ok(false)",
            after: &["done $A@5", "job:$A attempts=1 payload=old state=done"],
        },
        Case {
            name: "enqueue with a priority scores pending by it and remembers it",
            seed: &[],
            call: enqueue(-7, Due::Now),
            reply: "Ok(true)",
            after: &["job:$A attempts=0 payload=p state=pending", "pending $A@-7", "priority $A=-7"],
        },
        Case {
            name: "enqueue with a delay goes to delayed at the server's now plus the delay",
            seed: &[],
            call: enqueue(0, Due::After(secs(60))),
            reply: "Ok(true)",
            after: &["delayed $A@now+60000", "job:$A attempts=0 payload=p state=delayed"],
        },
        Case {
            name: "enqueue at a time already past is simply pending",
            seed: &[],
            call: enqueue(0, Due::At(SystemTime::UNIX_EPOCH + secs(1))),
            reply: "Ok(true)",
            after: &["job:$A attempts=0 payload=p state=pending", "pending $A@0"],
        },
        // CLAIM
        Case {
            name: "claim takes the lowest priority first and mints token 1",
            seed: &[
                "HSET $q:job:$A state pending attempts 0 payload a",
                "HSET $q:job:$B state pending attempts 0 payload b",
                "ZADD $q:pending 0 $A -1 $B",
            ],
            call: Call::Claim(Claim { lease: secs(30), count: 1 }),
            reply: "Ok([Claimed { id: $B, token: 1, payload: [98] }])",
            after: &[
                "active $B@now+30000",
                "job:$A attempts=0 payload=a state=pending",
                "job:$B attempts=1 payload=b state=active",
                "pending $A@0",
            ],
        },
        Case {
            name: "claim of a batch takes equal priorities in id order and mints the next token",
            seed: &[
                "HSET $q:job:$A state pending attempts 2 payload a",
                "HSET $q:job:$B state pending attempts 0 payload b",
                "ZADD $q:pending 0 $B 0 $A",
            ],
            call: Call::Claim(Claim { lease: secs(30), count: 5 }),
            reply: "Ok([Claimed { id: $A, token: 3, payload: [97] }, Claimed { id: $B, token: 1, payload: [98] }])",
            after: &[
                "active $A@now+30000 $B@now+30000",
                "job:$A attempts=3 payload=a state=active",
                "job:$B attempts=1 payload=b state=active",
            ],
        },
        Case {
            name: "claim of an empty queue gets nothing",
            seed: &[],
            call: Call::Claim(Claim { lease: secs(30), count: 1 }),
            reply: "Ok([])",
            after: &[],
        },
        Case {
            name: "claim drops a pending id whose record is missing",
            seed: &["ZADD $q:pending 0 $A"],
            call: Call::Claim(Claim { lease: secs(30), count: 1 }),
            reply: "Ok([])",
            after: &[],
        },
        // ACK
        Case {
            name: "ack by the holder moves the job to done",
            seed: ACTIVE_A,
            call: Call::Ack(Ack { id: a(), token: 1 }),
            reply: "Ok(())",
            after: &["done $A@now", "job:$A attempts=1 payload=p state=done"],
        },
        Case {
            name: "ack with another token is fenced",
            seed: ACTIVE_A,
            call: Call::Ack(Ack { id: a(), token: 2 }),
            reply: "Err(EMQFENCE)",
            after: ACTIVE_A_AFTER,
        },
        Case {
            name: "ack of a job that is not active is fenced",
            seed: &["HSET $q:job:$A state pending attempts 1 payload p", "ZADD $q:pending 0 $A"],
            call: Call::Ack(Ack { id: a(), token: 1 }),
            reply: "Err(EMQFENCE)",
            after: &["job:$A attempts=1 payload=p state=pending", "pending $A@0"],
        },
        Case {
            name: "ack of a missing job",
            seed: &[],
            call: Call::Ack(Ack { id: a(), token: 1 }),
            reply: "Err(EMQNOJOB)",
            after: &[],
        },
        // FAIL
        Case {
            name: "fail with attempts left goes to delayed after the back-off, keeping the error",
            seed: ACTIVE_A,
            call: fail(1, 3),
            reply: "Ok(Delayed)",
            after: &["delayed $A@now+1000", "errors $A=boom", "job:$A attempts=1 payload=p state=delayed"],
        },
        Case {
            name: "fail at the last attempt goes to dead",
            seed: &["HSET $q:job:$A state active attempts 3 payload p", "ZADD $q:active 5 $A"],
            call: fail(3, 3),
            reply: "Ok(Dead)",
            after: &["dead $A@now", "errors $A=boom", "job:$A attempts=3 payload=p state=dead"],
        },
        Case {
            name: "fail with a stale token is fenced",
            seed: ACTIVE_A,
            call: fail(7, 3),
            reply: "Err(EMQFENCE)",
            after: ACTIVE_A_AFTER,
        },
        // EXTEND
        Case {
            name: "extend moves the lease deadline",
            seed: ACTIVE_A,
            call: Call::Extend(Extend { id: a(), token: 1, lease: secs(60) }),
            reply: "deadline",
            after: &["active $A@now+60000", "job:$A attempts=1 payload=p state=active"],
        },
        Case {
            name: "extend with a stale token is fenced",
            seed: ACTIVE_A,
            call: Call::Extend(Extend { id: a(), token: 9, lease: secs(60) }),
            reply: "Err(EMQFENCE)",
            after: ACTIVE_A_AFTER,
        },
        // RELEASE
        Case {
            name: "release gives the job back at its priority, attempts kept",
            seed: &[
                "HSET $q:job:$A state active attempts 1 payload p",
                "ZADD $q:active 5 $A",
                "HSET $q:priority $A 7",
            ],
            call: Call::Release(Release { id: a(), token: 1 }),
            reply: "Ok(())",
            after: &["job:$A attempts=1 payload=p state=pending", "pending $A@7", "priority $A=7"],
        },
        Case {
            name: "release with a stale token is fenced",
            seed: ACTIVE_A,
            call: Call::Release(Release { id: a(), token: 2 }),
            reply: "Err(EMQFENCE)",
            after: ACTIVE_A_AFTER,
        },
        // REAP
        Case {
            name: "reap sends an expired lease back to pending and leaves a live one",
            seed: &[
                "HSET $q:job:$A state active attempts 1 payload a",
                "HSET $q:job:$B state active attempts 1 payload b",
                "ZADD $q:active 5 $A 9999999999999 $B",
            ],
            call: Call::Reap(Reap { max_attempts: 3, limit: 1000 }),
            reply: "Ok(Reaped { requeued: 1, dead: 0 })",
            after: &[
                "active $B@9999999999999",
                "job:$A attempts=1 payload=a state=pending",
                "job:$B attempts=1 payload=b state=active",
                "pending $A@0",
            ],
        },
        Case {
            name: "reap sends an expired lease out of attempts to dead",
            seed: &["HSET $q:job:$A state active attempts 3 payload p", "ZADD $q:active 5 $A"],
            call: Call::Reap(Reap { max_attempts: 3, limit: 1000 }),
            reply: "Ok(Reaped { requeued: 0, dead: 1 })",
            after: &["dead $A@now", "errors $A=lease~expired", "job:$A attempts=3 payload=p state=dead"],
        },
        // PROMOTE
        Case {
            name: "promote moves due jobs to pending at their priority and leaves the rest",
            seed: &[
                "HSET $q:job:$A state delayed attempts 1 payload a",
                "HSET $q:job:$B state delayed attempts 0 payload b",
                "ZADD $q:delayed 5 $A 9999999999999 $B",
                "HSET $q:priority $A 3",
            ],
            call: Call::Promote(Promote { limit: 1000 }),
            reply: "Ok(1)",
            after: &[
                "delayed $B@9999999999999",
                "job:$A attempts=1 payload=a state=pending",
                "job:$B attempts=0 payload=b state=delayed",
                "pending $A@3",
                "priority $A=3",
            ],
        },
        // PURGE
        Case {
            name: "purge deletes old finished jobs with their priority and error",
            seed: &[
                "HSET $q:job:$A state dead attempts 3 payload a",
                "HSET $q:job:$B state dead attempts 3 payload b",
                "ZADD $q:dead 5 $A 9999999999999 $B",
                "HSET $q:priority $A 3 $B 4",
                "HSET $q:errors $A boom $B bang",
            ],
            call: Call::Purge(Purge { state: State::Dead, age: secs(60), limit: 1000 }),
            reply: "Ok(1)",
            after: &[
                "dead $B@9999999999999",
                "errors $B=bang",
                "job:$B attempts=3 payload=b state=dead",
                "priority $B=4",
            ],
        },
        // CANCEL
        Case {
            name: "cancel of a pending job",
            seed: &["HSET $q:job:$A state pending attempts 0 payload p", "ZADD $q:pending 0 $A"],
            call: Call::Cancel(Cancel { id: a() }),
            reply: "Ok(true)",
            after: &["cancelled $A@now", "job:$A attempts=0 payload=p state=cancelled"],
        },
        Case {
            name: "cancel of an active job ends its lease",
            seed: ACTIVE_A,
            call: Call::Cancel(Cancel { id: a() }),
            reply: "Ok(true)",
            after: &["cancelled $A@now", "job:$A attempts=1 payload=p state=cancelled"],
        },
        Case {
            name: "cancel of a cancelled job changes nothing",
            seed: &["HSET $q:job:$A state cancelled attempts 0 payload p", "ZADD $q:cancelled 5 $A"],
            call: Call::Cancel(Cancel { id: a() }),
            reply: "Ok(false)",
            after: &["cancelled $A@5", "job:$A attempts=0 payload=p state=cancelled"],
        },
        Case {
            name: "cancel of a done job is refused",
            seed: &["HSET $q:job:$A state done attempts 1 payload p", "ZADD $q:done 5 $A"],
            call: Call::Cancel(Cancel { id: a() }),
            reply: "Err(EMQSTATE)",
            after: &["done $A@5", "job:$A attempts=1 payload=p state=done"],
        },
        // RETRY
        Case {
            name: "retry sends a dead job to pending at its priority",
            seed: &[
                "HSET $q:job:$A state dead attempts 3 payload p",
                "ZADD $q:dead 5 $A",
                "HSET $q:priority $A 2",
                "HSET $q:errors $A boom",
            ],
            call: Call::Retry(Retry { id: a() }),
            reply: "Ok(())",
            after: &[
                "errors $A=boom",
                "job:$A attempts=3 payload=p state=pending",
                "pending $A@2",
                "priority $A=2",
            ],
        },
        Case {
            name: "retry of a job that is not dead is refused",
            seed: &["HSET $q:job:$A state pending attempts 0 payload p", "ZADD $q:pending 0 $A"],
            call: Call::Retry(Retry { id: a() }),
            reply: "Err(EMQSTATE)",
            after: &["job:$A attempts=0 payload=p state=pending", "pending $A@0"],
        },
        Case {
            name: "retry of a missing job",
            seed: &[],
            call: Call::Retry(Retry { id: a() }),
            reply: "Err(EMQNOJOB)",
            after: &[],
        },
        // INSPECT and STATS
        Case {
            name: "inspect reads the record and the last error",
            seed: &["HSET $q:job:$A state dead attempts 3 payload p", "HSET $q:errors $A boom"],
            call: Call::Inspect(Inspect { id: a() }),
            reply: "Ok(Some(Inspection { record: Record { state: Dead, attempts: 3, payload: [112], \
                    enqueued_at: None, updated_at: None }, error: Some(\"boom\") }))",
            after: &["errors $A=boom", "job:$A attempts=3 payload=p state=dead"],
        },
        Case {
            name: "inspect of a missing job",
            seed: &[],
            call: Call::Inspect(Inspect { id: a() }),
            reply: "Ok(None)",
            after: &[],
        },
        Case {
            name: "stats counts each state's set",
            seed: &["ZADD $q:pending 0 $A 0 $B", "ZADD $q:dead 1 $A"],
            call: Call::Stats,
            reply: "Ok(StatsReply { pending: 2, active: 0, delayed: 0, done: 0, dead: 1, cancelled: 0 })",
            after: &["dead $A@1", "pending $A@0 $B@0"],
        },
    ]
}

#[tokio::test]
async fn every_transition_on_lua() {
    let h = harness().await;
    let mut failures = Vec::new();
    for case in cases() {
        let mut conn = h.conn.clone();
        let _: () = redis::cmd("FLUSHDB").query_async(&mut conn).await.unwrap();
        h.seed(case.seed).await;
        let t0 = h.now_ms().await;
        let reply = run(&h, h.lua.as_ref(), &case.call).await;
        let t1 = h.now_ms().await;
        if reply != case.reply {
            failures.push(format!("{}: reply {reply}, expected {}", case.name, case.reply));
        }
        if let Err(diff) = check(case.after, &h.snapshot().await, t0, t1) {
            failures.push(format!("{}: {diff}", case.name));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
