//! The pure parts of a selection: matching, escaping, refusals, order.

use super::*;
use echomq::ErrorKind;

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
    assert_eq!(
        takes(Action::Cancel),
        [State::Pending, State::Active, State::Delayed, State::Dead, State::Waiting]
    );
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

/// A connection to a test server, as `emq` opens its own.
async fn conn(server: &echomq_test_support::RedisServer) -> Conn {
    Conn::Single(redis::aio::ConnectionManager::new(server.client()).await.expect("connect"))
}

/// `n` members of `set`, all of score 0: `JOB_000`, `JOB_001`, …
async fn equal_scores(conn: &mut Conn, set: &str, n: usize) {
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(set);
    for i in 0..n {
        zadd.arg(0).arg(format!("JOB_{i:03}"));
    }
    let _: u64 = zadd.query_async(conn).await.unwrap();
}

fn ids(page: &[Position]) -> Vec<&str> {
    page.iter().map(|p| p.id.as_str()).collect()
}

#[tokio::test]
async fn the_page_after_an_anchor_is_found_by_rank_or_by_score() {
    let server = echomq_test_support::RedisServer::start();
    let mut conn = conn(&server).await;
    let set = "emq:{after}:pending";
    equal_scores(&mut conn, set, 250).await;
    let at = |id: &str| Position { score: 0.0, id: id.to_owned() };

    let (first, last) = after(&mut conn, set, None).await.unwrap();
    assert_eq!((first.len(), first[0].id.as_str(), last), (PAGE, "JOB_000", false));
    // By rank: the anchor is there.
    let (page, last) = after(&mut conn, set, Some(&at("JOB_099"))).await.unwrap();
    assert_eq!((ids(&page)[0], ids(&page)[99], last), ("JOB_100", "JOB_199", false));
    let (page, last) = after(&mut conn, set, Some(&at("JOB_199"))).await.unwrap();
    assert_eq!((page.len(), last), (50, true));
    let (page, last) = after(&mut conn, set, Some(&at("JOB_249"))).await.unwrap();
    assert!(page.is_empty() && last);

    // By score: the anchor left, 150 of equal score before it, over two pages.
    let _: u64 = redis::cmd("ZREM").arg(set).arg("JOB_150").query_async(&mut conn).await.unwrap();
    let (page, last) = after(&mut conn, set, Some(&at("JOB_150"))).await.unwrap();
    assert!(!page.is_empty() && !last, "{page:?}");
    assert_eq!(ids(&page)[0], "JOB_151");
    assert!(page.iter().all(|p| at("JOB_150").before(p)), "{page:?}");

    // Mixed scores: after (2, JOB_b), gone, come (2, JOB_c) then score 3.
    let mixed = "emq:{after}:dead";
    for (score, id) in [(1, "JOB_z"), (2, "JOB_a"), (2, "JOB_c"), (3, "JOB_a2")] {
        let _: u64 = redis::cmd("ZADD").arg(mixed).arg(score).arg(id).query_async(&mut conn).await.unwrap();
    }
    let gone = Position { score: 2.0, id: "JOB_b".to_owned() };
    let (page, last) = after(&mut conn, mixed, Some(&gone)).await.unwrap();
    assert_eq!((ids(&page), last), (vec!["JOB_c", "JOB_a2"], true));
}

/// Jobs the action cannot change stay in the set, between those it moves
/// out; every job is examined once, and every one it can change is changed.
#[tokio::test]
async fn apply_all_passes_the_jobs_it_leaves_and_changes_the_rest() {
    let server = echomq_test_support::RedisServer::start();
    let mut conn = conn(&server).await;
    let queue = "apply";
    let keys = Keyspace::new(queue).unwrap();
    equal_scores(&mut conn, &keys.dead(), 250).await;
    // Two in three have a dead record; the third has none (RETRY: EMQNOJOB), and stays.
    let mut pipe = redis::pipe();
    for i in (0..250).filter(|i| i % 3 != 2) {
        let id: JobId = format!("JOB_{i:03}").parse().unwrap();
        pipe.cmd("HSET")
            .arg(keys.job(&id))
            .arg("state")
            .arg("dead")
            .arg("attempts")
            .arg(1)
            .arg("payload")
            .arg("x");
    }
    let () = pipe.query_async(&mut conn).await.unwrap();
    let executor: Arc<dyn Executor> =
        Arc::new(echomq::Lua::new(redis::aio::ConnectionManager::new(server.client()).await.unwrap()));
    let selection = Selection { queue: queue.to_owned(), state: State::Dead, matching: None };
    let applied = apply_all(&executor, &mut conn, &selection, Action::Retry).await.unwrap();
    assert_eq!((applied.examined, applied.changed, applied.skipped), (250, 167, 83), "{applied:?}");
    assert!(applied.failed.is_empty(), "{applied:?}");
    let pending: u64 = redis::cmd("ZCARD").arg(keys.pending()).query_async(&mut conn).await.unwrap();
    assert_eq!(pending, 167);
}

/// Workers claiming from the head of pending while it walks (the ranks
/// move under it): no matching job is left pending. The claims stop at 60,
/// so that a job the walk passed over stays pending to be seen (a walk
/// resuming by a count of the jobs it left, not by an anchor, fails here).
#[tokio::test]
async fn apply_all_leaves_no_match_behind_while_workers_claim() {
    let server = echomq_test_support::RedisServer::start();
    let mut conn = conn(&server).await;
    let executor: Arc<dyn Executor> =
        Arc::new(echomq::Lua::new(redis::aio::ConnectionManager::new(server.client()).await.unwrap()));
    let queue = echomq::Queue::new(executor.clone(), "claimed").unwrap();
    let jobs = (0..600u32).map(|i| {
        let payload = if i.is_multiple_of(2) { format!("{i} needle") } else { i.to_string() };
        (payload, echomq::EnqueueOptions::default())
    });
    assert!(queue.enqueue_many(jobs).await.unwrap().iter().all(Result::is_ok));
    let claimer = {
        let queue = queue.clone();
        tokio::spawn(async move {
            let mut claimed = 0;
            while claimed < 60 {
                let leases = queue.claim_many(std::time::Duration::from_secs(600), 2, None).await.unwrap();
                if leases.jobs.is_empty() {
                    break;
                }
                claimed += leases.jobs.len();
                tokio::task::yield_now().await;
            }
        })
    };
    let selection =
        Selection { queue: "claimed".to_owned(), state: State::Pending, matching: Some("needle".to_owned()) };
    let applied = apply_all(&executor, &mut conn, &selection, Action::Cancel).await.unwrap();
    claimer.await.unwrap();
    assert!(applied.failed.is_empty(), "{applied:?}");
    let left = walk(&mut conn, &selection, 0, 10_000, usize::MAX).await.unwrap();
    assert!(left.ids.is_empty(), "{} matching jobs left pending: {applied:?}", left.ids.len());
    assert!(applied.examined <= 600, "none examined twice: {applied:?}");
}
