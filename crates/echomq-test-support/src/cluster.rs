//! A Redis Cluster on loopback (masters, and a replica each when asked),
//! moving a slot between masters, and failing a master over to its replica.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, RedisServer, ServerOptions};

/// A Redis Cluster on loopback, each node a [`RedisServer`] with
/// `cluster-enabled yes` and its bus on a free port of its own, joined by
/// `redis-cli --cluster create`: masters, and a replica of each when
/// started with [`start_replicated`](RedisCluster::start_replicated).
/// Dropping it stops every node.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    /// Each node's cluster id, by index.
    ids: Vec<String>,
    /// The nodes [`crash`](RedisCluster::crash)ed: no longer asked anything.
    crashed: Vec<usize>,
    /// The nodes [`freeze`](RedisCluster::freeze)n, with their process ids.
    frozen: Vec<(usize, String)>,
}

/// How long a cluster may take to agree on its slots after a change.
const CLUSTER_DEADLINE: Duration = Duration::from_secs(30);

impl RedisCluster {
    /// `masters` nodes (three at least, as `redis-cli` wants) sharing the 16384
    /// slots, each loading `module` when given. Returns once every node sees
    /// every slot served.
    #[must_use]
    pub fn start(masters: usize, module: Option<PathBuf>) -> RedisCluster {
        RedisCluster::start_with(masters, 0, module)
    }

    /// `masters` nodes sharing the slots (nodes `0..masters`, slots in that
    /// order), and a replica of each (nodes `masters..2 * masters`, see
    /// [`replica_of`](RedisCluster::replica_of)). Returns once every node
    /// sees every slot served and every replica is in sync.
    #[must_use]
    pub fn start_replicated(masters: usize, module: Option<PathBuf>) -> RedisCluster {
        RedisCluster::start_with(masters, 1, module)
    }

    fn start_with(masters: usize, replicas: usize, module: Option<PathBuf>) -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|_| {
                let args = [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                    "--cluster-port",
                    &free_port().to_string(),
                    // A replica's first sync starts at once, not after the 5 s a
                    // master waits by default for more replicas to share it.
                    "--repl-diskless-sync-delay",
                    "0",
                ];
                let args = args.iter().map(|a| a.to_string()).collect();
                RedisServer::start_with(ServerOptions {
                    module: module.clone(),
                    args,
                    ..ServerOptions::default()
                })
            })
            .collect();
        let cli = std::env::var("ECHOMQ_REDIS_CLI").unwrap_or_else(|_| "redis-cli".into());
        let out = Command::new(&cli)
            .arg("--cluster")
            .arg("create")
            .args(nodes.iter().map(|node| format!("127.0.0.1:{}", node.port())))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|err| panic!("cannot run {cli}: {err} (is redis-tools installed?)"));
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let ids = nodes.iter().map(node_id).collect();
        let cluster = RedisCluster { nodes, ids, crashed: Vec::new(), frozen: Vec::new() };
        cluster.wait_agreed();
        cluster.wait_in_sync();
        cluster
    }

    /// The nodes, in the order they were started.
    #[must_use]
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// `redis://127.0.0.1:<port>/` of every node: seeds for a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The slot of `key`, as the cluster computes it (`CLUSTER KEYSLOT`).
    #[must_use]
    pub fn slot(&self, key: &str) -> u16 {
        let mut conn = self.live()[0].client().get_connection().expect("connect to a node");
        redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut conn).expect("CLUSTER KEYSLOT")
    }

    /// The index of the node serving `slot`, as the first live node says.
    pub fn owner(&self, slot: u16) -> usize {
        self.owner_seen_by(self.live()[0], slot).unwrap_or_else(|| panic!("no node serves slot {slot}"))
    }

    /// The index of the node serving `slot` as `node` sees it, if any.
    fn owner_seen_by(&self, node: &RedisServer, slot: u16) -> Option<usize> {
        let slot = i64::from(slot);
        self.ranges_seen_by(node)?
            .into_iter()
            .find(|(low, high, _)| (*low..=*high).contains(&slot))
            .map(|r| r.2)
    }

    /// The slot ranges `node` knows (`CLUSTER SLOTS`), each with the index
    /// of its master; `None` when it cannot be asked.
    fn ranges_seen_by(&self, node: &RedisServer) -> Option<Vec<(i64, i64, usize)>> {
        let mut conn = node.client().get_connection().ok()?;
        let slots: redis::Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut conn).ok()?;
        let redis::Value::Array(ranges) = slots else { panic!("CLUSTER SLOTS answered {slots:?}") };
        let mut known = Vec::new();
        for range in ranges {
            let redis::Value::Array(range) = range else { continue };
            if let (
                Some(redis::Value::Int(low)),
                Some(redis::Value::Int(high)),
                Some(redis::Value::Array(master)),
            ) = (range.first(), range.get(1), range.get(2))
            {
                let Some(redis::Value::BulkString(id)) = master.get(2) else { continue };
                let id = String::from_utf8_lossy(id);
                let owner = self.ids.iter().position(|known| *known == id).expect("a node of this cluster");
                known.push((*low, *high, owner));
            }
        }
        Some(known)
    }

    /// The index of the replica of node `master`, as the replicas say.
    pub fn replica_of(&self, master: usize) -> usize {
        (0..self.nodes.len())
            .filter(|&i| !self.is_crashed(i))
            .find(|&i| self.master_of(i) == Some(master))
            .unwrap_or_else(|| panic!("node {master} has no live replica"))
    }

    /// The index of the node `node` replicates, as it says (`None`: a master).
    fn master_of(&self, node: usize) -> Option<usize> {
        let port = info_field(&self.nodes[node], "replication", "master_port")?;
        self.nodes.iter().position(|master| master.port().to_string() == port)
    }

    /// SIGKILL node `node` (no chance to save or to hand over): a crash.
    /// It stays down, and the others are asked nothing of it, until
    /// [`revive`](RedisCluster::revive)d.
    pub fn crash(&mut self, node: usize) {
        self.nodes[node].kill();
        self.crashed.push(node);
    }

    /// Start crashed node `node` again, on its port and directory: it
    /// rejoins with the cluster configuration it saved (a master whose
    /// slots were failed over comes back as its replica's replica). Returns
    /// once every node sees it and it is in sync.
    pub fn revive(&mut self, node: usize) {
        self.nodes[node].revive();
        self.crashed.retain(|&down| down != node);
        self.wait_agreed();
        self.wait_in_sync();
    }

    /// Stop node `node` with SIGSTOP until [`thaw`](RedisCluster::thaw): it
    /// answers nothing. A replica's master then drops its link (`CLIENT
    /// KILL TYPE replica`), so the master's writes from then on are on the
    /// master alone, not even in a socket's buffer (a WAIT there times out).
    pub fn freeze(&mut self, node: usize) {
        let pid = info_field(&self.nodes[node], "server", "process_id").expect("the node's pid");
        let master = self.master_of(node).filter(|&master| !self.is_crashed(master));
        signal(&pid, "-STOP");
        self.frozen.push((node, pid));
        if let Some(master) = master {
            let mut conn = self.nodes[master].client().get_connection().expect("connect to the master");
            redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("replica")
                .query::<u64>(&mut conn)
                .expect("CLIENT KILL");
        }
    }

    /// Let a [`freeze`](RedisCluster::freeze)n node go on (SIGCONT).
    pub fn thaw(&mut self, node: usize) {
        let at = self.frozen.iter().position(|(frozen, _)| *frozen == node).expect("a frozen node");
        let (_, pid) = self.frozen.remove(at);
        signal(&pid, "-CONT");
    }

    /// Make `replica` the master of its master's slots: `CLUSTER FAILOVER`,
    /// the operator's, when `force` is false (its master stops taking
    /// writes until the replica has every one, then hands over); `CLUSTER
    /// FAILOVER FORCE` when it is true (no word with the master, which may
    /// be dead: what the cluster does on its own once it judges the master
    /// failed, without waiting the node time-out out). Returns once every
    /// live node names `replica` as the owner of those slots.
    pub fn fail_over(&self, replica: usize, force: bool) {
        let master = self.master_of(replica).unwrap_or_else(|| panic!("node {replica} is no replica"));
        let ranges = self.ranges_seen_by(self.live()[0]).expect("a live node answers CLUSTER SLOTS");
        let slot = ranges.iter().find(|range| range.2 == master).expect("the master serves a slot").0 as u16;
        let mut conn = self.nodes[replica].client().get_connection().expect("connect to the replica");
        let mut failover = redis::cmd("CLUSTER");
        failover.arg("FAILOVER");
        if force {
            failover.arg("FORCE");
        }
        failover
            .query::<()>(&mut conn)
            .unwrap_or_else(|err| panic!("CLUSTER FAILOVER on node {replica}: {err}"));
        let deadline = Instant::now() + CLUSTER_DEADLINE;
        while !self.live().iter().all(|node| self.owner_seen_by(node, slot) == Some(replica)) {
            if Instant::now() > deadline {
                let log = |node: &RedisServer| {
                    let log = std::fs::read_to_string(node.dir().join("redis.log")).unwrap_or_default();
                    log.lines()
                        .rev()
                        .take(15)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let nodes = info(self.live()[0], "CLUSTER", "NODES").unwrap_or_default();
                panic!(
                    "node {replica} did not take over slot {slot} in {CLUSTER_DEADLINE:?}; CLUSTER NODES:\n{nodes}\n\
                     the replica's log:\n{}\nthe master's:\n{}",
                    log(&self.nodes[replica]),
                    log(&self.nodes[master])
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.wait_agreed();
        self.wait_in_sync();
    }

    /// The nodes not crashed.
    fn live(&self) -> Vec<&RedisServer> {
        (0..self.nodes.len()).filter(|&i| !self.is_crashed(i)).map(|i| &self.nodes[i]).collect()
    }

    fn is_crashed(&self, node: usize) -> bool {
        self.crashed.contains(&node)
    }

    /// Move `slot` and every key in it from its node to node `to`, the way
    /// Redis's docs describe a resharding: IMPORTING on the target, MIGRATING
    /// on the source, the keys, then the new owner told to every node. The
    /// keys go in one MIGRATE, which blocks the source until the target has
    /// them all, so no client ever sees part of a queue on each node. Returns
    /// how many keys moved.
    #[must_use]
    pub fn migrate_slot(&self, slot: u16, to: usize) -> usize {
        let mut moving = self.begin_move(slot, to);
        let moved = moving.rest();
        moving.finish();
        moved
    }

    /// Start moving `slot` to node `to`: IMPORTING there, MIGRATING on its
    /// owner. The keys then move as the returned [`SlotMove`] is told.
    #[must_use]
    pub fn begin_move(&self, slot: u16, to: usize) -> SlotMove<'_> {
        let from = self.owner(slot);
        assert_ne!(from, to, "slot {slot} is on node {to} already");
        let mut source = self.nodes[from].client().get_connection().expect("connect to the source");
        let mut target = self.nodes[to].client().get_connection().expect("connect to the target");
        let (source_id, target_id) = (self.ids[from].clone(), self.ids[to].clone());
        setslot(&mut target, slot, "IMPORTING", &source_id);
        setslot(&mut source, slot, "MIGRATING", &target_id);
        SlotMove { cluster: self, slot, from, to, source, target_id }
    }

    /// Wait until every live node reports `cluster_state:ok` with all slots served.
    fn wait_agreed(&self) {
        let deadline = Instant::now() + CLUSTER_DEADLINE;
        let mut last = String::new();
        while Instant::now() < deadline {
            let agreed = self.live().iter().all(|node| match info(node, "CLUSTER", "INFO") {
                Some(info) => {
                    let ok = info.contains("cluster_state:ok")
                        && info.contains("cluster_slots_ok:16384")
                        && info.contains(&format!("cluster_known_nodes:{}", self.nodes.len()));
                    last = info;
                    ok
                }
                None => false,
            });
            if agreed {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the cluster did not agree on its slots in {CLUSTER_DEADLINE:?}; last CLUSTER INFO:\n{last}");
    }

    /// Wait until every live replica has its master's data and follows
    /// it, and every live node knows each one as its master's replica (a
    /// master refuses a manual failover from a replica it does not know).
    fn wait_in_sync(&self) {
        let deadline = Instant::now() + CLUSTER_DEADLINE;
        let is_replica =
            |node: &RedisServer| info_field(node, "replication", "role").as_deref() == Some("slave");
        let known_replicas = |node: &RedisServer| {
            let nodes = info(node, "CLUSTER", "NODES").unwrap_or_default();
            nodes
                .lines()
                .filter(|line| line.split(' ').nth(2).is_some_and(|flags| flags.contains("slave")))
                .count()
        };
        loop {
            let live = self.live();
            let replicas = live.iter().filter(|node| is_replica(node)).count();
            let synced = live.iter().all(|node| {
                !is_replica(node)
                    || info_field(node, "replication", "master_link_status").as_deref() == Some("up")
            });
            if synced && live.iter().all(|node| known_replicas(node) >= replicas) {
                return;
            }
            assert!(Instant::now() < deadline, "the replicas did not sync in {CLUSTER_DEADLINE:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A slot on its way from one node to another (see [`RedisCluster::begin_move`]).
pub struct SlotMove<'c> {
    cluster: &'c RedisCluster,
    slot: u16,
    from: usize,
    to: usize,
    source: redis::Connection,
    target_id: String,
}

impl SlotMove<'_> {
    /// The index of the node the slot leaves.
    #[must_use]
    pub fn from(&self) -> usize {
        self.from
    }

    /// Move `keys`, and only them, in one MIGRATE: a resharding caught half way.
    pub fn keys(&mut self, keys: &[Vec<u8>]) {
        if keys.is_empty() {
            return;
        }
        redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(self.cluster.nodes[self.to].port())
            .arg("")
            .arg(0)
            .arg(60_000)
            .arg("KEYS")
            .arg(keys)
            .query::<()>(&mut self.source)
            .unwrap_or_else(|err| panic!("MIGRATE of slot {}: {err}", self.slot));
    }

    /// The keys of the slot still on the source.
    pub fn left(&mut self) -> Vec<Vec<u8>> {
        redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(self.slot)
            .arg(u32::MAX)
            .query(&mut self.source)
            .expect("CLUSTER GETKEYSINSLOT")
    }

    /// Move every key still on the source, in one MIGRATE; how many.
    pub fn rest(&mut self) -> usize {
        let mut moved = 0;
        loop {
            let keys = self.left();
            if keys.is_empty() {
                return moved;
            }
            self.keys(&keys);
            moved += keys.len();
        }
    }

    /// Give the slot to the target, telling the target first, then the
    /// source, then the others (the order Redis's docs give), and wait until
    /// every node agrees.
    pub fn finish(mut self) {
        // SETSLOT is for masters only; a crashed node hears it from the others.
        let masters = (0..self.cluster.nodes.len()).filter(|&i| {
            !self.cluster.is_crashed(i)
                && info_field(&self.cluster.nodes[i], "replication", "role").as_deref() == Some("master")
        });
        let others = masters.filter(|&i| i != self.from && i != self.to);
        for i in std::iter::once(self.to).chain(std::iter::once(self.from)).chain(others) {
            if i == self.from {
                setslot(&mut self.source, self.slot, "NODE", &self.target_id);
            } else {
                let mut conn = self.cluster.nodes[i].client().get_connection().expect("connect to a node");
                setslot(&mut conn, self.slot, "NODE", &self.target_id);
            }
        }
        self.cluster.wait_agreed();
    }
}

fn setslot(conn: &mut redis::Connection, slot: u16, state: &str, id: &str) {
    redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(slot)
        .arg(state)
        .arg(id)
        .query::<()>(conn)
        .unwrap_or_else(|err| panic!("CLUSTER SETSLOT {slot} {state}: {err}"))
}

/// Send `signal` (`-STOP`, `-CONT`) to process `pid`.
fn signal(pid: &str, signal: &str) {
    let sent = Command::new("kill").args([signal, pid]).status().expect("run kill");
    assert!(sent.success(), "kill {signal} {pid} failed");
}

/// What `command subcommand` answers on `node` as text; `None` when it cannot be asked.
fn info(node: &RedisServer, command: &str, subcommand: &str) -> Option<String> {
    let mut conn = node.client().get_connection().ok()?;
    redis::cmd(command).arg(subcommand).query(&mut conn).ok()
}

/// One `field:value` line of `INFO section` on `node`: the value.
fn info_field(node: &RedisServer, section: &str, field: &str) -> Option<String> {
    let info = info(node, "INFO", section)?;
    let prefix = format!("{field}:");
    info.lines().find_map(|line| line.strip_prefix(&prefix)).map(|value| value.trim().to_owned())
}

/// A cluster node's own id (`CLUSTER MYID`).
fn node_id(node: &RedisServer) -> String {
    let mut conn = node.client().get_connection().expect("connect to a node");
    redis::cmd("CLUSTER").arg("MYID").query(&mut conn).expect("CLUSTER MYID")
}
