//! The dashboard's screenshots in `docs/screenshots/`: each page at 1280 px
//! wide and at 390 px (a phone), from a headless Chromium, over a few
//! queues made for the pictures. Not part of CI (it writes files):
//!
//!     cargo test -p emq --test dashboard_screenshots -- --ignored

mod dashboard_support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use dashboard_support::{dead_jobs, queue, wait_for_port, Dashboard, Running};
use echomq::transition::Config;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Limit, Queue, Rate, RetryPolicy, Schedule, Upkeep};
use echomq_test_support::{eventually, free_port, RedisServer};

/// A worker on `queue` whose jobs run until the test ends (so that the
/// workers page shows them running), beating often.
fn busy_worker(queue: Queue, concurrency: usize) -> tokio::task::JoinHandle<echomq::Result<()>> {
    let handler = |_job: JobContext| async move {
        std::future::pending::<()>().await;
        Ok::<_, HandlerError>(())
    };
    let options = WorkerOptions::default()
        .concurrency(concurrency)
        .lease(Duration::from_secs(600))
        .registry_beat(Duration::from_millis(200));
    tokio::spawn(Worker::with_options(queue, handler, options).run_until(std::future::pending()))
}

/// A history for the charts, for the pictures only: the counters of the
/// hour's past minutes and the week's past hours written straight into the
/// queue's counts hash (PROTOCOL.md §2, `emq:{q}:counts`), as the
/// transitions would have kept them; now's slot is left as they wrote it.
fn history(server: &RedisServer, name: &str) {
    let mut conn = server.client().get_connection().unwrap();
    let key = format!("emq:{{{name}}}:counts");
    let (secs, _): (u64, u64) = redis::cmd("TIME").query(&mut conn).unwrap();
    let mut totals = [0u64; 4];
    let mut fields = Vec::new();
    for (tag, len, slot_secs, scale) in [("m", 60u64, 60u64, 1u64), ("h", 168, 3600, 60)] {
        let current = secs / slot_secs;
        for back in 1..len {
            let at = current - back;
            let wave = ((at as f64 / 7.0).sin() * 0.35 + 1.0) * 600.0;
            let completed = (wave as u64 + (at * 37) % 120) * scale;
            let failed = ((at * 13) % 9 + if at % 17 == 0 { 40 } else { 0 }) * scale;
            let dead = ((at * 7) % 3) * scale / 2;
            let counted = [completed + failed + dead, completed, failed, dead];
            for (event, n) in ["enqueued", "completed", "failed", "dead"].iter().zip(counted) {
                fields.push((format!("{event}:{tag}{}", at % len), n));
            }
            if tag == "h" {
                totals.iter_mut().zip(counted).for_each(|(total, n)| *total += n);
            }
        }
    }
    for (event, n) in ["enqueued", "completed", "failed", "dead"].iter().zip(totals) {
        fields.push(((*event).to_owned(), n));
    }
    for (field, n) in fields {
        let _: i64 = redis::cmd("HINCRBY").arg(&key).arg(field).arg(n).query(&mut conn).unwrap();
    }
}
use fantoccini::{ClientBuilder, Locator};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/screenshots/*.png: run by hand after a change to the pages"]
async fn screenshots_of_every_page() {
    let server = RedisServer::start();
    let emails = queue(&server, "emails").await;
    let dead = dead_jobs(&emails, 180).await;
    let job = emails
        .enqueue_with(
            br#"{"to":"ops@example.com","template":"weekly-report","locale":"en-GB"}"#.to_vec(),
            EnqueueOptions::default()
                .attempts(5)
                .backoff_exponential(Duration::from_secs(2))
                .header("tenant", "acme"),
        )
        .await
        .unwrap()
        .id;
    let lease = loop {
        let lease = emails.claim(Duration::from_secs(600)).await.unwrap().unwrap();
        if lease.id == job {
            break lease;
        }
        lease.ack().await.unwrap();
    };
    lease.progress(r#"{"rendered":true,"sent":0}"#).await.unwrap();
    lease.ack_with(r#"{"message_id":"<20261203.1@example.com>","sent":1}"#).await.unwrap();
    emails
        .enqueue_batch(
            (0..1_240).map(|n| format!(r#"{{"to":"customer{n}@example.com","template":"receipt"}}"#)),
        )
        .await
        .unwrap();
    let reports = queue(&server, "reports").await;
    // Two open batches: one part settled (some done, some dead), one not yet.
    let invoices = (0..50).map(|n| format!("invoice {n}"));
    reports.enqueue_batch_with_callback(invoices, "invoices sent").await.unwrap();
    let once = RetryPolicy::new().max_attempts(1);
    for n in 0..20 {
        let lease = reports.claim(Duration::from_secs(600)).await.unwrap().unwrap();
        if n % 7 == 3 {
            lease.fail("PDF renderer timed out", &once).await.unwrap();
        } else {
            lease.ack().await.unwrap();
        }
    }
    reports
        .enqueue_batch_with_callback((0..8).map(|n| format!("thumbnail {n}")), "album ready")
        .await
        .unwrap();
    Upkeep::of(&reports).settle(1000).await.unwrap();
    reports.enqueue_batch((0..37).map(|n| format!("report {n}"))).await.unwrap();
    reports
        .configure(
            Config::default()
                .paused(true)
                .concurrency(Limit::To(2))
                .rate(Limit::To(Rate { claims: 10, per: Duration::from_secs(60) })),
        )
        .await
        .unwrap();
    let webhooks = queue(&server, "webhooks").await;
    webhooks.enqueue_batch((0..12).map(|n| format!("hook {n}"))).await.unwrap();
    webhooks
        .schedules()
        .add(&Schedule::every("heartbeat", Duration::from_secs(300), "ping").unwrap())
        .await
        .unwrap();
    webhooks
        .schedules()
        .add(&Schedule::cron("nightly-digest", "0 3 * * *", "Europe/Paris", "digest").unwrap().paused(true))
        .await
        .unwrap();

    // Two workers, their jobs running; reports has jobs and nobody to run them.
    let _mailer = busy_worker(emails.clone(), 4);
    let _hooker = busy_worker(webhooks.clone(), 2);
    let executor = emails.executor().clone();
    eventually("both workers are listed with their running jobs", || async {
        let workers = echomq::workers(&*executor).await.unwrap();
        let mut running: Vec<usize> = workers.iter().map(|w| w.running.len()).collect();
        running.sort_unstable();
        running == [2, 4]
    })
    .await;
    history(&server, "emails");

    let dashboard = Dashboard::start(&server, &[]);
    let driver_port = free_port();
    let _driver = Running(
        Command::new("chromedriver")
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver"),
    );
    wait_for_port(driver_port, "chromedriver");
    let profile = std::env::temp_dir().join(format!("emq-shots-{}", std::process::id()));
    let capabilities = serde_json::json!({
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                     format!("--user-data-dir={}", profile.display())],
        }
    });
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities.as_object().unwrap().clone())
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .unwrap();
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/screenshots");
    std::fs::create_dir_all(&out).unwrap();
    let pages = [
        ("queues", "/".to_owned()),
        ("queue", "/queues/emails".to_owned()),
        ("queue-week", "/queues/emails?span=hours".to_owned()),
        ("workers", "/workers".to_owned()),
        ("dead", "/queues/emails/state/dead".to_owned()),
        ("search", "/queues/emails/state/dead?q=SMTP%20421".to_owned()),
        ("job", format!("/queues/emails/jobs/{job}")),
        ("dead-job", format!("/queues/emails/jobs/{}", dead[0])),
        ("schedules", "/queues/webhooks/schedules".to_owned()),
        ("batches", "/queues/reports/batches".to_owned()),
        ("drain", "/queues/reports/drain".to_owned()),
    ];
    for (width, suffix) in [(1280, "desktop"), (390, "phone")] {
        for (name, path) in &pages {
            // Tall enough for the whole page: the content's height, and the window's own chrome.
            browser.set_window_size(width, 2400).await.unwrap();
            browser.goto(&dashboard.url(path)).await.unwrap();
            browser.wait().for_element(Locator::Css("h1")).await.unwrap();
            let script = "return [Math.ceil(document.querySelector('main').getBoundingClientRect().bottom), \
                          window.outerHeight - window.innerHeight]";
            let sizes = browser.execute(script, vec![]).await.unwrap();
            let size = |n: usize| sizes[n].as_u64().unwrap_or(0) as u32;
            browser.set_window_size(width, (size(0) + 16).clamp(480, 2400) + size(1)).await.unwrap();
            let png = browser.screenshot().await.unwrap();
            std::fs::write(out.join(format!("{name}-{suffix}.png")), png).unwrap();
        }
    }
    browser.close().await.unwrap();
    let _ = std::fs::remove_dir_all(profile);
}
