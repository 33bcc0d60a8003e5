//! A partitioned queue's exact rate and exact concurrency (protocol 1.8,
//! §7.10): PERMIT, RENEW, and the claim that runs by its permits' deadline
//! (CLAIM's UNTIL).

use super::*;

/// PERMIT with these options.
fn permit(options: &[&str]) -> Call {
    call(Name::Permit, "", options)
}

/// The definition with an exact rate of `rate` claims per `per` ms.
fn rated(rate: &str, per: &str) -> Put {
    hash(&[("count", "4"), ("routing", "crc16"), ("rate", rate), ("per", per)])
}

/// The definition with an exact concurrency of `cap` jobs.
fn capped(cap: &str) -> Put {
    hash(&[("count", "4"), ("routing", "crc16"), ("concurrency", cap)])
}

/// Running permits: each number with the ms, from the call's now, its hold ends.
fn running(permits: &[(&str, i64)]) -> Put {
    zset(&permits.iter().map(|(n, ends)| (*n, NOW.saturating_add_signed(*ends) as f64)).collect::<Vec<_>>())
}

/// RENEW with these arguments.
fn renew(args: &[&str]) -> Call {
    call(Name::Renew, "", args)
}

/// A permit log of `numbers`, each granted `ago` ms before the call.
fn logged(numbers: &[&str], ago: u64) -> Put {
    let at = (NOW - ago) as f64;
    zset(&numbers.iter().map(|n| (*n, at)).collect::<Vec<_>>())
}

pub(super) fn cases() -> Vec<Case> {
    let happy = vec![
        Case::new("permit: no exact rate, claim freely", permit(&["COUNT", "5"]))
            .put("partitions", hash(&[("count", "4")])),
        Case::new("permit: no definition at all, claim freely", permit(&[])),
        Case::new("permit: a rate of 0 is none", permit(&["COUNT", "3"]))
            .put("partitions", rated("0", "1000")),
        Case::new("permit: a rate with room grants all, logged at now", permit(&["COUNT", "3"]))
            .put("partitions", rated("5", "1000")),
        Case::new("permit: only the rate's room", permit(&["COUNT", "5"]))
            .put("partitions", rated("3", "1000"))
            .put("permits", logged(&["1"], 500)),
        Case::new("permit: none left, the wait for the oldest", permit(&["COUNT", "2"]))
            .put("partitions", rated("2", "1000"))
            .put("permits", logged(&["1", "2"], 300)),
        Case::new("permit: a permit counts for PER and its hold", permit(&[]))
            .put("partitions", rated("1", "1000"))
            .put("permits", logged(&["1"], 1001)),
        Case::new("permit: permits past the window leave it, trimmed", permit(&["COUNT", "2"]))
            .put("partitions", rated("2", "1000"))
            .put("permits", logged(&["1", "2"], 1100)),
        Case::new("permit: numbers go on from the definition's", permit(&["COUNT", "2"]))
            .put("partitions", hash(&[("rate", "10"), ("per", "60000"), ("permits", "41")])),
        Case::new("permit: numbers go on from a stored 07", permit(&["COUNT", "2"]))
            .put("partitions", hash(&[("rate", "10"), ("per", "60000"), ("permits", "07")])),
        Case::new("permit: COUNT 0", permit(&["COUNT", "0"])).refused(Code::Arg),
        Case::new("permit: COUNT over 1000", permit(&["COUNT", "1001"])).refused(Code::Arg),
        Case::new("permit: an unknown option", permit(&["LIMIT", "1"]))
            .refused_with("EMQARG unknown option LIMIT"),
        Case::new("permit: a rate that is no integer", permit(&[]))
            .put("partitions", rated("fast", "1000"))
            .refused_with("EMQDATA emq:{q}:partitions rate is not an integer"),
        Case::new("permit: a rate over 100000", permit(&[]))
            .put("partitions", rated("100001", "1000"))
            .refused_with("EMQDATA emq:{q}:partitions rate is not 0 to 100000"),
        Case::new("permit: a rate without its period", permit(&[]))
            .put("partitions", hash(&[("rate", "5")]))
            .refused_with("EMQDATA emq:{q}:partitions per is not set beside rate"),
        Case::new("permit: a period under 100 ms", permit(&[]))
            .put("partitions", rated("5", "99"))
            .refused_with("EMQDATA emq:{q}:partitions per is not 100 to 86400000 ms"),
        Case::new("permit: a negative count of permits", permit(&[]))
            .put("partitions", hash(&[("rate", "5"), ("per", "1000"), ("permits", "-1")]))
            .refused_with("EMQDATA emq:{q}:partitions permits is not 0 or more"),
    ];
    let mut all = with_shared([happy, concurrency_cases()].concat());
    all.extend(with_shared(renew_cases()));
    let until = |ms: i64| call(Name::Claim, "", &["60000", "UNTIL", &at(ms)]);
    all.extend([
        Case::new("claim: by its UNTIL, it claims", until(60_000)).after([enqueue(A, "p", &[])]),
        Case::new("claim: past its UNTIL, it takes nothing", until(-1)).after([enqueue(A, "p", &[])]),
        Case::new("claim: past its UNTIL, it reads no key", until(-1)).put("pending", string()),
        Case::new(
            "claim: an UNTIL past its range",
            call(Name::Claim, "", &["60000", "UNTIL", "10000000000000"]),
        )
        .refused(Code::Arg),
    ]);
    all
}

/// PERMIT under an exact concurrency.
fn concurrency_cases() -> Vec<Case> {
    let leased = |count: &str| permit(&["COUNT", count, "LEASE", "30000"]);
    let two_keys = |call: Call| {
        let keys = call.keys[..2].to_vec();
        call.with_keys(keys)
    };
    vec![
        Case::new("permit: a concurrency with room grants, running past hold and lease", leased("2"))
            .put("partitions", capped("3")),
        Case::new("permit: only the concurrency's room", leased("5"))
            .put("partitions", capped("3"))
            .put("running", running(&[("1", 5000), ("2", 20_000)])),
        Case::new("permit: no room, the wait for the first to stop", leased("1"))
            .put("partitions", capped("2"))
            .put("running", running(&[("1", 700), ("2", 900)])),
        Case::new("permit: lapsed running permits free their room, trimmed", leased("2"))
            .put("partitions", capped("1"))
            .put("running", running(&[("1", 0), ("2", -5000)])),
        Case::new("permit: a rate and a concurrency, the lesser room", leased("4"))
            .put("partitions", hash(&[("rate", "5"), ("per", "1000"), ("concurrency", "2")])),
        Case::new("permit: both at their limit, the longer wait", leased("1"))
            .put("partitions", hash(&[("rate", "1"), ("per", "1000"), ("concurrency", "1")]))
            .put("permits", logged(&["1"], 100))
            .put("running", running(&[("2", 4000)])),
        Case::new("permit: a concurrency of 0 is none", permit(&["COUNT", "3"]))
            .put("partitions", capped("0")),
        Case::new("permit: a concurrency without LEASE", permit(&["COUNT", "1"]))
            .put("partitions", capped("2"))
            .refused_with(
                "EMQARG the queue has an exact concurrency: PERMIT takes its running key and LEASE",
            ),
        Case::new("permit: a concurrency without its running key", two_keys(leased("1")))
            .put("partitions", capped("2"))
            .refused(Code::Arg),
        Case::new("permit: a rate alone needs no running key", two_keys(permit(&["COUNT", "2"])))
            .put("partitions", rated("5", "1000")),
        Case::new("permit: a concurrency over 100000", leased("1"))
            .put("partitions", capped("100001"))
            .refused_with("EMQDATA emq:{q}:partitions concurrency is not 0 to 100000"),
        Case::new("permit: a concurrency that is no integer", leased("1"))
            .put("partitions", capped("many"))
            .refused_with("EMQDATA emq:{q}:partitions concurrency is not an integer"),
        Case::new("permit: running that is no sorted set", leased("1"))
            .put("partitions", capped("2"))
            .put("running", string())
            .refused(Code::Type),
        Case::new("permit: a LEASE of 0", permit(&["LEASE", "0"])).refused(Code::Arg),
    ]
}

/// RENEW.
fn renew_cases() -> Vec<Case> {
    let many: Vec<String> = (1..=1001).map(|n| n.to_string()).collect();
    let mut too_many = vec!["30000"];
    too_many.extend(many.iter().map(String::as_str));
    vec![
        Case::new(
            "renew: a running permit runs past the lease and the slack from now",
            renew(&["30000", "1"]),
        )
        .put("running", running(&[("1", 100), ("2", 100)])),
        Case::new("renew: one gone is not written back", renew(&["30000", "5", "1"]))
            .put("running", running(&[("1", 100)])),
        Case::new("renew: one lapsed but not yet trimmed is gone", renew(&["30000", "1", "2"]))
            .put("running", running(&[("1", 0), ("2", -5000)])),
        Case::new("renew: never shortened", renew(&["1000", "1"])).put("running", running(&[("1", 999_000)])),
        Case::new("renew: a number spelt 07 is permit 7", renew(&["30000", "07", "7"]))
            .put("running", running(&[("7", 100)])),
        Case::new("renew: no permit named", renew(&["30000"])).refused(Code::Arg),
        Case::new("renew: a lease of 0", renew(&["0", "1"])).refused(Code::Arg),
        Case::new("renew: over 1000 permits", renew(&too_many))
            .refused_with("EMQARG at most 1000 permits a call"),
        Case::new("renew: a permit that is no number", renew(&["30000", "1", "x"])).refused(Code::Arg),
        Case::new("renew: permit 0", renew(&["30000", "0"])).refused(Code::Arg),
    ]
}
