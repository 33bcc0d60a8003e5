//! The dashboard in a real headless Chromium (through chromedriver): page
//! to the last page of 2,500 dead jobs, search by an id's start and by
//! text, retry all that match after a confirmation that says how many,
//! pause and resume from the queues page, watch a count change live (no
//! reload), read a job's page with its progress, result and events, a
//! worker appearing on the workers page and leaving it when it stops (and
//! the flag on a queue whose jobs wait for no worker), and a read-only
//! dashboard that shows no form.

mod dashboard_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dashboard_support::{dead_jobs, queue, wait_for_port, Dashboard, Running};
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::State;
use echomq_test_support::{eventually, free_port, unique_queue, RedisServer};
use fantoccini::{Client, ClientBuilder, Locator};

/// How long an element may take to appear: generous, the machine is shared.
const PATIENCE: Duration = Duration::from_secs(30);

/// The text of the element `css` selects, waiting for it (the page may be loading after a click).
async fn text(client: &Client, css: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let found = match client.find(Locator::Css(css)).await {
            Ok(element) => element.text().await.ok(),
            Err(_) => None,
        };
        if let Some(text) = found {
            return text;
        }
        assert!(Instant::now() < deadline, "no {css} on the page");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until the element `css` selects says `wanted` (somewhere in its text).
async fn says(client: &Client, css: &str, wanted: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let now = text(client, css).await;
        if now.contains(wanted) {
            return now;
        }
        assert!(Instant::now() < deadline, "{css} never said {wanted:?}: {now}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Click what `locator` finds, waiting for it as [`text`] does.
async fn click(client: &Client, locator: Locator<'_>) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let clicked = match client.find(locator).await {
            Ok(element) => element.click().await.is_ok(),
            Err(_) => false,
        };
        if clicked {
            return;
        }
        assert!(Instant::now() < deadline, "nothing to click at {locator:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Type `words` into the search box and send it.
async fn search(client: &Client, words: &str) {
    let deadline = Instant::now() + PATIENCE;
    let field = loop {
        if let Ok(field) = client.find(Locator::Css("#search input[name=q]")).await {
            break field;
        }
        assert!(Instant::now() < deadline, "no search box");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    field.clear().await.unwrap();
    field.send_keys(words).await.unwrap();
    click(client, Locator::Css("#search button")).await;
}

/// Load `url` again until the page has an element `css` selects
/// (`present`) or has none: what it shows is read when the page is made.
async fn reload_until(client: &Client, url: &str, css: &str, present: bool) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        client.goto(url).await.unwrap();
        text(client, "h1").await;
        let found = !client.find_all(Locator::Css(css)).await.unwrap().is_empty();
        if found == present {
            return;
        }
        assert!(Instant::now() < deadline, "{url} never {} {css}", if present { "showed" } else { "lost" });
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// chromedriver, and a headless Chromium session through it (of `width` px).
async fn browser(width: u32) -> (Running, Client, std::path::PathBuf) {
    let port = free_port();
    let driver = Running(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (Debian's chromium-driver; scripts/test installs it)"),
    );
    wait_for_port(port, "chromedriver");
    let profile = std::env::temp_dir().join(format!("emq-chromium-{}-{port}", std::process::id()));
    let capabilities = serde_json::json!({
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
                     "--hide-scrollbars", format!("--window-size={width},900"),
                     format!("--user-data-dir={}", profile.display())],
        }
    });
    let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities.as_object().unwrap().clone())
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a headless Chromium session");
    (driver, client, profile)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_pages_searches_retries_and_pauses_in_a_real_browser() {
    let server = RedisServer::start();
    let name = unique_queue("dash");
    let q = queue(&server, &name).await;
    let ids = dead_jobs(&q, 2_500).await;
    let dashboard = Dashboard::start(&server, &[]);
    let (_driver, browser, profile) = browser(1280).await;

    // The dead jobs, newest first, 25 a page: the last page holds the oldest.
    browser.goto(&dashboard.url(&format!("/queues/{name}/state/dead"))).await.unwrap();
    says(&browser, ".pager .where", "page 1 of 100").await;
    assert_eq!(browser.find_all(Locator::Css("#jobs input[type=checkbox]")).await.unwrap().len(), 25);
    assert!(text(&browser, "#jobs").await.contains(ids[2_499].as_str()), "the newest first");
    click(&browser, Locator::Css(".pager a.last")).await;
    let at = says(&browser, ".pager .where", "page 100 of 100").await;
    assert!(at.contains("2476–2500 of 2500"), "{at}");
    let last = text(&browser, "#jobs").await;
    assert!(last.contains(ids[0].as_str()) && last.contains("SMTP 421: try later"), "{last}");
    click(&browser, Locator::Css(".pager a.prev")).await;
    says(&browser, ".pager .where", "page 99 of 100").await;

    // A search by an id's start lists it; an exact id opens the job.
    // (Ids minted in one ms share a long start: take one a few ids share.)
    let prefix = (4..30)
        .rev()
        .flat_map(|len| ids.iter().map(move |id| &id.as_str()[..len]))
        .find(|prefix| (2..=25).contains(&ids.iter().filter(|id| id.as_str().starts_with(prefix)).count()))
        .unwrap();
    let sharing: Vec<_> = ids.iter().filter(|id| id.as_str().starts_with(prefix)).collect();
    search(&browser, prefix).await;
    says(&browser, "#searched", &format!("{} id(s) of {name} start with {prefix}", sharing.len())).await;
    let listed = text(&browser, "#prefix").await;
    assert!(sharing.iter().all(|id| listed.contains(id.as_str())), "{prefix}: {listed}");
    search(&browser, ids[1_234].as_str()).await;
    says(&browser, "h1", ids[1_234].as_str()).await;
    assert!(text(&browser, "#payload").await.contains("user1234@example.com"));

    // A text search scans payloads and errors, and says where it looked.
    browser.goto(&dashboard.url(&format!("/queues/{name}/state/dead"))).await.unwrap();
    search(&browser, "user7@").await;
    let said = says(&browser, "#searched", "0 dead job(s) whose payload or error contains user7@").await;
    assert!(
        said.contains("among ranks 1 to 2000 of 2500") && said.contains("continue from rank 2001"),
        "{said}"
    );
    assert!(!text(&browser, "#jobs").await.contains(ids[7].as_str()), "job 7 is among the oldest 500");
    click(&browser, Locator::Css("#continue")).await;
    let said = says(&browser, "#searched", "among ranks 2001 to 2500 of 2500").await;
    assert!(said.starts_with("1 dead job(s)") && said.contains("That is the end of the set"), "{said}");
    assert!(text(&browser, "#jobs").await.contains(ids[7].as_str()));

    // Retry all that match, after a page that says how many.
    search(&browser, "SMTP 421").await;
    click(&browser, Locator::Css("button[value=retry-all]")).await;
    let asked = says(&browser, "#confirm", "retry all 25 dead jobs of").await;
    assert!(asked.contains("SMTP 421"), "{asked}");
    click(&browser, Locator::Css("#confirm-yes")).await;
    says(&browser, "#applied", "25 retried, 0 skipped").await;
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.pending, stats.dead), (25, 2_475));
    assert_eq!(q.inspect(&ids[100]).await.unwrap().unwrap().record.state, State::Pending);

    // Pause and resume from the queues page; the count follows live, no reload.
    browser.goto(&dashboard.url("/")).await.unwrap();
    let row = format!("tr[data-queue='{name}']");
    click(&browser, Locator::Css(&format!("{row} button.pause"))).await;
    says(&browser, &format!("{row} [data-live='{name}/flow']"), "paused").await;
    assert!(q.settings().await.unwrap().paused);
    click(&browser, Locator::Css(&format!("{row} button.resume"))).await;
    says(&browser, &format!("{row} [data-live='{name}/flow']"), "running").await;
    assert!(!q.settings().await.unwrap().paused);
    q.enqueue(b"one more".to_vec()).await.unwrap();
    says(&browser, &format!("{row} [data-live='{name}/pending']"), "26").await;

    // A job's page: pretty payload, progress, result, events in order.
    let job = q.enqueue(br#"{"to":"ops@example.com","attempt":1}"#.to_vec()).await.unwrap();
    let lease = loop {
        let lease = q.claim(Duration::from_secs(60)).await.unwrap().unwrap();
        if lease.id == job {
            break lease;
        }
        lease.ack().await.unwrap();
    };
    lease.progress("half way").await.unwrap();
    lease.ack_with(r#"{"sent":true}"#).await.unwrap();
    browser.goto(&dashboard.url(&format!("/queues/{name}/jobs/{job}"))).await.unwrap();
    let payload = text(&browser, "#payload").await;
    assert!(
        payload.contains("\n  \"to\": \"ops@example.com\"") && payload.contains("\n  \"attempt\": 1"),
        "{payload}"
    );
    assert_eq!(text(&browser, "#progress").await, "half way");
    assert!(text(&browser, "#result").await.contains("\"sent\": true"));
    assert!(text(&browser, "#record").await.contains("done"));
    let events = text(&browser, "#events").await;
    let order: Vec<usize> = ["enqueued", "active", "progress", "completed"]
        .iter()
        .map(|kind| events.find(kind).unwrap_or_else(|| panic!("no {kind} in {events}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{events}");
    browser.close().await.unwrap();
    let _ = std::fs::remove_dir_all(profile);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_dashboard_shows_no_form_and_refuses_a_post() {
    let server = RedisServer::start();
    let name = unique_queue("ro");
    let q = queue(&server, &name).await;
    let dead = dead_jobs(&q, 3).await;
    let dashboard = Dashboard::start(&server, &["--read-only"]);
    let (_driver, browser, profile) = browser(390).await;
    for page in [
        "/".to_owned(),
        format!("/queues/{name}"),
        format!("/queues/{name}/state/dead"),
        format!("/queues/{name}/jobs/{}", dead[0]),
    ] {
        browser.goto(&dashboard.url(&page)).await.unwrap();
        text(&browser, "h1").await;
        let forms = browser.find_all(Locator::Css("form[method=post]")).await.unwrap();
        assert!(forms.is_empty(), "{page} shows {} write forms", forms.len());
        assert!(browser
            .find_all(Locator::Css("button.retry, button.pause, input[type=checkbox]"))
            .await
            .unwrap()
            .is_empty());
    }
    let refused = dashboard.post(&format!("/queues/{name}/jobs/{}/retry", dead[0]), "csrf=x");
    assert_eq!(refused.status(), 403, "{refused:?}");
    eventually("the refused retry is logged", || async {
        dashboard.log().contains("refused: this dashboard is read-only")
    })
    .await;
    assert_eq!(q.stats().await.unwrap().dead, 3);
    browser.close().await.unwrap();
    let _ = std::fs::remove_dir_all(profile);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_appears_on_the_workers_page_and_leaves_when_it_stops() {
    let server = RedisServer::start();
    let name = unique_queue("staffed");
    let q = queue(&server, &name).await;
    let first = q.enqueue(b"first".to_vec()).await.unwrap();
    q.enqueue(b"second".to_vec()).await.unwrap();
    let dashboard = Dashboard::start(&server, &[]);
    let (_driver, browser, profile) = browser(1280).await;
    let row = format!("tr[data-queue='{name}']");

    // Jobs wait and nobody works the queue: flagged on the queues page and its own.
    browser.goto(&dashboard.url("/")).await.unwrap();
    says(&browser, "#unworked", &name).await;
    says(&browser, &format!("{row} td.unworked"), "0").await;
    browser.goto(&dashboard.url(&format!("/queues/{name}"))).await.unwrap();
    says(&browser, "#workers p.bad#no-worker", "No live worker works this queue").await;
    click(&browser, Locator::Css("#nav-workers")).await;
    says(&browser, "#no-workers", "No live worker").await;

    // A worker that runs one job at a time, each until released.
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let held = release.clone();
    let handler = move |_job: JobContext| {
        let held = held.clone();
        async move {
            held.acquire().await.expect("never closed").forget();
            Ok::<_, HandlerError>(())
        }
    };
    let options = WorkerOptions::default()
        .concurrency(1)
        .registry_beat(Duration::from_millis(200))
        .lease(Duration::from_secs(120));
    let worker = Worker::with_options(q.clone(), handler, options);
    let id = worker.id().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));

    // It appears with its queue and the job it runs, whose page is a click away.
    let workers = dashboard.url("/workers");
    let mine = format!("tr[data-worker='{id}']");
    reload_until(&browser, &workers, &format!("#running tr[data-job='{first}']"), true).await;
    let listed = text(&browser, &mine).await;
    assert!(listed.contains(&name) && listed.contains(&std::process::id().to_string()), "{listed}");
    assert!(listed.contains("echomq-rust"), "{listed}");
    let lease = text(&browser, &format!("#running tr[data-job='{first}']")).await;
    assert!(lease.contains(&id) && lease.contains(&name), "{lease}");
    click(&browser, Locator::Css(&format!("#running tr[data-job='{first}'] a[href$='{first}']"))).await;
    says(&browser, "h1", first.as_str()).await;

    // The queue lists its worker; one job still pending is no longer flagged.
    reload_until(&browser, &dashboard.url(&format!("/queues/{name}")), &format!("#workers {mine}"), true)
        .await;
    browser.goto(&dashboard.url("/")).await.unwrap();
    says(&browser, &format!("{row} [data-live='{name}/workers']"), "1").await;
    assert!(browser.find_all(Locator::Css("#unworked")).await.unwrap().is_empty(), "flagged with a worker");

    // Stopped (its jobs done), it leaves the page.
    release.add_permits(2);
    eventually("the worker ran both jobs", || async { q.stats().await.unwrap().done == 2 }).await;
    let _ = stop.send(());
    running.await.unwrap().unwrap();
    reload_until(&browser, &workers, &mine, false).await;
    says(&browser, "#no-workers", "No live worker").await;

    // A new job with nobody to run it is flagged again.
    let third = q.enqueue(b"third".to_vec()).await.unwrap();
    reload_until(&browser, &dashboard.url("/"), "#unworked", true).await;
    says(&browser, "#unworked", &name).await;

    // A killed worker (its future dropped mid-job, no goodbye) leaves once
    // its registration's TTL (three beats) runs out.
    let held = release.clone();
    let handler = move |_job: JobContext| {
        let held = held.clone();
        async move {
            held.acquire().await.expect("never closed").forget();
            Ok::<_, HandlerError>(())
        }
    };
    let options = WorkerOptions::default().registry_beat(Duration::from_millis(200));
    let killed = Worker::with_options(q.clone(), handler, options);
    let theirs = format!("tr[data-worker='{}']", killed.id());
    let running = tokio::spawn(killed.run_until(std::future::pending()));
    reload_until(&browser, &workers, &format!("#running tr[data-job='{third}']"), true).await;
    running.abort();
    let _ = running.await;
    reload_until(&browser, &workers, &theirs, false).await;
    browser.close().await.unwrap();
    let _ = std::fs::remove_dir_all(profile);
}
