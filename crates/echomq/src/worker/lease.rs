//! A job's lease as its worker holds it, renewed by its queue's [`Heart`]
//! (one pipelined round of EXTENDs for all of the queue's running jobs) while
//! the handler runs and while its outcome waits out an outage; and how long
//! it surely holds, which is how long the sink may send that outcome.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::executor::execute_batch;
use crate::id::JobId;
use crate::queue::Queue;
use crate::transition::{Claimed, Extend};
use crate::{Error, ErrorKind};

/// A job's lease as its worker holds it: renewed by the queue's [`Heart`]
/// while the job's run lets it (inside [`hold`](Lease::hold) and
/// [`keep`](Lease::keep)), and held until `until`: a lease's length from when
/// the job's run started (just after the claim's reply, so later than the
/// server's deadline by about a round trip, which the last safe moment's
/// margin covers), or from when the last renewal that went through was sent.
/// Unregistered from the heart when dropped.
pub(super) struct Lease {
    heart: Arc<Heart>,
    beat: Arc<Beat>,
    key: u64,
    /// The job's end is known to the server: the call that ended it
    /// answered, or its lease was found lost.
    settled: bool,
}

impl Lease {
    /// The lease of `job`, claimed at `claimed`, renewed by `heart`.
    pub(super) fn new(heart: &Arc<Heart>, job: &Claimed, claimed: Instant) -> Lease {
        let beat = Arc::new(Beat {
            id: job.id.clone(),
            token: job.token,
            state: Mutex::new(BeatState {
                renewing: false,
                in_flight: false,
                renewed: claimed,
                ran_out_said: false,
            }),
            settled: Notify::new(),
            lost: CancellationToken::new(),
        });
        let key = heart.register(beat.clone());
        Lease { heart: heart.clone(), beat, key, settled: false }
    }

    /// The job's end is known to the server (see [`Drop`]).
    pub(super) fn settle(&mut self) {
        self.settled = true;
    }

    /// Until when the lease holds.
    pub(super) fn until(&self) -> Instant {
        self.beat.state().renewed + self.heart.length
    }

    /// Wait until no renewal of the lease is on its way. Outside [`hold`]
    /// and [`keep`](Lease::keep) the heart sends none, so once this returns
    /// a finishing call may go: no EXTEND can land after it.
    ///
    /// [`hold`]: Lease::hold
    pub(super) async fn quiet(&self) {
        loop {
            let settled = self.beat.settled.notified();
            if !self.beat.state().in_flight {
                return;
            }
            settled.await;
        }
    }

    /// The last moment a finishing call is worth sending: the lease's end as
    /// this worker knows it, less a moment for the call's way to the server.
    pub(super) fn last_safe_moment(&self) -> Instant {
        self.until() - (self.heart.length / 20).min(Duration::from_millis(100))
    }

    /// Run `work` while the heart renews the lease; `None`, and `work`
    /// dropped, as soon as a renewal finds the lease lost.
    pub(super) async fn hold<T>(&mut self, work: impl std::future::Future<Output = T>) -> Option<T> {
        let _renewing = self.beat.renewing();
        tokio::select! {
            done = work => Some(done),
            () = self.beat.lost.cancelled() => None,
        }
    }

    /// Run `work` (a nap between tries, a handler being stopped) to its end
    /// while the heart renews the lease; a renewal that finds the lease lost
    /// only ends the renewals.
    pub(super) async fn keep<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
        let _renewing = self.beat.renewing();
        work.await
    }
}

impl Drop for Lease {
    /// The job's run and its outcome are over: under a partitioned queue's
    /// exact concurrency, its running permit goes back once the job's end
    /// is known to the server ([`settle`](Lease::settle)); else it lapses.
    fn drop(&mut self) {
        self.heart.unregister(self.key);
        if let Some(coordinator) = self.heart.queue.coordinator() {
            coordinator.ended(&self.heart.queue, &self.beat.id, self.settled);
        }
    }
}

/// One running job's lease, as the heart sees it.
struct Beat {
    id: JobId,
    token: u64,
    state: Mutex<BeatState>,
    /// Told when a renewal that was on its way came back.
    settled: Notify,
    /// A renewal found the lease gone (reaped, cancelled, another's now).
    lost: CancellationToken,
}

/// A beat's state, read and changed under one lock, so that the heart's
/// "renewing and due, so on its way" and the run's "no longer renewing" are
/// never interleaved: a finishing call sent once `renewing` is off and no
/// renewal is `in_flight` is never followed by a renewal.
#[derive(Clone, Copy)]
struct BeatState {
    /// Whether the job's run lets the heart renew it now: never while a
    /// finishing call may be on its way (a renewal landing after it would
    /// be refused with the job's own token).
    renewing: bool,
    /// A renewal is on its way to the server.
    in_flight: bool,
    /// When the job's run started or the last renewal that went through was sent.
    renewed: Instant,
    /// Its lease ran out by this clock while the renewals failed, and the
    /// log said so (once).
    ran_out_said: bool,
}

impl Beat {
    fn lock(&self) -> std::sync::MutexGuard<'_, BeatState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn state(&self) -> BeatState {
        *self.lock()
    }

    /// Let the heart renew the lease until the guard is dropped.
    fn renewing(&self) -> Renewing<'_> {
        self.lock().renewing = true;
        Renewing(self)
    }

    /// Mark the lease's renewal as on its way when the run lets the heart
    /// renew it, none is on its way yet, and the last went through at
    /// `due_after` or longer before `now`.
    fn send_if_due(&self, now: Instant, due_after: Duration) -> bool {
        let mut state = self.lock();
        let due = state.renewing
            && !state.in_flight
            && !self.lost.is_cancelled()
            && now.saturating_duration_since(state.renewed) >= due_after;
        state.in_flight |= due;
        due
    }

    /// The renewal on its way came back: renewed as of `sent` if it went through.
    fn came_back(&self, renewed: Option<Instant>) {
        let mut state = self.lock();
        state.in_flight = false;
        if let Some(sent) = renewed {
            state.renewed = sent;
        }
        drop(state);
        self.settled.notify_waiters();
    }
}

/// While alive, the heart may renew its beat's lease.
struct Renewing<'a>(&'a Beat);

impl Drop for Renewing<'_> {
    fn drop(&mut self) {
        self.0.lock().renewing = false;
    }
}

/// The leases of one round of renewals, on their way: each is marked come
/// back when the round ends, also if the round is dropped half-way (the
/// worker stopping), so that no finishing call waits for it for ever.
struct OnTheirWay {
    beats: Vec<Arc<Beat>>,
    renewed: Vec<Option<Instant>>,
}

impl OnTheirWay {
    /// Every lease marked come back, each renewed as its outcome said; the leases.
    fn land(mut self) -> Vec<Arc<Beat>> {
        self.mark();
        std::mem::take(&mut self.beats)
    }

    fn mark(&mut self) {
        for (i, beat) in self.beats.iter().enumerate() {
            beat.came_back(self.renewed.get(i).copied().flatten());
        }
    }
}

impl Drop for OnTheirWay {
    fn drop(&mut self) {
        self.mark();
    }
}

/// How soon a RENEW of running permits must come back for the leases
/// renewed after it (PROTOCOL.md §7.10): half the slack a permit runs past
/// its lease, the other half for the servers' clocks.
const RENEWED_WITHIN: Duration = Duration::from_millis(echomq_core::limits::RUNNING_HOLD_MS / 2);

/// The heartbeats of one queue's running jobs: one round of EXTENDs, in one
/// round trip (a pipeline), for every lease due a renewal, rather than a
/// timer and a round trip per job. It looks every quarter of a beat (a
/// third of the lease) and renews each lease whose last renewal is three
/// quarters of a beat old, so each is renewed before a beat has passed, as
/// a timer per job would.
pub(super) struct Heart {
    queue: Queue,
    length: Duration,
    beats: Mutex<Beats>,
}

#[derive(Default)]
struct Beats {
    next: u64,
    running: HashMap<u64, Arc<Beat>>,
}

impl Heart {
    /// The heart of `queue`'s jobs, each under a lease of `length`.
    pub(super) fn new(queue: Queue, length: Duration) -> Arc<Heart> {
        Arc::new(Heart { queue, length, beats: Mutex::default() })
    }

    fn beats(&self) -> std::sync::MutexGuard<'_, Beats> {
        self.beats.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn register(&self, beat: Arc<Beat>) -> u64 {
        let mut beats = self.beats();
        let key = beats.next;
        beats.next += 1;
        beats.running.insert(key, beat);
        key
    }

    fn unregister(&self, key: u64) {
        self.beats().running.remove(&key);
    }

    /// The jobs running under this heart now, their leases not lost: each
    /// one's id, token, and until when its lease holds as this worker knows it.
    pub(super) fn running(&self) -> Vec<(JobId, u64, Instant)> {
        let beats = self.beats();
        let live = beats.running.values().filter(|beat| !beat.lost.is_cancelled());
        live.map(|beat| (beat.id.clone(), beat.token, beat.state().renewed + self.length)).collect()
    }

    /// The queue whose jobs this heart renews.
    pub(super) fn queue(&self) -> &Queue {
        &self.queue
    }

    /// A third of the lease: the longest a lease goes unrenewed.
    fn beat(&self) -> Duration {
        (self.length / 3).max(Duration::from_millis(4))
    }

    /// Renew the leases due, round after round, for as long as the worker runs.
    pub(super) async fn run(self: Arc<Heart>) {
        let mut rounds = tokio::time::interval(self.beat() / 4);
        // After a slow round, the next at once, then on the period: no burst.
        rounds.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing_since = None;
        loop {
            rounds.tick().await;
            self.round(&mut failing_since).await;
        }
    }

    /// One round: every lease due, in one pipeline of EXTENDs. A failure to
    /// reach the server is said once, and its end.
    async fn round(&self, failing_since: &mut Option<Instant>) {
        let now = Instant::now();
        let due_after = self.beat() * 3 / 4;
        let beats: Vec<Arc<Beat>> =
            self.beats().running.values().filter(|beat| beat.send_if_due(now, due_after)).cloned().collect();
        if beats.is_empty() {
            return;
        }
        // A server that takes the round and does not answer (frozen, or
        // stalled: no connection breaks) is said within a beat; the round
        // still waits for its answer, which a finishing call waits for too.
        let renewing = self.renew(beats);
        tokio::pin!(renewing);
        let (beats, sent, trouble) = tokio::select! {
            renewed = &mut renewing => renewed,
            () = tokio::time::sleep(self.beat()) => {
                let silence_said = self.say_unanswered(now, failing_since);
                let renewed = renewing.await;
                // The silence ended in a failure: that is said too, once.
                if silence_said && renewed.2.is_some() {
                    *failing_since = None;
                }
                renewed
            }
        };
        self.say(trouble, &beats, sent, failing_since);
    }

    /// Say, once, that the round sent at `sent` has had no answer for a
    /// beat, and how long the oldest lease holds; whether it said so.
    fn say_unanswered(&self, sent: Instant, failing_since: &mut Option<Instant>) -> bool {
        if failing_since.is_some() {
            return false;
        }
        let oldest =
            self.running().into_iter().map(|(_, _, until)| until).min().unwrap_or(sent + self.length);
        tracing::warn!(
            queue = self.queue.name(),
            "heartbeats get no answer from the server within {:.1?} (frozen, or stalled?); the oldest lease \
             holds for {:.1?} more",
            self.beat(),
            oldest.saturating_duration_since(Instant::now())
        );
        *failing_since = Some(sent);
        true
    }

    /// While renewals fail: say, once a job, that its lease ran out by this
    /// worker's clock, and what that means for the run going on.
    fn say_ran_out(&self, beats: &[Arc<Beat>]) {
        let now = Instant::now();
        for beat in beats.iter().filter(|beat| !beat.lost.is_cancelled()) {
            let mut state = beat.lock();
            let ends = state.renewed + self.length;
            if state.ran_out_said || ends > now {
                continue;
            }
            state.ran_out_said = true;
            tracing::warn!(
                queue = self.queue.name(),
                job = %beat.id,
                "the lease of job {} ran out {:.1?} ago by this worker's clock, the server still out of reach: its run \
                 goes on, but once the server is back the queue's upkeep may hand the job to another worker, and \
                 this run's end is then refused (its token no longer holds)",
                beat.id,
                now.saturating_duration_since(ends)
            );
        }
    }

    /// Renew `beats` in one pipeline of EXTENDs: the leases, each marked
    /// come back (renewed, or lost), when the round was sent, and the
    /// failure to reach the server, if any (a round trip that failed as a
    /// whole is one, renewing none).
    async fn renew(&self, beats: Vec<Arc<Beat>>) -> (Vec<Arc<Beat>>, Instant, Option<Error>) {
        let mut due = OnTheirWay { renewed: Vec::with_capacity(beats.len()), beats };
        let sent = Instant::now();
        let permitted = match self.permitted(&due.beats).await {
            Ok(permitted) => permitted,
            Err(err) => {
                due.renewed.resize(due.beats.len(), None);
                return (due.land(), sent, Some(err));
            }
        };
        let extends: Vec<Extend> = due
            .beats
            .iter()
            .zip(&permitted)
            .filter(|(_, permitted)| **permitted)
            .map(|(beat, _)| Extend { id: beat.id.clone(), token: beat.token, lease: self.length })
            .collect();
        let (via, keys) = (&**self.queue.executor(), self.queue.keyspace());
        let mut outcomes = match execute_batch(via, keys, &extends).await {
            Ok(outcomes) => outcomes,
            Err(err) => vec![Err(err); extends.len()],
        }
        .into_iter();
        let mut trouble = None;
        for (beat, permitted) in due.beats.iter().zip(permitted) {
            if !permitted {
                tracing::warn!(
                    queue = self.queue.name(),
                    job = %beat.id,
                    "the job's running permit under its queue's exact concurrency is gone: its lease is not \
                     renewed, and its handler is stopped as on a lost lease"
                );
                beat.lost.cancel();
                due.renewed.push(None);
                continue;
            }
            let renewed = match outcomes.next() {
                Some(Ok(_)) => Some(sent),
                Some(Err(err)) if err.is_lost_lease() => {
                    beat.lost.cancel();
                    None
                }
                Some(Err(err)) => {
                    trouble = Some(err);
                    None
                }
                None => None,
            };
            due.renewed.push(renewed);
        }
        (due.land(), sent, trouble)
    }

    /// Whether each of `beats` may have its lease renewed: under a
    /// partitioned queue's exact concurrency, only once its running permit
    /// was (PROTOCOL.md §7.10: a lease never outlasts its permit).
    async fn permitted(&self, beats: &[Arc<Beat>]) -> Result<Vec<bool>, Error> {
        let Some(coordinator) = self.queue.coordinator() else {
            return Ok(vec![true; beats.len()]);
        };
        let ids: Vec<&JobId> = beats.iter().map(|beat| &beat.id).collect();
        let sent = Instant::now();
        let permitted = coordinator.renew(&self.queue, &ids, self.length).await?;
        // A permit runs a slack past its renewal's lease: a lease renewed
        // later than half of it after could outlast it.
        let took = sent.elapsed();
        if took >= RENEWED_WITHIN {
            return Err(Error::new(
                ErrorKind::Server,
                format!(
                    "the running permits' renewal took {took:.1?}, {RENEWED_WITHIN:?} or more: no lease is \
                     renewed this round, lest one outlast its permit"
                ),
            ));
        }
        Ok(permitted)
    }

    /// Say a round's `trouble` when the renewals begin to fail, and when
    /// they work again: once each.
    fn say(
        &self,
        trouble: Option<Error>,
        beats: &[Arc<Beat>],
        sent: Instant,
        failing_since: &mut Option<Instant>,
    ) {
        match (trouble, failing_since.is_some()) {
            (None, true) => {
                let since = failing_since.take().expect("failing");
                tracing::info!(
                    queue = self.queue.name(),
                    "heartbeats renew leases again, after {:.1?}",
                    since.elapsed()
                );
            }
            (Some(err), false) => {
                // The lease nearest its end, this round's renewals counted, the lost ones not.
                let oldest = beats
                    .iter()
                    .filter(|beat| !beat.lost.is_cancelled())
                    .map(|beat| beat.state().renewed)
                    .min()
                    .unwrap_or(sent);
                let holds = oldest + self.length;
                tracing::warn!(
                    queue = self.queue.name(),
                    error = %err,
                    "heartbeats {}; the oldest lease holds for {:.1?} more",
                    err.failing_words(),
                    holds.saturating_duration_since(sent)
                );
                *failing_since = Some(sent);
            }
            (Some(err), true) => {
                tracing::debug!(error = %err, "heartbeats still {}", err.failing_words());
                self.say_ran_out(beats);
            }
            (None, false) => {}
        }
    }
}
