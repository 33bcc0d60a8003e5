//! SCHEDULE, UNSCHEDULE, SCHEDULES and FIRE.

use super::*;

pub(super) fn cases() -> Vec<Case> {
    let schedule = |name: &str, next: i64| call(Name::Schedule, "", &[name, "every 1m", &at(next)]);
    let unschedule = |name: &str| call(Name::Unschedule, "", &[name]);
    let schedules = |args: &[&str]| call(Name::Schedules, "", args);
    let fire = |args: &[&str]| call(Name::Fire, A, args);
    let (due, next) = (at(-1_000), at(59_000));
    let happy = vec![
        Case::new("schedule: added", schedule("nightly", 60_000)),
        Case::new("schedule: replaced answers 0", schedule("nightly", 30_000))
            .after([schedule("nightly", 60_000)]),
        Case::new("schedule: a name of no bytes", schedule("", 60_000)).refused(Code::Arg),
        Case::new("schedule: a name over 200 bytes", schedule(&"n".repeat(201), 60_000)).refused(Code::Arg),
        Case::new("schedule: the definition missing", call(Name::Schedule, "", &["s"])).refused(Code::Arg),
        Case::new("schedule: next not an integer", call(Name::Schedule, "", &["s", "d", "soon"]))
            .refused(Code::Arg),
        Case::new("schedule: next missing", call(Name::Schedule, "", &["s", "d"])).refused(Code::Arg),
        Case::new("unschedule: removed", unschedule("nightly")).after([schedule("nightly", 60_000)]),
        Case::new("unschedule: none answers 0", unschedule("nightly")),
        Case::new("unschedule: a name only in ticks answers 0 and removes the tick", unschedule("nightly"))
            .put("ticks", zset(&[("nightly", 5.0)])),
        Case::new("unschedule: a name only in schedules answers 1", unschedule("nightly"))
            .put("schedules", hash(&[("nightly", "every 1000 last\n")])),
        Case::new("schedule: a name only in ticks answers 1, added", schedule("nightly", 60_000))
            .put("ticks", zset(&[("nightly", 5.0)])),
        Case::new("schedule: a name only in schedules answers 0, replaced", schedule("nightly", 60_000))
            .put("schedules", hash(&[("nightly", "every 1000 last\n")])),
        Case::new("unschedule: the name missing", call(Name::Unschedule, "", &[])).refused(Code::Arg),
        Case::new("schedules: every one in tick order", schedules(&[]))
            .after([schedule("b", 60_000), schedule("a", -5_000)]),
        Case::new("schedules: DUE 1 only those due", schedules(&["DUE", "1"]))
            .after([schedule("b", 60_000), schedule("a", -5_000)]),
        Case::new("schedules: LIMIT 1", schedules(&["LIMIT", "1"]))
            .after([schedule("b", 60_000), schedule("a", -5_000)]),
        Case::new("schedules: a tick with no definition is skipped", schedules(&[]))
            .put("ticks", zset(&[("ghost", 1.0)])),
        Case::new("schedules: none", schedules(&[])),
        Case::new("schedules: DUE 2", schedules(&["DUE", "2"])).refused(Code::Arg),
        Case::new("schedules: an unknown option", schedules(&["ALL", "1"])).refused(Code::Arg),
        Case::new("fire: enqueues the tick's job and moves on", fire(&[A, "tick", "nightly", &due, &next]))
            .after([schedule("nightly", -1_000)]),
        Case::new(
            "fire: SKIP 1 moves on without a job",
            fire(&[A, "tick", "nightly", &due, &next, "SKIP", "1"]),
        )
        .after([schedule("nightly", -1_000)]),
        Case::new("fire: a job that exists moves on, answers 0", fire(&[A, "tick", "nightly", &due, &next]))
            .after([schedule("nightly", -1_000), enqueue(A, "already", &[])]),
        Case::new("fire: another tick answers -1", fire(&[A, "tick", "nightly", &at(-2_000), &next]))
            .after([schedule("nightly", -1_000)]),
        Case::new("fire: a removed schedule answers -1", fire(&[A, "tick", "nightly", &due, &next])),
        Case::new("fire: next not after tick", fire(&[A, "tick", "nightly", &due, &due]))
            .after([schedule("nightly", -1_000)])
            .refused(Code::Arg),
        Case::new("fire: the id's kind", call(Name::Fire, "XYZ", &["XYZ", "tick", "nightly", &due, &next]))
            .refused(Code::Kind),
        Case::new("fire: SKIP 2", fire(&[A, "tick", "nightly", &due, &next, "SKIP", "2"])).refused(Code::Arg),
        Case::new("fire: the tick missing", fire(&[A, "tick", "nightly"])).refused(Code::Arg),
    ];
    with_shared(happy)
}
