//! The commands that change jobs by id or in bulk: `retry`, `cancel` and
//! `delete`, each by id or every job of a state that matches (`select.rs`),
//! with a count before `--yes`.

use echomq::transition::Children;
use echomq::{JobId, State};

use crate::connect::{Error, Server};
use crate::inspect::{job_arg, JobArg};
use crate::ops::{note_if_unknown, queue_for, queues_named, state};
use crate::select::{self, Action, Refused, Selection};

/// Jobs named one by one: each `JOB_…`, or `{queue}JOB_…` as `emq flow
/// add` prints it, and the queue `--queue` gives them.
#[derive(Debug)]
pub struct JobsArgs {
    ids: Vec<JobArg>,
    queue: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct RetryArgs {
    /// The jobs' ids, `JOB_…` or `{queue}JOB_…` (none with --all-dead).
    #[arg(required_unless_present = "all_dead", conflicts_with = "all_dead", value_parser = job_arg)]
    ids: Vec<JobArg>,
    /// Their queue (found by a scan for each job when not given); with
    /// --all-dead, the queue whose dead jobs to retry.
    #[arg(long, required_if_eq("all_dead", "true"))]
    queue: Option<String>,
    /// Every dead job of --queue, oldest first, a page a call: those dead
    /// when it begins (a job that dies meanwhile stays). Without --yes it
    /// only says how many it would retry.
    #[arg(long)]
    all_dead: bool,
    /// With --all-dead: only the jobs whose payload or last error contains
    /// this text, byte for byte (`*` is a star).
    #[arg(long, requires = "all_dead")]
    matching: Option<String>,
    /// With --all-dead: retry them (without, nothing changes).
    #[arg(long, requires = "all_dead")]
    yes: bool,
    /// Retry a flow's parent even while a child it heard died was retried
    /// and has not told it its end: the parent reads that child dead.
    #[arg(long, conflicts_with = "all_dead")]
    force: bool,
}

pub async fn retry(server: &Server, args: RetryArgs) -> Result<(), Error> {
    if args.all_dead {
        let queue = args.queue.expect("clap requires --queue with --all-dead");
        let selection = Selection { queue, state: State::Dead, matching: args.matching };
        return bulk(server, &selection, Action::Retry, args.yes).await;
    }
    let force = args.force;
    let args = JobsArgs { ids: args.ids, queue: args.queue };
    each_job(server, args, "retried", |queue, id| async move {
        // Read once, before RETRY: it does not change them.
        let children = echomq::Flows::of(&queue).children(&id).await?;
        if let Some(children) = children.as_ref().filter(|_| !force) {
            // Only a dead parent: RETRY refuses any other as it is, said below.
            if queue.inspect(&id).await?.is_some_and(|job| job.record.state == State::Dead) {
                refuse_rerun(queue.executor(), children).await?;
            }
        }
        if let Err(err) = echomq::Flows::of(&queue).retry_now(&id).await {
            // A parent still waiting for its children: how many, and what ends the wait.
            return Err(match children.as_ref() {
                Some(children) if err.kind == echomq::ErrorKind::State && err.text().contains("waiting") => {
                    let said = format!(
                        "{}: it waits for {} of its {} children (emq inspect lists them), and runs once they have \
                         ended",
                        err.text(),
                        children.open,
                        children.children.len()
                    );
                    echomq::Error::new(echomq::ErrorKind::State, said)
                }
                _ => err,
            });
        }
        // A flow's child whose parent will not hear its end: said.
        if let Some(why) = parent_deaf(server, &queue, &id).await {
            tell!("{id}: {why}");
        }
        // A flow's parent with children open waits for them (protocol 1.11): said.
        if let Some(children) = children.filter(|children| children.open > 0) {
            tell!(
                "{id}: waits for {} of its {} children (emq inspect lists them)",
                children.open,
                children.children.len()
            );
        }
        Ok(true)
    })
    .await
}

/// What becomes of the parent of flow child `id`, just retried, when it
/// needs saying: it will not hear the child's end, or it is dead and waits
/// for a retry of its own. A failure to look is no reason to fail the retry done.
async fn parent_deaf(server: &Server, queue: &echomq::Queue, id: &JobId) -> Option<String> {
    let link = crate::inspect::parse_link(&crate::inspect::link_of(server, queue.name(), id).await.ok()??)?;
    if let Some(why) = crate::inspect::deaf_parent(server, &link).await.ok()? {
        return Some(format!("its parent {} will not hear its end ({why})", link.parent));
    }
    let dead = crate::inspect::state_in_queue(server, &link.parent).await.ok()?? == State::Dead;
    dead.then(|| {
        format!(
            "its parent {} is dead: it hears this job's end, and runs again only when retried itself (emq retry {}), \
             once this job has ended",
            link.parent, link.parent
        )
    })
}

/// A dead flow parent with a child it heard died that was retried since
/// and has not told it its end is refused (`EMQSTATE`, naming it),
/// advising `--force`.
async fn refuse_rerun(
    executor: &std::sync::Arc<dyn echomq::Executor>,
    children: &echomq::transition::ChildrenReply,
) -> echomq::Result<()> {
    let rerun = rerun_of(executor, children).await?;
    match rerun.is_empty() {
        true => Ok(()),
        false => Err(echomq::Error::new(
            echomq::ErrorKind::State,
            format!("{}. Retry it once they have, or with --force", rerun_said(&rerun)),
        )),
    }
}

/// The children of flow parent `id` that it heard died and that were
/// retried since, without its hearing their end yet, each with its state
/// (`{q}JOB… active`; `done` when its notice is still to be relayed).
/// RETRY sends a parent back to waiting for the children it has not heard
/// the end of, but it counts a child recorded dead as ended: retried now,
/// the parent would run before that child's second end, and read it dead.
/// Empty for a job that is no parent (one read) or has no such child.
pub async fn rerun_children(queue: &echomq::Queue, id: &JobId) -> echomq::Result<Vec<String>> {
    let Some(children) = echomq::Flows::of(queue).children(id).await? else { return Ok(Vec::new()) };
    rerun_of(queue.executor(), &children).await
}

/// [`rerun_children`] of a parent's children as read: only a child
/// recorded dead has its own queue looked at. One still dead, or
/// cancelled (which its parent would not record over `dead`), is ended.
pub async fn rerun_of(
    executor: &std::sync::Arc<dyn echomq::Executor>,
    children: &echomq::transition::ChildrenReply,
) -> echomq::Result<Vec<String>> {
    // Any queue's flows open the children's own queues: the first child's will do.
    let Some(first) = children.children.first() else { return Ok(Vec::new()) };
    let parent = echomq::Queue::new(executor.clone(), &first.child.queue)?;
    let again = echomq::Flows::of(&parent).running_again(children).await?;
    Ok(again.into_iter().map(|(child, state)| format!("{child} {state}")).collect())
}

/// The dead jobs of `page` a retry may take: a flow's parent with a child
/// that died and runs again is refused, said in `applied` (the children of
/// the page read in one round trip).
pub async fn retriable(
    executor: &std::sync::Arc<dyn echomq::Executor>,
    keys: &echomq::Keyspace,
    page: &[JobId],
    applied: &mut crate::select::Applied,
) -> Result<Vec<JobId>, Error> {
    let reads: Vec<Children> = page.iter().map(|id| Children { id: id.clone() }).collect();
    let mut retriable = Vec::with_capacity(page.len());
    for (id, read) in page.iter().zip(echomq::executor::execute_batch(&**executor, keys, &reads).await?) {
        let rerun = match read {
            Ok(Some(children)) => rerun_of(executor, &children).await?,
            Ok(None) => Vec::new(),
            // Unread, it is not retried unlooked: said as the refusals are.
            Err(err) => {
                applied.refused(id, crate::failure::explain(&err), crate::failure::exit_code(&err, true));
                continue;
            }
        };
        if !rerun.is_empty() {
            applied.refused(id, rerun_said(&rerun), 5);
            continue;
        }
        retriable.push(id.clone());
    }
    Ok(retriable)
}

/// Why a parent with children that run again is not retried, in words.
pub fn rerun_said(rerun: &[String]) -> String {
    format!(
        "a flow's parent whose children that died were retried and have not told it their end ({}): retried now it would run first",
        rerun.join(", ")
    )
}

/// A state cancel takes: pending, active, delayed or dead.
fn cancellable(name: &str) -> Result<State, String> {
    let state = state(name)?;
    Action::Cancel.check(state).map_err(|refused| refused.to_string())?;
    Ok(state)
}

#[derive(clap::Args, Debug)]
pub struct CancelArgs {
    /// The jobs' ids, `JOB_…` or `{queue}JOB_…` (none with --all).
    #[arg(required_unless_present = "all", conflicts_with = "all", value_parser = job_arg)]
    ids: Vec<JobArg>,
    /// Their queue (found by a scan for each job when not given); with
    /// --all, the queue whose jobs to cancel.
    #[arg(long)]
    queue: Option<String>,
    /// Every job of --queue in this state (pending, active, delayed or
    /// dead), oldest first, a page a call: those there when it begins.
    /// Without --yes it only says how many it would cancel.
    #[arg(long, value_name = "STATE", value_parser = cancellable, requires = "queue")]
    all: Option<State>,
    /// With --all: only the jobs whose payload or last error contains this
    /// text, byte for byte (`*` is a star).
    #[arg(long, requires = "all")]
    matching: Option<String>,
    /// With --all: cancel them (without, nothing changes).
    #[arg(long, requires = "all")]
    yes: bool,
}

pub async fn cancel(server: &Server, args: CancelArgs) -> Result<(), Error> {
    if let Some(state) = args.all {
        let queue = args.queue.expect("clap requires --queue with --all");
        let selection = Selection { queue, state, matching: args.matching };
        return bulk(server, &selection, Action::Cancel, args.yes).await;
    }
    let args = JobsArgs { ids: args.ids, queue: args.queue };
    each_job(server, args, "cancelled", |queue, id| async move {
        // Only for the note: a failed look does not stop the cancel.
        let running = queue.inspect(&id).await.ok().flatten().is_some_and(|found| found.record.state == State::Active);
        let cancelled = queue.cancel(&id).await?;
        if running && cancelled {
            tell!(
                "{id} was running: its worker stops it at its next heartbeat (within a third of its lease); its \
                 place (its group's, under a cap) is free at once"
            );
        }
        Ok(cancelled)
    })
    .await
}

#[derive(clap::Args, Debug)]
pub struct DeleteArgs {
    /// The jobs' ids, `JOB_…` or `{queue}JOB_…` (none with --all).
    #[arg(required_unless_present = "all", conflicts_with = "all", value_parser = job_arg)]
    ids: Vec<JobArg>,
    /// Their queue (a partitioned queue's name: each id in its partition).
    #[arg(long)]
    queue: String,
    /// The state the ids are in (an id in another is left alone).
    #[arg(long, value_parser = state, required_unless_present = "all", conflicts_with = "all")]
    state: Option<State>,
    /// Every job of --queue in this state, oldest first, a page a call:
    /// those there when it begins. Without --yes it only says how many it
    /// would delete.
    #[arg(long, value_name = "STATE", value_parser = state)]
    all: Option<State>,
    /// With --all: only the jobs whose payload or last error contains this
    /// text, byte for byte (`*` is a star).
    #[arg(long, requires = "all")]
    matching: Option<String>,
    /// With --all: delete them (without, nothing changes).
    #[arg(long, requires = "all")]
    yes: bool,
}

pub async fn delete(server: &Server, args: DeleteArgs) -> Result<(), Error> {
    if let Some(state) = args.all {
        let selection = Selection { queue: args.queue, state, matching: args.matching };
        return bulk(server, &selection, Action::Delete, args.yes).await;
    }
    let state = args.state.expect("clap requires --state without --all");
    let executor = server.executor().await?;
    // By queue: a partitioned queue's ids each in its partition.
    let partitioned = server.partitioned(&args.queue).await?;
    let mut by_queue: std::collections::BTreeMap<&str, Vec<JobId>> = std::collections::BTreeMap::new();
    for named in &args.ids {
        let queue = partitioned.as_ref().map_or(args.queue.as_str(), |p| p.partition_of(named).name());
        // A `{queue}JOB_…` names --queue, or the partition its id is in.
        if let Some(named_in) = named.queue.as_deref().filter(|q| ![queue, args.queue.as_str()].contains(q)) {
            let message =
                format!("{{{named_in}}}{named} is in queue {named_in}, and --queue says {}", args.queue);
            return Err(Box::new(crate::failure::Exit::usage(message)));
        }
        by_queue.entry(queue).or_default().push(named.id.clone());
    }
    let mut applied = select::Applied::default();
    for (queue, ids) in &by_queue {
        applied.add(select::apply_ids(&executor, queue, state, ids, Action::Delete).await?);
    }
    tell!("deleted {} of {} {state} job(s) of {}", applied.changed, args.ids.len(), args.queue);
    if state == State::Waiting && applied.changed > 0 {
        eprintln!(
            "emq: note: a flow's parent deleted leaves its children: those still to run, in their queues, run on \
             and tell no one (emq cancel of a parent by id takes them with it)"
        );
    }
    if applied.skipped > 0 {
        eprintln!("{} not {state} in {} (left alone)", applied.skipped, args.queue);
    }
    Ok(())
}

/// How many jobs a confirmation with a text looks at to count the matches.
const CONFIRM_BUDGET: u64 = 10_000;

/// `action` on every job of `selection`, with `yes`; without, how many it
/// would change, and nothing changed. A partitioned queue's name: on each
/// of its partitions (and the ordinary queue of its name), summed.
async fn bulk(server: &Server, selection: &Selection, action: Action, yes: bool) -> Result<(), Error> {
    let queues = queues_named(server, &selection.queue).await?;
    let each: Vec<Selection> =
        queues.into_iter().map(|queue| Selection { queue, ..selection.clone() }).collect();
    let mut conn = server.connection().await?;
    let (verb, done, what) = (action.verb(), action.done(), selection.describe());
    if !yes {
        let mut sum = select::Count::NONE;
        for part in &each {
            sum = sum.and(select::count(&mut conn, part, CONFIRM_BUDGET).await.map_err(usage)?);
        }
        if sum.exact {
            tell!("would {verb} {} {what}; add --yes to {verb} them", sum.n);
        } else {
            tell!(
                "would {verb} at least {} {what} (the newest {} of {} looked at); add --yes to {verb} every match",
                sum.n,
                sum.examined,
                sum.total
            );
        }
        if sum.total == 0 {
            note_if_unknown(server, &selection.queue).await;
        }
        return Ok(());
    }
    let executor = server.executor().await?;
    let mut applied = select::Applied::default();
    for part in &each {
        applied.add(select::apply_all(&executor, &mut conn, part, action).await.map_err(usage)?);
    }
    let failed = applied.failed.len() as u64;
    // The refused ones are left where they were too.
    let left = applied.examined - applied.changed - applied.skipped;
    let refused = if failed > 0 { format!(", {failed} of them refused") } else { String::new() };
    tell!(
        "{done} {} {what} ({} looked at, {left} left {}{refused}, {} gone meanwhile)",
        applied.changed,
        applied.examined,
        selection.state,
        applied.skipped
    );
    refusals(&applied, action)
}

/// The jobs a bulk change refused, each said on its own line, and the
/// command's end: refused one by one, by the server or by the retry's look
/// at a parent's children, one code for them all is the command's.
fn refusals(applied: &select::Applied, action: Action) -> Result<(), Error> {
    for (id, why) in &applied.failed {
        eprintln!("{id}: {why}");
    }
    if applied.failed.is_empty() {
        return Ok(());
    }
    let by_id = match action {
        Action::Retry => "; by id, emq retry --force retries a parent now",
        _ => "",
    };
    let (failed, done) = (applied.failed.len(), action.done());
    let message = format!("{failed} matching job(s) not {done} (each said above){by_id}");
    let code = match applied.codes.len() {
        1 => applied.codes.first().copied().unwrap_or(1),
        _ => 1,
    };
    Err(Box::new(crate::failure::Exit::with_code(code, message)))
}

/// A selection's refusal as a usage error (exit 2: nothing was sent).
pub fn usage(err: Error) -> Error {
    match err.downcast::<Refused>() {
        Ok(refused) => Box::new(crate::failure::Exit::usage(refused.to_string())),
        Err(err) => err,
    }
}

/// Run `action` on each job, every one tried: a job not found or refused is
/// reported on its own line, and makes the command fail once all were tried.
async fn each_job<F, Fut>(server: &Server, args: JobsArgs, done: &str, action: F) -> Result<(), Error>
where
    F: Fn(echomq::Queue, JobId) -> Fut,
    Fut: std::future::Future<Output = echomq::Result<bool>>,
{
    let executor = server.executor().await?;
    let (total, mut failed) = (args.ids.len(), 0);
    // The exit codes of the failures: one code for them all is the command's.
    let mut codes = std::collections::BTreeSet::new();
    for named in args.ids {
        let id = named.id.clone();
        let queue = match named.queue_given(server, args.queue.clone()).await {
            Ok(given) => queue_for(server, &id, given).await,
            Err(err) => Err(err),
        };
        let queue = match queue {
            Ok(queue) => echomq::Queue::new(executor.clone(), &queue).map_err(Error::from),
            Err(err) => Err(err),
        };
        let outcome = match queue {
            Ok(queue) => action(queue, id.clone()).await.map_err(Error::from),
            Err(err) => Err(err),
        };
        match outcome {
            Ok(true) => tell!("{done} {id}"),
            Ok(false) => tell!("{id} was {done} already"),
            Err(err) => {
                eprintln!("{id}: {}", crate::failure::explain(err.as_ref()));
                codes.insert(crate::failure::exit_code(err.as_ref(), false));
                failed += 1;
            }
        }
    }
    if failed > 0 {
        let others = if failed < total { "; the others were" } else { "" };
        let message = format!("{failed} of {total} job(s) not {done} (each said above){others}");
        let code = if codes.len() == 1 { codes.into_iter().next().unwrap_or(1) } else { 1 };
        return Err(Box::new(crate::failure::Exit::with_code(code, message)));
    }
    Ok(())
}
