//! Loopback ports, never handed out twice in a process, and never from the
//! kernel's ephemeral range.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, RandomState};
use std::net::TcpListener;
use std::sync::Mutex;

/// Every port this process handed out, never handed out again: a server a
/// test keeps down for a while (an outage) must get its own port back, not
/// find another test's new server on it (seen: a worker's ack answered by a
/// stranger's server, its job unknown there).
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// The lowest port handed out; the highest is just below the ephemeral range.
const LOWEST: u16 = 10_000;

/// A free loopback port never handed out before in this process (see
/// `HANDED_OUT`): for a test's own listener or a port it needs unused.
///
/// It is below the kernel's ephemeral range (`ip_local_port_range`), which
/// the kernel draws from for every `bind(…:0)` and every outgoing
/// connection, of any process: a port from there, freed while its server is
/// down for a test's outage, could be taken meanwhile by another test
/// binary's server or by any client's connection, and the server could not
/// come back on it. Below the range only another caller of this function
/// could take it, starting from a random port of its own.
pub fn free_port() -> u16 {
    let highest = ephemeral_low().saturating_sub(1).max(LOWEST + 1000);
    let span = u64::from(highest - LOWEST) + 1;
    let start = RandomState::new().hash_one(std::process::id()) % span;
    for step in 0..span {
        let port = LOWEST + ((start + step) % span) as u16;
        if port == 6379 || HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner()).contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner()).insert(port);
            return port;
        }
    }
    panic!("no free loopback port in {LOWEST}..={highest}");
}

/// The first port of the kernel's ephemeral range (Linux's default 32768
/// when it cannot be read).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_and_never_twice() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        assert!(ports.iter().all(|port| (LOWEST..ephemeral_low()).contains(port)), "{ports:?}");
        let distinct: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
    }
}
