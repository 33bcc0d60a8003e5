//! A Redis Cluster of masters on loopback, and moving a slot between them.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, RedisServer, ServerOptions};

/// A Redis Cluster of masters on loopback, each a [`RedisServer`] with
/// `cluster-enabled yes` and its bus on a free port of its own, joined by
/// `redis-cli --cluster create`. Dropping it stops every node.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

/// How long a cluster may take to agree on its slots after a change.
const CLUSTER_DEADLINE: Duration = Duration::from_secs(30);

impl RedisCluster {
    /// `masters` nodes (three at least, as `redis-cli` wants) sharing the 16384
    /// slots, each loading `module` when given. Returns once every node sees
    /// every slot served.
    #[must_use]
    pub fn start(masters: usize, module: Option<PathBuf>) -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..masters)
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
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|err| panic!("cannot run {cli}: {err} (is redis-tools installed?)"));
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = RedisCluster { nodes };
        cluster.wait_agreed();
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
        let mut conn = self.nodes[0].client().get_connection().expect("connect to a node");
        redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut conn).expect("CLUSTER KEYSLOT")
    }

    /// The index of the node serving `slot`, as the first node says.
    pub fn owner(&self, slot: u16) -> usize {
        let ids: Vec<String> = self.nodes.iter().map(node_id).collect();
        let mut conn = self.nodes[0].client().get_connection().expect("connect to a node");
        let slots: redis::Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut conn).expect("CLUSTER SLOTS");
        let redis::Value::Array(ranges) = slots else { panic!("CLUSTER SLOTS answered {slots:?}") };
        for range in ranges {
            let redis::Value::Array(range) = range else { continue };
            let (
                Some(redis::Value::Int(low)),
                Some(redis::Value::Int(high)),
                Some(redis::Value::Array(master)),
            ) = (range.first(), range.get(1), range.get(2))
            else {
                continue;
            };
            if (*low..=*high).contains(&i64::from(slot)) {
                let Some(redis::Value::BulkString(id)) = master.get(2) else { break };
                let id = String::from_utf8_lossy(id);
                return ids.iter().position(|known| *known == id).expect("a node of this cluster");
            }
        }
        panic!("no node serves slot {slot}");
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
        let (source_id, target_id) = (node_id(&self.nodes[from]), node_id(&self.nodes[to]));
        setslot(&mut target, slot, "IMPORTING", &source_id);
        setslot(&mut source, slot, "MIGRATING", &target_id);
        SlotMove { cluster: self, slot, from, to, source, target_id }
    }

    /// Wait until every node reports `cluster_state:ok` with all slots served.
    fn wait_agreed(&self) {
        let deadline = Instant::now() + CLUSTER_DEADLINE;
        let mut last = String::new();
        while Instant::now() < deadline {
            let agreed = self.nodes.iter().all(|node| {
                let info: redis::RedisResult<String> = node
                    .client()
                    .get_connection()
                    .and_then(|mut conn| redis::cmd("CLUSTER").arg("INFO").query(&mut conn));
                match info {
                    Ok(info) => {
                        let ok = info.contains("cluster_state:ok")
                            && info.contains("cluster_slots_ok:16384")
                            && info.contains(&format!("cluster_known_nodes:{}", self.nodes.len()));
                        last = info;
                        ok
                    }
                    Err(_) => false,
                }
            });
            if agreed {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the cluster did not agree on its slots in {CLUSTER_DEADLINE:?}; last CLUSTER INFO:\n{last}");
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
        let others = (0..self.cluster.nodes.len()).filter(|&i| i != self.from && i != self.to);
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

/// A cluster node's own id (`CLUSTER MYID`).
fn node_id(node: &RedisServer) -> String {
    let mut conn = node.client().get_connection().expect("connect to a node");
    redis::cmd("CLUSTER").arg("MYID").query(&mut conn).expect("CLUSTER MYID")
}
