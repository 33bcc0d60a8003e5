//! The pure parts of a selection: matching, escaping, refusals, order.

use super::*;

fn selection(matching: Option<&str>) -> Selection {
    Selection { queue: "q".to_owned(), state: State::Dead, matching: matching.map(str::to_owned) }
}

#[test]
fn a_text_matches_payload_or_error_byte_for_byte() {
    let s = selection(Some("smtp 550"));
    assert!(s.keeps(Some(b"{\"to\":\"x\"} smtp 550"), None));
    assert!(s.keeps(None, Some(b"error: smtp 550 mailbox")));
    assert!(!s.keeps(Some(b"SMTP 550"), Some(b"smtp 551")), "case and every byte count");
    assert!(!s.keeps(None, None), "a job with neither is not selected");
    // Glob characters are plain bytes here.
    let star = selection(Some("a*b"));
    assert!(star.keeps(Some(b"xa*by"), None));
    assert!(!star.keeps(Some(b"axxb"), None));
    // No text: every job.
    assert!(selection(None).keeps(None, None));
    // Binary payloads are searched too.
    assert!(contains(&[0, 159, 146, 150, 7], &[146, 150]));
    assert!(!contains(b"ab", b"abc"));
}

#[test]
fn glob_characters_are_escaped_for_zscan_match() {
    assert_eq!(glob_escape("JOB_01"), "JOB_01");
    assert_eq!(glob_escape("JOB*[a-z]?\\^"), "JOB\\*\\[a\\-z\\]\\?\\\\\\^");
}

#[test]
fn a_prefix_must_agree_with_the_id_kind() {
    for good in ["J", "JO", "JOB", "JOB_", "JOB_01J", "JOB*"] {
        assert_eq!(check_prefix(good), Ok(()), "{good}");
    }
    for bad in ["", "X", "job_", "JOX", "01J"] {
        assert_eq!(check_prefix(bad), Err(Refused::Prefix(bad.to_owned())), "{bad}");
    }
    let said = Refused::Prefix("01J".to_owned()).to_string();
    assert!(said.contains("\"01J\"") && said.contains("\"JOB\""), "{said}");
}

#[test]
fn each_action_takes_its_states_only() {
    let takes = |action: Action| State::ALL.into_iter().filter(|s| action.takes(*s)).collect::<Vec<_>>();
    assert_eq!(takes(Action::Retry), [State::Dead]);
    assert_eq!(takes(Action::Cancel), [State::Pending, State::Active, State::Delayed, State::Dead]);
    let refused = Action::Cancel.check(State::Done).unwrap_err();
    assert_eq!(refused, Refused::State { action: Action::Cancel, state: State::Done });
    assert!(refused.to_string().starts_with("cannot cancel done jobs"), "{refused}");
    assert!(Action::Retry.check(State::Pending).unwrap_err().to_string().contains("retry takes dead"));
}

#[test]
fn positions_order_by_score_then_bytes() {
    let at = |score: f64, id: &str| Position { score, id: id.to_owned() };
    assert!(at(1.0, "JOB_b").before(&at(2.0, "JOB_a")));
    assert!(at(1.0, "JOB_a").before(&at(1.0, "JOB_b")));
    assert!(!at(1.0, "JOB_a").before(&at(1.0, "JOB_a")), "not before itself");
    assert!(!at(-1.0, "JOB_z").before(&at(-2.0, "JOB_a")));
    // Bytes, as Redis orders equal scores: `_` (0x5F) before `a` (0x61).
    assert!(at(0.0, "JOB_").before(&at(0.0, "JOBa")));
}

#[test]
fn each_outcome_is_counted_once() {
    let id: JobId = "JOB_x".parse().unwrap();
    let mut applied = Applied::default();
    applied.note(&id, Ok(true));
    applied.note(&id, Ok(false));
    applied.note(&id, Err(echomq::Error::new(ErrorKind::NoJob, "gone")));
    applied.note(&id, Err(echomq::Error::new(ErrorKind::State, "cannot retry a pending job")));
    applied.note(&id, Err(echomq::Error::new(ErrorKind::WrongType, "a key of the wrong type")));
    assert_eq!((applied.changed, applied.skipped), (1, 3));
    assert_eq!(applied.failed.len(), 1);
    assert!(applied.failed[0].1.contains("wrong type"), "{:?}", applied.failed);
}

#[test]
fn a_selection_says_what_it_is() {
    assert_eq!(selection(None).describe(), "dead jobs of q");
    assert_eq!(selection(Some("x")).describe(), "dead jobs of q whose payload or error contains \"x\"");
    assert!(matches!(selection(Some("")).checked(), Err(err) if err.to_string().contains("empty")));
    let bad = Selection { queue: "a{b}".to_owned(), ..selection(None) };
    assert!(bad.checked().is_err());
}
