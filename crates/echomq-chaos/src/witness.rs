//! The witness: an [`Executor`] that runs every transition on the real one
//! and journals each call that hands out or carries a token, with the
//! server's answer. The library's `Worker` runs unchanged on top of it, so
//! the journal sees every claim, ack, fail, heartbeat and release the worker
//! sends, and what each one got, without a hook in the worker.
//!
//! Flows: it journals each RESOLVE the relay (or the sweep) sends, and what
//! it was answered; and, with the chance [`Suicide`] gives, seeded, it kills
//! its own process right after a RESOLVE was answered: the relay sends its
//! XDEL only once every RESOLVE of the round has come back, on the plain
//! commands, which the witness passes on unjournaled, so this is exactly
//! the moment between a notice applied and the notice deleted. It raises
//! SIGKILL on itself (what `std::process::abort` would do but for the core
//! file and the handler): the same death the orchestrator deals, on
//! purpose at that moment; the `abort` line it journals first tells the
//! orchestrator it was meant.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use echomq::executor::{Call, Plain, Ran, Reply, Setup, Shortfall};
use echomq::transition::{Claim, Transition};
use echomq::{Executor, JobId, Name, Result};

use crate::journal::{Event, Heard, Journal, Relayed};
use crate::rng::Rng;

/// When the witness kills its own process: after a RESOLVE was answered,
/// with this chance each, from this seed, unless a `calm` file exists.
#[derive(Clone, Debug)]
pub struct Suicide {
    /// The chance per RESOLVE answered, 0 to 1.
    pub chance: f64,
    /// The seed of the draws.
    pub seed: u64,
    /// While any of these exists, no kill: the orchestrator's sign that the
    /// chaos is over, or that this worker must answer for stale tokens first.
    pub calm: Vec<PathBuf>,
}

/// Runs transitions on `inner`, journaling tokens and what the server said.
pub struct Witness {
    inner: Arc<dyn Executor>,
    journal: Arc<Journal>,
    suicide: Suicide,
    rng: Mutex<Rng>,
}

impl Witness {
    /// A witness of `inner`, writing to `journal`, killing itself as `suicide` says.
    pub fn new(inner: Arc<dyn Executor>, journal: Arc<Journal>, suicide: Suicide) -> Witness {
        let rng = Mutex::new(Rng::new(suicide.seed));
        Witness { inner, journal, suicide, rng }
    }

    /// Journal each RESOLVE of `calls` and its answer; then, for each one
    /// answered, draw whether to die now, before the relay's XDEL.
    fn relayed(&self, calls: &[Call], ran: &Result<Ran>) {
        let mut answered = Vec::new();
        for (i, call) in calls.iter().enumerate().filter(|(_, call)| call.name == Name::Resolve) {
            let reply = ran.as_ref().ok().and_then(|ran| ran.replies.get(i));
            let relayed = match reply {
                Some(Ok(Reply::Int(1))) => Relayed::Applied,
                Some(Ok(Reply::Int(0))) => Relayed::Unchanged,
                Some(Ok(other)) => {
                    eprintln!("echomq-chaos worker: RESOLVE answered {other:?}");
                    Relayed::Refused
                }
                Some(Err(err)) if err.code().is_some() => {
                    eprintln!("echomq-chaos worker: RESOLVE refused: {err}");
                    Relayed::Refused
                }
                Some(Err(_)) | None => Relayed::Lost,
            };
            // ARGV: the parent's id, its incarnation, the child `{<queue>}<id>`, …
            let incarnation = call.args.get(1).and_then(|n| std::str::from_utf8(n).ok()?.parse().ok());
            let child = call.args.get(2).and_then(|child| std::str::from_utf8(child).ok()?.parse().ok());
            let (Some(incarnation), Some(child)) = (incarnation, child) else { continue };
            let child: echomq::JobRef = child;
            self.journal.record(Event::Resolve(relayed), &child.id, incarnation);
            if matches!(relayed, Relayed::Applied | Relayed::Unchanged) {
                answered.push((child.id, incarnation, relayed));
            }
        }
        if answered.is_empty() || self.suicide.chance <= 0.0 {
            return;
        }
        for (child, incarnation, relayed) in answered {
            if self.suicide.calm.iter().any(|calm| calm.exists()) {
                return;
            }
            let draw = self.rng.lock().unwrap_or_else(|p| p.into_inner()).between(0.0, 1.0);
            if draw < self.suicide.chance {
                self.journal.record(Event::Abort(relayed), &child, incarnation);
                // SAFETY: kill(2) on our own pid, with a signal no handler
                // can catch; it touches no memory.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                std::process::abort();
            }
        }
    }

    /// Journal `call` and its reply: a claim's jobs and tokens; a fenced
    /// call's token and what it heard (`None`: the round trip failed). The
    /// calls the chaos worker sends by name; any other by its description.
    ///
    /// `shortfall`: fewer replicas than asked for confirmed the run, so a
    /// write it applied may not survive a failover.
    fn witness(&self, call: &Call, reply: Option<&Result<Reply>>, shortfall: Option<Shortfall>) {
        let shortfall = shortfall.filter(|_| call.name.describe().waits_for_replication);
        let unconfirmed = shortfall.is_some();
        let reply = reply.map(|reply| match (reply, shortfall) {
            (Ok(_), Some(short)) if call.name != Name::AckMany => {
                Err(echomq::Error::not_replicated(short.confirmed, short.wanted))
            }
            (Ok(reply), _) => Ok(reply.clone()),
            (Err(err), _) => Err(err.clone()),
        });
        let reply = reply.as_ref();
        match call.name {
            Name::AckMany => self.acked_many(call, reply, unconfirmed),
            Name::Ack => {
                self.fenced(Event::Ack, call, reply);
            }
            Name::AckNext => self.acked_next(call, reply),
            Name::Fail => {
                self.fenced(Event::Fail, call, reply);
            }
            Name::Extend => {
                self.fenced(Event::Extend, call, reply);
            }
            Name::Release => {
                self.fenced(Event::Release, call, reply);
            }
            // Any other call is judged by its description: one that hands
            // out tokens is a claim; a fenced one the verdict cannot judge
            // (DEFER, PROGRESS: the chaos handler sends neither; or a
            // transition added later) is journaled as such, a violation,
            // until it has its event here; the rest carry no lease's token.
            name if name.describe().hands_out_tokens => self.claimed(reply),
            name if name.describe().fenced => {
                eprintln!("echomq-chaos worker: sent {name}, which the witness cannot judge");
                self.fenced(|_| Event::Unjudged, call, reply);
            }
            _ => {}
        }
    }

    /// ACKNEXT: an ack, then (after it, in the same step) a claim.
    fn acked_next(&self, call: &Call, reply: Option<&Result<Reply>>) {
        if self.fenced(Event::Ack, call, reply) {
            self.claimed(reply);
        }
    }

    /// Journal a fenced call as `event`, with its token and what it heard;
    /// whether it was journaled (its ARGV begins with a job's id and token).
    fn fenced(&self, event: fn(Heard) -> Event, call: &Call, reply: Option<&Result<Reply>>) -> bool {
        let id = call.args.first().and_then(|id| JobId::try_from(id.as_slice()).ok());
        let token = call.args.get(1).and_then(|token| std::str::from_utf8(token).ok()?.parse().ok());
        let (Some(id), Some(token)) = (id, token) else { return false };
        let heard = reply.map_or(Heard::Error, |reply| self.refused(call.name, reply));
        self.journal.record(event(heard), &id, token);
        true
    }

    /// Journal each job of an ACKMANY as an ack, with its own answer: its
    /// element of the reply, or the whole call's when the call was refused.
    fn acked_many(&self, call: &Call, reply: Option<&Result<Reply>>, unconfirmed: bool) {
        let (mut at, mut nth) = (0, 0);
        while let (Some(id), Some(token)) = (call.args.get(at), call.args.get(at + 1)) {
            at += 2;
            while call.args.get(at).is_some_and(|word| word.eq_ignore_ascii_case(b"RESULT")) {
                at += 2;
            }
            // An ACKMANY short of replicas: each ack it applied is unconfirmed.
            let heard = match reply {
                None => Heard::Error,
                Some(Ok(Reply::Array(outcomes))) => match outcomes.get(nth) {
                    Some(Reply::Int(1)) if unconfirmed => Heard::Error,
                    Some(Reply::Int(1)) => Heard::Ok,
                    Some(Reply::Error(refusal)) => {
                        let refusal = echomq::Error::from_code(refusal.code, refusal.text.clone());
                        self.refused(call.name, &Err(refusal))
                    }
                    _ => Heard::Refused,
                },
                Some(whole) => self.refused(call.name, whole),
            };
            nth += 1;
            let id = JobId::try_from(id.as_slice()).ok();
            let token = std::str::from_utf8(token).ok().and_then(|token| token.parse().ok());
            if let (Some(id), Some(token)) = (id, token) {
                self.journal.record(Event::Ack(heard), &id, token);
            }
        }
    }

    /// Journal the jobs a claim (or an ACKNEXT) handed out, with their tokens.
    fn claimed(&self, reply: Option<&Result<Reply>>) {
        let claimed = reply.and_then(|reply| reply.as_ref().ok()).map(|value| Claim::parse(value.clone()));
        for job in claimed.into_iter().flatten().flat_map(|claims| claims.jobs) {
            self.journal.record(Event::Claim, &job.id, job.token);
        }
    }

    /// A refusal the worker never provokes by itself, told on stderr (the
    /// journal keeps only its kind; the run counts it as a violation).
    fn refused(&self, name: Name, reply: &Result<Reply>) -> Heard {
        let heard = Heard::of(reply);
        if let (Heard::Refused, Err(err)) = (heard, reply) {
            eprintln!("echomq-chaos worker: {name} refused: {err}");
        }
        heard
    }
}

#[async_trait]
impl Executor for Witness {
    async fn run(&self, calls: &[Call]) -> Result<Ran> {
        let ran = self.inner.run(calls).await;
        for (i, call) in calls.iter().enumerate() {
            let reply = ran.as_ref().ok().and_then(|ran| ran.replies.get(i));
            let shortfall = ran.as_ref().ok().and_then(|ran| ran.shortfall);
            self.witness(call, reply, shortfall);
        }
        self.relayed(calls, &ran);
        ran
    }

    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Reply> {
        let reply = self.inner.claim_waiting(claim, wait).await;
        self.witness(claim, Some(&reply), None);
        reply
    }

    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>> {
        self.inner.wait_on_many(wakes, wait).await
    }

    async fn interrupt_waits(&self) {
        self.inner.interrupt_waits().await;
    }

    fn setup(&self) -> Setup {
        self.inner.setup()
    }

    fn plain(&self) -> &dyn Plain {
        self.inner.plain()
    }
}
