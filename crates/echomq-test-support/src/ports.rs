//! Loopback ports, never handed out twice in a process.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Mutex;

/// Every port this process handed out, never handed out again: a server a
/// test keeps down for a while (an outage) must get its own port back, not
/// find another test's new server on it (seen: a worker's ack answered by a
/// stranger's server, its job unknown there).
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A free loopback port never handed out before in this process (see
/// `HANDED_OUT`): for a test's own listener or a port it needs unused.
pub fn free_port() -> u16 {
    // The ports refused stay bound until one is found, so none comes back.
    let mut refused = Vec::new();
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        if port != 6379 && HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner()).insert(port) {
            return port;
        }
        refused.push(listener);
    }
}
