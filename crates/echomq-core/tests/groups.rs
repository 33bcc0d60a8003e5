//! Fair groups (PROTOCOL.md §7.9) on the core's in-memory store, with its
//! clock: a flooded queue serves a late tenant at once, weights give their
//! shares, and random runs of every way a job enters or leaves pending or
//! its lease keep each group's running count, cap and place in the index
//! true. A random run prints the seed that replays it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use echomq_core::memory::{Clock, ManualClock};
use echomq_core::{Memory, Name, Reply, Store};

const Q: &str = "emq:{q}:";

/// A store at a fixed time, and its clock.
fn store() -> (Memory, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_750_000_000_000));
    (Memory::new(clock.clone()), clock)
}

/// The full KEYS of `name` for job `id`, from its description.
fn keys(name: Name, id: &str) -> Vec<String> {
    name.describe()
        .keys
        .iter()
        .map(|role| match role.fixed() {
            Some(fixed) => format!("{Q}{fixed}"),
            None if matches!(role, echomq_core::Role::Job) => format!("{Q}job:{id}"),
            None if matches!(role, echomq_core::Role::Children) => format!("{Q}children:{id}"),
            None => format!("{Q}pending"),
        })
        .collect()
}

fn run(store: &mut Memory, name: Name, id: &str, args: &[String]) -> Reply {
    let keys = keys(name, id);
    let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
    match name.run(store, &keys, &args) {
        Ok(reply) => reply,
        Err(refusal) => panic!("{name:?} {args:?} refused: {refusal}"),
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| (*arg).to_owned()).collect()
}

/// `n` jobs of `group`, ids `JOB_<group>_<first + k>`, in calls of 1000.
fn enqueue(store: &mut Memory, group: &str, first: usize, n: usize) {
    let ids: Vec<String> = (first..first + n).map(|k| format!("JOB_{group}_{k:08}")).collect();
    for chunk in ids.chunks(1000) {
        let mut args = strings(&["GROUP", group]);
        for id in chunk {
            args.extend([id.clone(), "p".to_owned()]);
        }
        run(store, Name::EnqueueMany, "", &args);
    }
}

/// The jobs a CLAIM of up to `count` takes: (id, token).
fn claim(store: &mut Memory, count: usize) -> Vec<(String, String)> {
    let Reply::Array(items) = run(store, Name::Claim, "", &strings(&["60000", "COUNT", &count.to_string()]))
    else {
        panic!("a claim answers an array")
    };
    items
        .into_iter()
        .filter_map(|item| match item {
            Reply::Array(job) => match (&job[0], &job[1]) {
                (Reply::Bulk(id), Reply::Int(token)) => {
                    Some((String::from_utf8_lossy(id).into_owned(), token.to_string()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn ack(store: &mut Memory, id: &str, token: &str) {
    run(store, Name::Ack, id, &strings(&[id, token]));
}

/// The group of a test job id `JOB_<group>_<k>`.
fn group_of(id: &str) -> &str {
    id.split('_').nth(1).unwrap_or_default()
}

#[test]
fn a_late_tenant_is_served_within_one_claim_a_slot_of_a_flood() {
    let (mut store, _) = store();
    enqueue(&mut store, "a", 0, 100_000);
    let slots = 10;
    let mut running = claim(&mut store, slots);
    assert!(running.iter().all(|(id, _)| group_of(id) == "a"));
    enqueue(&mut store, "b", 0, 1);
    // Each slot, as it frees, claims one job: B's comes within a round.
    let mut claims = 0;
    while let Some((id, token)) = running.pop() {
        ack(&mut store, &id, &token);
        let next = claim(&mut store, 1);
        claims += 1;
        if next.iter().any(|(id, _)| group_of(id) == "b") {
            break;
        }
        running.splice(0..0, next);
    }
    assert!(claims <= slots, "B waited {claims} claims behind A's 100,000 with {slots} slots");
}

#[test]
fn weights_one_two_five_share_100_000_claims_within_two_percent() {
    let (mut store, _) = store();
    let weights = [("x", 1u64), ("y", 2), ("z", 5)];
    let mut next = BTreeMap::new();
    for (group, weight) in weights {
        run(&mut store, Name::Group, "", &strings(&[group, "WEIGHT", &weight.to_string()]));
        enqueue(&mut store, group, 0, 200);
        next.insert(group, 200);
    }
    let mut served: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0;
    while total < 100_000 {
        let taken = claim(&mut store, 100);
        let acks: Vec<String> = taken.iter().flat_map(|(id, token)| [id.clone(), token.clone()]).collect();
        run(&mut store, Name::AckMany, "", &acks);
        let mut refill: BTreeMap<String, usize> = BTreeMap::new();
        for (id, _) in &taken {
            *refill.entry(group_of(id).to_owned()).or_default() += 1;
            *served.entry(group_of(id).to_owned()).or_default() += 1;
            total += 1;
        }
        // Every group stays backlogged: one more job for each one served.
        for (group, n) in refill {
            let at = next.get_mut(group.as_str()).expect("a known group");
            enqueue(&mut store, &group, *at, n);
            *at += n;
        }
    }
    for (group, weight) in weights {
        let share = served[group] as f64 / total as f64;
        let want = weight as f64 / 8.0;
        assert!((share - want).abs() <= 0.02 * want, "{group}: {share:.4} of {total} claims, not {want}");
    }
}

#[test]
fn a_group_at_its_cap_does_not_hold_up_the_others() {
    let (mut store, _) = store();
    run(&mut store, Name::Group, "", &strings(&["capped", "CAP", "2"]));
    enqueue(&mut store, "capped", 0, 50);
    enqueue(&mut store, "free", 0, 50);
    let taken = claim(&mut store, 40);
    assert_eq!(taken.iter().filter(|(id, _)| group_of(id) == "capped").count(), 2);
    assert_eq!(taken.len(), 40, "the free group fills the rest");
}

/// A small, seeded generator (xorshift64*): the seed replays a run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % n
    }
}

#[test]
fn random_runs_keep_every_group_counted_capped_and_indexed() {
    let base = std::env::var("GROUPS_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |t| t.as_nanos() as u64)
    });
    for run_at in 0..20 {
        let seed = base.wrapping_add(run_at) | 1;
        if let Err(why) = random_run(seed) {
            panic!("{why}\nreplay: GROUPS_SEED={seed} cargo test -p echomq-core --test groups random_runs");
        }
    }
}

/// One random run of 400 steps over three groups and the default one.
fn random_run(seed: u64) -> Result<(), String> {
    let (mut store, clock) = store();
    let mut rng = Rng(seed);
    let groups = ["g0", "g1", "g2"];
    run(&mut store, Name::Group, "", &strings(&["g0", "CAP", "2"]));
    run(&mut store, Name::Group, "", &strings(&["g1", "RATE", "3", "PER", "1000", "WEIGHT", "3"]));
    let mut held: Vec<(String, String)> = Vec::new();
    // When each of g1's jobs was claimed: at most 3 in any 1000 ms.
    let mut claimed: Vec<u64> = Vec::new();
    for (step, k) in (0..400).zip(0usize..) {
        let pick = rng.below(12);
        let group = groups[rng.below(3) as usize];
        match pick {
            0..=2 => {
                let id = format!("JOB_{group}_{k:08}");
                run(&mut store, Name::Enqueue, &id, &strings(&[&id, "p", "GROUP", group]));
            }
            3 => {
                let id = format!("JOB_none_{k:08}");
                run(&mut store, Name::Enqueue, &id, &strings(&[&id, "p"]));
            }
            4..=5 => {
                let taken = claim(&mut store, 1 + rng.below(4) as usize);
                let now = clock.now_ms();
                claimed.extend(taken.iter().filter(|(id, _)| group_of(id) == "g1").map(|_| now));
                held.extend(taken);
            }
            6 if !held.is_empty() => {
                let (id, token) = held.remove(rng.below(held.len() as u64) as usize);
                ack(&mut store, &id, &token);
            }
            7 if !held.is_empty() => {
                let (id, token) = held.remove(rng.below(held.len() as u64) as usize);
                run(&mut store, Name::Fail, &id, &strings(&[&id, &token, "2", "0", "boom"]));
            }
            8 if !held.is_empty() => {
                let (id, token) = held.remove(rng.below(held.len() as u64) as usize);
                run(&mut store, Name::Release, &id, &strings(&[&id, &token, "REFUND", "2"]));
            }
            9 => {
                // Leases run out; REAP requeues or kills them; delayed retries come due.
                clock.set(clock.now_ms() + 61_000);
                run(&mut store, Name::Reap, "", &strings(&["2"]));
                run(&mut store, Name::Promote, "", &[]);
                held.clear();
            }
            10 => {
                let id = format!("JOB_{group}_{:08}", rng.below(k as u64 + 1));
                // A refusal (a done job, say) writes nothing.
                let keys = keys(Name::Cancel, &id);
                let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
                if Name::Cancel.run(&mut store, &keys, &[id.as_bytes()]).is_ok() {
                    held.retain(|(held, _)| *held != id);
                }
            }
            11 => {
                let drained = ["pending", "active", "cancelled", "dead", "done"][rng.below(5) as usize];
                let limit = (1 + rng.below(3)).to_string();
                let set = format!("{Q}{drained}");
                let call_keys: Vec<String> = if matches!(drained, "pending" | "active") {
                    std::iter::once(set).chain(keys_of_drain()).collect()
                } else {
                    std::iter::once(set).chain(keys_of_purge()).collect()
                };
                let name = if matches!(drained, "pending" | "active") { Name::Drain } else { Name::Purge };
                let args = if name == Name::Drain {
                    strings(&["LIMIT", &limit])
                } else {
                    strings(&["0", "LIMIT", &limit])
                };
                let call_keys: Vec<&[u8]> = call_keys.iter().map(|key| key.as_bytes()).collect();
                let args_bytes: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
                name.run(&mut store, &call_keys, &args_bytes)
                    .map_err(|refusal| format!("{name:?}: {refusal}"))?;
                let active: BTreeSet<Vec<u8>> =
                    store.zupto(format!("{Q}active").as_bytes(), f64::MAX, usize::MAX).into_iter().collect();
                held.retain(|(id, _)| active.contains(id.as_bytes()));
            }
            _ => {}
        }
        clock.set(clock.now_ms() + 50);
        check(&mut store, &groups).map_err(|why| format!("seed {seed}, step {step}: {why}"))?;
    }
    for (at, first) in claimed.iter().enumerate() {
        let within = claimed[at..].iter().take_while(|then| **then < first + 1000).count();
        if within > 3 {
            return Err(format!(
                "seed {seed}: g1 claimed {within} jobs in the 1000 ms from {first}, over its rate of 3"
            ));
        }
    }
    Ok(())
}

/// DRAIN's KEYS after its set.
fn keys_of_drain() -> Vec<String> {
    keys(Name::Drain, "").into_iter().skip(1).collect()
}

/// PURGE's KEYS after its set.
fn keys_of_purge() -> Vec<String> {
    keys(Name::Purge, "").into_iter().skip(1).collect()
}

/// What must hold after every step: a group's leases are exactly its
/// active jobs, within its cap; its pending set is exactly its pending jobs;
/// a group that a claim could take from is in `<q>ready` (or, limited, in
/// `<q>gwait`), and one that could not is in neither.
fn check(store: &mut Memory, groups: &[&str]) -> Result<(), String> {
    let set = |store: &mut Memory, key: &str| -> BTreeSet<String> {
        store
            .zupto(format!("{Q}{key}").as_bytes(), f64::MAX, usize::MAX)
            .into_iter()
            .map(|id| String::from_utf8_lossy(&id).into_owned())
            .collect()
    };
    let active = set(store, "active");
    let pending = set(store, "pending");
    let ready = set(store, "ready");
    for group in groups {
        let mine = |ids: &BTreeSet<String>| -> BTreeSet<String> {
            ids.iter().filter(|id| group_of(id) == *group).cloned().collect()
        };
        let leases = set(store, &format!("gactive:{group}"));
        if leases != mine(&active) {
            return Err(format!("{group}'s leases {leases:?} are not its active jobs {:?}", mine(&active)));
        }
        let queued = set(store, &format!("gpending:{group}"));
        if queued != mine(&pending) {
            return Err(format!(
                "{group}'s pending set {queued:?} is not its pending jobs {:?}",
                mine(&pending)
            ));
        }
        if *group == "g0" && leases.len() > 2 {
            return Err(format!("g0 runs {} over its cap of 2", leases.len()));
        }
        let limited = store.zscore(format!("{Q}gwait").as_bytes(), group.as_bytes()).is_some();
        let could = !(queued.is_empty() || *group == "g0" && leases.len() >= 2);
        if could && !limited && !ready.contains(*group) {
            return Err(format!("{group} has work and room but is in no index"));
        }
        if !could && ready.contains(*group) {
            return Err(format!("{group} is ready with nothing it may run"));
        }
    }
    Ok(())
}
