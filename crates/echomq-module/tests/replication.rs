//! The module replicates effects, not commands: a replica (or an AOF) sees
//! plain HSET/ZADD/ZREM/HDEL/DEL, one MULTI/EXEC per `EMQ.*` call, so it
//! needs no module and stays byte-for-byte equal to its master.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::{arrange, call, connect, dump, expand, info_field, queue, server_with};
use echomq_test_support::eventually_blocking;
use echomq_test_support::RedisServer;

const SOON: Duration = Duration::from_secs(10);

#[test]
fn a_replica_without_the_module_holds_exactly_the_masters_keys() {
    let master = server_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = RedisServer::start();
    let (mut on_master, mut on_replica) = (connect(&master), connect(&replica));
    redis::cmd("REPLICAOF").arg("127.0.0.1").arg(master.port()).query::<()>(&mut on_replica).unwrap();
    eventually_blocking("the replica's link", || {
        info_field(&mut on_replica, "replication", "master_link_status").as_deref() == Some("up")
    });

    let q = queue();
    arrange(
        &mut on_master,
        &q,
        &[
            "EMQ.ENQUEUE 2 $q:job:JOB_1 $q:pending JOB_1 one",
            "EMQ.ENQUEUE 11 $q:job:JOB_2 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_2 two PRIORITY -3",
            "EMQ.ENQUEUE 11 $q:job:JOB_3 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_3 three DELAY 60000",
            "EMQ.ENQUEUE 2 $q:job:JOB_4 $q:pending JOB_4 four",
            "EMQ.ENQUEUE 2 $q:job:JOB_5 $q:pending JOB_5 five",
            "EMQ.CLAIM 8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000 COUNT 2",
            "EMQ.ACK 6 $q:job:JOB_2 $q:active $q:done $q:results $q:events $q:config JOB_2 1",
            "EMQ.FAIL 8 $q:job:JOB_1 $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config JOB_1 1 1 0 broken",
            "EMQ.RETRY 7 $q:job:JOB_1 $q:dead $q:pending $q:priority $q:events $q:config $q:wake JOB_1",
            "EMQ.CANCEL 8 $q:job:JOB_3 $q:pending $q:active $q:delayed $q:dead $q:cancelled $q:events $q:config JOB_3",
            "EMQ.CLAIM 8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 1 COUNT 1",
            "EMQ.CLAIM 8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000 COUNT 1",
            "EMQ.EXTEND 2 $q:job:JOB_4 $q:active JOB_4 1 90000",
            "EMQ.PROGRESS 4 $q:job:JOB_4 $q:progress $q:events $q:config JOB_4 1 half",
            "EMQ.RELEASE 7 $q:job:JOB_4 $q:active $q:pending $q:priority $q:events $q:config $q:wake JOB_4 1",
            "EMQ.PURGE 7 $q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers 0",
            "EMQ.SCHEDULE 2 $q:schedules $q:ticks s d 5000",
            "EMQ.FIRE 6 $q:job:JOB_7 $q:pending $q:ticks $q:events $q:config $q:wake JOB_7 seven s 5000 6000",
            "EMQ.SCHEDULE 2 $q:schedules $q:ticks t d 5000",
            "EMQ.UNSCHEDULE 2 $q:schedules $q:ticks t",
        ],
    );
    // An event log kept short, so that appends trim it (whole blocks, `~`):
    // the replica must hold the same entries under the same ids.
    let events =
        expand(&q, "EMQ.CONFIG 6 $q:config $q:pending $q:priority $q:rate $q:events $q:wake EVENTS 150");
    call(&mut on_master, &events).unwrap();
    for n in 0..400 {
        let enqueue = format!(
            "EMQ.ENQUEUE 11 $q:job:JOB_E{n} $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until \
             $q:events $q:config $q:headers $q:wake JOB_E{n} e{n}"
        );
        call(&mut on_master, &expand(&q, &enqueue)).unwrap();
    }
    let length: usize = redis::cmd("XLEN").arg(format!("{q}events")).query(&mut on_master).unwrap();
    assert!((150..400).contains(&length), "the log was trimmed to about 150: {length}");
    // The 1 ms lease runs out on the server's clock; reap until it has.
    let reap = expand(&q, "EMQ.REAP 9 $q:active $q:pending $q:dead $q:errors $q:priority $q:policy $q:events $q:config $q:wake 1");
    eventually_blocking("the lease to expire and be reaped", || {
        call(&mut on_master, &reap)
            == Ok(redis::Value::Array(vec![redis::Value::Int(0), redis::Value::Int(1)]))
    });
    // Batches: a call's additions to one set go out as one ZADD (store.rs),
    // between its other writes; the replica must end the same.
    let batch = queue();
    arrange(
        &mut on_master,
        &batch,
        &[
            "EMQ.ENQUEUEMANY 4 $q:pending $q:events $q:config $q:wake JOB_M1 m1 JOB_M2 m2 JOB_M3 m3 JOB_M4 m4",
            "EMQ.CLAIM 8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000 COUNT 3",
            "EMQ.ACKMANY 5 $q:active $q:done $q:results $q:events $q:config JOB_M1 1 JOB_M3 1 JOB_M2 1",
            "EMQ.ENQUEUE 11 $q:job:JOB_M5 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_M5 m5 DELAY 1",
            "EMQ.ENQUEUE 11 $q:job:JOB_M6 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_M6 m6 DELAY 1",
        ],
    );
    // Both were due 1 ms after their enqueue: once 20 ms have passed, one
    // PROMOTE moves both (a batch of two additions to pending).
    thread::sleep(Duration::from_millis(20));
    let promote =
        expand(&batch, "EMQ.PROMOTE 6 $q:delayed $q:pending $q:priority $q:events $q:config $q:wake");
    assert_eq!(call(&mut on_master, &promote), Ok(redis::Value::Int(2)));
    // A blocked claim woken by an enqueue writes from its callback: replicated too.
    let (mut worker, other) = (connect(&master), queue());
    let blocking =
        expand(&other, "EMQ.CLAIM 8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000 BLOCK 5000");
    let waiter = thread::spawn(move || call(&mut worker, &blocking));
    eventually_blocking("the claim to block", || {
        info_field(&mut on_master, "clients", "blocked_clients").as_deref() == Some("1")
    });
    arrange(&mut on_master, &other, &["EMQ.ENQUEUE 2 $q:job:JOB_6 $q:pending JOB_6 six"]);
    assert_eq!(common::render(&waiter.join().unwrap().unwrap()), "[[JOB_6, 1, six]]");

    let offset = |conn: &mut redis::Connection, field| info_field(conn, "replication", field);
    eventually_blocking("the replica to catch up", || {
        let target = offset(&mut on_master, "master_repl_offset");
        target.is_some() && offset(&mut on_replica, "slave_repl_offset") == target
    });
    let keys = dump(&mut on_master);
    assert!(keys.len() >= 10, "a fair sample of keys: {keys:?}");
    assert_eq!(dump(&mut on_replica), keys);

    let log = std::fs::read_to_string(replica.dir().join("redis.log")).unwrap();
    let errors: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("CRITICAL") || line.to_ascii_lowercase().contains("error"))
        .collect();
    assert!(errors.is_empty(), "the replica logged errors: {errors:#?}");
}

/// What the master streams to a replica after the snapshot, read off a raw `SYNC`.
struct ReplicationStream {
    reader: BufReader<TcpStream>,
}

impl ReplicationStream {
    fn open(server: &RedisServer) -> ReplicationStream {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream.set_read_timeout(Some(SOON)).unwrap();
        stream.write_all(b"SYNC\r\n").unwrap();
        let mut reader = BufReader::new(stream);
        // Newlines keep the link alive while the snapshot is made; then `$<len>` and the RDB.
        let mut header = String::new();
        while header.trim().is_empty() {
            header.clear();
            reader.read_line(&mut header).unwrap();
        }
        let len: u64 = header.trim().trim_start_matches('$').parse().unwrap();
        std::io::copy(&mut (&mut reader).take(len), &mut std::io::sink()).unwrap();
        ReplicationStream { reader }
    }

    /// The next command on the stream, as words.
    fn next_command(&mut self) -> Vec<String> {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let count: usize = line.trim().trim_start_matches('*').parse().unwrap();
        (0..count)
            .map(|_| {
                line.clear();
                self.reader.read_line(&mut line).unwrap();
                let len: usize = line.trim().trim_start_matches('$').parse().unwrap();
                let mut word = vec![0; len + 2];
                self.reader.read_exact(&mut word).unwrap();
                word.truncate(len);
                String::from_utf8_lossy(&word).into_owned()
            })
            .collect()
    }

    /// Commands up to and including the next EXEC, skipping the link's PINGs and SELECTs.
    fn next_transaction(&mut self) -> Vec<String> {
        let deadline = Instant::now() + SOON;
        let mut names = Vec::new();
        while Instant::now() < deadline {
            let command = self.next_command();
            let name = command.first().cloned().unwrap_or_default().to_ascii_uppercase();
            if name == "PING" || name == "SELECT" {
                continue;
            }
            names.push(name.clone());
            if name == "EXEC" {
                break;
            }
        }
        names
    }
}

#[test]
fn each_command_reaches_replicas_as_one_multi_exec_of_plain_commands() {
    let master = server_with(&["--repl-diskless-sync-delay", "0"]);
    let mut conn = connect(&master);
    let mut stream = ReplicationStream::open(&master);
    let q = queue();

    arrange(
        &mut conn,
        &q,
        &["EMQ.ENQUEUE 11 $q:job:JOB_1 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_1 p PRIORITY 4"],
    );
    // The record, its priority, pending, the `enqueued` event, the wake-up key.
    assert_eq!(stream.next_transaction(), ["MULTI", "HSET", "HSET", "ZADD", "XADD", "ZADD", "EXEC"]);
    arrange(
        &mut conn,
        &q,
        &["EMQ.CLAIM 8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000"],
    );
    assert_eq!(stream.next_transaction(), ["MULTI", "ZREM", "HSET", "XADD", "ZADD", "EXEC"]);
    arrange(
        &mut conn,
        &q,
        &["EMQ.ACK 6 $q:job:JOB_1 $q:active $q:done $q:results $q:events $q:config JOB_1 1"],
    );
    assert_eq!(stream.next_transaction(), ["MULTI", "ZREM", "HSET", "XADD", "ZADD", "EXEC"]);
    arrange(
        &mut conn,
        &q,
        &["EMQ.PURGE 7 $q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers 0"],
    );
    assert_eq!(stream.next_transaction(), ["MULTI", "ZREM", "HDEL", "DEL", "EXEC"]);
}
