//! Every transition, table-driven, on every executor — the Lua scripts and
//! the native module on one real redis-server, and the embedded core
//! in-process: arrange the keys, run the transition, then check its reply and
//! every key of the queue. The refusals, sent raw as any speaker could, each
//! with its exact error and nothing written, are golden vector cases
//! (`crates/echomq-core/src/vectors/refused/`), which the core runs on its
//! own and `tests/vectors.rs` replays on every executor.

mod common;

use std::any::Any;
use std::fmt::Debug;
use std::time::{Duration, SystemTime};

use common::{check, default_retention, unexpand, Call, Got, Line, A, B};
use echomq::transition::*;
use echomq::{
    Backoff, Code, Embedded, Executor, JobId, Keyspace, Name, Native, Policy, Record, State, Unique,
};
use echomq_core::memory::Dump;
use echomq_test_support::{unique_queue, RedisServer};

struct Case {
    name: &'static str,
    given: &'static [&'static str],
    call: Call,
    reply: Reply,
    after: &'static [&'static str],
}

/// The reply a case must get, typed: compared with `==`, never as text.
#[derive(Debug)]
enum Reply {
    /// The transition's output, as the host parses it.
    Is(Box<dyn Expected>),
    /// A refusal with this code.
    Refused(Code),
    /// EXTEND's deadline, which must be the lease's new score in active.
    Deadline,
}

/// An output a case expects, compared with one of its own type.
trait Expected: Debug + Send {
    fn is(&self, got: &dyn Any) -> bool;
}

impl<T: Debug + PartialEq + Send + 'static> Expected for T {
    fn is(&self, got: &dyn Any) -> bool {
        got.downcast_ref::<T>() == Some(self)
    }
}

fn ok<T: Debug + PartialEq + Send + 'static>(value: T) -> Reply {
    Reply::Is(Box::new(value))
}
fn refused(code: Code) -> Reply {
    Reply::Refused(code)
}
/// A claim's reply; a wait the gate held back for is [`ANY_WAIT`] (its
/// length depends on the clock: the cases that know it check the keys).
fn claims(jobs: Vec<Claimed>, held: Option<Held>) -> Reply {
    ok(Claims { jobs, held })
}
const ANY_WAIT: Held = Held::Wait(Duration::ZERO);
fn claimed(id: &str, token: u64, payload: &[u8]) -> Claimed {
    Claimed {
        id: id.parse().unwrap(),
        token,
        payload: payload.to_vec(),
        policy: None,
        headers: Default::default(),
    }
}
/// Settings with the protocol's default retention and event log.
fn settings(paused: bool, concurrency: Option<u64>, rate: Option<(u64, Duration)>) -> Settings {
    let [keep_done, keep_dead, keep_cancelled] = default_retention();
    let events = echomq::EventLog::default();
    let rate = rate.map(|(claims, per)| echomq::Rate { claims, per });
    Settings { paused, concurrency, rate, keep_done, keep_dead, keep_cancelled, events, protocol: None }
}
fn stored(name: &str, definition: &[u8], next: u64) -> Stored {
    Stored { name: name.to_owned(), definition: definition.to_vec(), next }
}
fn record(state: State, attempts: u64, payload: &[u8]) -> Record {
    Record { state, attempts, payload: payload.to_vec(), enqueued_at: None, updated_at: None }
}

/// Run `call`, its output boxed: refusals as their code, a claim's wait
/// as [`ANY_WAIT`], SCHEDULES without the server's now. By the output's
/// type, not the transition: a transition added needs nothing here.
async fn got(k: &Keyspace, via: &dyn Executor, call: &Call) -> echomq::Result<Box<dyn Got>> {
    fn boxed<T: Debug + Send + 'static>(value: T) -> Box<dyn Got> {
        Box::new(value)
    }
    let output = call.output(k, via).await?;
    let any = (*output).as_any();
    Ok(if let Some(claims) = any.downcast_ref::<Claims>() {
        let held = match claims.held {
            Some(Held::Wait(_)) => Some(ANY_WAIT),
            held => held,
        };
        boxed(Claims { held, ..claims.clone() })
    } else if let Some(each) = any.downcast_ref::<Vec<echomq::Result<()>>>() {
        let code = |err: &echomq::Error| err.code().expect("a refusal");
        boxed(each.iter().map(|one| one.as_ref().map(|_| ()).map_err(code)).collect::<Vec<_>>())
    } else if let Some(listed) = any.downcast_ref::<Listed>() {
        boxed(listed.schedules.clone())
    } else {
        output
    })
}

fn a() -> JobId {
    A.parse().unwrap()
}
fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
fn enqueue(priority: i64, due: Due) -> Call {
    Call::Enqueue(Enqueue {
        id: a(),
        payload: b"p".to_vec(),
        priority,
        due,
        policy: None,
        unique: None,
        headers: Default::default(),
        parent: None,
        group: None,
    })
}
fn unique(until_finished: bool) -> Call {
    let unique = Unique { key: "u".into(), hold: secs(60), until_finished };
    Call::Enqueue(Enqueue {
        id: a(),
        payload: b"p".to_vec(),
        priority: 0,
        due: Due::Now,
        policy: None,
        unique: Some(unique),
        headers: Default::default(),
        parent: None,
        group: None,
    })
}
fn defer(token: u64, pause_queue: bool) -> Call {
    Call::Defer(Defer { id: a(), token, delay: secs(5), max_attempts: 3, pause_queue })
}
fn fail(token: u64, max_attempts: u64) -> Call {
    Call::Fail(Fail { id: a(), token, max_attempts, backoff: secs(1), error: "boom".into() })
}

fn acknext(token: u64, result: Option<&[u8]>, count: u64) -> Call {
    let ack = Ack { id: a(), token, result: result.map(<[u8]>::to_vec) };
    Call::AckNext(AckNext { ack, lease: secs(30), count })
}

fn ackmany(acks: &[(&str, u64, Option<&[u8]>)]) -> Call {
    let acks = acks.iter().map(|(id, token, result)| Ack {
        id: id.parse().unwrap(),
        token: *token,
        result: result.map(<[u8]>::to_vec),
    });
    Call::AckMany(AckMany { acks: acks.collect() })
}

fn schedule(next: u64) -> Call {
    Call::Schedule(Schedule { name: "s".into(), definition: b"d1".to_vec(), next })
}
fn fire(tick: u64, skip: bool) -> Call {
    Call::Fire(Fire { id: a(), payload: b"p".to_vec(), name: "s".into(), tick, next: tick + 1000, skip })
}

const ACTIVE_A: &[&str] = &["HSET $q:job:$A state active attempts 1 payload p", "ZADD $q:active 5 $A"];
const ACTIVE_A_AFTER: &[&str] = &["active $A@5", "job:$A attempts=1 payload=p state=active"];

/// One test per case and executor: `mod <case> { lua, native, embedded }`.
macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                use super::{one, Target};

                #[tokio::test]
                async fn lua() {
                    one(super::$case(), Target::Lua).await;
                }

                #[tokio::test]
                async fn native() {
                    one(super::$case(), Target::Native).await;
                }

                #[tokio::test]
                async fn embedded() {
                    one(super::$case(), Target::Embedded(echomq::Embedded::new())).await;
                }
            }
        )*
    };
}

// Every case: each its own test on each executor (`<case>::lua`,
// `<case>::native`, `<case>::embedded`). A case's function not listed here
// is dead code, which the lints refuse.
cases![
    enqueue_writes_the_seeds_record_and_pending_at_score_0,
    enqueuemany_admits_each_new_job_and_finds_the_others_duplicates,
    enqueuemany_of_duplicates_only_changes_nothing_and_wakes_no_one,
    enqueue_with_headers_keeps_them_beside_the_record,
    enqueue_of_an_existing_id_is_a_duplicate_and_changes_nothing,
    enqueue_with_a_priority_scores_pending_by_it_and_remembers_it,
    enqueue_with_a_delay_goes_to_delayed_at_the_servers_now_plus_the_delay,
    enqueue_at_a_time_already_past_is_simply_pending,
    enqueue_with_a_policy_keeps_it_beside_the_record_its_options_in_a_fixed_order,
    enqueue_with_a_unique_key_holds_it_for_its_time,
    enqueue_of_a_held_unique_key_answers_its_holder_and_changes_nothing,
    enqueue_of_a_unique_key_held_until_its_active_job_finishes_answers_that_job,
    a_unique_key_held_until_its_job_finishes_frees_once_that_job_is_done,
    an_ended_hold_frees_its_key_and_ended_holds_are_forgotten,
    claim_hands_a_job_with_a_policy_its_policy_and_one_without_none,
    claim_hands_a_job_with_headers_its_headers_after_its_policy_or_none,
    claim_takes_the_lowest_priority_first_and_mints_token_1,
    claim_of_a_batch_takes_equal_priorities_in_id_order_and_mints_the_next_token,
    claim_of_an_empty_queue_gets_nothing,
    claim_drops_a_pending_id_whose_record_is_missing,
    claim_of_a_paused_queue_gets_nothing_and_says_it_is_paused,
    claim_under_a_concurrency_limit_takes_only_the_room_left,
    claim_under_a_concurrency_limit_that_held_nothing_back_says_nothing_of_it,
    claim_of_an_idle_queue_under_limits_below_count_gets_nothing_and_no_trailer,
    claim_at_the_concurrency_limit_gets_nothing_and_says_so,
    claim_within_the_concurrency_limit_is_not_held,
    claim_under_a_rate_trims_what_left_the_window_and_logs_each_claim,
    claim_that_takes_nothing_under_a_rate_trims_nothing,
    claim_reads_a_stored_01_as_1,
    claim_at_the_rate_limit_gets_nothing_and_says_when_the_next_slot_opens,
    claim_under_a_rate_takes_only_the_slots_left,
    claim_under_a_looser_rate_than_the_concurrency_limit_is_held_by_the_concurrency,
    config_pauses_a_queue,
    config_sets_the_event_logs_length_and_0_turns_it_off,
    config_resumes_a_queue_keeps_its_limit_and_re_adds_the_head_of_pending_at_its_priority,
    config_sets_a_concurrency_limit,
    config_with_a_concurrency_of_0_removes_the_limit,
    config_sets_a_rate,
    config_removes_a_rate_and_its_claim_log_and_keeps_the_rest,
    config_with_no_options_only_reads,
    config_sets_a_retention_with_no_age_bound,
    trim_deletes_done_jobs_past_the_default_age_with_their_side_entries,
    trim_keeps_the_newest_of_a_count_oldest_going_first,
    trim_with_no_bounds_keeps_every_job,
    ack_by_the_holder_moves_the_job_to_done,
    ack_with_a_result_keeps_it_beside_the_record_and_its_event_says_how_big,
    ack_on_a_queue_whose_event_log_is_off_writes_no_event,
    ack_with_another_token_is_fenced,
    ack_of_a_job_that_is_not_active_is_fenced,
    ack_of_a_missing_job,
    acknext_acks_the_job_and_claims_the_next_ones_under_the_lease_and_the_gate,
    acknext_on_an_empty_queue_acks_and_claims_nothing,
    acknext_on_a_paused_queue_acks_and_the_gate_says_why_it_claimed_nothing,
    acknext_with_a_stale_token_acks_nothing_and_claims_nothing,
    ackmany_acks_each_job_whose_token_holds_and_answers_each_on_its_own,
    ackmany_of_two_jobs_acks_both_in_order,
    fail_with_attempts_left_goes_to_delayed_after_the_back_off_keeping_the_error,
    fail_at_the_last_attempt_goes_to_dead,
    fail_with_a_stale_token_is_fenced,
    fail_goes_by_the_jobs_own_attempts_over_the_callers,
    fail_backs_off_by_the_jobs_own_exponential_back_off_doubling_per_attempt,
    fail_refuses_a_policy_that_does_not_read_as_one_and_writes_nothing,
    defer_sends_the_job_to_delayed_gives_its_attempt_back_and_pauses_the_queue,
    defer_raises_the_jobs_own_attempts_keeps_the_rest_of_its_policy_and_leaves_the_queue,
    defer_with_a_stale_token_is_fenced,
    claim_under_a_timed_pause_takes_nothing_and_says_how_long_to_wait,
    claim_after_a_timed_pause_ended_goes_on,
    resume_ends_a_timed_pause_too,
    extend_moves_the_lease_deadline,
    extend_with_a_stale_token_is_fenced,
    release_gives_the_job_back_at_its_priority_attempts_kept_and_the_attempt_refunded,
    release_grows_the_jobs_own_attempts_keeping_the_rest_of_its_policy,
    release_with_a_stale_token_is_fenced,
    reap_sends_an_expired_lease_back_to_pending_and_leaves_a_live_one,
    reap_sends_an_expired_lease_out_of_attempts_to_dead,
    reap_goes_by_each_jobs_own_attempts_over_the_reapers,
    promote_moves_due_jobs_to_pending_at_their_priority_and_leaves_the_rest,
    purge_deletes_old_finished_jobs_with_their_priority_and_error,
    drain_deletes_pending_jobs_head_first_with_their_side_entries,
    drain_of_active_jobs_deletes_them_fencing_their_holders,
    obliterate_of_an_empty_queue_deletes_every_key_it_owns,
    obliterate_of_a_queue_that_holds_a_job_is_refused,
    progress_by_the_holder_is_kept_beside_the_record_which_is_untouched,
    progress_with_a_stale_token_is_fenced,
    progress_of_a_done_job_is_fenced,
    progress_of_a_missing_job,
    schedule_adds_a_schedule_and_its_next_tick,
    schedule_of_a_name_taken_replaces_it,
    unschedule_removes_the_schedule,
    unschedule_of_no_such_schedule,
    schedules_lists_by_next_tick_skipping_a_name_with_no_definition,
    schedules_due_lists_only_those_whose_next_tick_has_come,
    fire_enqueues_the_ticks_job_and_moves_the_schedule_on,
    fire_of_a_tick_fired_by_another_changes_nothing,
    fire_of_a_removed_schedule_changes_nothing,
    fire_of_a_tick_whose_job_exists_moves_on_without_a_second_job,
    fire_with_skip_moves_on_without_a_job,
    cancel_of_a_pending_job,
    cancel_of_an_active_job_ends_its_lease,
    cancel_of_a_cancelled_job_changes_nothing,
    cancel_of_a_done_job_is_refused,
    retry_sends_a_dead_job_to_pending_at_its_priority,
    retry_of_a_job_that_is_not_dead_is_refused,
    retry_of_a_missing_job,
    batch_opens_a_batch_over_its_jobs_with_its_callback,
    batch_of_an_open_batch_changes_nothing,
    settle_follows_a_batch_as_far_as_its_jobs_finished,
    settle_calls_a_batch_back_once_its_jobs_all_finished_its_counts_in_the_callbacks_headers,
    inspect_reads_the_record_and_the_last_error,
    inspect_reads_a_jobs_result_and_its_own_policy,
    inspect_reads_the_last_progress_beside_the_record,
    inspect_reads_a_jobs_group,
    inspect_of_a_missing_job,
    stats_counts_each_states_set,
];

// ENQUEUE
fn enqueue_writes_the_seeds_record_and_pending_at_score_0() -> Case {
    Case {
        name: "enqueue writes the seed's record and pending at score 0",
        given: &[],
        call: enqueue(0, Due::Now),
        reply: ok(Admission::Enqueued),
        after: &[
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
            "wake 1@0",
        ],
    }
}

fn enqueuemany_admits_each_new_job_and_finds_the_others_duplicates() -> Case {
    Case {
        name: "enqueuemany admits each new job and finds the others duplicates",
        given: &["HSET $q:job:$B state done attempts 1 payload old", "ZADD $q:done 5 $B"],
        call: Call::EnqueueMany(EnqueueMany {
            jobs: vec![(a(), b"p".to_vec()), (B.parse().unwrap(), b"q".to_vec()), (a(), b"again".to_vec())],
            parent: None,
            group: None,
        }),
        reply: ok(vec![Admission::Enqueued, Admission::Duplicate, Admission::Duplicate]),
        after: &[
            "done $B@5",
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "job:$B attempts=1 payload=old state=done",
            "pending $A@0",
            "wake 1@0",
        ],
    }
}

fn enqueuemany_of_duplicates_only_changes_nothing_and_wakes_no_one() -> Case {
    Case {
        name: "enqueuemany of duplicates only changes nothing and wakes no one",
        given: &["HSET $q:job:$A state done attempts 1 payload old", "ZADD $q:done 5 $A"],
        call: Call::EnqueueMany(EnqueueMany { jobs: vec![(a(), b"p".to_vec())], parent: None, group: None }),
        reply: ok(vec![Admission::Duplicate]),
        after: &["done $A@5", "job:$A attempts=1 payload=old state=done"],
    }
}

fn enqueue_with_headers_keeps_them_beside_the_record() -> Case {
    Case {
        name: "enqueue with headers keeps them beside the record",
        given: &[],
        call: Call::Enqueue(Enqueue {
            id: a(),
            payload: b"p".to_vec(),
            priority: 0,
            due: Due::Now,
            policy: None,
            unique: None,
            headers: [("tenant".to_owned(), "acme".to_owned())].into(),
            parent: None,
            group: None,
        }),
        reply: ok(Admission::Enqueued),
        after: &[
            "events enqueued=$A,state:pending",
            r#"headers $A={"tenant":"acme"}"#,
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
            "wake 1@0",
        ],
    }
}

fn enqueue_of_an_existing_id_is_a_duplicate_and_changes_nothing() -> Case {
    Case {
        name: "enqueue of an existing id is a duplicate and changes nothing",
        given: &["HSET $q:job:$A state done attempts 1 payload old", "ZADD $q:done 5 $A"],
        call: enqueue(0, Due::Now),
        reply: ok(Admission::Duplicate),
        after: &["done $A@5", "job:$A attempts=1 payload=old state=done"],
    }
}

fn enqueue_with_a_priority_scores_pending_by_it_and_remembers_it() -> Case {
    Case {
        name: "enqueue with a priority scores pending by it and remembers it",
        given: &[],
        call: enqueue(-7, Due::Now),
        reply: ok(Admission::Enqueued),
        after: &[
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@-7",
            "priority $A=-7",
            "wake 1@0",
        ],
    }
}

fn enqueue_with_a_delay_goes_to_delayed_at_the_servers_now_plus_the_delay() -> Case {
    Case {
        name: "enqueue with a delay goes to delayed at the server's now plus the delay",
        given: &[],
        call: enqueue(0, Due::After(secs(60))),
        reply: ok(Admission::Enqueued),
        after: &[
            "delayed $A@now+60000",
            "events enqueued=$A,state:delayed",
            "job:$A attempts=0 payload=p state=delayed",
        ],
    }
}

fn enqueue_at_a_time_already_past_is_simply_pending() -> Case {
    Case {
        name: "enqueue at a time already past is simply pending",
        given: &[],
        call: enqueue(0, Due::At(SystemTime::UNIX_EPOCH + secs(1))),
        reply: ok(Admission::Enqueued),
        after: &[
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
            "wake 1@0",
        ],
    }
}

fn enqueue_with_a_policy_keeps_it_beside_the_record_its_options_in_a_fixed_order() -> Case {
    Case {
        name: "enqueue with a policy keeps it beside the record, its options in a fixed order",
        given: &[],
        call: Call::Enqueue(Enqueue {
            id: a(),
            payload: b"p".to_vec(),
            priority: 0,
            due: Due::Now,
            policy: Some(Policy {
                attempts: Some(2),
                backoff: Some(Backoff::Exponential(1000)),
                timeout: Some(5000),
            }),
            unique: None,
            headers: Default::default(),
            parent: None,
            group: None,
        }),
        reply: ok(Admission::Enqueued),
        after: &[
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
            "policy $A=ATTEMPTS~2~BACKOFF_EXP~1000~TIMEOUT~5000",
            "wake 1@0",
        ],
    }
}

fn enqueue_with_a_unique_key_holds_it_for_its_time() -> Case {
    Case {
        name: "enqueue with a unique key holds it for its time",
        given: &[],
        call: unique(false),
        reply: ok(Admission::Enqueued),
        after: &[
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
            "unique u=0:$A",
            "unique_until u@now+60000",
            "wake 1@0",
        ],
    }
}

fn enqueue_of_a_held_unique_key_answers_its_holder_and_changes_nothing() -> Case {
    Case {
        name: "enqueue of a held unique key answers its holder and changes nothing",
        given: &[
            "HSET $q:job:$B state done attempts 1 payload b",
            "ZADD $q:done 5 $B",
            "HSET $q:unique u 0:$B",
            "ZADD $q:unique_until 9999999999999 u",
        ],
        call: unique(true),
        reply: ok(Admission::HeldBy(B.parse().unwrap())),
        after: &[
            "done $B@5",
            "job:$B attempts=1 payload=b state=done",
            "unique u=0:$B",
            "unique_until u@9999999999999",
        ],
    }
}

fn enqueue_of_a_unique_key_held_until_its_active_job_finishes_answers_that_job() -> Case {
    Case {
        name: "enqueue of a unique key held until its active job finishes answers that job",
        given: &[
            "HSET $q:job:$B state active attempts 1 payload b",
            "ZADD $q:active 5 $B",
            "HSET $q:unique u 1:$B",
            "ZADD $q:unique_until 9999999999999 u",
        ],
        call: unique(false),
        reply: ok(Admission::HeldBy(B.parse().unwrap())),
        after: &[
            "active $B@5",
            "job:$B attempts=1 payload=b state=active",
            "unique u=1:$B",
            "unique_until u@9999999999999",
        ],
    }
}

fn a_unique_key_held_until_its_job_finishes_frees_once_that_job_is_done() -> Case {
    Case {
        name: "a unique key held until its job finishes frees once that job is done",
        given: &[
            "HSET $q:job:$B state done attempts 1 payload b",
            "ZADD $q:done 5 $B",
            "HSET $q:unique u 1:$B",
            "ZADD $q:unique_until 9999999999999 u",
        ],
        call: unique(true),
        reply: ok(Admission::Enqueued),
        after: &[
            "done $B@5",
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "job:$B attempts=1 payload=b state=done",
            "pending $A@0",
            "unique u=1:$A",
            "unique_until u@now+60000",
            "wake 1@0",
        ],
    }
}

fn an_ended_hold_frees_its_key_and_ended_holds_are_forgotten() -> Case {
    Case {
        name: "an ended hold frees its key, and ended holds are forgotten",
        given: &["HSET $q:unique u 0:$B v 0:$B w 0:$B", "ZADD $q:unique_until 5 u 6 v 9999999999999 w"],
        call: unique(false),
        reply: ok(Admission::Enqueued),
        after: &[
            "events enqueued=$A,state:pending",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
            "unique u=0:$A w=0:$B",
            "unique_until u@now+60000 w@9999999999999",
            "wake 1@0",
        ],
    }
}

// CLAIM
fn claim_hands_a_job_with_a_policy_its_policy_and_one_without_none() -> Case {
    Case {
        name: "claim hands a job with a policy its policy, and one without none",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A 0 $B",
            "HSET $q:policy $A ATTEMPTS~2~TIMEOUT~5000",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 2 }),
        reply: claims(
            vec![
                Claimed {
                    policy: Some(Policy { attempts: Some(2), backoff: None, timeout: Some(5000) }),
                    ..claimed(A, 1, b"a")
                },
                claimed(B, 1, b"b"),
            ],
            None,
        ),
        after: &[
            "active $A@now+30000 $B@now+30000",
            "events active=$A,attempt:1 active=$B,attempt:1",
            "job:$A attempts=1 payload=a state=active",
            "job:$B attempts=1 payload=b state=active",
            "policy $A=ATTEMPTS~2~TIMEOUT~5000",
        ],
    }
}

fn claim_hands_a_job_with_headers_its_headers_after_its_policy_or_none() -> Case {
    Case {
        name: "claim hands a job with headers its headers, after its policy or none",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "ZADD $q:pending 0 $A",
            r#"HSET $q:headers $A {"tenant":"acme"}"#,
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(
            vec![Claimed {
                headers: [("tenant".to_owned(), "acme".to_owned())].into(),
                ..claimed(A, 1, b"a")
            }],
            None,
        ),
        after: &[
            "active $A@now+30000",
            "events active=$A,attempt:1",
            r#"headers $A={"tenant":"acme"}"#,
            "job:$A attempts=1 payload=a state=active",
        ],
    }
}

fn claim_takes_the_lowest_priority_first_and_mints_token_1() -> Case {
    Case {
        name: "claim takes the lowest priority first and mints token 1",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A -1 $B",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![claimed(B, 1, b"b")], None),
        after: &[
            "active $B@now+30000",
            "events active=$B,attempt:1",
            "job:$A attempts=0 payload=a state=pending",
            "job:$B attempts=1 payload=b state=active",
            "pending $A@0",
            "wake 1@0",
        ],
    }
}

fn claim_of_a_batch_takes_equal_priorities_in_id_order_and_mints_the_next_token() -> Case {
    Case {
        name: "claim of a batch takes equal priorities in id order and mints the next token",
        given: &[
            "HSET $q:job:$A state pending attempts 2 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $B 0 $A",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 5 }),
        reply: claims(vec![claimed(A, 3, b"a"), claimed(B, 1, b"b")], None),
        after: &[
            "active $A@now+30000 $B@now+30000",
            "events active=$A,attempt:3 active=$B,attempt:1",
            "job:$A attempts=3 payload=a state=active",
            "job:$B attempts=1 payload=b state=active",
        ],
    }
}

fn claim_of_an_empty_queue_gets_nothing() -> Case {
    Case {
        name: "claim of an empty queue gets nothing",
        given: &[],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![], None),
        after: &[],
    }
}

fn claim_drops_a_pending_id_whose_record_is_missing() -> Case {
    Case {
        name: "claim drops a pending id whose record is missing",
        given: &["ZADD $q:pending 0 $A"],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![], None),
        after: &[],
    }
}

fn claim_of_a_paused_queue_gets_nothing_and_says_it_is_paused() -> Case {
    Case {
        name: "claim of a paused queue gets nothing and says it is paused",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload p",
            "ZADD $q:pending 0 $A",
            "HSET $q:config paused 1",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![], Some(Held::Paused)),
        after: &["config paused=1", "job:$A attempts=0 payload=p state=pending", "pending $A@0"],
    }
}

fn claim_under_a_concurrency_limit_takes_only_the_room_left() -> Case {
    Case {
        name: "claim under a concurrency limit takes only the room left",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A 0 $B",
            "HSET $q:config concurrency 1",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 5 }),
        reply: claims(vec![claimed(A, 1, b"a")], Some(Held::Busy)),
        after: &[
            "active $A@now+30000",
            "config concurrency=1",
            "events active=$A,attempt:1",
            "job:$A attempts=1 payload=a state=active",
            "job:$B attempts=0 payload=b state=pending",
            "pending $B@0",
        ],
    }
}

fn claim_under_a_concurrency_limit_that_held_nothing_back_says_nothing_of_it() -> Case {
    Case {
        name: "claim under a concurrency limit that held nothing back says nothing of it",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state active attempts 1 payload b",
            "ZADD $q:pending 0 $A",
            "ZADD $q:active 5 $B",
            "HSET $q:config concurrency 3",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 5 }),
        reply: claims(vec![claimed(A, 1, b"a")], None),
        after: &[
            "active $B@5 $A@now+30000",
            "config concurrency=3",
            "events active=$A,attempt:1",
            "job:$A attempts=1 payload=a state=active",
            "job:$B attempts=1 payload=b state=active",
        ],
    }
}

fn claim_of_an_idle_queue_under_limits_below_count_gets_nothing_and_no_trailer() -> Case {
    Case {
        name: "claim of an idle queue under limits below COUNT gets nothing and no trailer",
        given: &["HSET $q:config concurrency 2 rate 5 per 1000"],
        call: Call::Claim(Claim { lease: secs(30), count: 20 }),
        reply: claims(vec![], None),
        after: &["config concurrency=2 per=1000 rate=5"],
    }
}

fn claim_at_the_concurrency_limit_gets_nothing_and_says_so() -> Case {
    Case {
        name: "claim at the concurrency limit gets nothing and says so",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state active attempts 1 payload b",
            "ZADD $q:pending 0 $A",
            "ZADD $q:active 5 $B",
            "HSET $q:config concurrency 1",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![], Some(Held::Busy)),
        after: &[
            "active $B@5",
            "config concurrency=1",
            "job:$A attempts=0 payload=a state=pending",
            "job:$B attempts=1 payload=b state=active",
            "pending $A@0",
        ],
    }
}

fn claim_within_the_concurrency_limit_is_not_held() -> Case {
    Case {
        name: "claim within the concurrency limit is not held",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "ZADD $q:pending 0 $A",
            "HSET $q:config concurrency 3",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![claimed(A, 1, b"a")], None),
        after: &[
            "active $A@now+30000",
            "config concurrency=3",
            "events active=$A,attempt:1",
            "job:$A attempts=1 payload=a state=active",
        ],
    }
}

fn claim_under_a_rate_trims_what_left_the_window_and_logs_each_claim() -> Case {
    Case {
        name: "claim under a rate trims what left the window and logs each claim",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A 0 $B",
            "HSET $q:config rate 5 per 1000",
            "ZADD $q:rate 5 $B:9",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 5 }),
        reply: claims(vec![claimed(A, 1, b"a"), claimed(B, 1, b"b")], None),
        after: &[
            "active $A@now+30000 $B@now+30000",
            "config per=1000 rate=5",
            "events active=$A,attempt:1 active=$B,attempt:1",
            "job:$A attempts=1 payload=a state=active",
            "job:$B attempts=1 payload=b state=active",
            "rate $A:1@now $B:1@now",
        ],
    }
}

fn claim_that_takes_nothing_under_a_rate_trims_nothing() -> Case {
    Case {
        name: "claim that takes nothing under a rate trims nothing",
        given: &["HSET $q:config rate 1 per 1000", "ZADD $q:rate 1 $B:7"],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![], None),
        after: &["config per=1000 rate=1", "rate $B:7@1"],
    }
}

fn claim_reads_a_stored_01_as_1() -> Case {
    Case {
        name: "claim reads a stored 01 as 1",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A 0 $B",
            "HSET $q:config concurrency 01",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 2 }),
        reply: claims(vec![claimed(A, 1, b"a")], Some(Held::Busy)),
        after: &[
            "active $A@now+30000",
            "config concurrency=01",
            "events active=$A,attempt:1",
            "job:$A attempts=1 payload=a state=active",
            "job:$B attempts=0 payload=b state=pending",
            "pending $B@0",
        ],
    }
}

fn claim_at_the_rate_limit_gets_nothing_and_says_when_the_next_slot_opens() -> Case {
    Case {
        name: "claim at the rate limit gets nothing and says when the next slot opens",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "ZADD $q:pending 0 $A",
            "HSET $q:config rate 1 per 86400000",
            "ZADD $q:rate 9999999999999 $B:7",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![], Some(ANY_WAIT)),
        after: &[
            "config per=86400000 rate=1",
            "job:$A attempts=0 payload=a state=pending",
            "pending $A@0",
            "rate $B:7@9999999999999",
        ],
    }
}

fn claim_under_a_rate_takes_only_the_slots_left() -> Case {
    Case {
        name: "claim under a rate takes only the slots left",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A 0 $B",
            "HSET $q:config rate 2 per 86400000",
            "ZADD $q:rate 9999999999999 $B:7",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 2 }),
        reply: claims(vec![claimed(A, 1, b"a")], Some(ANY_WAIT)),
        after: &[
            "active $A@now+30000",
            "config per=86400000 rate=2",
            "events active=$A,attempt:1",
            "job:$A attempts=1 payload=a state=active",
            "job:$B attempts=0 payload=b state=pending",
            "pending $B@0",
            "rate $A:1@now $B:7@9999999999999",
        ],
    }
}

fn claim_under_a_looser_rate_than_the_concurrency_limit_is_held_by_the_concurrency() -> Case {
    Case {
        name: "claim under a looser rate than the concurrency limit is held by the concurrency",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A 0 $B",
            "HSET $q:config rate 5 per 1000 concurrency 1",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 2 }),
        reply: claims(vec![claimed(A, 1, b"a")], Some(Held::Busy)),
        after: &[
            "active $A@now+30000",
            "config concurrency=1 per=1000 rate=5",
            "events active=$A,attempt:1",
            "job:$A attempts=1 payload=a state=active",
            "job:$B attempts=0 payload=b state=pending",
            "pending $B@0",
            "rate $A:1@now",
        ],
    }
}

// CONFIG
fn config_pauses_a_queue() -> Case {
    Case {
        name: "config pauses a queue",
        given: PENDING_A,
        call: Call::Config(Config::default().paused(true)),
        reply: ok(settings(true, None, None)),
        after: &[
            "config paused=1",
            "events paused=",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
        ],
    }
}

fn config_sets_the_event_logs_length_and_0_turns_it_off() -> Case {
    Case {
        name: "config sets the event log's length, and 0 turns it off",
        given: &[],
        call: Call::Config(Config::default().events(echomq::EventLog::Off)),
        reply: ok(Settings { events: echomq::EventLog::Off, ..settings(false, None, None) }),
        after: &["config events=0"],
    }
}

fn config_resumes_a_queue_keeps_its_limit_and_re_adds_the_head_of_pending_at_its_priority() -> Case {
    Case {
        name: "config resumes a queue, keeps its limit, and re-adds the head of pending at its priority",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload p",
            "ZADD $q:pending -3 $A",
            "HSET $q:priority $A -3",
            "HSET $q:config paused 1 concurrency 3",
        ],
        call: Call::Config(Config::default().paused(false)),
        reply: ok(settings(false, Some(3), None)),
        after: &[
            "config concurrency=3",
            "events resumed=",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@-3",
            "priority $A=-3",
            "wake 1@0",
        ],
    }
}

fn config_sets_a_concurrency_limit() -> Case {
    Case {
        name: "config sets a concurrency limit",
        given: &[],
        call: Call::Config(Config::default().concurrency(echomq::Limit::To(10))),
        reply: ok(settings(false, Some(10), None)),
        after: &["config concurrency=10"],
    }
}

fn config_with_a_concurrency_of_0_removes_the_limit() -> Case {
    Case {
        name: "config with a concurrency of 0 removes the limit",
        given: &["HSET $q:config concurrency 4"],
        call: Call::Config(Config::default().concurrency(echomq::Limit::Unlimited)),
        reply: ok(settings(false, None, None)),
        after: &[],
    }
}

fn config_sets_a_rate() -> Case {
    Case {
        name: "config sets a rate",
        given: &[],
        call: Call::Config(
            Config::default().rate(echomq::Limit::To(echomq::Rate { claims: 5, per: secs(1) })),
        ),
        reply: ok(settings(false, None, Some((5, secs(1))))),
        after: &["config per=1000 rate=5"],
    }
}

fn config_removes_a_rate_and_its_claim_log_and_keeps_the_rest() -> Case {
    Case {
        name: "config removes a rate and its claim log, and keeps the rest",
        given: &["HSET $q:config rate 5 per 1000 concurrency 2", "ZADD $q:rate 5 $A:1"],
        call: Call::Config(Config::default().rate(echomq::Limit::Unlimited)),
        reply: ok(settings(false, Some(2), None)),
        after: &["config concurrency=2"],
    }
}

fn config_with_no_options_only_reads() -> Case {
    Case {
        name: "config with no options only reads",
        given: &["HSET $q:config paused 1 concurrency 4"],
        call: Call::Config(Config::default()),
        reply: ok(settings(true, Some(4), None)),
        after: &["config concurrency=4 paused=1"],
    }
}

fn config_sets_a_retention_with_no_age_bound() -> Case {
    Case {
        name: "config sets a retention, with no age bound",
        given: &[],
        call: Call::Config(Config::default().keep_dead(Retention { age: None, count: Some(50) })),
        reply: ok(Settings {
            keep_dead: Retention { age: None, count: Some(50) },
            ..settings(false, None, None)
        }),
        after: &["config dead_age=0 dead_count=50"],
    }
}

// TRIM
fn trim_deletes_done_jobs_past_the_default_age_with_their_side_entries() -> Case {
    Case {
        name: "trim deletes done jobs past the default age, with their side entries",
        given: &[
            "HSET $q:job:$A state done attempts 1 payload a",
            "HSET $q:job:$B state done attempts 1 payload b",
            "ZADD $q:done 5 $A 9999999999999 $B",
            "HSET $q:errors $A boom",
            "HSET $q:progress $A 9",
        ],
        call: Call::Trim(Trim { state: State::Done, limit: 1000 }),
        reply: ok(1u64),
        after: &["done $B@9999999999999", "job:$B attempts=1 payload=b state=done"],
    }
}

fn trim_keeps_the_newest_of_a_count_oldest_going_first() -> Case {
    Case {
        name: "trim keeps the newest of a count, oldest going first",
        given: &[
            "HSET $q:job:$A state dead attempts 1 payload a",
            "HSET $q:job:$B state dead attempts 1 payload b",
            "ZADD $q:dead 9999999999998 $A 9999999999999 $B",
            "HSET $q:config dead_count 1",
        ],
        call: Call::Trim(Trim { state: State::Dead, limit: 1000 }),
        reply: ok(1u64),
        after: &["config dead_count=1", "dead $B@9999999999999", "job:$B attempts=1 payload=b state=dead"],
    }
}

fn trim_with_no_bounds_keeps_every_job() -> Case {
    Case {
        name: "trim with no bounds keeps every job",
        given: &[
            "HSET $q:job:$A state cancelled attempts 0 payload a",
            "ZADD $q:cancelled 5 $A",
            "HSET $q:config cancelled_age 0 cancelled_count 0",
        ],
        call: Call::Trim(Trim { state: State::Cancelled, limit: 1000 }),
        reply: ok(0u64),
        after: &[
            "cancelled $A@5",
            "config cancelled_age=0 cancelled_count=0",
            "job:$A attempts=0 payload=a state=cancelled",
        ],
    }
}

// ACK
fn ack_by_the_holder_moves_the_job_to_done() -> Case {
    Case {
        name: "ack by the holder moves the job to done",
        given: ACTIVE_A,
        call: Call::Ack(Ack { id: a(), token: 1, result: None }),
        reply: ok(()),
        after: &["done $A@now", "events completed=$A", "job:$A attempts=1 payload=p state=done"],
    }
}

fn ack_with_a_result_keeps_it_beside_the_record_and_its_event_says_how_big() -> Case {
    Case {
        name: "ack with a result keeps it beside the record, and its event says how big",
        given: ACTIVE_A,
        call: Call::Ack(Ack { id: a(), token: 1, result: Some(b"42".to_vec()) }),
        reply: ok(()),
        after: &[
            "done $A@now",
            "events completed=$A,result_bytes:2",
            "job:$A attempts=1 payload=p state=done",
            "results $A=42",
        ],
    }
}

fn ack_on_a_queue_whose_event_log_is_off_writes_no_event() -> Case {
    Case {
        name: "ack on a queue whose event log is off writes no event",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:config events 0",
        ],
        call: Call::Ack(Ack { id: a(), token: 1, result: None }),
        reply: ok(()),
        after: &["config events=0", "done $A@now", "job:$A attempts=1 payload=p state=done"],
    }
}

fn ack_with_another_token_is_fenced() -> Case {
    Case {
        name: "ack with another token is fenced",
        given: ACTIVE_A,
        call: Call::Ack(Ack { id: a(), token: 2, result: None }),
        reply: refused(Code::Fence),
        after: ACTIVE_A_AFTER,
    }
}

fn ack_of_a_job_that_is_not_active_is_fenced() -> Case {
    Case {
        name: "ack of a job that is not active is fenced",
        given: &["HSET $q:job:$A state pending attempts 1 payload p", "ZADD $q:pending 0 $A"],
        call: Call::Ack(Ack { id: a(), token: 1, result: None }),
        reply: refused(Code::Fence),
        after: &["job:$A attempts=1 payload=p state=pending", "pending $A@0"],
    }
}

fn ack_of_a_missing_job() -> Case {
    Case {
        name: "ack of a missing job",
        given: &[],
        call: Call::Ack(Ack { id: a(), token: 1, result: None }),
        reply: refused(Code::NoJob),
        after: &[],
    }
}

// ACKNEXT
fn acknext_acks_the_job_and_claims_the_next_ones_under_the_lease_and_the_gate() -> Case {
    Case {
        name: "acknext acks the job and claims the next ones, under the lease and the gate",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload a",
            "ZADD $q:active 5 $A",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $B",
        ],
        call: acknext(1, Some(b"42"), 5),
        reply: claims(vec![claimed(B, 1, b"b")], None),
        after: &[
            "active $B@now+30000",
            "done $A@now",
            "events completed=$A,result_bytes:2 active=$B,attempt:1",
            "job:$A attempts=1 payload=a state=done",
            "job:$B attempts=1 payload=b state=active",
            "results $A=42",
        ],
    }
}

fn acknext_on_an_empty_queue_acks_and_claims_nothing() -> Case {
    Case {
        name: "acknext on an empty queue acks and claims nothing",
        given: ACTIVE_A,
        call: acknext(1, None, 1),
        reply: claims(vec![], None),
        after: &["done $A@now", "events completed=$A", "job:$A attempts=1 payload=p state=done"],
    }
}

fn acknext_on_a_paused_queue_acks_and_the_gate_says_why_it_claimed_nothing() -> Case {
    Case {
        name: "acknext on a paused queue acks, and the gate says why it claimed nothing",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload a",
            "ZADD $q:active 5 $A",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $B",
            "HSET $q:config paused 1",
        ],
        call: acknext(1, None, 1),
        reply: claims(vec![], Some(Held::Paused)),
        after: &[
            "config paused=1",
            "done $A@now",
            "events completed=$A",
            "job:$A attempts=1 payload=a state=done",
            "job:$B attempts=0 payload=b state=pending",
            "pending $B@0",
        ],
    }
}

fn acknext_with_a_stale_token_acks_nothing_and_claims_nothing() -> Case {
    Case {
        name: "acknext with a stale token acks nothing and claims nothing",
        given: &[
            "HSET $q:job:$A state active attempts 2 payload a",
            "ZADD $q:active 5 $A",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $B",
        ],
        call: acknext(1, None, 1),
        reply: refused(Code::Fence),
        after: &[
            "active $A@5",
            "job:$A attempts=2 payload=a state=active",
            "job:$B attempts=0 payload=b state=pending",
            "pending $B@0",
        ],
    }
}

// ACKMANY
fn ackmany_acks_each_job_whose_token_holds_and_answers_each_on_its_own() -> Case {
    Case {
        name: "ackmany acks each job whose token holds, and answers each on its own",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload a",
            "ZADD $q:active 5 $A",
            "HSET $q:job:$B state active attempts 2 payload b",
            "ZADD $q:active 6 $B",
        ],
        call: ackmany(&[(A, 1, Some(b"42")), (B, 1, None), ("JOB_3", 1, None), (A, 1, None)]),
        reply: ok(vec![Ok(()), Err(Code::Fence), Err(Code::NoJob), Err(Code::Fence)]),
        after: &[
            "active $B@6",
            "done $A@now",
            "events completed=$A,result_bytes:2",
            "job:$A attempts=1 payload=a state=done",
            "job:$B attempts=2 payload=b state=active",
            "results $A=42",
        ],
    }
}

fn ackmany_of_two_jobs_acks_both_in_order() -> Case {
    Case {
        name: "ackmany of two jobs acks both, in order",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload a",
            "ZADD $q:active 5 $A",
            "HSET $q:job:$B state active attempts 3 payload b",
            "ZADD $q:active 6 $B",
        ],
        call: ackmany(&[(B, 3, None), (A, 1, Some(b""))]),
        reply: ok(vec![Ok::<(), Code>(()), Ok(())]),
        after: &[
            "done $A@now $B@now",
            "events completed=$B completed=$A,result_bytes:0",
            "job:$A attempts=1 payload=a state=done",
            "job:$B attempts=3 payload=b state=done",
            "results $A=",
        ],
    }
}

// FAIL
fn fail_with_attempts_left_goes_to_delayed_after_the_back_off_keeping_the_error() -> Case {
    Case {
        name: "fail with attempts left goes to delayed after the back-off, keeping the error",
        given: ACTIVE_A,
        call: fail(1, 3),
        reply: ok(Failed::Delayed),
        after: &[
            "delayed $A@now+1000",
            "errors $A=boom",
            "events failed=$A,attempt:1,error:boom",
            "job:$A attempts=1 payload=p state=delayed",
        ],
    }
}

fn fail_at_the_last_attempt_goes_to_dead() -> Case {
    Case {
        name: "fail at the last attempt goes to dead",
        given: &["HSET $q:job:$A state active attempts 3 payload p", "ZADD $q:active 5 $A"],
        call: fail(3, 3),
        reply: ok(Failed::Dead),
        after: &[
            "dead $A@now",
            "errors $A=boom",
            "events dead=$A,attempt:3,error:boom",
            "job:$A attempts=3 payload=p state=dead",
        ],
    }
}

fn fail_with_a_stale_token_is_fenced() -> Case {
    Case {
        name: "fail with a stale token is fenced",
        given: ACTIVE_A,
        call: fail(7, 3),
        reply: refused(Code::Fence),
        after: ACTIVE_A_AFTER,
    }
}

fn fail_goes_by_the_jobs_own_attempts_over_the_callers() -> Case {
    Case {
        name: "fail goes by the job's own attempts over the caller's",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:policy $A ATTEMPTS~1",
        ],
        call: fail(1, 3),
        reply: ok(Failed::Dead),
        after: &[
            "dead $A@now",
            "errors $A=boom",
            "events dead=$A,attempt:1,error:boom",
            "job:$A attempts=1 payload=p state=dead",
            "policy $A=ATTEMPTS~1",
        ],
    }
}

fn fail_backs_off_by_the_jobs_own_exponential_back_off_doubling_per_attempt() -> Case {
    Case {
        name: "fail backs off by the job's own exponential back-off, doubling per attempt",
        given: &[
            "HSET $q:job:$A state active attempts 3 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:policy $A BACKOFF_EXP~1000",
        ],
        call: fail(3, 5),
        reply: ok(Failed::Delayed),
        after: &[
            "delayed $A@now+4000",
            "errors $A=boom",
            "events failed=$A,attempt:3,error:boom",
            "job:$A attempts=3 payload=p state=delayed",
            "policy $A=BACKOFF_EXP~1000",
        ],
    }
}

fn fail_refuses_a_policy_that_does_not_read_as_one_and_writes_nothing() -> Case {
    Case {
        name: "fail refuses a policy that does not read as one, and writes nothing",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:policy $A ATTEMPTS~1~COLOUR~red",
        ],
        call: fail(1, 3),
        reply: refused(Code::Data),
        after: &[
            "active $A@5",
            "job:$A attempts=1 payload=p state=active",
            "policy $A=ATTEMPTS~1~COLOUR~red",
        ],
    }
}

// DEFER
fn defer_sends_the_job_to_delayed_gives_its_attempt_back_and_pauses_the_queue() -> Case {
    Case {
        name: "defer sends the job to delayed, gives its attempt back, and pauses the queue",
        given: ACTIVE_A,
        call: defer(1, true),
        reply: ok(()),
        after: &[
            "config paused_until=now+5000",
            "delayed $A@now+5000",
            "events deferred=$A,delay:5000,pause:1",
            "job:$A attempts=1 payload=p state=delayed",
            "policy $A=ATTEMPTS~4",
        ],
    }
}

fn defer_raises_the_jobs_own_attempts_keeps_the_rest_of_its_policy_and_leaves_the_queue() -> Case {
    Case {
        name: "defer raises the job's own attempts, keeps the rest of its policy, and leaves the queue",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:policy $A ATTEMPTS~2~TIMEOUT~900",
        ],
        call: defer(1, false),
        reply: ok(()),
        after: &[
            "delayed $A@now+5000",
            "events deferred=$A,delay:5000,pause:0",
            "job:$A attempts=1 payload=p state=delayed",
            "policy $A=ATTEMPTS~3~TIMEOUT~900",
        ],
    }
}

fn defer_with_a_stale_token_is_fenced() -> Case {
    Case {
        name: "defer with a stale token is fenced",
        given: ACTIVE_A,
        call: defer(2, true),
        reply: refused(Code::Fence),
        after: ACTIVE_A_AFTER,
    }
}

fn claim_under_a_timed_pause_takes_nothing_and_says_how_long_to_wait() -> Case {
    Case {
        name: "claim under a timed pause takes nothing and says how long to wait",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload p",
            "ZADD $q:pending 0 $A",
            "HSET $q:config paused_until 9999999999999",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![], Some(ANY_WAIT)),
        after: &[
            "config paused_until=9999999999999",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
        ],
    }
}

fn claim_after_a_timed_pause_ended_goes_on() -> Case {
    Case {
        name: "claim after a timed pause ended goes on",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload p",
            "ZADD $q:pending 0 $A",
            "HSET $q:config paused_until 5",
        ],
        call: Call::Claim(Claim { lease: secs(30), count: 1 }),
        reply: claims(vec![claimed(A, 1, b"p")], None),
        after: &[
            "active $A@now+30000",
            "config paused_until=5",
            "events active=$A,attempt:1",
            "job:$A attempts=1 payload=p state=active",
        ],
    }
}

fn resume_ends_a_timed_pause_too() -> Case {
    Case {
        name: "resume ends a timed pause too",
        given: &["HSET $q:config paused 1 paused_until 9999999999999 concurrency 2"],
        call: Call::Config(Config::default().paused(false)),
        reply: ok(settings(false, Some(2), None)),
        after: &["config concurrency=2", "events resumed="],
    }
}

// EXTEND
fn extend_moves_the_lease_deadline() -> Case {
    Case {
        name: "extend moves the lease deadline",
        given: ACTIVE_A,
        call: Call::Extend(Extend { id: a(), token: 1, lease: secs(60) }),
        reply: Reply::Deadline,
        after: &["active $A@now+60000", "job:$A attempts=1 payload=p state=active"],
    }
}

fn extend_with_a_stale_token_is_fenced() -> Case {
    Case {
        name: "extend with a stale token is fenced",
        given: ACTIVE_A,
        call: Call::Extend(Extend { id: a(), token: 9, lease: secs(60) }),
        reply: refused(Code::Fence),
        after: ACTIVE_A_AFTER,
    }
}

// RELEASE
fn release_gives_the_job_back_at_its_priority_attempts_kept_and_the_attempt_refunded() -> Case {
    Case {
        name: "release gives the job back at its priority, attempts kept and the attempt refunded",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:priority $A 7",
        ],
        call: Call::Release(Release { id: a(), token: 1, max_attempts: 3 }),
        reply: ok(()),
        after: &[
            "events released=$A",
            "job:$A attempts=1 payload=p state=pending",
            "pending $A@7",
            "policy $A=ATTEMPTS~4",
            "priority $A=7",
            "wake 1@0",
        ],
    }
}

fn release_grows_the_jobs_own_attempts_keeping_the_rest_of_its_policy() -> Case {
    Case {
        name: "release grows the job's own ATTEMPTS, keeping the rest of its policy",
        given: &[
            "HSET $q:job:$A state active attempts 2 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:policy $A ATTEMPTS~2~BACKOFF~5",
        ],
        call: Call::Release(Release { id: a(), token: 2, max_attempts: 9 }),
        reply: ok(()),
        after: &[
            "events released=$A",
            "job:$A attempts=2 payload=p state=pending",
            "pending $A@0",
            "policy $A=ATTEMPTS~3~BACKOFF~5",
            "wake 1@0",
        ],
    }
}

fn release_with_a_stale_token_is_fenced() -> Case {
    Case {
        name: "release with a stale token is fenced",
        given: ACTIVE_A,
        call: Call::Release(Release { id: a(), token: 2, max_attempts: 3 }),
        reply: refused(Code::Fence),
        after: ACTIVE_A_AFTER,
    }
}

// REAP
fn reap_sends_an_expired_lease_back_to_pending_and_leaves_a_live_one() -> Case {
    Case {
        name: "reap sends an expired lease back to pending and leaves a live one",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload a",
            "HSET $q:job:$B state active attempts 1 payload b",
            "ZADD $q:active 5 $A 9999999999999 $B",
        ],
        call: Call::Reap(Reap { max_attempts: 3, limit: 1000 }),
        reply: ok(Reaped { requeued: 1, dead: 0 }),
        after: &[
            "active $B@9999999999999",
            "events failed=$A,attempt:1,error:lease~expired",
            "job:$A attempts=1 payload=a state=pending",
            "job:$B attempts=1 payload=b state=active",
            "pending $A@0",
            "wake 1@0",
        ],
    }
}

fn reap_sends_an_expired_lease_out_of_attempts_to_dead() -> Case {
    Case {
        name: "reap sends an expired lease out of attempts to dead",
        given: &["HSET $q:job:$A state active attempts 3 payload p", "ZADD $q:active 5 $A"],
        call: Call::Reap(Reap { max_attempts: 3, limit: 1000 }),
        reply: ok(Reaped { requeued: 0, dead: 1 }),
        after: &[
            "dead $A@now",
            "errors $A=lease~expired",
            "events dead=$A,attempt:3,error:lease~expired",
            "job:$A attempts=3 payload=p state=dead",
        ],
    }
}

fn reap_goes_by_each_jobs_own_attempts_over_the_reapers() -> Case {
    Case {
        name: "reap goes by each job's own attempts over the reaper's",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload a",
            "HSET $q:job:$B state active attempts 3 payload b",
            "ZADD $q:active 5 $A 5 $B",
            "HSET $q:policy $A ATTEMPTS~1 $B ATTEMPTS~5",
        ],
        call: Call::Reap(Reap { max_attempts: 3, limit: 1000 }),
        reply: ok(Reaped { requeued: 1, dead: 1 }),
        after: &[
            "dead $A@now",
            "errors $A=lease~expired",
            "events dead=$A,attempt:1,error:lease~expired failed=$B,attempt:3,error:lease~expired",
            "job:$A attempts=1 payload=a state=dead",
            "job:$B attempts=3 payload=b state=pending",
            "pending $B@0",
            "policy $A=ATTEMPTS~1 $B=ATTEMPTS~5",
            "wake 1@0",
        ],
    }
}

// PROMOTE
fn promote_moves_due_jobs_to_pending_at_their_priority_and_leaves_the_rest() -> Case {
    Case {
        name: "promote moves due jobs to pending at their priority and leaves the rest",
        given: &[
            "HSET $q:job:$A state delayed attempts 1 payload a",
            "HSET $q:job:$B state delayed attempts 0 payload b",
            "ZADD $q:delayed 5 $A 9999999999999 $B",
            "HSET $q:priority $A 3",
        ],
        call: Call::Promote(Promote { limit: 1000 }),
        reply: ok(1u64),
        after: &[
            "delayed $B@9999999999999",
            "events promoted=$A",
            "job:$A attempts=1 payload=a state=pending",
            "job:$B attempts=0 payload=b state=delayed",
            "pending $A@3",
            "priority $A=3",
            "wake 1@0",
        ],
    }
}

// PURGE
fn purge_deletes_old_finished_jobs_with_their_priority_and_error() -> Case {
    Case {
        name: "purge deletes old finished jobs with their priority and error",
        given: &[
            "HSET $q:job:$A state dead attempts 3 payload a",
            "HSET $q:job:$B state dead attempts 3 payload b",
            "ZADD $q:dead 5 $A 9999999999999 $B",
            "HSET $q:priority $A 3 $B 4",
            "HSET $q:errors $A boom $B bang",
            "HSET $q:progress $A 3 $B 9",
            "HSET $q:policy $A ATTEMPTS~3 $B TIMEOUT~9",
        ],
        call: Call::Purge(Purge { state: State::Dead, age: secs(60), limit: 1000 }),
        reply: ok(1u64),
        after: &[
            "dead $B@9999999999999",
            "errors $B=bang",
            "job:$B attempts=3 payload=b state=dead",
            "policy $B=TIMEOUT~9",
            "priority $B=4",
            "progress $B=9",
        ],
    }
}

// DRAIN
fn drain_deletes_pending_jobs_head_first_with_their_side_entries() -> Case {
    Case {
        name: "drain deletes pending jobs head first, with their side entries",
        given: &[
            "HSET $q:job:$A state pending attempts 0 payload a",
            "HSET $q:job:$B state pending attempts 0 payload b",
            "ZADD $q:pending 0 $A 5 $B",
            "HSET $q:priority $B 5",
            "HSET $q:policy $A ATTEMPTS~1",
        ],
        call: Call::Drain(Drain { state: State::Pending, limit: 1 }),
        reply: ok(1u64),
        after: &["job:$B attempts=0 payload=b state=pending", "pending $B@5", "priority $B=5"],
    }
}

fn drain_of_active_jobs_deletes_them_fencing_their_holders() -> Case {
    Case {
        name: "drain of active jobs deletes them, fencing their holders",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload a",
            "ZADD $q:active 5 $A",
            "HSET $q:errors $A boom",
        ],
        call: Call::Drain(Drain { state: State::Active, limit: 1000 }),
        reply: ok(1u64),
        after: &[],
    }
}

// OBLITERATE
fn obliterate_of_an_empty_queue_deletes_every_key_it_owns() -> Case {
    Case {
        name: "obliterate of an empty queue deletes every key it owns",
        given: &[
            "HSET $q:config paused 1",
            "HSET $q:schedules s d1",
            "ZADD $q:ticks 9 s",
            "HSET $q:unique u 0:$A",
            "ZADD $q:unique_until 9 u",
        ],
        call: Call::Obliterate,
        reply: ok(5u64),
        after: &[],
    }
}

fn obliterate_of_a_queue_that_holds_a_job_is_refused() -> Case {
    Case {
        name: "obliterate of a queue that holds a job is refused",
        given: &[
            "HSET $q:job:$A state done attempts 1 payload a",
            "ZADD $q:done 5 $A",
            "HSET $q:config paused 1",
        ],
        call: Call::Obliterate,
        reply: refused(Code::State),
        after: &["config paused=1", "done $A@5", "job:$A attempts=1 payload=a state=done"],
    }
}

// PROGRESS
fn progress_by_the_holder_is_kept_beside_the_record_which_is_untouched() -> Case {
    Case {
        name: "progress by the holder is kept beside the record, which is untouched",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:progress $A old",
        ],
        call: Call::Progress(Progress { id: a(), token: 1, value: b"half".to_vec() }),
        reply: ok(()),
        after: &[
            "active $A@5",
            "events progress=$A,progress:half",
            "job:$A attempts=1 payload=p state=active",
            "progress $A=half",
        ],
    }
}

fn progress_with_a_stale_token_is_fenced() -> Case {
    Case {
        name: "progress with a stale token is fenced",
        given: ACTIVE_A,
        call: Call::Progress(Progress { id: a(), token: 2, value: b"half".to_vec() }),
        reply: refused(Code::Fence),
        after: ACTIVE_A_AFTER,
    }
}

fn progress_of_a_done_job_is_fenced() -> Case {
    Case {
        name: "progress of a done job is fenced",
        given: &["HSET $q:job:$A state done attempts 1 payload p", "ZADD $q:done 5 $A"],
        call: Call::Progress(Progress { id: a(), token: 1, value: b"half".to_vec() }),
        reply: refused(Code::Fence),
        after: &["done $A@5", "job:$A attempts=1 payload=p state=done"],
    }
}

fn progress_of_a_missing_job() -> Case {
    Case {
        name: "progress of a missing job",
        given: &[],
        call: Call::Progress(Progress { id: a(), token: 1, value: b"half".to_vec() }),
        reply: refused(Code::NoJob),
        after: &[],
    }
}

// SCHEDULE, UNSCHEDULE, SCHEDULES, FIRE
fn schedule_adds_a_schedule_and_its_next_tick() -> Case {
    Case {
        name: "schedule adds a schedule and its next tick",
        given: &[],
        call: schedule(5000),
        reply: ok(true),
        after: &["schedules s=d1", "ticks s@5000"],
    }
}

fn schedule_of_a_name_taken_replaces_it() -> Case {
    Case {
        name: "schedule of a name taken replaces it",
        given: &["HSET $q:schedules s old t other", "ZADD $q:ticks 9 s 7 t"],
        call: schedule(5000),
        reply: ok(false),
        after: &["schedules s=d1 t=other", "ticks t@7 s@5000"],
    }
}

fn unschedule_removes_the_schedule() -> Case {
    Case {
        name: "unschedule removes the schedule",
        given: &["HSET $q:schedules s d1", "ZADD $q:ticks 9 s"],
        call: Call::Unschedule(Unschedule { name: "s".into() }),
        reply: ok(true),
        after: &[],
    }
}

fn unschedule_of_no_such_schedule() -> Case {
    Case {
        name: "unschedule of no such schedule",
        given: &["HSET $q:schedules t d1", "ZADD $q:ticks 9 t"],
        call: Call::Unschedule(Unschedule { name: "s".into() }),
        reply: ok(false),
        after: &["schedules t=d1", "ticks t@9"],
    }
}

fn schedules_lists_by_next_tick_skipping_a_name_with_no_definition() -> Case {
    Case {
        name: "schedules lists by next tick, skipping a name with no definition",
        given: &["HSET $q:schedules a d1 b d2", "ZADD $q:ticks 9999999999999 a 5 b 6 c"],
        call: Call::Schedules(Schedules { due: false, limit: 1000 }),
        reply: ok(vec![stored("b", b"d2", 5), stored("a", b"d1", 9999999999999)]),
        after: &["schedules a=d1 b=d2", "ticks b@5 c@6 a@9999999999999"],
    }
}

fn schedules_due_lists_only_those_whose_next_tick_has_come() -> Case {
    Case {
        name: "schedules due lists only those whose next tick has come",
        given: &["HSET $q:schedules a d1 b d2", "ZADD $q:ticks 9999999999999 a 5 b"],
        call: Call::Schedules(Schedules { due: true, limit: 1 }),
        reply: ok(vec![stored("b", b"d2", 5)]),
        after: &["schedules a=d1 b=d2", "ticks b@5 a@9999999999999"],
    }
}

fn fire_enqueues_the_ticks_job_and_moves_the_schedule_on() -> Case {
    Case {
        name: "fire enqueues the tick's job and moves the schedule on",
        given: &["HSET $q:schedules s d1", "ZADD $q:ticks 5000 s"],
        call: fire(5000, false),
        reply: ok(Fired::Enqueued),
        after: &[
            "events enqueued=$A,state:pending,schedule:s",
            "job:$A attempts=0 payload=p state=pending",
            "pending $A@0",
            "schedules s=d1",
            "ticks s@6000",
            "wake 1@0",
        ],
    }
}

fn fire_of_a_tick_fired_by_another_changes_nothing() -> Case {
    Case {
        name: "fire of a tick fired by another changes nothing",
        given: &["HSET $q:schedules s d1", "ZADD $q:ticks 6000 s"],
        call: fire(5000, false),
        reply: ok(Fired::Stale),
        after: &["schedules s=d1", "ticks s@6000"],
    }
}

fn fire_of_a_removed_schedule_changes_nothing() -> Case {
    Case {
        name: "fire of a removed schedule changes nothing",
        given: &[],
        call: fire(5000, false),
        reply: ok(Fired::Stale),
        after: &[],
    }
}

fn fire_of_a_tick_whose_job_exists_moves_on_without_a_second_job() -> Case {
    Case {
        name: "fire of a tick whose job exists moves on without a second job",
        given: &[
            "HSET $q:job:$A state done attempts 1 payload old",
            "ZADD $q:done 5 $A",
            "ZADD $q:ticks 5000 s",
        ],
        call: fire(5000, false),
        reply: ok(Fired::MovedOn),
        after: &["done $A@5", "job:$A attempts=1 payload=old state=done", "ticks s@6000"],
    }
}

fn fire_with_skip_moves_on_without_a_job() -> Case {
    Case {
        name: "fire with skip moves on without a job",
        given: &["ZADD $q:ticks 5000 s"],
        call: fire(5000, true),
        reply: ok(Fired::MovedOn),
        after: &["ticks s@6000"],
    }
}

// CANCEL
fn cancel_of_a_pending_job() -> Case {
    Case {
        name: "cancel of a pending job",
        given: &["HSET $q:job:$A state pending attempts 0 payload p", "ZADD $q:pending 0 $A"],
        call: Call::Cancel(Cancel { id: a() }),
        reply: ok(true),
        after: &["cancelled $A@now", "events cancelled=$A", "job:$A attempts=0 payload=p state=cancelled"],
    }
}

fn cancel_of_an_active_job_ends_its_lease() -> Case {
    Case {
        name: "cancel of an active job ends its lease",
        given: ACTIVE_A,
        call: Call::Cancel(Cancel { id: a() }),
        reply: ok(true),
        after: &["cancelled $A@now", "events cancelled=$A", "job:$A attempts=1 payload=p state=cancelled"],
    }
}

fn cancel_of_a_cancelled_job_changes_nothing() -> Case {
    Case {
        name: "cancel of a cancelled job changes nothing",
        given: &["HSET $q:job:$A state cancelled attempts 0 payload p", "ZADD $q:cancelled 5 $A"],
        call: Call::Cancel(Cancel { id: a() }),
        reply: ok(false),
        after: &["cancelled $A@5", "job:$A attempts=0 payload=p state=cancelled"],
    }
}

fn cancel_of_a_done_job_is_refused() -> Case {
    Case {
        name: "cancel of a done job is refused",
        given: &["HSET $q:job:$A state done attempts 1 payload p", "ZADD $q:done 5 $A"],
        call: Call::Cancel(Cancel { id: a() }),
        reply: refused(Code::State),
        after: &["done $A@5", "job:$A attempts=1 payload=p state=done"],
    }
}

// RETRY
fn retry_sends_a_dead_job_to_pending_at_its_priority() -> Case {
    Case {
        name: "retry sends a dead job to pending at its priority",
        given: &[
            "HSET $q:job:$A state dead attempts 3 payload p",
            "ZADD $q:dead 5 $A",
            "HSET $q:priority $A 2",
            "HSET $q:errors $A boom",
        ],
        call: Call::Retry(Retry { id: a() }),
        reply: ok(()),
        after: &[
            "errors $A=boom",
            "events retried=$A",
            "job:$A attempts=3 payload=p state=pending",
            "pending $A@2",
            "priority $A=2",
            "wake 1@0",
        ],
    }
}

fn retry_of_a_job_that_is_not_dead_is_refused() -> Case {
    Case {
        name: "retry of a job that is not dead is refused",
        given: &["HSET $q:job:$A state pending attempts 0 payload p", "ZADD $q:pending 0 $A"],
        call: Call::Retry(Retry { id: a() }),
        reply: refused(Code::State),
        after: &["job:$A attempts=0 payload=p state=pending", "pending $A@0"],
    }
}

fn retry_of_a_missing_job() -> Case {
    Case {
        name: "retry of a missing job",
        given: &[],
        call: Call::Retry(Retry { id: a() }),
        reply: refused(Code::NoJob),
        after: &[],
    }
}

// BATCH and SETTLE
fn batch_opens_a_batch_over_its_jobs_with_its_callback() -> Case {
    Case {
        name: "batch opens a batch over its jobs, with its callback",
        given: &[],
        call: Call::Batch(Batch {
            id: "b1".into(),
            callback: JobId::try_from("JOB_CB".as_bytes()).unwrap(),
            payload: b"cb".to_vec(),
            jobs: vec![a(), JobId::try_from(B.as_bytes()).unwrap()],
        }),
        reply: ok(true),
        after: &[
            "batch_jobs b1:0=$A b1:1=$B",
            "batch_open b1@now",
            "batches b1=2~0~0~0~0~0~JOB_CB b1:callback=cb",
        ],
    }
}

fn batch_of_an_open_batch_changes_nothing() -> Case {
    Case {
        name: "batch of an open batch changes nothing",
        given: &["HSET $q:batches b1 1~0~0~0~0~0~JOB_CB b1:callback cb", "ZADD $q:batch_open 5 b1"],
        call: Call::Batch(Batch {
            id: "b1".into(),
            callback: JobId::try_from("JOB_OTHER".as_bytes()).unwrap(),
            payload: b"x".to_vec(),
            jobs: vec![a()],
        }),
        reply: ok(false),
        after: &["batch_open b1@5", "batches b1=1~0~0~0~0~0~JOB_CB b1:callback=cb"],
    }
}

fn settle_follows_a_batch_as_far_as_its_jobs_finished() -> Case {
    Case {
        name: "settle follows a batch as far as its jobs finished",
        given: &[
            "HSET $q:batches b1 2~0~0~0~0~0~JOB_CB b1:callback cb",
            "HSET $q:batch_jobs b1:0 $A b1:1 $B",
            "ZADD $q:batch_open 5 b1",
            "HSET $q:job:$A state done attempts 1 payload a",
            "HSET $q:job:$B state active attempts 1 payload b",
        ],
        call: Call::Settle(Settle { limit: 1000 }),
        reply: ok(Settled { closed: 0, looked: 1 }),
        after: &[
            "batch_jobs b1:0=$A b1:1=$B",
            "batch_open b1@5",
            "batches b1=2~1~1~0~0~0~JOB_CB b1:callback=cb",
            "job:$A attempts=1 payload=a state=done",
            "job:$B attempts=1 payload=b state=active",
        ],
    }
}

fn settle_calls_a_batch_back_once_its_jobs_all_finished_its_counts_in_the_callbacks_headers() -> Case {
    Case {
        name: "settle calls a batch back once its jobs all finished, its counts in the callback's headers",
        given: &[
            "HSET $q:batches b1 3~1~1~0~0~0~JOB_CB b1:callback cb",
            "HSET $q:batch_jobs b1:0 $A b1:1 $B b1:2 JOB_GONE",
            "ZADD $q:batch_open 5 b1",
            "HSET $q:job:$A state done attempts 1 payload a",
            "HSET $q:job:$B state dead attempts 3 payload b",
        ],
        call: Call::Settle(Settle { limit: 1000 }),
        reply: ok(Settled { closed: 1, looked: 2 }),
        after: &[
            "events enqueued=JOB_CB,state:pending,batch:b1",
            r#"headers JOB_CB={"batch":"b1","total":"3","done":"1","dead":"1","cancelled":"0","gone":"1"}"#,
            "job:$A attempts=1 payload=a state=done",
            "job:$B attempts=3 payload=b state=dead",
            "job:JOB_CB attempts=0 payload=cb state=pending",
            "pending JOB_CB@0",
            "wake 1@0",
        ],
    }
}

// INSPECT and STATS
fn inspect_reads_the_record_and_the_last_error() -> Case {
    Case {
        name: "inspect reads the record and the last error",
        given: &["HSET $q:job:$A state dead attempts 3 payload p", "HSET $q:errors $A boom"],
        call: Call::Inspect(Inspect { id: a() }),
        reply: ok(Some(Inspection {
            record: record(State::Dead, 3, b"p"),
            error: Some("boom".to_owned()),
            progress: None,
            result: None,
            policy: None,
            headers: Default::default(),
            group: None,
        })),
        after: &["errors $A=boom", "job:$A attempts=3 payload=p state=dead"],
    }
}

fn inspect_reads_a_jobs_result_and_its_own_policy() -> Case {
    Case {
        name: "inspect reads a job's result and its own policy",
        given: &[
            "HSET $q:job:$A state done attempts 1 payload p",
            "HSET $q:results $A 42",
            "HSET $q:policy $A ATTEMPTS~3",
        ],
        call: Call::Inspect(Inspect { id: a() }),
        reply: ok(Some(Inspection {
            record: record(State::Done, 1, b"p"),
            error: None,
            progress: None,
            result: Some(b"42".to_vec()),
            policy: Some(Policy { attempts: Some(3), backoff: None, timeout: None }),
            headers: Default::default(),
            group: None,
        })),
        after: &["job:$A attempts=1 payload=p state=done", "policy $A=ATTEMPTS~3", "results $A=42"],
    }
}

fn inspect_reads_the_last_progress_beside_the_record() -> Case {
    Case {
        name: "inspect reads the last progress beside the record",
        given: &["HSET $q:job:$A state active attempts 1 payload p", "HSET $q:progress $A half"],
        call: Call::Inspect(Inspect { id: a() }),
        reply: ok(Some(Inspection {
            record: record(State::Active, 1, b"p"),
            error: None,
            progress: Some(b"half".to_vec()),
            result: None,
            policy: None,
            headers: Default::default(),
            group: None,
        })),
        after: &["job:$A attempts=1 payload=p state=active", "progress $A=half"],
    }
}

fn inspect_reads_a_jobs_group() -> Case {
    Case {
        name: "inspect reads a job's group",
        given: &["HSET $q:job:$A state pending attempts 0 payload p", "HSET $q:group $A tenant-7"],
        call: Call::Inspect(Inspect { id: a() }),
        reply: ok(Some(Inspection {
            record: record(State::Pending, 0, b"p"),
            error: None,
            progress: None,
            result: None,
            policy: None,
            headers: Default::default(),
            group: Some("tenant-7".to_owned()),
        })),
        after: &["group $A=tenant-7", "job:$A attempts=0 payload=p state=pending"],
    }
}

fn inspect_of_a_missing_job() -> Case {
    Case {
        name: "inspect of a missing job",
        given: &[],
        call: Call::Inspect(Inspect { id: a() }),
        reply: ok(None::<Inspection>),
        after: &[],
    }
}

fn stats_counts_each_states_set() -> Case {
    Case {
        name: "stats counts each state's set",
        given: &["ZADD $q:pending 0 $A 0 $B", "ZADD $q:dead 1 $A"],
        call: Call::Stats,
        reply: ok(StatsReply {
            pending: 2,
            active: 0,
            delayed: 0,
            done: 0,
            dead: 1,
            cancelled: 0,
            waiting: 0,
        }),
        after: &["dead $A@1", "pending $A@0 $B@0"],
    }
}

/// A queue of its own on the server this test binary shares, for a test
/// of one case: its keys, and a connection of the test's own runtime.
struct On {
    conn: redis::aio::MultiplexedConnection,
    name: String,
    keys: Keyspace,
}

impl On {
    async fn new() -> On {
        let server = RedisServer::shared_with_module();
        let name = unique_queue("t");
        let keys = Keyspace::new(&name).unwrap();
        On { conn: server.connection().await, name, keys }
    }

    /// The queue's key prefix, `emq:{q}:`.
    fn prefix(&self) -> String {
        self.keys.pending().trim_end_matches("pending").to_owned()
    }

    /// `$q:`, `$A` and `$B` expanded, and `~` for a space inside one word.
    fn expand(&self, text: &str) -> String {
        text.replace("$q:", &self.prefix()).replace("$A", A).replace("$B", B).replace('~', " ")
    }

    /// The server's clock in ms.
    async fn now_ms(&self) -> u64 {
        let (secs, micros): (u64, u64) =
            redis::cmd("TIME").query_async(&mut self.conn.clone()).await.unwrap();
        secs * 1000 + micros / 1000
    }
}

/// An executor the tables run on, with its way to arrange and read keys.
enum Target {
    Lua,
    Native,
    Embedded(Embedded),
}

impl Target {
    fn all() -> [Target; 3] {
        [Target::Lua, Target::Native, Target::Embedded(Embedded::new())]
    }

    fn name(&self) -> &'static str {
        match self {
            Target::Lua => "lua",
            Target::Native => "native",
            Target::Embedded(_) => "embedded",
        }
    }

    fn via(&self, h: &On) -> Box<dyn Executor> {
        match self {
            Target::Lua => Box::new(echomq::Lua::new(h.conn.clone())),
            Target::Native => Box::new(Native::new(h.conn.clone())),
            Target::Embedded(embedded) => Box::new(embedded.clone()),
        }
    }

    /// Start from the queue's keys all gone, then run `lines` (HSET, ZADD,
    /// or a command that makes a key of another type). Only the queue's own
    /// keys: other tests share the server.
    async fn arrange(&self, h: &On, lines: &[&str]) {
        let Target::Embedded(embedded) = self else {
            let mut conn = h.conn.clone();
            let old: Vec<String> =
                redis::cmd("KEYS").arg(format!("{}*", h.prefix())).query_async(&mut conn).await.unwrap();
            if !old.is_empty() {
                let _: () = redis::cmd("DEL").arg(old).query_async(&mut conn).await.unwrap();
            }
            for line in lines {
                let words: Vec<String> = line.split_whitespace().map(|w| h.expand(w)).collect();
                let mut cmd = redis::cmd(&words[0]);
                cmd.arg(&words[1..]);
                let _: redis::Value =
                    cmd.query_async(&mut conn).await.unwrap_or_else(|e| panic!("{line}: {e}"));
            }
            return;
        };
        let mut store = embedded.store();
        store.clear();
        for line in lines {
            let words: Vec<String> = line.split_whitespace().map(|w| h.expand(w)).collect();
            let (key, rest) = (words[1].as_bytes(), &words[2..]);
            use echomq_core::Store;
            match words[0].as_str() {
                "HSET" => {
                    let pairs: Vec<(&[u8], &[u8])> =
                        rest.chunks(2).map(|p| (p[0].as_bytes(), p[1].as_bytes())).collect();
                    store.hset(key, &pairs);
                }
                "ZADD" => {
                    rest.chunks(2).for_each(|p| store.zadd(key, p[0].parse().unwrap(), p[1].as_bytes()))
                }
                "SET" => store.put_other(key, "string"),
                "RPUSH" => store.put_other(key, "list"),
                "SADD" => store.put_other(key, "set"),
                "XADD" => {
                    // XADD key * field value …: every entry kept.
                    let pairs: Vec<(&[u8], &[u8])> =
                        rest[1..].chunks(2).map(|p| (p[0].as_bytes(), p[1].as_bytes())).collect();
                    store.xadd(key, u64::MAX, &pairs);
                }
                other => panic!("cannot arrange {other} in memory"),
            }
        }
    }

    /// The clock the executor's transitions read, in ms.
    async fn now_ms(&self, h: &On) -> u64 {
        match self {
            Target::Embedded(_) => {
                SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_millis() as u64
            }
            _ => h.now_ms().await,
        }
    }

    /// Every key of the queue, as `common::snapshot` renders them.
    async fn snapshot(&self, h: &On) -> Vec<Line> {
        let Target::Embedded(embedded) = self else { return common::snapshot(&h.conn, &h.prefix()).await };
        let prefix = h.prefix();
        let text = |bytes: &[u8]| unexpand(&String::from_utf8_lossy(bytes));
        embedded
            .dump()
            .into_iter()
            .filter_map(|(key, dump)| {
                let key = String::from_utf8_lossy(&key).strip_prefix(&prefix)?.to_owned();
                let entries = match dump {
                    Dump::Hash(fields) => fields.iter().map(|(f, v)| (text(f), text(v))).collect(),
                    Dump::Zset(members) => members.iter().map(|(m, s)| (text(m), format!("{s}"))).collect(),
                    Dump::Stream(entries) => {
                        entries.into_iter().map(|(_, fields)| common::stream_entry(fields)).collect()
                    }
                    Dump::Other(name) => vec![("TYPE".into(), name.into())],
                };
                Some(Line { key: unexpand(&key), entries })
            })
            .collect()
    }
}

/// The native pair, `enqueued_at` and `updated_at`, taken out of `after`'s
/// records so that the lines read as Lua's; and checked on the way: a
/// record the call made carries `enqueued_at` of its time and `updated_at`
/// equal to it (the seed's five fields), every other record the call wrote
/// `updated_at` of its time if it has an `enqueued_at` (one born on Lua
/// gets neither).
fn native_stamps(before: &[Line], after: &mut [Line], t0: u64, t1: u64) -> Result<(), String> {
    for line in after.iter_mut().filter(|line| line.key.starts_with("job:")) {
        let stamp = |field: &str| line.entries.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone());
        let (enqueued_at, updated_at) = (stamp("enqueued_at"), stamp("updated_at"));
        line.entries.retain(|(field, _)| !field.ends_with("_at"));
        let was = before.iter().find(|old| old.key == line.key);
        let written = was.is_none_or(|old| old.entries != line.entries);
        let in_time = |stamp: &Option<String>| {
            stamp.as_deref().and_then(|v| v.parse::<u64>().ok()).is_some_and(|ms| t0 <= ms && ms <= t1)
        };
        if enqueued_at.is_none() && updated_at.is_some() {
            return Err(format!("{} has updated_at without enqueued_at", line.key));
        }
        if was.is_none() {
            if !in_time(&enqueued_at) {
                return Err(format!(
                    "{} was made without enqueued_at of the call: {enqueued_at:?}",
                    line.key
                ));
            }
            if updated_at != enqueued_at {
                return Err(format!(
                    "{} was made with updated_at {updated_at:?}, not {enqueued_at:?}",
                    line.key
                ));
            }
        } else if written && enqueued_at.is_some() && !in_time(&updated_at) {
            return Err(format!("{} was written without updated_at of the call: {updated_at:?}", line.key));
        }
    }
    Ok(())
}

/// Run `case` on `target`, on a queue of its own; panic naming the case and
/// the executor with everything that differs.
async fn one(case: Case, target: Target) {
    let h = On::new().await;
    let via = target.via(&h);
    let mut failures = Vec::new();
    target.arrange(&h, case.given).await;
    let before = target.snapshot(&h).await;
    let t0 = target.now_ms(&h).await;
    let reply = got(&h.keys, via.as_ref(), &case.call).await;
    let t1 = target.now_ms(&h).await;
    let mut after = target.snapshot(&h).await;
    // The counters (protocol 1.4), which every counting transition adds to,
    // are slotted by the clock's minute and hour: the golden vectors and
    // tests/counts.rs check them; the cases here check the rest.
    after.retain(|line| line.key != "counts");
    if !matches!(target, Target::Lua) {
        if let Err(why) = native_stamps(&before, &mut after, t0, t1) {
            failures.push(why);
        }
    }
    let active = after.iter().find(|line| line.key == "active").map(|line| &line.entries);
    let same = match (&case.reply, &reply) {
        (Reply::Is(want), Ok(got)) => (**want).is((**got).as_any()),
        (Reply::Refused(code), Err(err)) => err.code() == Some(*code),
        (Reply::Deadline, Ok(got)) => (**got).as_any().downcast_ref::<u64>().is_some_and(|deadline| {
            active.is_some_and(|entries| entries.iter().any(|(_, score)| *score == deadline.to_string()))
        }),
        _ => false,
    };
    if !same {
        failures.push(format!("reply {reply:?}, expected {:?}", case.reply));
    }
    if let Err(diff) = check(case.after, &after, t0, t1) {
        failures.push(diff);
    }
    assert!(failures.is_empty(), "{} on {}:\n{}", case.name, target.name(), failures.join("\n\n"));
}

const PENDING_A: &[&str] = &["HSET $q:job:$A state pending attempts 0 payload p", "ZADD $q:pending 0 $A"];
const CONFIG_KEYS: &str = "$q:config $q:pending $q:priority $q:rate $q:events $q:wake";

/// A CLAIM of two keys (an older draft's: no config or rate log) is refused
/// with EMQARG on every executor, with the same text, never served past the
/// gate: the native command counts its keys as EVALSHA does.
#[tokio::test]
async fn an_older_speakers_claim_is_refused_and_writes_nothing() {
    let h = On::new().await;
    for target in Target::all() {
        let via = target.via(&h);
        target.arrange(&h, PENDING_A).await;
        let before = target.snapshot(&h).await;
        let keys = vec![h.keys.pending(), h.keys.active()];
        // Protocol 1 and 2: two keys, then the lease.
        let args = ["60000", "COUNT", "1"].map(|w| w.as_bytes().to_vec()).to_vec();
        let call = echomq::executor::Call { name: Name::Claim, keys, args };
        let reply = via.run(&[call]).await.unwrap().replies.remove(0);
        let wanted = "EMQARG wrong number of keys: takes 8";
        match reply {
            Err(err) => assert_eq!(err.to_string(), wanted, "on {}", target.name()),
            Ok(value) => panic!("on {}: an older claim was served: {value:?}", target.name()),
        }
        assert_eq!(target.snapshot(&h).await, before, "on {}", target.name());
    }
}

/// A queue that records its writer's protocol, of this major: CONFIG
/// reports it after the eleven settings and never writes it, on every
/// executor (PROTOCOL.md §2, §7.1).
#[tokio::test]
async fn config_reports_the_queues_protocol_and_never_writes_it() {
    let h = On::new().await;
    for target in Target::all() {
        let via = target.via(&h);
        target.arrange(&h, &["HSET $q:config protocol 1.7"]).await;
        let words = |text: &str| text.split_whitespace().map(|w| h.expand(w)).collect::<Vec<String>>();
        let args = [b"PAUSED".to_vec(), b"1".to_vec()].to_vec();
        let call = echomq::executor::Call { name: Name::Config, keys: words(CONFIG_KEYS), args };
        let reply = via.run(&[call]).await.unwrap().replies.remove(0).unwrap();
        let echomq_core::Reply::Array(values) = reply else { panic!("on {}: {reply:?}", target.name()) };
        assert_eq!(values.len(), 12, "on {}: {values:?}", target.name());
        assert_eq!(values[11], echomq_core::Reply::Bulk(b"1.7".to_vec()), "on {}", target.name());
        let after = target.snapshot(&h).await;
        check(&["config paused=1 protocol=1.7", "events paused="], &after, 0, 0)
            .unwrap_or_else(|why| panic!("on {}: {why}", target.name()));
        if !matches!(target, Target::Embedded(_)) {
            let lua = std::sync::Arc::new(echomq::Lua::new(h.conn.clone()));
            let settings = echomq::Queue::new(lua, &h.name).unwrap().settings().await.unwrap();
            assert_eq!(settings.protocol, Some(echomq_core::Version { major: 1, minor: 7 }));
        }
    }
}
