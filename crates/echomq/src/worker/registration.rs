//! The worker's own entry in the worker registry (PROTOCOL.md §2 and §11.3,
//! `emq:workers`): written when it starts and again every beat, with the
//! jobs it runs now, under a TTL of three beats, so that a killed worker's
//! entry expires by itself; deleted when it stops gracefully. Advisory: a
//! failure to write it is said once, and the worker works on.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use super::lease::Heart;
use crate::executor::Executor;
use crate::workers::{self, Registration, RunningJob, WorkerInfo, MAX_BEAT, MIN_BEAT, TTL_BEATS};

/// A new worker id: `<host>:<pid>:<ULID>`, unique to this worker in this
/// run of this process (PROTOCOL.md §2).
pub(super) fn new_id() -> String {
    format!("{}:{}:{}", host(), std::process::id(), ulid::Ulid::new())
}

/// This machine's name: the kernel's, `/etc/hostname`'s, or `$HOSTNAME`
/// (`$COMPUTERNAME` on Windows); `unknown` when none says.
fn host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let file = |path: &str| std::fs::read_to_string(path).ok();
        let var = |name: &str| std::env::var(name).ok();
        [file("/proc/sys/kernel/hostname"), file("/etc/hostname"), var("HOSTNAME"), var("COMPUTERNAME")]
            .into_iter()
            .flatten()
            .map(|name| name.trim().to_owned())
            .find(|name| !name.is_empty())
            .unwrap_or_else(|| "unknown".to_owned())
    })
}

/// A worker's registration, on each executor its queues are on.
pub(super) struct Registrar {
    id: String,
    concurrency: usize,
    beat: Duration,
    started: u64,
    /// Each executor the worker's queues are on, with the hearts of those queues.
    executors: Vec<OnExecutor>,
}

/// An executor, and the hearts of the worker's queues on it.
type OnExecutor = (Arc<dyn Executor>, Vec<Arc<Heart>>);

impl Registrar {
    /// The registration of worker `id`, beating every `beat` (within
    /// [`MIN_BEAT`]..=[`MAX_BEAT`]), over the queues of `hearts`.
    pub(super) fn new(id: String, concurrency: usize, beat: Duration, hearts: &[Arc<Heart>]) -> Registrar {
        let mut executors: Vec<OnExecutor> = Vec::new();
        for heart in hearts {
            let executor = heart.queue().executor();
            match executors.iter_mut().find(|(via, _)| Arc::ptr_eq(via, executor)) {
                Some((_, hearts)) => hearts.push(heart.clone()),
                None => executors.push((executor.clone(), vec![heart.clone()])),
            }
        }
        let beat = beat.clamp(MIN_BEAT, MAX_BEAT);
        Registrar { id, concurrency, beat, started: workers::now_ms(), executors }
    }

    /// Beat every period, for as long as the worker runs (its loops are
    /// aborted at its end, then [`unregister`](Registrar::unregister)).
    pub(super) async fn run(self: Arc<Registrar>) {
        let mut beats = tokio::time::interval(self.beat);
        beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = vec![false; self.executors.len()];
        loop {
            beats.tick().await;
            for ((executor, hearts), failing) in self.executors.iter().zip(&mut failing) {
                let written = match Registration::of(&self.info(hearts)) {
                    Ok(registration) => crate::workers::beat(&**executor, &registration).await,
                    Err(err) => Err(err),
                };
                match (written, *failing) {
                    (Err(err), false) => {
                        tracing::warn!(worker = %self.id, error = %err, "the worker registry could not be written; working on without it");
                        *failing = true;
                    }
                    (Err(err), true) => {
                        tracing::debug!(error = %err, "the worker registry still cannot be written")
                    }
                    (Ok(()), true) => {
                        tracing::info!(worker = %self.id, "the worker registry is written again");
                        *failing = false;
                    }
                    (Ok(()), false) => {}
                }
            }
        }
    }

    /// Take the worker out of the registry: it stopped gracefully.
    pub(super) async fn unregister(&self) {
        for (executor, _) in &self.executors {
            if let Err(err) = crate::workers::unregister(&**executor, &self.id).await {
                tracing::debug!(worker = %self.id, error = %err, "cannot take the worker out of the worker registry; it expires");
            }
        }
    }

    /// The worker as it stands now, on the queues of `hearts`.
    fn info(&self, hearts: &[Arc<Heart>]) -> WorkerInfo {
        let (now, beat) = (Instant::now(), workers::now_ms());
        let ms = |left: Duration| u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        let running = hearts.iter().flat_map(|heart| {
            let queue = heart.queue().name().to_owned();
            heart.running().into_iter().map(move |(id, token, until)| RunningJob {
                queue: queue.clone(),
                id,
                token,
                lease_until: beat.saturating_add(ms(until.saturating_duration_since(now))),
            })
        });
        WorkerInfo {
            id: self.id.clone(),
            host: host().to_owned(),
            pid: std::process::id(),
            queues: hearts.iter().map(|heart| heart.queue().name().to_owned()).collect(),
            concurrency: self.concurrency as u64,
            version: format!("echomq-rust {}", env!("CARGO_PKG_VERSION")),
            protocol: crate::PROTOCOL.to_string(),
            started: self.started,
            beat,
            ttl: self.beat * TTL_BEATS,
            running: running.collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_names_the_host_and_the_process_and_is_new_each_time() {
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split(':').collect();
        assert_eq!(parts.len(), 3, "{a}");
        assert_eq!(parts[0], host());
        assert_eq!(parts[1], std::process::id().to_string());
        assert!(ulid::Ulid::from_string(parts[2]).is_ok(), "{a}");
    }
}
