//! Fair groups (protocol 1.7): a job's GROUP at enqueue, a claim's fair
//! choice among the groups and the default one, every way a grouped job
//! leaves pending or its lease, GROUP and GROUPS.

use super::flow::flow;
use super::*;

/// ENQUEUE of `id` in `group`, with these options too.
fn grouped(id: &str, group: &str, options: &[&str]) -> Call {
    let mut all = vec!["GROUP", group];
    all.extend_from_slice(options);
    enqueue(id, "p", &all)
}

/// GROUP `name` with these options.
fn group(name: &str, options: &[&str]) -> Call {
    let mut args = vec![name];
    args.extend_from_slice(options);
    call(Name::Group, "", &args)
}

/// GROUPS with these options.
fn groups(options: &[&str]) -> Call {
    call(Name::Groups, "", options)
}

pub(super) fn cases() -> Vec<Case> {
    let two_tenants = [grouped(A, "t", &[]), grouped(B, "t", &[]), grouped(C, "u", &[])];
    let capped =
        [group("t", &["CAP", "1"]), grouped(A, "t", &[]), grouped(B, "t", &[]), grouped(C, "u", &[])];
    let running = [grouped(A, "t", &[]), claim(1)];
    let running_capped = [group("t", &["CAP", "1"]), grouped(A, "t", &[]), grouped(B, "t", &[]), claim(1)];
    let acknext = |id: &str| call(Name::AckNext, id, &[id, "1", "60000"]);
    let happy = vec![
        Case::new(
            "group: a group's weight, cap, rate and most",
            group("t", &["WEIGHT", "2", "CAP", "3", "RATE", "10", "PER", "1000", "MAX", "100"]),
        ),
        Case::new("group: no option reads the group", group("t", &[])).after(two_tenants.clone()),
        Case::new("group: paused, it leaves the index", group("t", &["PAUSED", "1"]))
            .after(two_tenants.clone()),
        Case::new("group: resumed, it enters the index and wakes a claim", group("t", &["PAUSED", "0"]))
            .after([group("t", &["PAUSED", "1"]), grouped(A, "t", &[])]),
        Case::new("group: its cap raised, it is ready again", group("t", &["CAP", "2"]))
            .after(running_capped.clone()),
        Case::new(
            "group: the defaults again forget an empty group",
            group("t", &["CAP", "0", "WEIGHT", "1"]),
        )
        .after([group("t", &["CAP", "2", "WEIGHT", "3"])]),
        Case::new("group: RATE without PER", group("t", &["RATE", "5"]))
            .refused_with("EMQARG RATE needs PER"),
        Case::new("group: PER without RATE", group("t", &["PER", "5"])).refused_with("EMQARG PER needs RATE"),
        Case::new("group: a weight of 0", group("t", &["WEIGHT", "0"])).refused(Code::Arg),
        Case::new("group: a weight over 1000", group("t", &["WEIGHT", "1001"])).refused(Code::Arg),
        Case::new("group: no name", call(Name::Group, "", &[]))
            .refused_with("EMQARG GROUP must be 1 to 200 bytes"),
        Case::new("group: settings that do not read", group("t", &["CAP", "1"]))
            .put("groups", hash(&[("set:t", "CAP none")]))
            .refused_with("EMQDATA emq:{q}:groups set:t is not a group's settings"),
        Case::new("group: its pending set of another type", group("t", &["CAP", "1"]))
            .put("gpending:t", string())
            .refused(Code::Type),
        Case::new("groups: every group, no next page", groups(&[])).after(capped.clone()),
        Case::new("groups: a page after a name, with the next", groups(&["AFTER", "a", "LIMIT", "1"]))
            .after(capped.clone()),
        Case::new("groups: a limit of 0", groups(&["LIMIT", "0"])).refused(Code::Arg),
        Case::new("groups: AFTER without its group", groups(&["AFTER"])).refused(Code::Arg),
        Case::new("enqueue: a job in a group", grouped(A, "t", &[])),
        Case::new("enqueue: a job in a group, with a priority", grouped(B, "t", &["PRIORITY", "-5"]))
            .after([grouped(A, "t", &[])]),
        Case::new("enqueue: a delayed job in a group is only a member", grouped(A, "t", &["DELAY", "5000"])),
        Case::new("enqueue: a group at its most", grouped(B, "t", &[]))
            .after([group("t", &["MAX", "1"]), grouped(A, "t", &[])])
            .refused_with("EMQFULL group t holds its MAX of 1 pending jobs"),
        Case::new("enqueue: a group's name empty", enqueue(A, "p", &["GROUP", ""]))
            .refused_with("EMQARG GROUP must be 1 to 200 bytes"),
        Case::new("enqueue: GROUP twice", grouped(A, "t", &["GROUP", "u"]))
            .refused_with("EMQARG GROUP given twice"),
        Case::new("enqueue: a group's membership of another type", grouped(A, "t", &[]))
            .put("group", string())
            .refused(Code::Type),
        Case::new(
            "enqueuemany: a group's jobs",
            call(Name::EnqueueMany, "", &["GROUP", "t", A, "a", B, "b"]),
        ),
        Case::new(
            "enqueuemany: past a group's most",
            call(Name::EnqueueMany, "", &["GROUP", "t", B, "b", C, "c"]),
        )
        .after([group("t", &["MAX", "2"]), grouped(A, "t", &[])])
        .refused_with("EMQFULL group t holds its MAX of 2 pending jobs"),
        Case::new("claim: groups take turns, by name on a tie", claim(3)).after(two_tenants.clone()),
        Case::new("claim: the default group takes its turn", claim(2)).after([
            grouped(A, "t", &[]),
            grouped(B, "t", &[]),
            enqueue(C, "c", &[]),
        ]),
        Case::new("claim: a group at its cap leaves the index", claim(3)).after(capped.clone()),
        // u stands in the index past the one group the claim read: the
        // next claim is woken for it (the enqueues' wake-up cleared first).
        Case::new("claim: a group past those read wakes the next claim", claim(1))
            .after([grouped(A, "t", &[]), grouped(C, "u", &[])])
            .put("wake", zset(&[])),
        Case::new("claim: a paused group waits", claim(3))
            .after([group("u", &["PAUSED", "1"])])
            .after(two_tenants.clone()),
        Case::new("claim: a group's rate spent, it waits in gwait", claim(3))
            .after([group("t", &["RATE", "1", "PER", "1000"])])
            .after(two_tenants.clone()),
        Case::new("claim: a group whose window freed comes back", claim(3))
            .after([group("t", &["RATE", "1", "PER", "1000"])])
            .after(two_tenants.clone())
            .at(-5000, claim(1)),
        Case::new("claim: a weight of 2 takes two turns to one", claim(4))
            .after([group("t", &["WEIGHT", "2"]), grouped(D, "t", &[])])
            .after(two_tenants.clone()),
        Case::new("claim: a priority orders jobs within a group", claim(1))
            .after([grouped(A, "t", &[]), grouped(B, "t", &["PRIORITY", "-1"])]),
        // A's id left pending by another speaker's hand (one before 1.7
        // claims the head of pending alone): passed over, B claimed.
        Case::new("claim: a group's id no longer pending is passed over", claim(1))
            .after([grouped(A, "t", &[]), grouped(B, "t", &[])])
            .put("pending", Put::Zset(vec![(B.to_owned(), 4294967296.0)])),
        // The claim's checks of the groups' keys, in §7.9's order (a
        // speaker may read them in any order, and must tell them in this).
        Case::new("claim: the index of another type", claim(1))
            .after(two_tenants.clone())
            .put("ready", string())
            .refused_with("EMQTYPE emq:{q}:ready holds a string, not a zset"),
        Case::new("claim: a virtual time no integer is told before the index's type", claim(1))
            .after(two_tenants.clone())
            .put("ready", string())
            .put("groups", hash(&[("vtime", "soon")]))
            .refused_with("EMQDATA emq:{q}:groups vtime is not an integer"),
        Case::new("claim: the waiting groups' type is told before a group's settings", claim(1))
            .after(two_tenants.clone())
            .put("gwait", string())
            .put("groups", hash(&[("set:t", "CAP none")]))
            .refused_with("EMQTYPE emq:{q}:gwait holds a string, not a zset"),
        Case::new("claim: a group's leases' type is told before its tag", claim(1))
            .after(two_tenants.clone())
            .put("gactive:t", string())
            .put("groups", hash(&[("tag:t", "first")]))
            .refused_with("EMQTYPE emq:{q}:gactive:t holds a string, not a zset"),
        Case::new("claim: a group's tag no integer", claim(1))
            .after(two_tenants.clone())
            .put("groups", hash(&[("tag:t", "first")]))
            .refused_with("EMQDATA emq:{q}:groups tag:t is not an integer"),
        Case::new("claim: the queue's concurrency holds above the groups", claim(3))
            .after([config(&["CONCURRENCY", "1"])])
            .after(two_tenants.clone()),
        // ACKNEXT checks <q>group where CLAIM does: after the gate's and the
        // events' keys.
        Case::new("acknext: the queue's settings' type is told before its groups'", acknext(A))
            .after(running.clone())
            .put("group", string())
            .put("config", string())
            .refused_with("EMQTYPE emq:{q}:config holds a string, not a hash"),
        Case::new("acknext: the event log's type is told before its groups'", acknext(A))
            .after(running.clone())
            .put("group", string())
            .put("events", string())
            .refused_with("EMQTYPE emq:{q}:events holds a string, not a stream"),
        Case::new("acknext: a capped group's lease ends, its next job is claimed", acknext(A))
            .after(running_capped.clone()),
        Case::new("ack: a capped group's lease ends, it is ready again", ack(A, "1"))
            .after(running_capped.clone()),
        // 1.9: a group back in <q>ready sets the wake-up key, popped here
        // as a claim waiting for work pops it.
        Case::new("ack: a capped group ready again wakes a waiting claim", ack(A, "1"))
            .after(running_capped.clone())
            .put("wake", zset(&[])),
        Case::new("ack: a group still in the index wakes no one", ack(A, "1"))
            .after([grouped(A, "t", &[]), grouped(B, "t", &[]), claim(1)])
            .put("wake", zset(&[])),
        Case::new("fail: a capped group's job dies, a waiting claim wakes", fail(A, "1", "1"))
            .after(running_capped.clone())
            .put("wake", zset(&[])),
        Case::new("cancel: a capped group's running job, a waiting claim wakes", call(Name::Cancel, A, &[A]))
            .after(running_capped.clone())
            .put("wake", zset(&[])),
        Case::new("group: resumed, it wakes a waiting claim", group("t", &["PAUSED", "0"]))
            .after([group("t", &["PAUSED", "1"]), grouped(A, "t", &[])])
            .put("wake", zset(&[])),
        Case::new("ack: a grouped job's wake-up key of another type", ack(A, "1"))
            .after(running.clone())
            .put("wake", string())
            .refused_with("EMQTYPE emq:{q}:wake holds a string, not a zset"),
        Case::new("ackmany: a group's leases end", call(Name::AckMany, "", &[A, "1"]))
            .after(running_capped.clone()),
        Case::new("fail: a grouped job to delayed, out of its leases", fail(A, "1", "3"))
            .after(running.clone()),
        Case::new("fail: a grouped job dies", fail(A, "1", "1")).after(running.clone()),
        Case::new("defer: a grouped job to delayed", call(Name::Defer, A, &[A, "1", "5000", "3"]))
            .after(running.clone()),
        Case::new("release: back to its group's pending", release(A, "1")).after(running.clone()),
        Case::new("reap: an expired grouped lease back to its group", call(Name::Reap, "", &["3"]))
            .at(-120_000, grouped(A, "t", &[]))
            .at(-120_000, claim(1)),
        Case::new("promote: a due grouped job to its group", call(Name::Promote, "", &[]))
            .at(-10_000, grouped(A, "t", &["DELAY", "5000"])),
        Case::new("retry: a dead grouped job to its group", call(Name::Retry, A, &[A])).after([
            grouped(A, "t", &[]),
            claim(1),
            fail(A, "1", "1"),
        ]),
        Case::new("cancel: a pending grouped job leaves its group", call(Name::Cancel, A, &[A]))
            .after([grouped(A, "t", &[])]),
        Case::new("cancel: a running grouped job leaves its leases", call(Name::Cancel, A, &[A]))
            .after(running_capped.clone()),
        Case::new("remove: a grouped job's group forgotten", call_on(Name::Remove, "", "pending", &[A]))
            .after([grouped(A, "t", &[]), grouped(B, "t", &[])]),
        Case::new("drain: a group's pending jobs", call_on(Name::Drain, "", "pending", &[]))
            .after(two_tenants.clone()),
        Case::new("config: a resume re-adds a grouped head at its score", config(&["PAUSED", "0"]))
            .after([config(&["PAUSED", "1"]), grouped(A, "t", &[])]),
        Case::new(
            "resolve: a grouped parent to its group's pending",
            call(Name::Resolve, A, &[A, &at(EARLIER), &format!("{{q}}{B}"), "done"]),
        )
        .after([flow(A, &[(&format!("{{q}}{B}"), "fail")], &["GROUP", "t"])]),
        Case::new("obliterate: a queue's group settings", call(Name::Obliterate, "", &[]))
            .after([group("t", &["CAP", "2"]), group("u", &["RATE", "1", "PER", "1000"])]),
    ];
    let (new, old): (Vec<Case>, Vec<Case>) =
        happy.into_iter().partition(|case| matches!(case.call.name, Name::Group | Name::Groups));
    let mut all = with_shared(new);
    all.extend(old);
    all
}
