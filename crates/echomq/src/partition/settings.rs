//! A partitioned queue's settings, split over its partitions or held
//! exactly across them (PROTOCOL.md §7.10), and its deletion.

use super::{Partitioned, Result};
use crate::executor::Command;
use crate::keyspace;
use crate::queue::Delete;
use crate::{Config, Error, ErrorKind, Limit, Queue, Rate, Settings};
use echomq_core::limits;

impl Partitioned {
    /// Change every partition's settings (CONFIG on each, at once; not one
    /// atomic step): pause and resume, retention and the event log as
    /// given; a concurrency limit and a rate split as
    /// [`shares`](Partitioned::shares) splits them. The ordinary queue of
    /// its name is left as it is ([`pause`](Partitioned::pause) pauses it
    /// too). Each partition's settings after, in order.
    ///
    /// # Errors
    /// As [`shares`](Partitioned::shares), before anything is sent; as
    /// [`Queue::configure`], of the first partition that failed, every
    /// partition tried: when others were changed, its text names them (the
    /// same change is safe to make again), and its kind is still what it
    /// says of the partition that failed.
    pub async fn configure(&self, config: Config) -> Result<Vec<Settings>> {
        let shares = self.shares(config)?;
        let sent = self.partitions.iter().zip(shares).map(|(queue, share)| queue.configure(share));
        let answers = futures_util::future::join_all(sent).await;
        let changed: Vec<&str> = self
            .partitions
            .iter()
            .zip(&answers)
            .filter(|(_, answer)| answer.is_ok())
            .map(|(queue, _)| queue.name())
            .collect();
        let (count, said) = (self.partitions.len(), changed.join(", "));
        answers
            .into_iter()
            .map(|answer| {
                answer.map_err(|err| match changed.len() {
                    0 => err,
                    n => {
                        let why = err.text().to_owned();
                        err.saying(format!(
                            "{why}; changed on {n} of its {count} partitions ({said}) all the same"
                        ))
                    }
                })
            })
            .collect()
    }

    /// What [`configure`](Partitioned::configure) sends each partition, in
    /// order: `config`, with a concurrency limit and a rate split
    /// statically, partition `k` of N taking ⌊n / N⌋, and one more while
    /// `k` < n mod N, so that the partitions' limits add up to the queue's.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for a concurrency or a rate's claims under
    /// N (a partition would get none).
    pub fn shares(&self, config: Config) -> Result<Vec<Config>> {
        let count = self.partitions.len() as u64;
        let split = |n: u64, k: usize, what: &str| -> Result<u64> {
            if n < count {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!("a {what} of {n} cannot be split over {count} partitions: give at least {count}"),
                ));
            }
            Ok(n / count + u64::from((k as u64) < n % count))
        };
        let mut each = Vec::with_capacity(self.partitions.len());
        for k in 0..self.partitions.len() {
            let mut share = config;
            if let Some(Limit::To(n)) = config.concurrency {
                share.concurrency = Some(Limit::To(split(n, k, "concurrency")?));
            }
            if let Some(Limit::To(rate)) = config.rate {
                let claims = split(rate.claims, k, "rate")?;
                share.rate = Some(Limit::To(Rate { claims, per: rate.per }));
            }
            each.push(share);
        }
        Ok(each)
    }

    /// Hold the queue to an exact rate, at most `rate` claims in any period
    /// counted over every partition, or lift it (`Unlimited`): written to
    /// the definition, which workers read at least once a second. Each
    /// worker's claim then asks the queue's coordinator for permits first
    /// (PROTOCOL.md §7.10): one more call a claim, and a busy queue runs
    /// at up to a tenth below the rate, never above it. Independent of the
    /// partitions' own rates ([`configure`](Partitioned::configure)).
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for a rate outside 1 to 100,000 claims, or a
    /// period outside 100 ms to a day (nothing sent; the permits' hold is a
    /// tenth of it); a failure of the connection or the server.
    pub async fn exact_rate(&self, rate: Limit<Rate>) -> Result<()> {
        let fields = match rate {
            Limit::Unlimited => vec![("rate".to_owned(), "0".to_owned())],
            Limit::To(Rate { claims, per }) => {
                let per_ms = u64::try_from(per.as_millis()).unwrap_or(u64::MAX);
                if claims == 0
                    || !limits::RATE.contains(&claims)
                    || !limits::EXACT_PERIOD_MS.contains(&per_ms)
                {
                    return Err(Error::new(
                        ErrorKind::Argument,
                        format!(
                            "an exact rate is 1 to 100000 claims per 100 ms to a day, not {claims} per {per:?}"
                        ),
                    ));
                }
                vec![("rate".to_owned(), claims.to_string()), ("per".to_owned(), per_ms.to_string())]
            }
        };
        let key = keyspace::partitions(&self.name);
        self.partitions[0].executor().plain().one(Command::HSet(key, fields)).await?;
        Ok(())
    }

    /// Hold the queue to an exact concurrency, at most `cap` of its jobs
    /// running at once over every partition, or lift it (`Unlimited`):
    /// written to the definition, which workers read at least once a second
    /// (the jobs they claimed before are not counted). Each claimed job then
    /// holds a running permit from the queue's coordinator (PROTOCOL.md
    /// §7.10), renewed before its lease and given back at its end: a PERMIT
    /// a claim, a RENEW a round of heartbeats, and a call a batch of jobs
    /// ended. Independent of the partitions' own limits ([`configure`](Partitioned::configure)).
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] for a cap outside 1 to 100,000 (nothing
    /// sent); a failure of the connection or the server.
    pub async fn exact_concurrency(&self, cap: Limit<u64>) -> Result<()> {
        let cap = match cap {
            Limit::Unlimited => 0,
            Limit::To(cap) if cap > 0 && limits::EXACT_CONCURRENCY.contains(&cap) => cap,
            Limit::To(cap) => {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!("an exact concurrency is 1 to 100000 jobs, not {cap}"),
                ))
            }
        };
        let key = keyspace::partitions(&self.name);
        let fields = vec![("concurrency".to_owned(), cap.to_string())];
        self.partitions[0].executor().plain().one(Command::HSet(key, fields)).await?;
        Ok(())
    }

    /// Pause the claims of every partition (see
    /// [`configure`](Partitioned::configure)), then of the ordinary queue of
    /// its name, which its workers work too ([`worked`](Partitioned::worked)).
    /// Each partition's settings after, in order.
    ///
    /// # Errors
    /// As [`configure`](Partitioned::configure); as [`Queue::pause`] for
    /// the ordinary queue, every partition paused.
    pub async fn pause(&self) -> Result<Vec<Settings>> {
        self.switch(true).await
    }

    /// Resume the claims of every partition, then of the ordinary queue of its name.
    ///
    /// # Errors
    /// As [`pause`](Partitioned::pause).
    pub async fn resume(&self) -> Result<Vec<Settings>> {
        self.switch(false).await
    }

    /// [`pause`](Partitioned::pause) (`true`) or [`resume`](Partitioned::resume).
    async fn switch(&self, paused: bool) -> Result<Vec<Settings>> {
        let settings = self.configure(Config::default().paused(paused)).await?;
        if let Some(own) = self.worked().pop() {
            own.configure(Config::default().paused(paused)).await.map_err(|err| {
                let why = err.text().to_owned();
                err.saying(format!(
                    "{why}; its {} partitions were changed all the same",
                    self.partitions.len()
                ))
            })?;
        }
        Ok(settings)
    }

    /// Delete the whole partitioned queue: each partition as
    /// [`Queue::delete`] deletes a queue, then the ordinary queue of its
    /// name, then its definition and its permits, so that the name is free
    /// again. How many jobs were deleted.
    ///
    /// # Errors
    /// [`ErrorKind::State`], nothing deleted, while a job of any of its
    /// queues is active and `how` is [`Delete::IfIdle`]; what
    /// [`Queue::delete`] refuses of one of them on the way, saying how many
    /// were deleted before it: the definition is kept, so the name still
    /// stands for what is left and deleting again finishes; a failure of
    /// the connection or the server.
    pub async fn delete(&self, how: Delete) -> Result<u64> {
        let queues = self.worked();
        if how == Delete::IfIdle {
            let stats = futures_util::future::try_join_all(queues.iter().map(Queue::stats)).await?;
            let active: u64 = stats.iter().map(|stats| stats.active).sum();
            if active > 0 {
                return Err(Error::new(
                    ErrorKind::State,
                    format!(
                        "{active} jobs of {} are active: let them finish, or force their deletion",
                        self.name
                    ),
                ));
            }
        }
        let mut total = 0;
        for (deleted, queue) in queues.iter().enumerate() {
            total += queue.delete(how).await.map_err(|err| {
                let why = err.text().to_owned();
                err.saying(format!(
                    "{why}; {deleted} of the {} queues of {} were deleted before it ({total} jobs), and its \
                     definition is kept: delete it again to finish",
                    queues.len(),
                    self.name
                ))
            })?;
        }
        let keys =
            [keyspace::partitions(&self.name), keyspace::permits(&self.name), keyspace::running(&self.name)];
        for answer in self.partitions[0].executor().plain().send(&keys.map(Command::Del)).await? {
            answer?;
        }
        Ok(total)
    }
}
