//! The dashboard in a real headless Chromium (through chromedriver): load the
//! overview and a queue's page, read the counts, click retry on a dead job,
//! and see it move to pending. And the guards: a POST without the page's CSRF
//! token is refused, and /metrics serves the counts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use echomq::{EnqueueOptions, Queue, RetryPolicy, State};
use echomq_test_support::{free_port, unique_queue, RedisServer};
use fantoccini::{ClientBuilder, Locator};

/// A child process killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One raw HTTP/1.1 request; the whole response.
fn http(port: u16, request: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// The text of the element `css` selects, waiting for it: the page may be
/// loading (after a click) or reloading (it refreshes itself every 2 s).
async fn text(client: &fantoccini::Client, css: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
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

/// Click the element `css` selects, waiting for it as [`text`] does.
async fn click(client: &fantoccini::Client, locator: Locator<'_>) {
    let deadline = Instant::now() + Duration::from_secs(20);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_a_dead_job_from_the_dashboard_in_a_real_browser() {
    let server = RedisServer::start();
    let conn = server.connection().await;
    let name = unique_queue("dash");
    let q = Queue::new(std::sync::Arc::new(echomq::Lua::new(conn)), &name).unwrap();
    let dead = q.enqueue(b"broken".to_vec()).await.unwrap();
    let job = q.claim(Duration::from_secs(60)).await.unwrap().unwrap();
    let once = RetryPolicy { max_attempts: 1, ..RetryPolicy::default() };
    job.fail("SMTP 550: mailbox unavailable", &once).await.unwrap();
    q.enqueue(b"waiting".to_vec()).await.unwrap();

    let port = free_port();
    let _dashboard = Running(
        Command::new(env!("CARGO_BIN_EXE_emq"))
            .args(["--url", &server.url(), "dashboard", "--bind", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(port, "the dashboard");

    // The guards, with no browser: no CSRF token, no write; /metrics counts.
    let path = format!("/queues/{name}/jobs/{dead}/retry");
    let refused = http(port, &format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 9\r\nConnection: close\r\n\r\ncsrf=nope"));
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    let metrics = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(metrics.contains(&format!("emq_jobs{{queue=\"{name}\",state=\"dead\"}} 1")), "{metrics}");
    // A damaged queue (a key of the wrong type) is named, and hides no other.
    let broken = unique_queue("broken");
    let mut conn = server.client().get_connection().unwrap();
    let pending = format!("emq:{{{broken}}}:pending");
    let () = redis::cmd("SET").arg(&pending).arg("in the way").query(&mut conn).unwrap();
    // A queue the registry names (as a producer noted it), its key since damaged.
    let () = redis::cmd("ZADD").arg("emq:queues").arg(1).arg(&broken).query(&mut conn).unwrap();
    let metrics = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(metrics.contains(&format!("emq_jobs{{queue=\"{name}\",state=\"dead\"}} 1")), "{metrics}");
    assert!(metrics.contains(&format!("emq_queue_unreadable{{queue=\"{broken}\"}} 1")), "{metrics}");
    let overview = http(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(overview.starts_with("HTTP/1.1 200") && overview.contains("unreadable: "), "{overview}");
    let () = redis::cmd("DEL").arg(&pending).query(&mut conn).unwrap();
    // A job's page shows its priority, which lives beside the record.
    let pq =
        Queue::new(std::sync::Arc::new(echomq::Lua::new(server.connection().await)), &unique_queue("prio"))
            .unwrap();
    let urgent =
        pq.enqueue_with(b"urgent".to_vec(), EnqueueOptions::default().priority(-5)).await.unwrap().id;
    let get =
        format!("GET /queues/{}/jobs/{urgent} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", pq.name());
    let page = http(port, &get);
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("-5 (lower first)"), "{page}");

    let driver_port = free_port();
    let _driver = Running(
        Command::new("chromedriver")
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (Debian's chromium-driver; scripts/test installs it)"),
    );
    wait_for_port(driver_port, "chromedriver");
    let profile = std::env::temp_dir().join(format!("emq-chromium-{}", std::process::id()));
    let capabilities = serde_json::json!({
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
                     format!("--user-data-dir={}", profile.display())],
        }
    });
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities.as_object().unwrap().clone())
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .expect("a headless Chromium session");

    // The overview lists the queue with its counts.
    browser.goto(&format!("http://127.0.0.1:{port}/")).await.unwrap();
    let overview = text(&browser, "#queues").await;
    let row = overview.lines().find(|l| l.starts_with(&name)).unwrap_or_else(|| panic!("{overview}"));
    assert_eq!(row.split_whitespace().skip(1).collect::<Vec<_>>(), ["1", "0", "0", "0", "1", "0"], "{row}");

    // The queue's page: one dead, one pending; click retry on the dead one.
    // (Its link works; the test then holds the page still: no self-refresh.)
    click(&browser, Locator::LinkText(&name)).await;
    assert_eq!(text(&browser, "#count-dead").await, "1");
    browser.goto(&format!("http://127.0.0.1:{port}/queues/{name}?refresh=0")).await.unwrap();
    assert_eq!(text(&browser, "#count-dead").await, "1");
    assert_eq!(text(&browser, "#count-pending").await, "1");
    assert!(text(&browser, "#jobs-dead").await.contains(dead.as_str()));
    click(&browser, Locator::Css("#jobs-dead button.retry")).await;

    // Back on the queue's page: the job moved to pending.
    let deadline = Instant::now() + Duration::from_secs(20);
    while text(&browser, "#count-pending").await != "2" {
        assert!(Instant::now() < deadline, "the retried job never showed as pending");
        tokio::time::sleep(Duration::from_millis(100)).await;
        browser.refresh().await.unwrap();
    }
    assert_eq!(text(&browser, "#count-dead").await, "0");
    assert_eq!(q.inspect(&dead).await.unwrap().unwrap().record.state, State::Pending);

    // The job's own page shows its record and its last error.
    browser.goto(&format!("http://127.0.0.1:{port}/queues/{name}/jobs/{dead}")).await.unwrap();
    let record = text(&browser, "#record").await;
    assert!(record.contains("pending") && record.contains("SMTP 550: mailbox unavailable"), "{record}");
    browser.close().await.unwrap();
    let _ = std::fs::remove_dir_all(profile);
}
