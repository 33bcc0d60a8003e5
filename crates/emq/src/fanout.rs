//! The commands that change each queue a partitioned queue's name stands
//! for (its partitions, and the ordinary queue of its name), one at a
//! time: when one fails after others were changed, the failure names those
//! that were and exits 4 (maybe done: done on some), so that the operator
//! knows what happened and that running it again is safe; and a
//! partitioned queue's settings with the limits that hold beside them.

use echomq::transition::Config;
use echomq::{Limit, Partitioned, Queue, Rate, Settings};

use crate::connect::Error;
use crate::failure::{explain, Exit, Failure};

/// `each` on every queue of `queues` (the queues the name `name` stands
/// for), in order, its answers in order. The first failure ends it: as it
/// is when no queue was changed before it; else exit 4 (maybe done),
/// saying that `done` was done on the queues before it.
pub async fn each_queue<T, F, Fut>(
    name: &str,
    queues: &[Queue],
    done: &str,
    mut each: F,
) -> Result<Vec<T>, Error>
where
    F: FnMut(usize, Queue) -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let mut answers = Vec::with_capacity(queues.len());
    for (at, queue) in queues.iter().enumerate() {
        match each(at, queue.clone()).await {
            Ok(answer) => answers.push(answer),
            Err(err) if at == 0 => return Err(err),
            Err(err) => {
                let names = |queues: &[Queue]| queues.iter().map(Queue::name).collect::<Vec<_>>().join(", ");
                // A write whose answer was lost may have been made on the queue it failed on.
                let failed = match Failure::of(err.as_ref()) {
                    Failure::MaybeDone => format!("{} maybe, ", queue.name()),
                    _ => String::new(),
                };
                let message = format!(
                    "{}: {}\n{done} {at} of the {} queues of {name} ({}); {failed}not the rest ({}): once the cause \
                     is fixed, running the same command again is safe",
                    queue.name(),
                    explain(err.as_ref()),
                    queues.len(),
                    names(&queues[..at]),
                    names(&queues[at..]),
                );
                return Err(Box::new(Exit::new(Failure::MaybeDone, message)));
            }
        }
    }
    Ok(answers)
}

/// Change a partitioned queue's settings, a partition at a time (its
/// limits split between them, [`Partitioned::shares`]), then, when
/// `config` pauses or resumes, the ordinary queue of its name's claims
/// too, so that a pause holds every job its workers run. Each partition's
/// settings after, in order. A `config` that changes nothing reads them
/// all at once, and fails as a read does.
pub async fn configure(partitioned: &Partitioned, config: Config) -> Result<Vec<Settings>, Error> {
    if config == Config::default() {
        let reads = partitioned.partitions().iter().map(Queue::settings);
        return Ok(futures_util::future::try_join_all(reads).await?);
    }
    let mut shares = partitioned.shares(config)?;
    let mut queues = partitioned.partitions().to_vec();
    if let Some(paused) = config.paused {
        queues.extend(partitioned.worked().pop());
        shares.push(Config::default().paused(paused));
    }
    let name = partitioned.name();
    let mut settings = each_queue(name, &queues, "changed", |at, queue| {
        let share = shares[at];
        async move { queue.configure(share).await.map_err(Error::from) }
    })
    .await?;
    settings.truncate(partitioned.partitions().len());
    Ok(settings)
}

/// A partitioned queue's settings after a change: a line per partition,
/// then the exact limits across them, which hold beside the split ones.
pub fn tell_partitions(partitioned: &Partitioned, settings: &[Settings]) {
    let n = settings.len();
    tell!("{}: over {n} partitions, limits split between them:", partitioned.name());
    for (queue, settings) in partitioned.partitions().iter().zip(settings) {
        tell!("  {}: {}", queue.name(), crate::flow::describe(settings));
    }
    tell!("  exact across them: {}", exact(partitioned));
    let split = |limit: fn(&Settings) -> bool| settings.iter().any(limit);
    let stacked = (partitioned.exact().is_some() && split(|s| s.rate.is_some()))
        || (partitioned.running_cap().is_some() && split(|s| s.concurrency.is_some()));
    if stacked {
        eprintln!("emq: note: {}", both_hold(partitioned.name()));
    }
}

/// A partitioned queue's exact limits in words: `rate 5/1s, concurrency 20`, or `none`.
pub fn exact(partitioned: &Partitioned) -> String {
    let mut parts = Vec::new();
    if let Some(rate) = partitioned.exact() {
        parts.push(format!("rate {}", crate::flow::rate_text(rate)));
    }
    if let Some(cap) = partitioned.running_cap() {
        parts.push(format!("concurrency {cap}"));
    }
    match parts.is_empty() {
        true => "none".to_owned(),
        false => parts.join(", "),
    }
}

/// Why a queue with both kinds of a limit runs at the lower.
fn both_hold(name: &str) -> String {
    format!(
        "{name}'s split and exact limits both hold: the lower governs (`emq limit {name} --concurrency none` \
         lifts the split ones, with --exact the exact ones; --rate likewise)"
    )
}

/// After `emq limit --exact`: a note when a partition's own limit of the
/// kind just set holds too (their settings read, nothing changed).
pub async fn note_split(partitioned: &Partitioned, rate: Option<Limit<Rate>>, cap: Option<Limit<u64>>) {
    let reads = partitioned.partitions().iter().map(Queue::settings);
    let Ok(settings) = futures_util::future::try_join_all(reads).await else { return };
    let split = |limit: fn(&Settings) -> bool| settings.iter().any(limit);
    let rate_set = matches!(rate, Some(Limit::To(_)));
    let cap_set = matches!(cap, Some(Limit::To(_)));
    if (rate_set && split(|s| s.rate.is_some())) || (cap_set && split(|s| s.concurrency.is_some())) {
        eprintln!("emq: note: {}", both_hold(partitioned.name()));
    }
}
