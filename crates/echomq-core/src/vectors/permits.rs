//! A partitioned queue's exact rate (protocol 1.8, §7.10): PERMIT, and the
//! claim that runs by its permits' deadline (CLAIM's UNTIL).

use super::*;

/// PERMIT with these options.
fn permit(options: &[&str]) -> Call {
    call(Name::Permit, "", options)
}

/// The definition with an exact rate of `rate` claims per `per` ms.
fn rated(rate: &str, per: &str) -> Put {
    hash(&[("count", "4"), ("routing", "crc16"), ("rate", rate), ("per", per)])
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
    let mut all = with_shared(happy);
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
