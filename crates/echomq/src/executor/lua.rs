//! The Lua executor: one script per transition, loaded once per server and run
//! with EVALSHA; a server that answers NOSCRIPT (restarted, flushed, a new
//! replica) gets the script again with SCRIPT LOAD and the call is retried.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Script, Value};

use super::{Dispatch, Interrupts, Replication, Wakeups};
use crate::keyspace::Keyspace;
use crate::transition::{Claim, Claimed, Transition};
use crate::{Error, Result};

/// Each transition's script as written, `--@include <name>` lines not yet expanded.
const SOURCES: [(&str, &str); 13] = [
    ("enqueue", include_str!("../../lua/enqueue-4.lua")),
    ("claim", include_str!("../../lua/claim-2.lua")),
    ("ack", include_str!("../../lua/ack-3.lua")),
    ("fail", include_str!("../../lua/fail-5.lua")),
    ("extend", include_str!("../../lua/extend-2.lua")),
    ("release", include_str!("../../lua/release-4.lua")),
    ("reap", include_str!("../../lua/reap-5.lua")),
    ("promote", include_str!("../../lua/promote-3.lua")),
    ("purge", include_str!("../../lua/purge-3.lua")),
    ("cancel", include_str!("../../lua/cancel-6.lua")),
    ("retry", include_str!("../../lua/retry-4.lua")),
    ("inspect", include_str!("../../lua/inspect-2.lua")),
    ("stats", include_str!("../../lua/stats-6.lua")),
];

/// The shared Lua, by include name.
const INCLUDES: [(&str, &str); 1] = [("common", include_str!("../../lua/includes/common.lua"))];

/// The scripts, expanded once per process.
static SCRIPTS: LazyLock<Vec<(&'static str, Script)>> =
    LazyLock::new(|| SOURCES.iter().map(|(name, source)| (*name, Script::new(&expand(source)))).collect());

/// The script a transition runs, its includes expanded: what the server loads.
pub fn script_source(transition: &str) -> Option<String> {
    let (_, source) = SOURCES.iter().find(|(name, _)| *name == transition)?;
    Some(expand(source))
}

/// Replace each `--@include <name>` line with the include's text.
fn expand(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 4096);
    for line in source.lines() {
        match line.strip_prefix("--@include ") {
            Some(wanted) => {
                let (_, text) = INCLUDES
                    .iter()
                    .find(|(name, _)| *name == wanted.trim())
                    .unwrap_or_else(|| panic!("no Lua include named {wanted:?}"));
                out.push_str(text);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Runs transitions as Lua scripts on any Redis or Valkey ≥ 7, over any async
/// connection of the `redis` crate (a `ConnectionManager` reconnects by itself).
#[derive(Clone)]
pub struct Lua<C> {
    conn: C,
    wakeups: Option<Arc<Wakeups>>,
    replication: Option<Replication>,
    interrupts: Arc<Interrupts>,
}

impl<C> Lua<C> {
    /// An executor over `conn`; each call clones it, so pass a multiplexed one.
    pub fn new(conn: C) -> Lua<C> {
        Lua { conn, wakeups: None, replication: None, interrupts: Arc::default() }
    }

    /// Have `replication.replicas` replicas confirm each transition before
    /// it returns (WAIT in the same round trip; see [`Replication`]).
    pub fn with_replication(mut self, replication: Replication) -> Lua<C> {
        self.replication = Some(replication);
        self
    }

    /// Let idle claims sleep until the server announces an arrival (see
    /// [`Wakeups`]) instead of polling.
    pub fn with_wakeups(mut self, wakeups: Arc<Wakeups>) -> Lua<C> {
        self.wakeups = Some(wakeups);
        self
    }
}

impl<C> Dispatch for Lua<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    async fn dispatch<T: Transition>(&self, keys: &Keyspace, call: &T) -> Result<T::Output> {
        if self.replication.is_some() || T::READS_ONLY {
            return self.dispatch_batch(keys, std::slice::from_ref(call)).await?.remove(0);
        }
        let script = script::<T>()?;
        let mut invocation = script.prepare_invoke();
        for key in call.keys(keys) {
            invocation.key(key);
        }
        for arg in call.args()? {
            invocation.arg(arg);
        }
        let mut conn = self.conn.clone();
        let reply: Value = invocation.invoke_async(&mut conn).await?;
        T::parse(reply)
    }

    async fn server_warnings(&self) -> Vec<String> {
        super::eviction_warnings(&self.conn).await
    }

    /// With wake-ups, claim and sleep until the queue's pending set is
    /// written; without, claim at once (the worker polls).
    async fn claim_waiting(&self, keys: &Keyspace, call: &Claim, wait: Duration) -> Result<Vec<Claimed>> {
        match &self.wakeups {
            Some(wakeups) if wakeups.alive() => {
                let arrivals = wakeups.arrival(&keys.pending());
                super::claim_on_arrival(&arrivals, &self.interrupts, wait, || self.dispatch(keys, call)).await
            }
            _ => self.dispatch(keys, call).await,
        }
    }

    fn waits(&self) -> bool {
        self.wakeups.as_ref().is_some_and(|wakeups| wakeups.alive())
    }

    async fn interrupt_waits(&self) {
        self.interrupts.interrupt();
    }

    /// One pipeline of EVALSHA (EVALSHA_RO for a transition that only
    /// reads); the calls a server without the script refused with NOSCRIPT
    /// go again, once, after SCRIPT LOAD.
    async fn dispatch_batch<T: Transition>(
        &self,
        keys: &Keyspace,
        calls: &[T],
    ) -> Result<Vec<Result<T::Output>>> {
        let script = script::<T>()?;
        let (eval, replication) =
            if T::READS_ONLY { ("EVALSHA_RO", None) } else { ("EVALSHA", self.replication) };
        let command = |keys: Vec<String>, args: Vec<Vec<u8>>| {
            let mut command = redis::cmd(eval);
            command.arg(script.get_hash()).arg(keys.len()).arg(keys).arg(args);
            command
        };
        let mut sent = super::pipelined(&self.conn, keys, calls, command, replication).await?;
        let unknown = |reply: &Result<redis::RedisResult<Value>>| matches!(reply, Ok(Err(err)) if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript));
        let again: Vec<usize> = (0..sent.replies.len()).filter(|&i| unknown(&sent.replies[i])).collect();
        if !again.is_empty() {
            script.load_async(&mut self.conn.clone()).await?;
            let retried =
                super::pipelined(&self.conn, keys, again.iter().map(|&i| &calls[i]), command, replication)
                    .await?;
            // The second WAIT covers the first pipeline's writes as well.
            sent.confirmed = retried.confirmed;
            for (i, reply) in again.into_iter().zip(retried.replies) {
                sent.replies[i] = reply;
            }
        }
        let replies = sent.replicated(replication)?;
        Ok(replies.into_iter().map(super::read::<T>).collect())
    }
}

/// The loaded script of transition `T`.
fn script<T: Transition>() -> Result<&'static Script> {
    SCRIPTS
        .iter()
        .find(|(name, _)| *name == T::NAME)
        .map(|(_, script)| script)
        .ok_or_else(|| Error::Argument(format!("no script for transition {}", T::NAME)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_expands_without_leftover_includes() {
        for (name, _) in SOURCES {
            let source = script_source(name).unwrap();
            assert!(!source.contains("--@include"), "{name}");
            assert!(source.contains("KEYS[1]"), "{name} documents its keys");
        }
        assert!(script_source("nope").is_none());
    }

    /// The codes the scripts answer with are exactly the codes of the table.
    #[test]
    fn scripts_and_the_code_table_agree() {
        use std::collections::BTreeSet;
        let sources = SOURCES.iter().chain(INCLUDES.iter()).map(|(_, source)| *source);
        let mut in_scripts = BTreeSet::new();
        for source in sources {
            for (at, _) in source.match_indices("EMQ") {
                let word: String = source[at..].chars().take_while(|c| c.is_ascii_uppercase()).collect();
                if word.len() > 3 {
                    in_scripts.insert(word);
                }
            }
        }
        let in_table: BTreeSet<String> =
            echomq_core::Code::ALL.iter().map(|code| code.as_str().to_owned()).collect();
        assert_eq!(in_scripts, in_table);
    }

    /// `<name>-<n>.lua` declares KEYS[1] to KEYS[n] in its header, and is wired in.
    #[test]
    fn script_file_names_carry_their_key_counts() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/lua");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let Some(stem) = name.strip_suffix(".lua") else { continue };
            let (transition, count) = stem.rsplit_once('-').unwrap();
            let count: usize = count.parse().unwrap();
            let source = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
            let declared = source
                .lines()
                .filter_map(|line| line.strip_prefix("KEYS["))
                .filter_map(|rest| rest.split(']').next()?.parse::<usize>().ok())
                .max();
            assert_eq!(declared, Some(count), "{name}");
            assert!(SOURCES.iter().any(|(n, _)| *n == transition), "{name} is not wired in");
            files += 1;
        }
        assert_eq!(files, SOURCES.len());
    }
}
