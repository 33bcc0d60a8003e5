//! The dashboard over plain HTTP: bad input is 400 and a missing thing 404
//! (never 500), each write is refused 403 in read-only mode, without the
//! token, without the CSRF token and cross-site, and changes nothing then;
//! bad form values are 400 and change nothing; writes are audited; /live
//! streams counts; /metrics carries the documented names. A schedule is
//! triggered, paused and resumed after a confirmation; a queue's open batches show their counts;
//! a queue's page shows its latency from the event log, or why not; a
//! partitioned queue's page shows its partitions, finds a job's, and
//! pauses them all.

mod dashboard_support;

use std::io::{BufRead, BufReader, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use dashboard_support::{dead_jobs, queue, Dashboard};
use echomq::{EnqueueOptions, State};
use echomq_test_support::{now_ms, promtool_check_metrics, unique_queue, RedisServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_400_and_a_missing_job_404() {
    let server = RedisServer::start();
    let name = unique_queue("http");
    let q = queue(&server, &name).await;
    let id = q.enqueue(b"x".to_vec()).await.unwrap();
    let dashboard = Dashboard::start(&server, &[]);

    let ok = dashboard.get(&format!("/queues/{name}/jobs/{id}"));
    assert_eq!(ok.status(), 200, "{ok:?}");
    let missing = dashboard.get(&format!("/queues/{name}/jobs/JOB_01ARZ3NDEKTSV4RRFFQ69G5FAV"));
    assert_eq!(missing.status(), 404, "{missing:?}");
    assert!(missing.has("no job JOB_01ARZ3NDEKTSV4RRFFQ69G5FAV in queue"), "{missing:?}");
    for (path, why) in [
        (format!("/queues/{name}/jobs/not%20an%20id"), "not an id"),
        ("/queues/a%7Bb/jobs/x".to_owned(), "a{b"),
        ("/queues/a%7Bb".to_owned(), "a{b"),
        (format!("/queues/{name}/state/finished"), "is not a state"),
        (format!("/queues/{name}/state/dead?page=0"), "is not a page"),
        (format!("/queues/{name}/state/dead?page=x"), "is not a page"),
    ] {
        let reply = dashboard.get(&path);
        assert_eq!(reply.status(), 400, "{path}: {reply:?}");
        assert!(reply.has(r#"<p id="problem">"#) && reply.has(why), "{path}: wanted {why:?}: {reply:?}");
    }
    assert_eq!(dashboard.get("/nowhere").status(), 404);
    let unknown = dashboard.get("/queues/no-such-queue");
    assert!(unknown.status() == 200 && unknown.has(r#"id="unknown""#), "{unknown:?}");
    assert!(!dashboard.get(&format!("/queues/{name}")).has(r#"id="unknown""#));
    // Past the last page is the last page, not an error.
    let past = dashboard.get(&format!("/queues/{name}/state/pending?page=99"));
    assert!(past.status() == 200 && past.has("page 1 of 1"), "{past:?}");
}

/// Every write route, with the form fields it needs (besides the CSRF token).
fn writes(name: &str, id: &echomq::JobId) -> Vec<(String, String)> {
    vec![
        (format!("/queues/{name}/pause"), String::new()),
        (format!("/queues/{name}/resume"), String::new()),
        (format!("/queues/{name}/drain"), format!("confirm={name}")),
        (format!("/queues/{name}/configure"), "concurrency=3".into()),
        (format!("/queues/{name}/state/dead/bulk"), format!("do=retry-selected&ids={id}&confirmed=yes")),
        (format!("/queues/{name}/state/dead/bulk"), "do=cancel-all&confirmed=yes".into()),
        (format!("/queues/{name}/jobs/{id}/retry"), String::new()),
        (format!("/queues/{name}/jobs/{id}/cancel"), "confirmed=yes".into()),
        (format!("/queues/{name}/schedules/remove"), "name=tick&confirmed=yes".into()),
        (format!("/queues/{name}/schedules/trigger"), "name=tick&confirmed=yes".into()),
        (format!("/queues/{name}/schedules/pause"), "name=tick&confirmed=yes".into()),
        (format!("/queues/{name}/schedules/resume"), "name=held&confirmed=yes".into()),
    ]
}

/// The schedules [`writes`] acts on: `tick`, and `held`, paused.
async fn two_schedules(q: &echomq::Queue) {
    let hourly = |name| echomq::Schedule::every(name, Duration::from_secs(3600), "t").unwrap();
    q.schedules().add(&hourly("tick")).await.unwrap();
    q.schedules().add(&hourly("held").paused(true)).await.unwrap();
}

/// What the writes would change: the counts, the settings, the schedules.
async fn state_of(q: &echomq::Queue) -> String {
    let stats = q.stats().await.unwrap();
    let settings = q.settings().await.unwrap();
    let schedules = q.schedules().list().await.unwrap();
    format!("{stats:?} {settings:?} {schedules:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_shows_no_form_and_refuses_every_write() {
    let server = RedisServer::start();
    let name = unique_queue("ro");
    let q = queue(&server, &name).await;
    let id = dead_jobs(&q, 1).await.remove(0);
    q.enqueue(b"waiting".to_vec()).await.unwrap();
    two_schedules(&q).await;
    let before = state_of(&q).await;
    let dashboard = Dashboard::start(&server, &["--read-only"]);
    for page in [
        "/".to_owned(),
        format!("/queues/{name}"),
        format!("/queues/{name}/state/dead"),
        format!("/queues/{name}/jobs/{id}"),
        format!("/queues/{name}/schedules"),
        format!("/queues/{name}/batches"),
        format!("/queues/{name}/drain"),
    ] {
        let reply = dashboard.get(&page);
        assert_eq!(reply.status(), 200, "{page}: {reply:?}");
        assert!(
            !reply.has("<form method=\"post\"") && !reply.has(r#"method="post""#),
            "{page} shows a write form"
        );
        assert!(!reply.has(r#"name="csrf""#), "{page} carries a CSRF token");
    }
    // Even with a guessed form, every write is refused, and says why.
    for (path, fields) in writes(&name, &id) {
        let reply = dashboard.post(&path, &fields);
        assert_eq!(reply.status(), 403, "{path}: {reply:?}");
        assert!(reply.has("read-only"), "{path}: {reply:?}");
    }
    assert_eq!(state_of(&q).await, before, "a refused write changed something");
    assert!(dashboard.log().contains("refused: this dashboard is read-only"), "{}", dashboard.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_need_the_token_the_csrf_token_and_the_same_site() {
    let server = RedisServer::start();
    let name = unique_queue("token");
    let q = queue(&server, &name).await;
    let id = dead_jobs(&q, 1).await.remove(0);
    two_schedules(&q).await;
    let before = state_of(&q).await;
    let dashboard = Dashboard::start(&server, &["--token", "sesame"]);

    // No cookie: no form shown, every write refused.
    assert!(!dashboard.get("/").has(r#"name="csrf""#));
    for (path, fields) in writes(&name, &id) {
        let reply = dashboard.post(&path, &format!("csrf=whatever&{fields}"));
        assert_eq!(reply.status(), 403, "{path}: {reply:?}");
        assert!(reply.has("need the dashboard's token"), "{reply:?}");
    }
    assert_eq!(dashboard.get("/login?token=wrong").status(), 403);
    let login = dashboard.get("/login?token=sesame");
    assert!(login.status() == 303 && login.has("emq_token=sesame; HttpOnly; SameSite=Strict"), "{login:?}");

    // The cookie shows the forms; a wrong CSRF token or a cross-site POST is still refused.
    let cookie = [("Cookie", "emq_token=sesame")];
    let page = dashboard.request("GET", "/", &cookie, "").0;
    let at = page.find(r#"name="csrf" value=""#).expect("forms with the cookie");
    let csrf = &page[at + 19..at + 51];
    for (path, fields) in writes(&name, &id) {
        let reply = dashboard.request("POST", &path, &cookie, &format!("csrf=nope&{fields}"));
        assert_eq!(reply.status(), 403, "{path}: {reply:?}");
        let cross = [("Cookie", "emq_token=sesame"), ("Sec-Fetch-Site", "cross-site")];
        let reply = dashboard.request("POST", &path, &cross, &format!("csrf={csrf}&{fields}"));
        assert_eq!(reply.status(), 403, "{path}: {reply:?}");
    }
    assert_eq!(state_of(&q).await, before, "a refused write changed something");

    // With all three, a write is done, and audited.
    let same = [("Cookie", "emq_token=sesame"), ("Sec-Fetch-Site", "same-origin")];
    let paused = dashboard.request("POST", &format!("/queues/{name}/pause"), &same, &format!("csrf={csrf}"));
    assert_eq!(paused.status(), 303, "{paused:?}");
    assert!(q.settings().await.unwrap().paused);
    let log = dashboard.log();
    let line = log
        .lines()
        .find(|l| l.contains("action=\"pause\"") && l.contains("done"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("remote=127.0.0.1:") && line.contains(&format!("queue=\"{name}\"")), "{line}");
    // A bulk write names its jobs: the ticked ones, or the selection.
    let bulk = format!("/queues/{name}/state/dead/bulk");
    let ticked = format!("csrf={csrf}&do=retry-selected&ids={id}&confirmed=yes");
    assert_eq!(dashboard.request("POST", &bulk, &same, &ticked).status(), 200);
    let all = format!("csrf={csrf}&do=cancel-all&matching=nothing%20like%20it&confirmed=yes");
    assert_eq!(dashboard.request("POST", &bulk, &same, &all).status(), 200);
    let log = dashboard.log();
    assert!(
        log.contains(&format!("action=\"retry\" queue=\"{name}\" jobs=\"{id}\" outcome=\"done: 1 retried")),
        "{log}"
    );
    let all =
        format!("jobs=\"all dead jobs of {name} whose payload or error contains \\\"nothing like it\\\"\"");
    assert!(log.contains(&all) && log.contains("outcome=\"done: 0 cancelled"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_form_values_are_400_and_change_nothing() {
    let server = RedisServer::start();
    let name = unique_queue("forms");
    let q = queue(&server, &name).await;
    let id = dead_jobs(&q, 1).await.remove(0);
    q.enqueue(b"waiting".to_vec()).await.unwrap();
    let before = state_of(&q).await;
    let dashboard = Dashboard::start(&server, &[]);
    let csrf = dashboard.csrf("/");
    for (path, fields, said) in [
        (format!("/queues/{name}/drain"), format!("confirm={name}x"), "type the queue's name exactly"),
        (format!("/queues/{name}/drain"), String::new(), "type the queue's name exactly"),
        (format!("/queues/{name}/configure"), "rate=lots".into(), "rate: "),
        (format!("/queues/{name}/configure"), "concurrency=0".into(), "concurrency: "),
        (format!("/queues/{name}/configure"), "keep_dead=7d".into(), "keep dead: "),
        (format!("/queues/{name}/configure"), "events=many".into(), "events: "),
        (
            format!("/queues/{name}/state/pending/bulk"),
            "do=retry-all&confirmed=yes".into(),
            "cannot retry pending jobs",
        ),
        (
            format!("/queues/{name}/state/done/bulk"),
            "do=cancel-all&confirmed=yes".into(),
            "cannot cancel done jobs",
        ),
        (
            format!("/queues/{name}/state/dead/bulk"),
            "do=retry-selected&confirmed=yes".into(),
            "no job was ticked",
        ),
        (format!("/queues/{name}/state/dead/bulk"), "do=retry-selected&ids=a%20b&confirmed=yes".into(), ""),
        (
            format!("/queues/{name}/state/dead/bulk"),
            "do=explode-all&confirmed=yes".into(),
            "is not a bulk action",
        ),
        (format!("/queues/{name}/state/nope/bulk"), "do=cancel-all&confirmed=yes".into(), "is not a state"),
        ("/queues/a%7Bb/pause".to_owned(), String::new(), "a{b"),
        (format!("/queues/{name}/jobs/not%20an%20id/retry"), String::new(), ""),
    ] {
        let reply = dashboard.post(&path, &format!("csrf={csrf}&{fields}"));
        assert_eq!(reply.status(), 400, "{path} {fields}: {reply:?}");
        assert!(reply.has(said), "{path} {fields}: wanted {said:?}: {reply:?}");
    }
    // A job that is not there, and an action that is not one.
    let gone = dashboard
        .post(&format!("/queues/{name}/jobs/JOB_01ARZ3NDEKTSV4RRFFQ69G5FAV/retry"), &format!("csrf={csrf}"));
    assert_eq!(gone.status(), 404, "{gone:?}");
    let no_action = dashboard.post(&format!("/queues/{name}/jobs/{id}/explode"), &format!("csrf={csrf}"));
    assert_eq!(no_action.status(), 404, "{no_action:?}");
    assert_eq!(state_of(&q).await, before, "a refused write changed something");

    // Cancel asks first: the confirmation page changes nothing.
    let asked = dashboard.post(&format!("/queues/{name}/jobs/{id}/cancel"), &format!("csrf={csrf}"));
    assert!(asked.status() == 200 && asked.has(r#"<p id="confirm">Cancel job"#), "{asked:?}");
    assert_eq!(state_of(&q).await, before);
    let done =
        dashboard.post(&format!("/queues/{name}/jobs/{id}/cancel"), &format!("csrf={csrf}&confirmed=yes"));
    assert_eq!(done.status(), 303, "{done:?}");
    assert_eq!(q.inspect(&id).await.unwrap().unwrap().record.state, State::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_live_carry_the_snapshot() {
    let server = RedisServer::start();
    let name = unique_queue("metrics");
    let q = queue(&server, &name).await;
    dead_jobs(&q, 2).await;
    q.enqueue_with(b"urgent".to_vec(), EnqueueOptions::default().priority(-5)).await.unwrap();
    q.configure(
        echomq::Config::default()
            .concurrency(echomq::Limit::To(4))
            .rate(echomq::Limit::To(echomq::Rate { claims: 10, per: Duration::from_secs(2) })),
    )
    .await
    .unwrap();
    q.pause().await.unwrap();
    let plain = queue(&server, &unique_queue("plain")).await;
    plain.enqueue(b"x".to_vec()).await.unwrap();
    // A damaged queue (a key of the wrong type) is named, and hides no other.
    let broken = unique_queue("broken");
    let mut conn = server.client().get_connection().unwrap();
    let () = redis::cmd("SET")
        .arg(format!("emq:{{{broken}}}:pending"))
        .arg("in the way")
        .query(&mut conn)
        .unwrap();
    let () = redis::cmd("ZADD").arg("emq:queues").arg(1).arg(&broken).query(&mut conn).unwrap();
    let dashboard = Dashboard::start(&server, &[]);

    let metrics = dashboard.get("/metrics");
    assert_eq!(metrics.status(), 200, "{metrics:?}");
    for line in [
        format!("emq_jobs{{queue=\"{name}\",state=\"dead\"}} 2"),
        format!("emq_jobs{{queue=\"{name}\",state=\"pending\"}} 1"),
        format!("emq_queue_paused{{queue=\"{name}\"}} 1"),
        format!("emq_queue_concurrency_limit{{queue=\"{name}\"}} 4"),
        format!("emq_queue_rate_limit{{queue=\"{name}\"}} 5"),
        format!("emq_queue_paused{{queue=\"{}\"}} 0", plain.name()),
        format!("emq_queue_unreadable{{queue=\"{broken}\"}} 1"),
        format!("emq_workers{{queue=\"{broken}\"}} 0"),
        "# TYPE emq_oldest_pending_seconds gauge".to_owned(),
        format!("emq_oldest_pending_seconds{{queue=\"{name}\"}} "),
        format!("emq_queue_enqueued_total{{queue=\"{name}\"}} 3"),
        format!("emq_queue_dead_total{{queue=\"{name}\"}} 2"),
        format!("emq_queue_completed_total{{queue=\"{name}\"}} 0"),
        "# TYPE emq_queue_enqueued_total counter".to_owned(),
        format!("emq_workers{{queue=\"{name}\"}} 0"),
    ] {
        assert!(metrics.has(&line), "no {line:?} in {}", metrics.0);
    }
    // Prometheus' own tool accepts it, where it is installed.
    let (_, body) = metrics.0.split_once("\r\n\r\n").expect("a response with a body");
    if let Some(checked) = promtool_check_metrics(body) {
        checked.unwrap_or_else(|said| panic!("promtool check metrics: {said}\n{body}"));
    }
    // Every metric it serves is one docs/metrics.md lists, of the type it says.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md")).unwrap();
    let served: Vec<(&str, &str)> =
        metrics.0.lines().filter_map(|line| line.strip_prefix("# TYPE ")?.split_once(' ')).collect();
    assert!(served.len() >= 11, "{served:?}");
    for (name, kind) in served {
        assert!(doc.contains(&format!("| `{name}` | {kind} |")), "{name} ({kind}) is not in docs/metrics.md");
    }
    // Limits only when set.
    for absent in [
        format!("emq_queue_concurrency_limit{{queue=\"{}\"}}", plain.name()),
        format!("emq_queue_rate_limit{{queue=\"{}\"}}", plain.name()),
    ] {
        assert!(!metrics.has(&absent), "{absent} in {}", metrics.0);
    }
    let overview = dashboard.get("/");
    assert!(overview.status() == 200 && overview.has("unreadable: "), "{overview:?}");
    // A job's priority lives beside the record; its page shows it.
    let urgent = q.enqueue_with(b"urgent".to_vec(), EnqueueOptions::default().priority(-7)).await.unwrap().id;
    assert!(dashboard.get(&format!("/queues/{name}/jobs/{urgent}")).has("-7 (lower first)"));

    // /live: the counts first, then what changed.
    let mut stream = TcpStream::connect(("127.0.0.1", dashboard.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(stream, "GET /live HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut lines = BufReader::new(stream).lines().map(Result::unwrap);
    let first = lines.find(|l| l.starts_with("data: ")).unwrap();
    assert!(first.contains(&format!("\"{name}/dead\":\"2\"")), "{first}");
    assert!(first.contains(&format!("\"{name}/flow\":\"paused, concurrency 4, rate 10/2s\"")), "{first}");
    assert!(first.contains(&format!("\"{name}/workers\":\"0\"")), "{first}");
    plain.enqueue(b"y".to_vec()).await.unwrap();
    let wanted = format!("\"{}/pending\":\"2\"", plain.name());
    let changed = lines.find(|l| l.starts_with("data: ") && l.contains(&wanted)).unwrap();
    assert!(!changed.contains(&format!("\"{name}/dead\"")), "unchanged values are not sent again: {changed}");
}

/// A read-only dashboard under SECURITY.md's monitor ACL user (read-only
/// keys, a short list of commands) still shows every page but the
/// schedules' (the SCHEDULES script runs a command that user may not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_works_for_a_monitor_acl_user() {
    let server = RedisServer::start();
    let name = unique_queue("monitor");
    let q = queue(&server, &name).await;
    let dead = dead_jobs(&q, 30).await;
    let mut conn = server.client().get_connection().unwrap();
    let rules = "reset on >watch %R~emq:* resetchannels -@all +command|info +scan +zrange +evalsha_ro \
                 +script|load +time +type +hget +hmget +hgetall +zcard +xread +xrevrange";
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("emq-monitor")
        .arg(rules.split_whitespace().collect::<Vec<_>>())
        .query(&mut conn)
        .unwrap();
    let url = format!("redis://emq-monitor:watch@127.0.0.1:{}/", server.port());
    let dashboard = Dashboard::start_at(&url, &["--read-only"]);
    for page in [
        "/".to_owned(),
        format!("/queues/{name}"),
        format!("/queues/{name}/state/dead"),
        format!("/queues/{name}/state/dead?page=last"),
        format!("/queues/{name}/state/dead?q=SMTP%20421"),
        format!("/queues/{name}/jobs/{}", dead[0]),
        format!("/queues/{name}/batches"),
        "/metrics".to_owned(),
    ] {
        let reply = dashboard.get(&page);
        assert_eq!(reply.status(), 200, "{page}: {reply:?}");
    }
    let page = dashboard.get(&format!("/queues/{name}/jobs/{}", dead[0]));
    assert!(page.has("SMTP 421: try later") && page.has(">dead<"), "{page:?}");
    // The counters and the worker registry read with that user's commands too.
    let page = dashboard.get(&format!("/queues/{name}"));
    assert!(page.has(r#"<svg class="chart""#) && !page.has("cannot be read"), "{page:?}");
    assert!(page.has(r#"data-dead="30""#), "the 30 dead jobs in a bar: {page:?}");
    assert!(page.has(r#"<span id="latency-jobs">30</span>"#), "their waits, from the event log: {page:?}");
    let workers = dashboard.get("/workers");
    assert!(workers.status() == 200 && workers.has(r#"id="no-workers""#), "{workers:?}");
}

/// Commands the server has processed so far (this INFO among them).
fn commands(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(conn).unwrap();
    let line = info.lines().find(|l| l.starts_with("total_commands_processed:")).unwrap();
    line["total_commands_processed:".len()..].trim().parse().unwrap()
}

/// Whether the dashboard sent nothing over a quiet window of two seconds
/// (the snapshot's period is one): only this test's own two INFOs.
async fn quiet(conn: &mut redis::Connection) -> bool {
    let before = commands(conn);
    tokio::time::sleep(Duration::from_secs(2)).await;
    commands(conn) - before <= 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_looking_means_no_command_to_redis() {
    let server = RedisServer::start();
    let q = queue(&server, &unique_queue("idle")).await;
    q.enqueue(b"x".to_vec()).await.unwrap();
    let dashboard = Dashboard::start(&server, &[]);
    let mut conn = server.client().get_connection().unwrap();
    assert_eq!(dashboard.get("/").status(), 200);
    // Right after a page the snapshot is kept fresh a few seconds; then it stops.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !quiet(&mut conn).await {
        assert!(std::time::Instant::now() < deadline, "the dashboard kept reading with nobody looking");
    }
    // A live viewer keeps it reading; gone, it stops again.
    let mut stream = TcpStream::connect(("127.0.0.1", dashboard.port)).unwrap();
    write!(stream, "GET /live HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut lines = BufReader::new(stream.try_clone().unwrap()).lines().map(Result::unwrap);
    assert!(lines.find(|l| l.starts_with("data: ")).is_some());
    assert!(!quiet(&mut conn).await, "a live viewer gets fresh counts");
    drop(lines);
    drop(stream);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !quiet(&mut conn).await {
        assert!(std::time::Instant::now() < deadline, "the dashboard kept reading after its viewer left");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_it_while_a_live_viewer_is_connected() {
    let server = RedisServer::start();
    queue(&server, &unique_queue("stop")).await.enqueue(b"x".to_vec()).await.unwrap();
    let mut dashboard = Dashboard::start(&server, &[]);
    let mut stream = TcpStream::connect(("127.0.0.1", dashboard.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(stream, "GET /live HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut lines = BufReader::new(stream).lines().map(Result::unwrap);
    assert!(lines.find(|l| l.starts_with("data: ")).is_some());
    assert!(dashboard.interrupt(), "the dashboard waited for its /live viewer to leave");
}

/// A worker registry of the wrong type (`emq:workers` a string) is said on
/// the pages that read it, and hides no queue: `/` and `/metrics` still
/// answer, without a workers count they cannot know.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_worker_registry_is_said_and_hides_no_queue() {
    let server = RedisServer::start();
    let name = unique_queue("noregistry");
    let q = queue(&server, &name).await;
    q.enqueue(b"x".to_vec()).await.unwrap();
    let mut conn = server.client().get_connection().unwrap();
    let () = redis::cmd("SET").arg("emq:workers").arg("in the way").query(&mut conn).unwrap();
    let dashboard = Dashboard::start(&server, &[]);
    for page in ["/workers".to_owned(), "/".to_owned(), format!("/queues/{name}")] {
        let reply = dashboard.get(&page);
        assert_eq!(reply.status(), 200, "{page}: {reply:?}");
        assert!(
            reply.has("The worker registry cannot be read: ") && reply.has("WRONGTYPE"),
            "{page}: {reply:?}"
        );
    }
    let overview = dashboard.get("/");
    assert!(
        overview.has(&format!("data-queue=\"{name}\"")) && !overview.has(r#"id="unworked""#),
        "{overview:?}"
    );
    let metrics = dashboard.get("/metrics");
    assert!(
        metrics.status() == 200 && metrics.has(&format!("emq_jobs{{queue=\"{name}\",state=\"pending\"}} 1"))
    );
    assert!(!metrics.has("emq_workers{"), "{metrics:?}");
    let text: String = redis::cmd("GET").arg("emq:workers").query(&mut conn).unwrap();
    assert_eq!(text, "in the way", "the reader changed nothing");
}

/// A server over its `maxmemory` is said at the top of the queues page
/// (its workers' registry beats are refused too, so the workers shown may
/// be too few), and not once it has room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_is_said_on_the_queues_page() {
    let server = RedisServer::start();
    let name = unique_queue("full");
    queue(&server, &name).await.enqueue(b"x".to_vec()).await.unwrap();
    let mut conn = server.client().get_connection().unwrap();
    let dashboard = Dashboard::start(&server, &[]);
    assert!(!dashboard.get("/").has(r#"id="full""#), "room: nothing said");
    let () = redis::cmd("CONFIG").arg(&["SET", "maxmemory", "1"]).query(&mut conn).unwrap();
    let said = |page: &str| dashboard.get(page).has("the server is full");
    echomq_test_support::eventually_blocking("the next snapshot says it", || said("/"));
    let () = redis::cmd("CONFIG").arg(&["SET", "maxmemory", "0"]).query(&mut conn).unwrap();
    echomq_test_support::eventually_blocking("and stops once there is room", || !said("/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_is_triggered_after_a_confirmation() {
    let server = RedisServer::start();
    let name = unique_queue("trigger");
    let q = queue(&server, &name).await;
    let hourly = echomq::Schedule::every("tick", Duration::from_secs(3600), "tick's payload").unwrap();
    let next = q.schedules().add(&hourly).await.unwrap().next;
    let dashboard = Dashboard::start(&server, &[]);
    let page = dashboard.get(&format!("/queues/{name}/schedules"));
    assert!(page.has(&format!(r#"action="/queues/{name}/schedules/trigger""#)), "{page:?}");
    let csrf = dashboard.csrf(&format!("/queues/{name}/schedules"));
    let path = format!("/queues/{name}/schedules/trigger");

    // Unconfirmed: a page that asks, nothing enqueued.
    let asked = dashboard.post(&path, &format!("csrf={csrf}&name=tick"));
    assert!(
        asked.status() == 200 && asked.has(r#"<p id="confirm">Enqueue the job of schedule"#),
        "{asked:?}"
    );
    assert_eq!(q.stats().await.unwrap().pending, 0);
    // Confirmed: one job of the schedule's payload, and its page.
    let done = dashboard.post(&path, &format!("csrf={csrf}&name=tick&confirmed=yes"));
    assert_eq!(done.status(), 303, "{done:?}");
    let lower = done.0.to_ascii_lowercase();
    let at = lower.find(&format!("location: /queues/{name}/jobs/")).unwrap_or_else(|| panic!("{done:?}"));
    let id: echomq::JobId =
        done.0[at..].lines().next().unwrap().rsplit('/').next().unwrap().trim().parse().unwrap();
    let job = q.inspect(&id).await.unwrap().expect("the triggered job");
    assert_eq!((job.record.state, job.record.payload.as_slice()), (State::Pending, &b"tick's payload"[..]));
    assert_eq!(q.schedules().list().await.unwrap()[0].next, next, "the next tick stays");
    assert!(dashboard.log().contains(&format!("action=\"trigger\" queue=\"{name}\"")), "{}", dashboard.log());
    // No such schedule: 404, nothing enqueued.
    let missing = dashboard.post(&path, &format!("csrf={csrf}&name=nightly&confirmed=yes"));
    assert_eq!(missing.status(), 404, "{missing:?}");
    let bad = dashboard.post(&path, &format!("csrf={csrf}&name=&confirmed=yes"));
    assert_eq!(bad.status(), 400, "{bad:?}");
    assert_eq!(q.stats().await.unwrap().pending, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_is_paused_and_resumed_after_a_confirmation() {
    let server = RedisServer::start();
    let name = unique_queue("pause");
    let q = queue(&server, &name).await;
    let hourly = echomq::Schedule::every("tick", Duration::from_secs(3600), "t").unwrap();
    q.schedules().add(&hourly).await.unwrap();
    let mut conn = server.client().get_connection().unwrap();
    let mut definition = || -> Vec<u8> {
        redis::cmd("HGET").arg(q.keyspace().schedules()).arg("tick").query(&mut conn).unwrap()
    };
    let dashboard = Dashboard::start(&server, &[]);
    let page = dashboard.get(&format!("/queues/{name}/schedules"));
    assert!(page.has(&format!(r#"action="/queues/{name}/schedules/pause""#)), "{page:?}");
    let marked = r#"<strong class="paused">paused</strong>"#;
    assert!(!page.has(marked), "{page:?}");
    let csrf = dashboard.csrf(&format!("/queues/{name}/schedules"));

    let (running, paused) = (hourly.definition(), hourly.clone().paused(true).definition());
    for (action, title, before, after, shown, then) in [
        ("pause", "Pause schedule", &running, &paused, true, "resume"),
        ("resume", "Resume schedule", &paused, &running, false, "pause"),
    ] {
        let path = format!("/queues/{name}/schedules/{action}");
        // Unconfirmed: a page that asks, nothing written.
        let asked = dashboard.post(&path, &format!("csrf={csrf}&name=tick"));
        assert!(asked.status() == 200 && asked.has(&format!(r#"<p id="confirm">{title}"#)), "{asked:?}");
        assert_eq!(&definition(), before, "{action}");
        // Confirmed: the stored definition changes, the page shows it, the write is audited.
        let done = dashboard.post(&path, &format!("csrf={csrf}&name=tick&confirmed=yes"));
        assert_eq!(done.status(), 303, "{done:?}");
        assert_eq!(&definition(), after, "{action}");
        let page = dashboard.get(&format!("/queues/{name}/schedules"));
        let form = format!(r#"action="/queues/{name}/schedules/{then}""#);
        assert!(page.has(marked) == shown && page.has(&form), "{action}: {page:?}");
        let log = dashboard.log();
        let line =
            log.lines().find(|l| l.contains(&format!(r#"action="{action} schedule""#)) && l.contains("done"));
        assert!(line.is_some_and(|l| l.contains(&format!(r#"queue="{name}""#))), "{action}: {log}");
    }

    // No such schedule: 404; a bad name: 400; nothing written either way.
    for action in ["pause", "resume"] {
        let path = format!("/queues/{name}/schedules/{action}");
        let missing = dashboard.post(&path, &format!("csrf={csrf}&name=nightly&confirmed=yes"));
        assert_eq!(missing.status(), 404, "{missing:?}");
        let bad = dashboard.post(&path, &format!("csrf={csrf}&name=&confirmed=yes"));
        assert_eq!(bad.status(), 400, "{bad:?}");
    }
    assert_eq!(definition(), running);
    assert_eq!(q.schedules().list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_batches_show_their_counts_and_an_unreadable_one_says_so() {
    let server = RedisServer::start();
    let name = unique_queue("batches");
    let q = queue(&server, &name).await;
    let opened = q.enqueue_batch_with_callback(["first", "second", "third"], "all done").await.unwrap();
    // The first done, the second dead, the third pending: settled up to 2.
    let lease = q.claim(Duration::from_secs(600)).await.unwrap().unwrap();
    assert_eq!(lease.id, opened.jobs[0]);
    lease.ack().await.unwrap();
    let lease = q.claim(Duration::from_secs(600)).await.unwrap().unwrap();
    assert_eq!(lease.id, opened.jobs[1]);
    let once = echomq::RetryPolicy::new().max_attempts(1);
    lease.fail("no", &once).await.unwrap();
    echomq::Upkeep::of(&q).settle(1000).await.unwrap();
    // A damaged state, beside it.
    let mut conn = server.client().get_multiplexed_async_connection().await.unwrap();
    let keys = q.keyspace();
    let batches = keys.role(echomq::keyspace::Role::Batches, None).unwrap();
    let open = keys.role(echomq::keyspace::Role::BatchOpen, None).unwrap();
    let () = redis::cmd("HSET")
        .arg(&batches)
        .arg("broken")
        .arg("<b>3 x</b>")
        .query_async(&mut conn)
        .await
        .unwrap();
    let () = redis::cmd("ZADD").arg(&open).arg(1).arg("broken").query_async(&mut conn).await.unwrap();
    let dashboard = Dashboard::start(&server, &[]);

    assert!(dashboard.get(&format!("/queues/{name}")).has(&format!(r#"href="/queues/{name}/batches""#)));
    let page = dashboard.get(&format!("/queues/{name}/batches"));
    assert_eq!(page.status(), 200, "{page:?}");
    let row = format!(r#"<tr data-batch="{}"><td><code>{}</code></td>"#, opened.id, opened.id);
    assert!(page.has(&row), "{page:?}");
    let counts = format!(
        r#"<td class="n">3</td><td class="n">2</td><td class="n">1</td><td class="n">1</td><td class="n">0</td><td class="n">0</td><td><code>{}</code></td>"#,
        opened.callback
    );
    assert!(page.has(&counts), "{page:?}");
    assert!(page.has("unreadable: <code>&lt;b&gt;3 x&lt;/b&gt;</code>") && !page.has("<b>3"), "{page:?}");
    assert!(!page.has(r#"id="more-batches""#), "{page:?}");

    // More than a page: the first 100, and a note.
    for n in 0..101 {
        let () = redis::cmd("ZADD")
            .arg(&open)
            .arg(2)
            .arg(format!("b{n:03}"))
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let page = dashboard.get(&format!("/queues/{name}/batches"));
    assert!(page.has("The first 100 of 103 open batches."), "{page:?}");
    assert_eq!(page.0.matches("<tr data-batch=").count(), 100, "{page:?}");
    // An unknown queue has none; a bad name is 400.
    let none = dashboard.get("/queues/no-such-queue/batches");
    assert!(none.status() == 200 && none.has(r#"id="no-batches""#), "{none:?}");
    let bad = dashboard.get("/queues/a%7Bb/batches");
    assert_eq!(bad.status(), 400, "{bad:?}");
}

/// A queue's page shows the latency of the jobs its event log saw finish,
/// says when none did, and says when the log is off; a read-only dashboard
/// leaves a dead worker in the registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_shows_the_latency_of_its_last_jobs_or_says_why_not() {
    let server = RedisServer::start();
    let (worked, idle, silent) = (unique_queue("latency"), unique_queue("idle"), unique_queue("silent"));
    let q = queue(&server, &worked).await;
    let quiet = queue(&server, &silent).await;
    let off = echomq::Config::default().events(echomq::EventLog::Off);
    quiet.configure(off).await.unwrap();
    for q in [&q, &quiet] {
        q.enqueue_batch((0..3).map(|i| format!("job {i}"))).await.unwrap();
        let leases = q.claim_many(Duration::from_secs(600), 10, None).await.unwrap().jobs;
        assert_eq!(leases.len(), 3);
        for lease in leases {
            lease.ack().await.unwrap();
        }
    }
    // Claimed but not finished: a wait, no run; still one of the jobs.
    q.enqueue(b"running".to_vec()).await.unwrap();
    let running = q.claim_many(Duration::from_secs(600), 10, None).await.unwrap().jobs;
    assert_eq!(running.len(), 1);
    queue(&server, &idle).await.enqueue(b"waiting".to_vec()).await.unwrap();
    // A dead worker (its hash gone), which a read-only dashboard must leave in the registry.
    let mut conn = server.connection().await;
    let now = now_ms();
    let () = redis::cmd("ZADD")
        .arg(echomq::keyspace::WORKERS)
        .arg(now)
        .arg("gone:1:x")
        .query_async(&mut conn)
        .await
        .unwrap();
    let dashboard = Dashboard::start(&server, &["--read-only"]);

    let page = dashboard.get(&format!("/queues/{worked}"));
    assert_eq!(page.status(), 200, "{page:?}");
    assert!(page.has(r#"Latency of the last <span id="latency-jobs">4</span> jobs"#), "{page:?}");
    assert!(page.has(r#"<table id="latency">"#) && page.has("producer's clock"), "{page:?}");
    assert!(page.has(r#"<th>wait (enqueue to claim)</th><td class="n">4</td>"#), "{page:?}");
    assert!(page.has(r#"<th>run (claim to ack)</th><td class="n">3</td>"#), "{page:?}");
    let none = dashboard.get(&format!("/queues/{idle}"));
    assert!(
        none.status() == 200 && none.has(r#"id="latency-none""#) && none.has("No recent jobs"),
        "{none:?}"
    );
    let empty = dashboard.get(&format!("/queues/{}", unique_queue("unwritten")));
    assert!(empty.status() == 200 && empty.has("No recent jobs: the event log is empty."), "{empty:?}");
    let silent = dashboard.get(&format!("/queues/{silent}"));
    assert!(silent.status() == 200 && silent.has(r#"id="latency-off""#), "{silent:?}");
    assert!(silent.has("The event log is off") && !silent.has(r#"id="latency""#), "{silent:?}");
    // The pages took snapshots, which read the worker registry and wrote nothing to it.
    let left: Option<f64> = redis::cmd("ZSCORE")
        .arg(echomq::keyspace::WORKERS)
        .arg("gone:1:x")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(left.is_some(), "the read-only dashboard took a dead worker out of the registry");
    assert!(dashboard.get("/workers").has(r#"id="no-workers""#), "and did not list it");
}

/// A flow on its parent's page is a tree: each child linked, with what the
/// parent heard of it and its state now, a nested parent's children below
/// it; a child's page names its parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parents_page_shows_its_flow_as_a_tree() {
    let server = RedisServer::start_with_module();
    let (parents, children) = (unique_queue("parents"), unique_queue("children"));
    let q = queue(&server, &parents).await;
    let nested = echomq::Flow::new(b"sum".to_vec()).child(&children, b"leaf".to_vec());
    let flow = echomq::Flow::new(b"top".to_vec()).child(&children, b"page".to_vec()).child_flow(
        &children,
        nested,
        echomq::OnFailure::Ignore,
    );
    let added = echomq::Flows::of(&q).add(flow).await.unwrap();
    let dashboard = Dashboard::start(&server, &[]);
    let page = dashboard.get(&format!("/queues/{parents}/jobs/{}", added.parent.id));
    assert_eq!(page.status(), 200, "{page:?}");
    assert!(page.has("2 of 2 children open") && page.has("1 of 1 children open"), "{page:?}");
    assert!(page.has(&format!("/queues/{children}/jobs/{}", added.children[0].id)), "{page:?}");
    assert!(page.has("now: waiting") && page.has("now: pending"), "{page:?}");
    let child = dashboard.get(&format!("/queues/{children}/jobs/{}", added.children[0].id));
    assert!(
        child.has("Its parent, told when it ends") && child.has(&format!("/queues/{parents}/jobs/")),
        "{child:?}"
    );
}

/// A partitioned queue (protocol 1.8) on `/`: its partitions' rows, and one
/// row of its own with their totals (and the ordinary queue of its name's)
/// and its exact rate; on `/metrics`, an
/// info series a partition, and its exact rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_queue_shows_its_totals() {
    use echomq::{Limit, Partitioned, Rate};
    let server = RedisServer::start();
    let name = unique_queue("parted");
    let via: std::sync::Arc<dyn echomq::Executor> =
        std::sync::Arc::new(echomq::Lua::new(server.connection().await));
    let parted = Partitioned::create(via, &name, 4).await.unwrap();
    for n in 0..6 {
        parted.enqueue(format!("{n}").into_bytes()).await.unwrap();
    }
    // One in the ordinary queue of its name (a speaker before 1.8's): counted in its total.
    parted.worked().pop().unwrap().enqueue(b"6".to_vec()).await.unwrap();
    parted.exact_rate(Limit::To(Rate { claims: 50, per: Duration::from_secs(1) })).await.unwrap();
    parted.exact_concurrency(Limit::To(8)).await.unwrap();
    let dashboard = Dashboard::start(&server, &[]);
    let page = dashboard.get("/");
    assert_eq!(page.status(), 200, "{page:?}");
    assert!(page.has("<h2>Partitioned queues</h2>"), "{page:?}");
    let row = format!(
        r#"<tr data-partitioned="{name}"><td><a href="/queues/{name}">{name}</a></td><td class="n">4</td><td class="n">7</td>"#
    );
    assert!(page.has(&row), "{page:?}");
    assert!(page.has("exact, 50/1s, at most 8 running"), "{page:?}");
    for k in 0..4 {
        let partition = echomq::partition::partition_name(&name, k, 4);
        let pending = parted.partitions()[k].stats().await.unwrap().pending;
        if pending > 0 {
            assert!(page.has(&format!(r#"data-queue="{partition}""#)), "{partition}: {page:?}");
        }
        // /metrics names each partition's partitioned queue, for a query to join on.
        let info =
            format!(r#"emq_partition_info{{queue="{partition}",partitioned="{name}",partition="{k}"}} 1"#);
        assert!(dashboard.get("/metrics").has(&info), "{info}");
    }
    // Its own page: each partition linked with its counts, and the total.
    let page = dashboard.get(&format!("/queues/{name}"));
    assert_eq!(page.status(), 200, "{page:?}");
    assert!(page.has("Partitioned over 4 queues") && page.has("0 of 4 partitions paused"), "{page:?}");
    assert!(page.has("limits: exact, 50/1s, at most 8 running"), "the exact limits: {page:?}");
    for k in 0..4 {
        let partition = echomq::partition::partition_name(&name, k, 4);
        let pending = parted.partitions()[k].stats().await.unwrap().pending;
        let cells = format!(
            r#"<tr data-partition="{partition}"><td><a href="/queues/{partition}">{partition}</a></td><td class="n"><a href="/queues/{partition}/state/pending">{pending}</a></td>"#
        );
        assert!(page.has(&cells), "{cells}: {page:?}");
    }
    assert!(page.has(r#"<tr id="total"><th>all</th><td class="n">7</td>"#), "{page:?}");
    // A job's page by the partitioned queue's name: its partition's.
    let id = parted.enqueue(b"one".to_vec()).await.unwrap();
    let found = dashboard.get(&format!("/queues/{name}/jobs/{id}"));
    let home = parted.partition_of(&id).name().to_owned();
    assert!(found.status() == 303 && found.has(&format!("location: /queues/{home}/jobs/{id}")), "{found:?}");
    assert_eq!(dashboard.get(&format!("/queues/{home}/jobs/{id}")).status(), 200);
    // Pause and resume hold every partition, as `emq pause` does.
    let csrf = dashboard.csrf(&format!("/queues/{name}"));
    for (action, paused) in [("pause", true), ("resume", false)] {
        let done = dashboard.post(&format!("/queues/{name}/{action}"), &format!("csrf={csrf}"));
        assert_eq!(done.status(), 303, "{action}: {done:?}");
        for queue in parted.partitions() {
            assert_eq!(queue.settings().await.unwrap().paused, paused, "{action}: {}", queue.name());
        }
        let said = if paused { "4 of 4 partitions paused" } else { "0 of 4 partitions paused" };
        assert!(dashboard.get(&format!("/queues/{name}")).has(said), "{action}");
    }
    assert!(dashboard.log().contains("outcome=\"done: its 4 partitions paused\""), "{}", dashboard.log());

    let metrics = dashboard.get("/metrics");
    assert!(
        metrics.has(&format!(r#"emq_partitioned_exact_rate_limit{{partitioned="{name}"}} 50"#)),
        "{metrics:?}"
    );
    assert!(
        metrics.has(&format!(r#"emq_partitioned_exact_concurrency_limit{{partitioned="{name}"}} 8"#)),
        "{metrics:?}"
    );
    let (_, body) = metrics.0.split_once("\r\n\r\n").expect("a response with a body");
    if let Some(checked) = promtool_check_metrics(body) {
        checked.unwrap_or_else(|said| panic!("promtool check metrics: {said}\n{body}"));
    }
}
