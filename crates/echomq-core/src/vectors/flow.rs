//! Flows (protocol 1.6): FLOW, a child's link and its notice on every way a
//! job ends, RESOLVE, CHILDREN and ADOPT.

use super::*;

/// The incarnation of a parent FLOW wrote at [`EARLIER`]: that server now.
fn incarnation() -> String {
    at(EARLIER)
}

/// The link of a child of `parent`, in queue q. A child's transitions copy
/// its incarnation into its notice and never compare it: a small number,
/// not a time (the files make times relative to the replay's clock, and a
/// link is text, whose number they would leave as it is).
fn link(parent: &str) -> String {
    format!("7 {{q}}{parent}")
}

/// FLOW of parent `id` over `children` (`{queue}id`, on-failure pairs), with options.
pub(crate) fn flow(id: &str, children: &[(&str, &str)], options: &[&str]) -> Call {
    let n = children.len().to_string();
    let mut args = vec![id, "parent", n.as_str()];
    for (child, on_failure) in children {
        args.extend([*child, *on_failure]);
    }
    args.extend_from_slice(options);
    call(Name::Flow, id, &args)
}

/// ADOPT of running job `id` over `children` (`{queue}id`, on-failure
/// pairs), with `token`, the caller's max attempts 3.
fn adopt(id: &str, token: &str, children: &[(&str, &str)]) -> Call {
    let n = children.len().to_string();
    let mut args = vec![id, token, "3", n.as_str()];
    for (child, on_failure) in children {
        args.extend([*child, *on_failure]);
    }
    call(Name::Adopt, id, &args)
}

/// ENQUEUE of `id`, a child of `parent` (queue q), with these options too.
fn child(id: &str, parent: &str, options: &[&str]) -> Call {
    let link = link(parent);
    let mut all = vec!["PARENT", link.as_str()];
    all.extend_from_slice(options);
    enqueue(id, "child", &all)
}

/// RESOLVE of `parent` by a notice that child `{q}<child>` ended so.
fn resolve(parent: &str, child: &str, outcome: &str, more: &[&str]) -> Call {
    let incarnation = incarnation();
    let child = format!("{{q}}{child}");
    let mut args = vec![parent, incarnation.as_str(), child.as_str(), outcome];
    args.extend_from_slice(more);
    call(Name::Resolve, parent, &args)
}

/// `call` in its form without the flows' keys: `n` keys.
fn short(mut call: Call, n: usize) -> Call {
    call.keys.truncate(n);
    call
}

pub(super) fn cases() -> Vec<Case> {
    let qb = format!("{{q}}{B}");
    let qc = format!("{{q}}{C}");
    let two = [(qb.as_str(), "fail"), ("{other}JOB_X", "ignore")];
    let parent = flow(A, &two, &[]);
    let family = [parent.clone(), child(B, A, &[])];
    let claimed = [parent.clone(), child(B, A, &[]), claim(1)];
    let cancel = |id: &str| call(Name::Cancel, id, &[id]);
    let children = |id: &str| call(Name::Children, id, &[id]);
    let retry = |id: &str| call(Name::Retry, id, &[id]);
    let running = [enqueue(A, "a", &[]), claim(1)];
    let qd = format!("{{q}}{D}");
    let three = [(qb.as_str(), "fail"), (qc.as_str(), "fail"), (qd.as_str(), "ignore")];
    let kept = [
        ("incarnation", "7"),
        ("open", "1"),
        ("children", "2"),
        (qb.as_str(), "done"),
        (qc.as_str(), "open fail"),
    ];
    let ended = [("incarnation", "7"), ("open", "0"), ("children", "1"), (qb.as_str(), "done")];
    let happy = vec![
        Case::new("flow: a parent waits for two children", parent.clone()),
        Case::new(
            "flow: with PRIORITY, ATTEMPTS, HEADERS and a PARENT of its own",
            flow(A, &[(qb.as_str(), "continue")], &["PRIORITY", "3", "ATTEMPTS", "2", "HEADERS", "{}"])
                .arg(b"PARENT")
                .arg(b"7 {up}JOB_UP"),
        ),
        Case::new("flow: a parent that exists answers its incarnation", parent.clone())
            .after([parent.clone()]),
        Case::new("flow: a job that exists and is no parent answers 0", parent.clone()).after([enqueue(
            A,
            "a",
            &[],
        )]),
        Case::new("flow: no children", flow(A, &[], &[])).refused(Code::Arg),
        Case::new("flow: a child that is no job reference", flow(A, &[("q:JOB_B", "fail")], &[]))
            .refused(Code::Arg),
        Case::new("flow: a child's kind", flow(A, &[("{q}XYZ", "fail")], &[])).refused(Code::Kind),
        Case::new("flow: a child's policy unknown", flow(A, &[(qb.as_str(), "retry")], &[]))
            .refused(Code::Arg),
        Case::new(
            "flow: a child named twice",
            flow(A, &[(qb.as_str(), "fail"), (qb.as_str(), "ignore")], &[]),
        )
        .refused(Code::Arg),
        Case::new("flow: DELAY is ENQUEUE's", flow(A, &two, &["DELAY", "10"])).refused(Code::Arg),
        Case::new("flow: its own child", flow(A, &[(&format!("{{q}}{A}"), "fail")], &[]))
            .refused_with(&format!("EMQARG {{q}}{A} cannot be its own child")),
        Case::new("flow: a PARENT that is no link", flow(A, &two, &["PARENT", "soon {q}JOB_P"]))
            .refused(Code::Arg),
        Case::new("enqueue: a child, linked to its parent", child(B, A, &[])).after([parent.clone()]),
        Case::new("enqueue: PARENT with UNIQUE", child(B, A, &["UNIQUE", "k", "UNIQUE_FOR", "10"]))
            .refused(Code::Arg),
        Case::new("enqueue: PARENT without the parents key", short(child(B, A, &[]), 12))
            .refused_with("EMQARG PARENT needs all thirteen keys"),
        Case::new(
            "enqueuemany: children, linked to their parent",
            call(Name::EnqueueMany, "", &["PARENT", &link(A), B, "b", C, "c"]),
        )
        .after([enqueue(C, "c", &[])]),
        Case::new(
            "enqueuemany: a PARENT that is no link",
            call(Name::EnqueueMany, "", &["PARENT", "soon", B, "b"]),
        )
        .refused(Code::Arg),
        Case::new(
            "enqueuemany: PARENT without the sixth key is no id",
            short(call(Name::EnqueueMany, "", &["PARENT", &link(A), B, "b"]), 5),
        )
        .refused(Code::Kind),
        Case::new("ack: a child tells its parent", ack(B, "1")).after(claimed.clone()),
        Case::new("ack: a child tells its parent its RESULT", call(Name::Ack, B, &[B, "1", "RESULT", "42"]))
            .after(claimed.clone()),
        Case::new("ack: a child without the flows' keys is refused", short(ack(B, "1"), 7))
            .after(claimed.clone())
            .refused_with(&format!(
                "EMQARG {B} has a parent: the call needs emq:{{q}}:parents and emq:{{q}}:notices"
            )),
        Case::new("ack: a link that is no link", ack(B, "1"))
            .after([enqueue(B, "b", &[]), claim(1)])
            .put("parents", hash(&[(B, "soon")]))
            .refused_with(&format!("EMQDATA emq:{{q}}:parents {B} is not a link")),
        Case::new("ackmany: a child tells its parent", call(Name::AckMany, "", &[B, "1", "RESULT", "r"]))
            .after(claimed.clone()),
        Case::new("acknext: a child tells its parent", call(Name::AckNext, B, &[B, "1", "60000"]))
            .after(claimed.clone()),
        Case::new("fail: a child out of attempts tells its parent", fail(B, "1", "1")).after(claimed.clone()),
        Case::new("fail: a child retried tells nothing", fail(B, "1", "3")).after(claimed.clone()),
        Case::new("reap: a child out of attempts tells its parent", call(Name::Reap, "", &["1"]))
            .after([parent.clone(), child(B, A, &[])])
            .at(-120_000, claim(1)),
        Case::new("cancel: a child tells its parent", cancel(B)).after(family.clone()),
        Case::new("cancel: a dead child tells its parent again, and its link goes", cancel(B)).after([
            parent.clone(),
            child(B, A, &[]),
            claim(1),
            fail(B, "1", "1"),
        ]),
        Case::new("cancel: a waiting parent", cancel(A)).after(family.clone()),
        Case::new("cancel: a waiting parent without the flows' keys", short(cancel(A), 8))
            .after(family.clone())
            .refused(Code::Arg),
        Case::new(
            "drain: a pending child tells its parent it is gone",
            call_on(Name::Drain, "", "pending", &[]),
        )
        .after(family.clone()),
        Case::new(
            "drain: waiting parents go with their dependencies",
            call_on(Name::Drain, "", "waiting", &[]),
        )
        .after(family.clone()),
        Case::new("remove: a waiting parent", call_on(Name::Remove, "", "waiting", &[A]))
            .after(family.clone()),
        Case::new(
            "purge: a done job still linked tells its parent",
            call_on(Name::Purge, "", "done", &["0"]),
        )
        .after([parent.clone(), enqueue(B, "b", &[]), claim(1), ack(B, "1")])
        .put("parents", hash(&[(B, &link(A))])),
        Case::new("trim: a dead job still linked tells its parent", call_on(Name::Trim, "", "dead", &[]))
            .after([
                parent.clone(),
                enqueue(B, "b", &[]),
                claim(1),
                fail(B, "1", "1"),
                config(&["DEAD_COUNT", "0"]),
            ])
            .put("parents", hash(&[(B, &link(A))]))
            .put("config", hash(&[("dead_count", "0"), ("dead_age", "1")])),
        Case::new("obliterate: a waiting parent is a job", call(Name::Obliterate, "", &[]))
            .after([parent.clone()])
            .refused_with("EMQSTATE the queue still holds 1 jobs"),
        Case::new("obliterate: a notice no relay carried", call(Name::Obliterate, "", &[]))
            .after(family.clone())
            .after([call_on(Name::Drain, "", "pending", &[]), call_on(Name::Drain, "", "waiting", &[])])
            .refused(Code::State),
        Case::new("obliterate: the flows' keys go with the queue", call(Name::Obliterate, "", &[]))
            .put("parents", hash(&[(C, &link(A))])),
        Case::new("stats: the seventh set, waiting", call(Name::Stats, "", &[])).after(family.clone()),
        Case::new("resolve: one of two children done, the parent waits", resolve(A, B, "done", &[]))
            .after([parent.clone()]),
        Case::new(
            "resolve: the last child done, the parent is pending",
            resolve(A, B, "done", &["RESULT", "42"]),
        )
        .after([flow(A, &[(qb.as_str(), "fail")], &["PRIORITY", "5"])]),
        Case::new("resolve: a dead child fails its parent", resolve(A, B, "dead", &[]))
            .after([parent.clone()]),
        Case::new("resolve: a parent failed by a child tells its own parent", resolve(A, B, "gone", &[]))
            .after([flow(A, &[(qb.as_str(), "fail")], &["PARENT", "7 {up}JOB_UP"])]),
        Case::new("resolve: a child ignored, the parent waits on", resolve(A, B, "cancelled", &[]))
            .after([flow(A, &[(qb.as_str(), "ignore"), (qc.as_str(), "fail")], &[])]),
        Case::new("resolve: a child continued after, the parent is pending", resolve(A, B, "dead", &[]))
            .after([flow(A, &[(qb.as_str(), "continue"), (qc.as_str(), "fail")], &[])]),
        Case::new("resolve: a notice twice changes nothing", resolve(A, B, "done", &[]))
            .after([parent.clone(), resolve(A, B, "done", &[])]),
        Case::new(
            "resolve: another incarnation changes nothing",
            call(Name::Resolve, A, &[A, "7", &qb, "done"]),
        )
        .after([parent.clone()]),
        Case::new("resolve: a cancelled parent changes nothing", resolve(A, B, "done", &[]))
            .after([parent.clone(), cancel(A)]),
        Case::new("resolve: no parent changes nothing", resolve(A, B, "done", &[])),
        Case::new("resolve: a running parent records its child", resolve(A, C, "done", &[])).after([
            flow(A, &[(qb.as_str(), "continue"), (qc.as_str(), "fail")], &[]),
            resolve(A, B, "dead", &[]),
            claim(1),
        ]),
        Case::new("resolve: a dead parent records its child", resolve(A, C, "done", &["RESULT", "r"])).after(
            [flow(A, &[(qb.as_str(), "fail"), (qc.as_str(), "ignore")], &[]), resolve(A, B, "dead", &[])],
        ),
        Case::new(
            "resolve: a child retried and done replaces its death",
            resolve(A, B, "done", &["RESULT", "42"]),
        )
        .after([flow(A, &[(qb.as_str(), "ignore"), (qc.as_str(), "fail")], &[]), resolve(A, B, "dead", &[])]),
        Case::new("resolve: a child dead twice changes nothing", resolve(A, B, "dead", &[])).after([
            flow(A, &[(qb.as_str(), "ignore"), (qc.as_str(), "fail")], &[]),
            resolve(A, B, "dead", &[]),
        ]),
        Case::new("resolve: a done parent changes nothing", resolve(A, C, "done", &[])).after([
            flow(A, &[(qb.as_str(), "continue"), (qc.as_str(), "fail")], &[]),
            resolve(A, B, "dead", &[]),
            claim(1),
            ack(A, "1"),
        ]),
        Case::new("resolve: an outcome unknown", resolve(A, B, "lost", &[])).refused(Code::Arg),
        Case::new("resolve: a child that is no reference", call(Name::Resolve, A, &[A, "1", B, "done"]))
            .refused(Code::Arg),
        Case::new(
            "resolve: an incarnation that is no number",
            call(Name::Resolve, A, &[A, "x", &qb, "done"]),
        )
        .refused(Code::Arg),
        Case::new("resolve: a dependency that is none", resolve(A, B, "done", &[]))
            .after([parent.clone()])
            .put(
                &format!("children:{A}"),
                hash(&[("incarnation", &incarnation()), ("open", "1"), (&qb, "maybe")]),
            )
            .refused(Code::Data),
        Case::new("retry: a dead parent with children open waits for them", retry(A))
            .after([parent.clone(), resolve(A, B, "dead", &[])]),
        Case::new("retry: a dead parent whose children all ended is pending", retry(A))
            .after([flow(A, &[(qb.as_str(), "fail")], &["PRIORITY", "5"]), resolve(A, B, "dead", &[])]),
        Case::new("retry: a parent with children open, without its flow keys", short(retry(A), 7))
            .after([parent.clone(), resolve(A, B, "dead", &[])])
            .refused_with(&format!(
                "EMQARG {A} waits for 1 children: the call needs emq:{{q}}:children:{A} and emq:{{q}}:waiting"
            )),
        Case::new("retry: a job that is no parent, without its flow keys", short(retry(B), 7)).after([
            enqueue(B, "b", &[]),
            claim(1),
            fail(B, "1", "1"),
        ]),
        Case::new("retry: dependencies whose open is below 0", retry(A))
            .after([parent.clone(), resolve(A, B, "dead", &[])])
            .put(&format!("children:{A}"), hash(&[("incarnation", "7"), ("open", "-1")]))
            .refused_with(&format!("EMQDATA emq:{{q}}:children:{A} open is not an integer of 0 or more")),
        Case::new("retry: dependencies of another type", retry(A))
            .after([parent.clone(), resolve(A, B, "dead", &[])])
            .put(&format!("children:{A}"), string())
            .refused(Code::Type),
        Case::new("ack: a child that died, retried and done tells its parent again", ack(B, "2")).after([
            parent.clone(),
            child(B, A, &[]),
            claim(1),
            fail(B, "1", "1"),
            retry(B),
            claim(1),
        ]),
        Case::new("children: a parent's children", children(A))
            .after([parent.clone(), resolve(A, B, "done", &["RESULT", "r"])]),
        Case::new("children: no parent", children(A)),
        Case::new("adopt: a running job waits for two children", adopt(A, "1", &two)).after(running.clone()),
        Case::new("adopt: ATTEMPTS of its own get one back", adopt(A, "1", &[(qb.as_str(), "continue")]))
            .after([enqueue(A, "a", &["ATTEMPTS", "2"]), claim(1)]),
        Case::new("adopt: a parent adds only the children it lacks", adopt(A, "1", &three))
            .after(running.clone())
            .put(&format!("children:{A}"), hash(&kept)),
        Case::new(
            "adopt: every child named has ended, the job goes on",
            adopt(A, "1", &[(qb.as_str(), "fail")]),
        )
        .after(running.clone())
        .put(&format!("children:{A}"), hash(&ended)),
        Case::new("adopt: a stale token", adopt(A, "2", &two)).after(running.clone()).refused(Code::Fence),
        Case::new("adopt: a pending job", adopt(A, "1", &two))
            .after([enqueue(A, "a", &[])])
            .refused(Code::Fence),
        Case::new("adopt: no job", adopt(A, "1", &two)).refused(Code::NoJob),
        Case::new("adopt: no children", adopt(A, "1", &[])).refused(Code::Arg),
        Case::new("adopt: its own child", adopt(A, "1", &[(&format!("{{q}}{A}"), "fail")]))
            .refused_with(&format!("EMQARG {{q}}{A} cannot be its own child")),
        Case::new(
            "adopt: a child named twice",
            adopt(A, "1", &[(qb.as_str(), "fail"), (qb.as_str(), "ignore")]),
        )
        .refused(Code::Arg),
        Case::new("adopt: an option after the children", adopt(A, "1", &two).arg(b"PRIORITY").arg(b"1"))
            .refused_with("EMQARG ADOPT takes no option after its children"),
        Case::new("adopt: a thousand children and one", adopt(A, "1", &[(qb.as_str(), "fail")]))
            .after(running.clone())
            .put(&format!("children:{A}"), hash(&[("incarnation", "7"), ("open", "0"), ("children", "1000")]))
            .refused_with(&format!("EMQSIZE a parent has at most 1000 children: {A} has 1000, 1 more given")),
        Case::new("adopt: dependencies without their count", adopt(A, "1", &two))
            .after(running.clone())
            .put(&format!("children:{A}"), hash(&[("incarnation", "7"), ("open", "1")]))
            .refused_with(&format!("EMQDATA emq:{{q}}:children:{A} children is missing")),
    ];
    // The shared cases once per transition: the new ones' here, the
    // others' where their groups have them.
    let (new, old): (Vec<Case>, Vec<Case>) = happy.into_iter().partition(|case| {
        matches!(case.call.name, Name::Flow | Name::Resolve | Name::Children | Name::Adopt)
    });
    let mut all = with_shared(new);
    all.extend(old);
    all
}
