//! The dashboard's groups page (protocol 1.7): a queue's fair groups, a
//! page by name, each with its pending and running jobs, where it stands
//! and its settings; linked from the queue's page, read-only, and a bad
//! `after` refused.

mod dashboard_support;

use dashboard_support::{queue, Dashboard};
use echomq::{EnqueueOptions, Group, Limit, QueueGroups};
use echomq_test_support::{unique_queue, RedisServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queues_groups_are_shown_a_page_by_name() {
    let server = RedisServer::start();
    let name = unique_queue("groups");
    let q = queue(&server, &name).await;
    let mut ids = Vec::new();
    for group in ["tenant-7", "tenant-7", "tenant-8"] {
        ids.push(q.enqueue_with(b"p".to_vec(), EnqueueOptions::default().group(group)).await.unwrap());
    }
    let groups = QueueGroups::of(&q);
    groups.set(Group::new("tenant-7").weight(3).cap(Limit::To(2))).await.unwrap();
    groups.pause("tenant-8").await.unwrap();
    let dashboard = Dashboard::start(&server, &["--read-only"]);
    let page = dashboard.get(&format!("/queues/{name}/groups"));
    assert_eq!(page.status(), 200, "{page:?}");
    for shown in ["<td>tenant-7</td>", "weight 3, cap 2", "<td>tenant-8</td>", "weight 1, paused", ">paused<"]
    {
        assert!(page.has(shown), "{shown:?} not in {page:?}");
    }
    assert!(!page.has("method=\"post\""), "a read-only page");
    let rest = dashboard.get(&format!("/queues/{name}/groups?after=tenant-7"));
    assert!(rest.has("<td>tenant-8</td>") && !rest.has("<td>tenant-7</td>"), "{rest:?}");
    // A job's page shows its group (INSPECT's seventh key), linked to the groups.
    let job = dashboard.get(&format!("/queues/{name}/jobs/{}", ids[2].id));
    assert!(job.has("<th>group</th>") && job.has(">tenant-8</a>"), "{job:?}");
    let queue_page = dashboard.get(&format!("/queues/{name}"));
    assert!(queue_page.has(&format!("/queues/{name}/groups")), "linked from the queue's page");
    let bad = dashboard.get(&format!("/queues/{name}/groups?after={}", "g".repeat(201)));
    assert_eq!(bad.status(), 400, "{bad:?}");
    let none = dashboard.get(&format!("/queues/{}/groups", unique_queue("nogroups")));
    assert!(none.status() == 200 && none.has("No group"), "{none:?}");
}
