//! The flow-control commands: pause, resume, limit and config. Each is one
//! CONFIG transition (GROUP for `limit --group`), so the server's CLAIM
//! enforces the result for every worker of every process at once.

use std::time::Duration;

use echomq::transition::Config;
use echomq::{EventLog, Group, GroupInfo, Keyspace, Limit, QueueGroups, Rate, Retention, Settings};

use crate::connect::{Conn, Error, Server};

#[derive(clap::Args, Debug)]
pub struct QueuesArgs {
    /// The queues.
    #[arg(required = true)]
    queues: Vec<String>,
}

pub async fn pause(server: &Server, args: QueuesArgs) -> Result<(), Error> {
    for name in args.queues {
        if let Some(partitioned) = server.partitioned(&name).await? {
            crate::fanout::configure(&partitioned, Config::default().paused(true)).await?;
            let n = partitioned.partitions().len();
            tell!(
                "paused {name} (its {n} partitions and its own queue): its workers claim nothing until `emq \
                 resume {name}`"
            );
            continue;
        }
        let queue = server.queue(&name).await?;
        queue.pause().await?;
        tell!("paused {name}: its workers claim nothing until `emq resume {name}`");
        note_if_empty(&queue).await;
    }
    Ok(())
}

/// A queue set up before its first job is fine, a misspelt name is not: say
/// so when the queue holds no job at all. Advice only: the setting is made,
/// so a failed look at the queue is not the command's failure.
async fn note_if_empty(queue: &echomq::Queue) {
    if queue.stats().await.is_ok_and(|stats| stats == echomq::transition::StatsReply::default()) {
        eprintln!(
            "emq: note: {} holds no job (a misspelt name?); its settings apply to the jobs it gets",
            queue.name()
        );
    }
}

/// A partitioned queue's exact rate after a change.
fn tell_exact_rate(partitioned: &echomq::Partitioned, rate: Limit<Rate>) {
    let n = partitioned.partitions().len();
    match rate {
        Limit::To(rate) => {
            let per = humantime::format_duration(rate.per);
            tell!("{}: an exact rate of {}/{per} across its {n} partitions", partitioned.name(), rate.claims);
        }
        Limit::Unlimited => {
            tell!("{}: no exact rate (each partition's own rate still holds)", partitioned.name())
        }
    }
}

/// A partitioned queue's exact concurrency after a change.
fn tell_exact_concurrency(partitioned: &echomq::Partitioned, cap: Limit<u64>) {
    let n = partitioned.partitions().len();
    match cap {
        Limit::To(cap) => {
            tell!(
                "{}: an exact concurrency of {cap} jobs at once across its {n} partitions",
                partitioned.name()
            )
        }
        Limit::Unlimited => {
            tell!(
                "{}: no exact concurrency (each partition's own concurrency still holds)",
                partitioned.name()
            )
        }
    }
}

pub async fn resume(server: &Server, args: QueuesArgs) -> Result<(), Error> {
    for name in args.queues {
        if let Some(partitioned) = server.partitioned(&name).await? {
            crate::fanout::configure(&partitioned, Config::default().paused(false)).await?;
            tell!("resumed {name}: its {} partitions and its own queue", partitioned.partitions().len());
            continue;
        }
        server.queue(&name).await?.resume().await?;
        tell!("resumed {name}");
    }
    Ok(())
}

/// A rate: `<claims>/<period>`, e.g. `100/1s` or `5/250ms`; `none` removes it.
pub(crate) fn rate(text: &str) -> Result<Limit<Rate>, String> {
    if text == "none" {
        return Ok(Limit::Unlimited);
    }
    let (claims, per) =
        text.split_once('/').ok_or(format!("{text:?}: a rate is <claims>/<period>, e.g. 100/1s"))?;
    let claims: u64 = claims.parse().map_err(|_| format!("{claims:?} is not a number of claims"))?;
    let most = *echomq::limits::RATE.end();
    if claims == 0 || claims > most {
        return Err(format!("a rate allows 1 to {most} claims a period: `none` removes it"));
    }
    let period = humantime::parse_duration(per).map_err(|err| format!("{per:?}: {err}"))?;
    let ms = echomq::limits::RATE_PERIOD_MS;
    let whole = period.subsec_nanos() % 1_000_000 == 0;
    if !whole || !ms.contains(&u64::try_from(period.as_millis()).unwrap_or(u64::MAX)) {
        return Err(format!("{per:?} is not a period: a whole number of ms, from 1ms to 24h"));
    }
    Ok(Limit::To(Rate { claims, per: period }))
}

/// A concurrency limit: a number of jobs, at least 1; `none` removes it.
pub(crate) fn concurrency(text: &str) -> Result<Limit<u64>, String> {
    match text {
        "none" => Ok(Limit::Unlimited),
        text => match text.parse() {
            Ok(0) | Err(_) => Err(format!("{text:?}: a concurrency limit is a number of jobs ≥ 1, or none")),
            Ok(n) => Ok(Limit::To(n)),
        },
    }
}

/// A group's name: 1 to 200 bytes.
pub(crate) fn group(text: &str) -> Result<String, String> {
    let most = echomq::limits::MAX_GROUP;
    match text.len() {
        0 => Err(format!("a group is 1 to {most} bytes, not empty")),
        n if n > most => Err(format!("a group is 1 to {most} bytes, not {n}")),
        _ => Ok(text.to_owned()),
    }
}

/// A group's most pending jobs: a number, at least 1; `none` removes it.
fn most(text: &str) -> Result<Limit<u64>, String> {
    match text {
        "none" => Ok(Limit::Unlimited),
        text => match text.parse() {
            Ok(0) | Err(_) => Err(format!("{text:?}: a group's --max is a number of jobs ≥ 1, or none")),
            Ok(n) => Ok(Limit::To(n)),
        },
    }
}

#[derive(clap::Args, Debug)]
// At least one, said by clap when none is given.
#[command(group(clap::ArgGroup::new("which").required(true).multiple(true)
    .args(["rate", "concurrency", "group", "weight", "cap", "max", "pause", "resume"])))]
pub struct LimitArgs {
    /// The queue.
    queue: String,
    /// At most this many claims per period, across every worker: `100/1s`; `none` removes it.
    /// With --group, the group's own.
    #[arg(long, value_parser = rate)]
    rate: Option<Limit<Rate>>,
    /// At most this many jobs active at once, across every worker; `none` removes it.
    #[arg(long, value_parser = concurrency, conflicts_with = "group")]
    concurrency: Option<Limit<u64>>,
    /// Limit one fair group of the queue (a tenant, a customer, a key) rather
    /// than the whole queue; alone, show its settings. Claims take turns
    /// between groups by weight; the queue's own limits still apply above them.
    #[arg(long, value_parser = group)]
    group: Option<String>,
    /// With --group: its share of the claims against the other groups' (1 to 1000; 1 by default).
    #[arg(long, requires = "group", value_parser = clap::value_parser!(u64).range(1..=1000))]
    weight: Option<u64>,
    /// With --group: at most this many of its jobs active at once (1 keeps them in order); `none` removes it.
    #[arg(long, requires = "group", value_parser = concurrency)]
    cap: Option<Limit<u64>>,
    /// With --group: at most this many of its jobs pending, an enqueue past it refused; `none` removes it.
    #[arg(long, requires = "group", value_parser = most)]
    max: Option<Limit<u64>>,
    /// With --group: pause its claims (its jobs wait, the other groups' run).
    #[arg(long, requires = "group", conflicts_with = "resume")]
    pause: bool,
    /// With --group: resume its claims.
    #[arg(long, requires = "group")]
    resume: bool,
    /// With a partitioned queue: hold --rate and --concurrency exactly across
    /// every partition rather than split them between them (its workers ask
    /// a coordinator for permits, one more call a claim; a rate runs up to a
    /// tenth below itself; under a concurrency each job's permit is renewed
    /// with its lease and given back at its end).
    #[arg(long, conflicts_with = "group")]
    exact: bool,
}

pub async fn limit(server: &Server, args: LimitArgs) -> Result<(), Error> {
    let partitioned = server.partitioned(&args.queue).await?;
    let queue = match (&partitioned, &args.group) {
        // A group lives in the partition its name routes to.
        (Some(partitioned), Some(group)) => partitioned.partition_for(group).clone(),
        _ => server.queue(&args.queue).await?,
    };
    if let Some(name) = args.group {
        let mut change = Group::new(name);
        (change.weight, change.cap, change.rate, change.max) = (args.weight, args.cap, args.rate, args.max);
        change.paused = (args.pause || args.resume).then_some(args.pause);
        let group = QueueGroups::of(&queue).set(change).await?;
        note_if_empty(&queue).await;
        if group.pending == 0 && group.running == 0 {
            eprintln!(
                "emq: note: group {} of {} holds no job pending or running (a misspelt name?); its settings apply to the \
                 jobs it gets",
                group.group, args.queue
            );
        }
        tell!("{} group {}: {}", args.queue, group.group, describe_group(&group));
        return Ok(());
    }
    if args.exact {
        let Some(partitioned) = &partitioned else {
            return Err(format!(
                "{}: --exact is for a partitioned queue; a queue's own limits are exact",
                args.queue
            )
            .into());
        };
        if let Some(rate) = args.rate {
            partitioned.exact_rate(rate).await?;
            tell_exact_rate(partitioned, rate);
        }
        if let Some(cap) = args.concurrency {
            partitioned.exact_concurrency(cap).await?;
            tell_exact_concurrency(partitioned, cap);
        }
        crate::fanout::note_split(partitioned, args.rate, args.concurrency).await;
        eprintln!(
            "emq: note: workers take it within a second; one that does not know protocol 1.8 ignores it"
        );
        return Ok(());
    }
    let mut config = Config::default();
    (config.concurrency, config.rate) = (args.concurrency, args.rate);
    if let Some(partitioned) = partitioned {
        crate::fanout::tell_partitions(&partitioned, &crate::fanout::configure(&partitioned, config).await?);
        return Ok(());
    }
    let settings = queue.configure(config).await?;
    note_if_empty(&queue).await;
    match describe(&settings).as_str() {
        "-" => tell!("{}: not paused, no limits", args.queue),
        said => tell!("{}: {said}", args.queue),
    }
    Ok(())
}

/// A group in one short phrase: `ready, 5 pending, 1 running; weight 3, cap 2, rate 10/1s, max 1000`.
pub fn describe_group(group: &GroupInfo) -> String {
    format!(
        "{}, {} pending, {} running; {}",
        group.standing.as_str(),
        group.pending,
        group.running,
        group_settings(group)
    )
}

/// A group's settings in one short phrase: `weight 3, cap 2, rate 10/1s,
/// max 1000, paused`; the weight always, the others when set.
pub fn group_settings(group: &GroupInfo) -> String {
    let mut parts = vec![format!("weight {}", group.weight)];
    if let Some(cap) = group.cap {
        parts.push(format!("cap {cap}"));
    }
    if let Some(rate) = group.rate {
        parts.push(format!("rate {}", rate_text(rate)));
    }
    if let Some(max) = group.max {
        parts.push(format!("max {max}"));
    }
    if group.paused {
        parts.push("paused".to_owned());
    }
    parts.join(", ")
}

/// A rate as `emq limit` takes it: `10/1s`.
pub fn rate_text(Rate { claims, per }: Rate) -> String {
    format!("{claims}/{}", humantime::format_duration(per))
}

#[derive(clap::Args, Debug)]
pub struct ConfigArgs {
    /// The queue.
    queue: String,
    /// Pause (true) or resume (false) its claims.
    #[arg(long)]
    paused: Option<bool>,
    /// At most this many claims per period: `100/1s`; `none` removes it.
    #[arg(long, value_parser = rate)]
    rate: Option<Limit<Rate>>,
    /// At most this many jobs active at once; `none` removes it.
    #[arg(long, value_parser = concurrency)]
    concurrency: Option<Limit<u64>>,
    /// Keep done jobs this long and at most this many, `AGE/COUNT`: `24h/10000`;
    /// `none` for no bound, on either side (`7d/none`), or `none` alone for neither.
    #[arg(long, value_parser = retention)]
    keep_done: Option<Retention>,
    /// The same for dead jobs (default `30d/100000`).
    #[arg(long, value_parser = retention)]
    keep_dead: Option<Retention>,
    /// The same for cancelled jobs (default `24h/10000`).
    #[arg(long, value_parser = retention)]
    keep_cancelled: Option<Retention>,
    /// Keep about this many entries in the queue's event log (default
    /// 10000); `off` stops writing events (then `emq events` shows nothing
    /// new, and waiting for a job looks at it instead of following the log).
    #[arg(long, value_parser = events_length)]
    events: Option<EventLog>,
}

/// An event log length: a number of entries, or `off`.
pub(crate) fn events_length(text: &str) -> Result<EventLog, String> {
    match text {
        "off" | "0" => Ok(EventLog::Off),
        text => text
            .parse()
            .map(EventLog::Keep)
            .map_err(|_| format!("{text:?}: the event log's length is a number of entries, or off")),
    }
}

/// `AGE/COUNT`, each `none` for no bound: `24h/10000`, `7d/none`; `none`
/// alone for no bound at all.
pub(crate) fn retention(text: &str) -> Result<Retention, String> {
    let (age, count) = match text {
        "none" => ("none", "none"),
        text => text.split_once('/').ok_or("expected AGE/COUNT, such as 24h/10000 or none/1000, or none")?,
    };
    let age = match age {
        "none" => None,
        age => Some(humantime::parse_duration(age).map_err(|err| format!("{age}: {err}"))?),
    };
    let count = match count {
        "none" => None,
        count => Some(count.parse::<u64>().map_err(|err| format!("{count}: {err}"))?),
    };
    Ok(Retention { age, count })
}

impl ConfigArgs {
    /// Whether it changes nothing, only shows the settings: then it prints
    /// with `say!`.
    pub fn only_reads(&self) -> bool {
        let ConfigArgs { queue: _, paused, rate, concurrency, keep_done, keep_dead, keep_cancelled, events } =
            self;
        paused.is_none()
            && rate.is_none()
            && concurrency.is_none()
            && keep_done.is_none()
            && keep_dead.is_none()
            && keep_cancelled.is_none()
            && events.is_none()
    }
}

pub async fn config(server: &Server, args: ConfigArgs) -> Result<(), Error> {
    let only_reads = args.only_reads();
    // Each setting as given, or left as it is.
    let mut config = Config::default();
    (config.paused, config.concurrency, config.rate) = (args.paused, args.concurrency, args.rate);
    (config.keep_done, config.keep_dead, config.keep_cancelled) =
        (args.keep_done, args.keep_dead, args.keep_cancelled);
    config.events = args.events;
    if let Some(partitioned) = server.partitioned(&args.queue).await? {
        crate::fanout::tell_partitions(&partitioned, &crate::fanout::configure(&partitioned, config).await?);
        return Ok(());
    }
    let queue = server.queue(&args.queue).await?;
    let settings = queue.configure(config).await?;
    note_if_empty(&queue).await;
    // Each setting's name padded to the longest's, `keep cancelled`.
    let row = |name: &str, value: String| format!("  {name:<15}{value}");
    let rate = settings.rate.map_or("none".into(), |Rate { claims, per }| {
        format!("{claims}/{}", humantime::format_duration(per))
    });
    let mut lines = vec![
        args.queue.clone(),
        row("paused", settings.paused.to_string()),
        row("concurrency", settings.concurrency.map_or("none".into(), |n| n.to_string())),
        row("rate", rate),
    ];
    let kept =
        [("done", settings.keep_done), ("dead", settings.keep_dead), ("cancelled", settings.keep_cancelled)];
    for (state, keep) in kept {
        let age = keep.age.map_or("any age".into(), |age| format!("{}", humantime::format_duration(age)));
        let count = keep.count.map_or("any number".into(), |n| format!("at most {n}"));
        lines.push(row(&format!("keep {state}"), format!("{age}, {count}")));
    }
    lines.push(match settings.events {
        EventLog::Off => row("events", "off".into()),
        EventLog::Keep(n) => row("events", format!("about the last {n}")),
    });
    for line in lines {
        if only_reads {
            say!("{line}");
        } else {
            tell!("{line}");
        }
    }
    Ok(())
}

/// The settings in one short phrase: `paused, concurrency 10, rate 100/1s`, or `-`.
pub fn describe(settings: &Settings) -> String {
    let mut parts = Vec::new();
    if settings.paused {
        parts.push("paused".to_owned());
    }
    if let Some(n) = settings.concurrency {
        parts.push(format!("concurrency {n}"));
    }
    if let Some(Rate { claims, per }) = settings.rate {
        parts.push(format!("rate {claims}/{}", humantime::format_duration(per)));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// A queue's settings read straight from its config key (a plain read, so a
/// read-only user may run `emq stats`).
pub async fn settings(conn: &mut Conn, keys: &Keyspace) -> Result<Settings, Error> {
    let fields: Vec<Option<u64>> = redis::cmd("HMGET")
        .arg(keys.config())
        .arg(&["paused", "concurrency", "rate", "per"])
        .query_async(conn)
        .await?;
    let field = |i: usize| fields.get(i).copied().flatten().filter(|n| *n > 0);
    Ok(Settings {
        paused: field(0) == Some(1),
        concurrency: field(1),
        rate: field(2).zip(field(3)).map(|(claims, per)| Rate { claims, per: Duration::from_millis(per) }),
        // Retention is not shown in this one-line summary (`emq config` shows it).
        ..Settings::default()
    })
}
