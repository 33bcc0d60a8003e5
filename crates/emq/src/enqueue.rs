//! `emq enqueue`: one job from the command line, or many from stdin (JSON
//! lines), each answered with its id. A failure says what was done and what
//! is safe next, and ends `emq` with its own exit code (see [`Failure`]).

use std::io::{Read, Write};
use std::time::Duration;

use echomq::{EnqueueOptions, JobId, Partitioned, Queue};

use crate::connect::{Error, Server};
use crate::failure::{explain, Exit, Failure};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The queue.
    queue: String,
    /// The payload; `-` reads it from stdin.
    #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl")]
    payload: Option<String>,
    /// Lower is claimed first.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i64,
    /// Claimable only after this long, e.g. 30s or 5m.
    #[arg(long, value_parser = humantime::parse_duration)]
    delay: Option<Duration>,
    /// The job's own maximum attempts (at least 1), whatever the workers' --max-attempts.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=*echomq::limits::MAX_ATTEMPTS.end()))]
    attempts: Option<u64>,
    /// The job's own wait between attempts, fixed, e.g. 10s.
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "backoff_exp")]
    backoff: Option<Duration>,
    /// The job's own wait between attempts, doubling from this, e.g. 1s.
    #[arg(long, value_parser = humantime::parse_duration)]
    backoff_exp: Option<Duration>,
    /// How long one attempt may run before a worker stops it and fails it, e.g. 5m.
    #[arg(long, value_parser = humantime::parse_duration)]
    timeout: Option<Duration>,
    /// Dedup: while a job holds this key (for --unique-for), enqueueing with
    /// it changes nothing and prints that job's id.
    #[arg(long, requires = "unique_for")]
    unique: Option<String>,
    /// How long the new job holds its --unique key, e.g. 10m.
    #[arg(long, value_parser = humantime::parse_duration, requires = "unique")]
    unique_for: Option<Duration>,
    /// With --unique: the key also frees as soon as its job finishes.
    #[arg(long, requires = "unique")]
    unique_until_done: bool,
    /// A header handed to the job's handler, `name=value` (again for more):
    /// `--header tenant=acme --header traceparent=00-…`.
    #[arg(long = "header", value_parser = header)]
    headers: Vec<(String, String)>,
    /// The job's fair group (1 to 200 bytes: a tenant, a customer, a key):
    /// claims take turns between a queue's groups (`emq groups`, `emq limit
    /// --group`). With --jsonl, every line's job goes to this group.
    #[arg(long, value_parser = crate::flow::group)]
    group: Option<String>,
    /// The job's id, to make a retried enqueue idempotent (default: a new one).
    #[arg(long, conflicts_with = "jsonl")]
    id: Option<JobId>,
    /// Many jobs: one per line of stdin, each line a JSON document, the job's
    /// payload; one id per line out, in the same order. Every line is checked
    /// before any is enqueued, then they go a thousand to a round trip. On a
    /// failure, the ids printed are of the jobs enqueued, the message names
    /// the lines that failed, and the lines after them were not tried.
    #[arg(long)]
    jsonl: bool,
}

/// `name=value`, the name not empty.
fn header(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("{text:?}: a header is name=value")),
    }
}

pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    // Bad input is refused before anything is sent.
    echomq::Keyspace::new(&args.queue).map_err(|err| refused(&err))?;
    let payloads = match &args.payload {
        _ if args.jsonl => lines(&read_stdin(u64::MAX)?)?,
        // One byte past the limit is enough to refuse it: a stream of
        // gigabytes is not read whole for that.
        Some(payload) if payload == "-" => vec![read_stdin(echomq::limits::MAX_PAYLOAD as u64 + 1)?],
        Some(payload) => vec![payload.clone().into_bytes()],
        None => return Err("no payload: give one, `-` for stdin, or --jsonl".into()),
    };
    let options = options(&args);
    let queue =
        server.queue(&args.queue).await.map_err(|err| match Failure::of_connecting(err.as_ref()) {
            Failure::NotDone => Exit::new(Failure::NotDone, not_done(err.as_ref())),
            _ => refused(err.as_ref()),
        })?;
    // A partitioned queue's name (protocol 1.8): each job goes to its partition.
    let partitioned = Partitioned::find(queue.executor().clone(), &args.queue).await.map_err(|err| {
        match Failure::of(&err) {
            Failure::Refused => refused(&err),
            _ => Exit::new(Failure::NotDone, not_done(&err)), // a read: nothing was written
        }
    })?;
    if partitioned.is_none() {
        shaped_as_a_partition(&queue, &args.queue).await?;
    }
    if !args.jsonl {
        let given = match args.id {
            Some(id) => options.clone().id(id),
            None => options.clone(),
        };
        let (home, id) = home(partitioned.as_ref(), &queue, &given).map_err(|err| refused(&err))?;
        let payload = payloads.into_iter().next().unwrap_or_default();
        let enqueued = enqueue(&home, payload, options.id(id.clone())).await?;
        // The id alone on stdout (`ID=$(emq enqueue …)`), what it means on stderr.
        tell!("{}", enqueued.id);
        match () {
            _ if !enqueued.duplicate => {}
            _ if enqueued.id == id => eprintln!("emq: {id}: duplicate: it existed already, nothing changed"),
            _ => {
                eprintln!("emq: {}: duplicate: this job holds the --unique key; nothing changed", enqueued.id)
            }
        }
        return Ok(());
    }
    many(&queue, partitioned.as_ref(), &payloads, &options).await
}

/// A queue named `<p>~<k>~<s>` beside a partitioned queue `p` is refused
/// (exit 5, nothing written): a job put straight into a partition, or into
/// a queue named as one, is not where routing by its id looks for it, so
/// `emq inspect --queue p` and the rest would not find it.
async fn shaped_as_a_partition(queue: &echomq::Queue, name: &str) -> Result<(), Error> {
    let Some(home) = crate::stats::partitioned_home(name) else { return Ok(()) };
    let Ok(Some(partitioned)) = Partitioned::find(queue.executor().clone(), &home).await else {
        return Ok(());
    };
    let what = match partitioned.partitions().iter().any(|partition| partition.name() == name) {
        true => "is a partition of",
        false => "is named as a partition of",
    };
    let message = format!(
        "{name} {what} the partitioned queue {home}: enqueue to {home}, which puts each job in the partition \
         its id (or group, or unique key) names, where every command finds it"
    );
    Err(Box::new(Exit::new(Failure::Refused, message)))
}

/// Where a job with `options` goes, and its id: `queue`, or for a
/// partitioned queue the partition its id, group or unique key names
/// (PROTOCOL.md §7.10).
fn home(
    partitioned: Option<&Partitioned>,
    queue: &Queue,
    options: &EnqueueOptions,
) -> echomq::Result<(Queue, JobId)> {
    match partitioned {
        None => Ok((queue.clone(), options.given_id().cloned().unwrap_or_else(JobId::mint))),
        Some(partitioned) => {
            let id = partitioned.place(options)?;
            Ok((partitioned.partition_of(&id).clone(), id))
        }
    }
}

/// The job's options, from the command line.
fn options(args: &Args) -> EnqueueOptions {
    let mut options = EnqueueOptions::default().priority(args.priority);
    if let Some(delay) = args.delay {
        options = options.delay(delay);
    }
    if let Some(n) = args.attempts {
        options = options.attempts(n);
    }
    if let Some(wait) = args.backoff {
        options = options.backoff(wait);
    }
    if let Some(base) = args.backoff_exp {
        options = options.backoff_exponential(base);
    }
    if let Some(limit) = args.timeout {
        options = options.timeout(limit);
    }
    for (name, value) in &args.headers {
        options = options.header(name.as_str(), value.as_str());
    }
    if let Some(group) = &args.group {
        options = options.group(group.as_str());
    }
    if let (Some(key), Some(hold)) = (&args.unique, args.unique_for) {
        options = if args.unique_until_done {
            options.unique_until_finished(key.as_str(), hold)
        } else {
            options.unique(key.as_str(), hold)
        };
    }
    options
}

/// Lines sent together: one ENQUEUEMANY call's worth of plain jobs (which
/// goes in whole or not at all, under 8 MiB of payloads); with options,
/// a pipeline of as many ENQUEUEs, each going in on its own.
const CHUNK: usize = 1000;
/// How many times a chunk that may have gone in is sent: again with the same
/// ids, a job that got there answers duplicate, and none goes in twice.
const TRIES: u32 = 3;

/// Enqueue JSON lines in chunks of [`CHUNK`], one round trip each, printing
/// each chunk's ids in line order when it is answered. A chunk's ids are
/// minted before it is sent, so that a chunk sent again is the same jobs;
/// to a partitioned queue, each chunk goes to one partition, that of its
/// first id (routed by the job's group or unique key when it has one).
async fn many(
    queue: &Queue,
    partitioned: Option<&Partitioned>,
    payloads: &[Vec<u8>],
    options: &EnqueueOptions,
) -> Result<(), Error> {
    let total = payloads.len();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (first, chunk) in (0..total).step_by(CHUNK).zip(payloads.chunks(CHUNK)) {
        let lines = Lines { first, count: chunk.len(), total };
        let (home, id) = home(partitioned, queue, options).map_err(|err| refused(&err))?;
        let ids = std::iter::once(id.clone()).chain((1..chunk.len()).map(|_| match partitioned {
            Some(partitioned) => partitioned.mint_in(partitioned.index_of(&id)),
            None => JobId::mint(),
        }));
        let jobs = chunk.iter().zip(ids).map(|(payload, id)| (payload.as_slice(), options.clone().id(id)));
        let outcomes = send(&home, jobs.collect(), &lines).await?;
        // Each line's id in order; a line refused has none.
        let mut refused: Vec<(usize, String)> = Vec::new();
        let mut printed = Ok(());
        for (line, outcome) in (lines.first + 1..).zip(outcomes) {
            match outcome {
                Ok(enqueued) => printed = printed.and_then(|()| writeln!(out, "{}", enqueued.id)),
                Err(err) => refused.push((line, explain(&err))),
            }
        }
        // Flushed chunk by chunk: a script reading along sees each chunk's jobs as they are enqueued.
        if let Err(err) = printed.and_then(|()| out.flush()) {
            return Err(format!(
                "the output broke ({err}) while printing the ids of {}: they and the {first} line(s) before \
                 them were enqueued, the lines after them were not tried{}",
                lines.named(),
                lines.rest_after()
            )
            .into());
        }
        if let Some((line, why)) = refused.first() {
            if refused.len() == lines.count {
                return Err(Box::new(lines.refused(why)));
            }
            let others = match refused.get(1) {
                Some((next, _)) => format!(" (and {} more lines, from line {next})", refused.len() - 1),
                None => String::new(),
            };
            let message = format!(
                "{}: line {line} refused: {why}{others}; their other lines were enqueued, one id each above, in \
                 order; {}, the lines after them were not tried{}",
                lines.named(),
                lines.before(),
                lines.rest_after()
            );
            return Err(Box::new(Exit::new(Failure::Refused, message)));
        }
    }
    Ok(())
}

/// A chunk of JSON lines: `count` of them after the `first`, of `total`.
struct Lines {
    first: usize,
    count: usize,
    total: usize,
}

impl Lines {
    fn named(&self) -> String {
        format!("lines {} to {} of {}", self.first + 1, self.first + self.count, self.total)
    }

    fn before(&self) -> String {
        format!("the {} line(s) before them were enqueued (their ids above)", self.first)
    }

    /// The chunk refused whole, for `why`.
    fn refused(&self, why: &str) -> Exit {
        let message = format!(
            "{}: refused: {why}. Nothing of them was written; {}, the lines after them were not tried; the same \
             lines would be refused again",
            self.named(),
            self.before()
        );
        Exit::new(Failure::Refused, message)
    }

    /// How to enqueue the lines after this chunk.
    fn rest_after(&self) -> String {
        self.rest(self.first + self.count + 1)
    }

    /// How to enqueue what is left, from line `next`.
    fn rest(&self, next: usize) -> String {
        match next {
            _ if next > self.total => String::new(),
            _ => format!(" (to enqueue the rest, give lines {next} to {} to --jsonl again)", self.total),
        }
    }
}

/// Send a chunk's jobs, and again (the same jobs, the same ids) while a
/// failure of the connection or the server says they may have gone in, up
/// to [`TRIES`] times; each job's outcome, or what `emq` tells on giving up.
async fn send(
    queue: &Queue,
    jobs: Vec<(&[u8], EnqueueOptions)>,
    lines: &Lines,
) -> Result<Vec<echomq::Result<echomq::Enqueued>>, Exit> {
    let mut tries = 1;
    loop {
        let (failure, why) = match queue.enqueue_many(jobs.iter().cloned()).await {
            // A call that failed as a whole fails each of its jobs the same
            // way; a chunk of several calls may have failed in part.
            Ok(outcomes) => match chunk_failure(&outcomes) {
                None => return Ok(outcomes),
                Some(failed) => failed,
            },
            Err(err) => (Failure::of(&err), explain(&err)),
        };
        if failure == Failure::MaybeDone && tries < TRIES {
            eprintln!("emq: {}: maybe enqueued: {why}; sending them again with the same ids", lines.named());
            tokio::time::sleep(Duration::from_millis(250 << tries)).await;
            tries += 1;
            continue;
        }
        return Err(match failure {
            // Once maybe enqueued, they stay so, whatever a later try says.
            _ if tries > 1 || failure == Failure::MaybeDone => {
                let listed: Vec<String> = jobs
                    .iter()
                    .zip(lines.first + 1..)
                    .map(|((_, options), line)| {
                        format!("  line {line}: {}", options.given_id().expect("minted"))
                    })
                    .collect();
                let message = format!(
                    "{}: maybe enqueued: {why}. Sent {tries} time(s) with the same ids; each line's job, had it \
                     gone in, has the id listed below (`emq inspect <id> --queue {}` tells). {}; the lines after \
                     them were not tried{}\n{}",
                    lines.named(),
                    queue.name(),
                    lines.before(),
                    lines.rest_after(),
                    listed.join("\n")
                );
                Exit::new(Failure::MaybeDone, message)
            }
            Failure::NotDone => Exit::new(
                Failure::NotDone,
                format!(
                    "{}: not enqueued: {why}. Nothing of them was written; {}, the lines after them were not \
                     tried{}",
                    lines.named(),
                    lines.before(),
                    lines.rest(lines.first + 1)
                ),
            ),
            _ => lines.refused(&why),
        });
    }
}

/// What a chunk's failure of the connection or the server did, with its
/// words, or `None` when each line went in or was refused on its own. The
/// chunk is maybe enqueued as soon as one of its lines went in or may have
/// (its calls went in on their own: sent again with the same ids, those
/// answer duplicate); not enqueued only when none did.
fn chunk_failure(outcomes: &[echomq::Result<echomq::Enqueued>]) -> Option<(Failure, String)> {
    let (mut worst, mut why) = (None, String::new());
    for err in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        let failure = Failure::of(err);
        if failure != Failure::Refused && (worst.is_none() || failure == Failure::MaybeDone) {
            (worst, why) = (Some(failure), explain(err));
        }
    }
    let failure = worst?;
    let some_went_in = outcomes.iter().any(Result::is_ok);
    Some((if some_went_in { Failure::MaybeDone } else { failure }, why))
}

/// Enqueue one job; a failure says what was done, and what is safe next.
async fn enqueue(queue: &Queue, payload: Vec<u8>, options: EnqueueOptions) -> Result<echomq::Enqueued, Exit> {
    let id = options.given_id().cloned().expect("the caller sets the id");
    // In a span of the command's own, in the trace of whoever started it.
    #[cfg(feature = "otel")]
    let sent = tracing::Instrument::instrument(queue.enqueue_with(payload, options), crate::otel::command());
    #[cfg(not(feature = "otel"))]
    let sent = queue.enqueue_with(payload, options);
    // A server that takes the call and never answers (frozen, a proxy that
    // holds replies) is waited for until Ctrl-C, which says what is known.
    let sent = tokio::select! {
        sent = sent => sent,
        _ = tokio::signal::ctrl_c() => return Err(Exit::new(
            Failure::MaybeDone,
            format!(
                "interrupted before the server answered: maybe enqueued, as {id}. To be sure, \
                 enqueue it again with --id {id}: if the first one got there, the second is a \
                 duplicate and changes nothing (or look: emq inspect {id})"
            ),
        )),
    };
    sent.map_err(|err| match Failure::of(&err) {
        Failure::NotDone => Exit::new(Failure::NotDone, not_done(&err)),
        Failure::MaybeDone => Exit::new(
            Failure::MaybeDone,
            format!(
                "maybe enqueued, as {id}: {}. To be sure, enqueue it again with --id {id}: \
                 if the first one got there, the second is a duplicate and changes nothing",
                explain(&err)
            ),
        ),
        Failure::Refused => refused(&err),
    })
}

fn not_done(err: &(dyn std::error::Error + 'static)) -> String {
    if let Some(echomq::Error { kind: echomq::ErrorKind::Full, .. }) = err.downcast_ref() {
        // Not a passing outage: the group stays full until its jobs are claimed.
        return format!(
            "not enqueued: {}. Nothing was written: enqueue it again once the group's pending jobs \
             are claimed (emq groups QUEUE shows them), or raise its --max",
            explain(err)
        );
    }
    format!("not enqueued: {}. Nothing was written: enqueuing again is safe", explain(err))
}

fn refused(err: &(dyn std::error::Error + 'static)) -> Exit {
    let message =
        format!("refused: {}. Nothing was written; the same job would be refused again", explain(err));
    Exit::new(Failure::Refused, message)
}

/// Stdin, up to `most` bytes (`u64::MAX`: all of it).
fn read_stdin(most: u64) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    std::io::stdin().take(most).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The jobs of JSON lines: each line one JSON document, at most
/// [`MAX_PAYLOAD`](echomq::limits::MAX_PAYLOAD) bytes; blank lines (a
/// trailing one, say) are skipped. Refused whole, naming the first bad
/// line, so that bad input enqueues nothing.
fn lines(input: &[u8]) -> Result<Vec<Vec<u8>>, Exit> {
    let bad = |line: usize, why: String| {
        Exit::new(Failure::Refused, format!("refused: line {line} {why}. Nothing was enqueued"))
    };
    let text =
        std::str::from_utf8(input).map_err(|err| bad(1, format!("and after are not UTF-8 ({err})")))?;
    let mut payloads = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > echomq::limits::MAX_PAYLOAD {
            return Err(bad(n + 1, format!("is over {} bytes", echomq::limits::MAX_PAYLOAD)));
        }
        if let Err(err) = serde_json::from_str::<serde::de::IgnoredAny>(line) {
            return Err(bad(n + 1, format!("is not JSON ({err})")));
        }
        payloads.push(line.as_bytes().to_vec());
    }
    if payloads.is_empty() {
        return Err(Exit::new(
            Failure::Refused,
            "refused: no jobs on stdin (--jsonl wants one per line)".into(),
        ));
    }
    Ok(payloads)
}
