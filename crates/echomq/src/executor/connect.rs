//! Connecting: which executor a server supports best ([`Native`] when the
//! module answers the host's major version, else [`Lua`]), over connections
//! that drop a silent peer, with connections of their own for waits.

use crate::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use echomq_core::version::{Version, PROTOCOL};
use redis::aio::ConnectionLike;
use redis::Value;

#[cfg(feature = "cluster")]
use super::ByFirstKey;
use super::{Executor, Lua, Native};
use crate::{Error, Result};

/// The executor a server supports best over `conn`: [`Native`] when the
/// module's commands are there, else [`Lua`]. For waiting claims
/// as well, use [`connect`].
///
/// # Errors
/// [`ErrorKind::OtherMajor`] or [`ErrorKind::OlderMinor`] when the module
/// speaks a protocol this host cannot use; [`ErrorKind::Reply`] when
/// `EMQ.VERSION` answers no version; a failure of the connection or the server.
pub async fn detect<C>(conn: C) -> Result<Arc<dyn Executor>>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    Ok(if has_module(&conn).await? { Arc::new(Native::new(conn)) } else { Arc::new(Lua::new(conn)) })
}

/// Connect to the server `client` names and pick its best executor, over
/// reconnecting connections: [`Native`] with connections of their own for
/// its blocking claims; else [`Lua`], whose idle claims wait on
/// the queue's wake-up key (`BZPOPMIN`) on connections of their own.
///
/// # Errors
/// As [`detect`]; [`ErrorKind::Unavailable`] when the server refuses the connection.
pub async fn connect(client: &redis::Client) -> Result<Arc<dyn Executor>> {
    connect_with(client, redis::aio::ConnectionManagerConfig::new()).await
}

/// [`connect`] with the connections' own settings (retries, time-outs). The
/// response time-out is always lifted: a blocking claim answers only when a
/// job comes or its wait is over.
///
/// A connection whose server's host goes silent (gone without a reset: a
/// failover that moved the address, a NAT or load balancer that dropped the
/// connection's state) is dropped by the kernel after [`SILENT_PEER`], and the
/// connection reconnects: a client with no TCP settings of its own gets
/// keepalive probes and `TCP_USER_TIMEOUT` (on Linux). Without them a request
/// waits for the kernel's retransmissions to give up, about 15 minutes, and an
/// idle connection waits for ever. A client with its own keepalive or user
/// time-out ([`redis::io::tcp::TcpSettings`]) keeps them.
///
/// # Errors
/// As [`connect`].
pub async fn connect_with(
    client: &redis::Client,
    config: redis::aio::ConnectionManagerConfig,
) -> Result<Arc<dyn Executor>> {
    use redis::aio::ConnectionManager;
    let client = &silent_peers_dropped(client)?;
    let config = config.set_response_timeout(None);
    let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
    let open = {
        let client = client.clone();
        move || ConnectionManager::new_with_config(client.clone(), config.clone())
    };
    if !has_module(&conn).await? {
        // Idle claims wait on the wake-up key: no keyspace notifications needed.
        return Ok(Arc::new(Lua::new(conn).with_blocking_connections(open).on_one_server()));
    }
    Ok(Arc::new(Native::new(conn).with_blocking_connections(open).on_one_server()))
}

/// How long a connection may go without a word from its server's host (no
/// acknowledgement of what it sent, no answer to a keepalive probe) before
/// the kernel drops it and it reconnects (see [`connect_with`]).
pub const SILENT_PEER: Duration = Duration::from_secs(30);

/// The TCP settings [`connect`] gives a client that has none of its own:
/// keepalive probes after a third of [`SILENT_PEER`] of quiet, then every
/// sixth, and (on Linux) a `TCP_USER_TIMEOUT` of [`SILENT_PEER`], so that the
/// kernel drops a connection whose peer has gone silent and it reconnects.
/// For connections made by hand, and for a Cluster client's builder
/// (`ClusterClientBuilder::tcp_settings`).
#[must_use]
pub fn silent_peer_settings() -> redis::io::tcp::TcpSettings {
    let probes = redis::io::tcp::socket2::TcpKeepalive::new().with_time(SILENT_PEER / 3);
    #[cfg(target_os = "linux")]
    let probes = probes.with_interval(SILENT_PEER / 6).with_retries(4);
    let tcp = redis::io::tcp::TcpSettings::default().set_keepalive(probes);
    #[cfg(target_os = "linux")]
    let tcp = tcp.set_user_timeout(SILENT_PEER);
    tcp
}

/// `client` with [`silent_peer_settings`], unless it has a keepalive or a
/// user time-out of its own.
fn silent_peers_dropped(client: &redis::Client) -> redis::RedisResult<redis::Client> {
    let info = client.get_connection_info();
    let tcp = info.tcp_settings();
    #[cfg(target_os = "linux")]
    let own = tcp.keepalive().is_some() || tcp.user_timeout().is_some();
    #[cfg(not(target_os = "linux"))]
    let own = tcp.keepalive().is_some();
    if own {
        return Ok(client.clone());
    }
    let tcp = silent_peer_settings().set_nodelay(tcp.nodelay());
    redis::Client::open(info.clone().set_tcp_settings(tcp))
}

/// Connect to a Redis Cluster and pick its best executor: [`Native`] when
/// the module is loaded (on every node: the check asks one), with cluster
/// connections of their own for its blocking claims; else [`Lua`],
/// whose idle claims wait on the queue's wake-up key (`BZPOPMIN`, routed by
/// the key's slot like every call).
///
/// Every transition names one queue's keys, all in the queue's `{hashtag}`
/// slot, so each call and each batch goes to one node; the cluster client
/// follows MOVED and ASK when a slot moves, and retries TRYAGAIN.
///
/// # Errors
/// As [`connect`].
#[cfg(feature = "cluster")]
pub async fn connect_cluster(client: &redis::cluster::ClusterClient) -> Result<Arc<dyn Executor>> {
    let conn = client.get_async_connection().await?;
    // A blocking command answers only when something comes or its wait is over: no response time-out.
    let open = {
        let client = client.clone();
        move || {
            let client = client.clone();
            async move { client.get_async_connection_with_config(redis::cluster::ClusterConfig::new()).await }
        }
    };
    if !has_module(&conn).await? {
        return Ok(Arc::new(Lua::new(conn).with_blocking_connections(open)));
    }
    let open = move || {
        let opened = open();
        async move { opened.await.map(ByFirstKey) }
    };
    Ok(Arc::new(Native::new(ByFirstKey(conn)).with_blocking_connections(open)))
}

/// The command that answers the module's protocol version.
const VERSION: &str = "EMQ.VERSION";

/// Whether the server has the module, asked with `EMQ.VERSION`: `false`
/// when the command is unknown, or when the user may not run it (an ACL
/// user meant for the scripts, SECURITY.md); an [`ErrorKind::OtherMajor`] when
/// the module speaks another major version of the protocol (see [`speaks`]).
async fn has_module<C: ConnectionLike + Clone>(conn: &C) -> Result<bool> {
    let answer: redis::RedisResult<Value> = redis::cmd(VERSION).query_async(&mut conn.clone()).await;
    let unknown = |err: &redis::RedisError| {
        err.code() == Some("ERR") && err.detail().is_some_and(|d| d.contains("unknown command"))
    };
    let found = match answer {
        Err(err) if unknown(&err) || err.code() == Some("NOPERM") => None,
        answer => Some(answer?),
    };
    speaks(found.as_ref())
}

/// Whether to use the module, from its `EMQ.VERSION` answer (`None`: the
/// server has no such command): yes for the host's major version, no
/// without the module, [`ErrorKind::OtherMajor`], naming both versions, for
/// another major, and [`ErrorKind::OlderMinor`] for an earlier minor (it lacks
/// calls this host makes); an answer that is no version is [`ErrorKind::Reply`].
fn speaks(answer: Option<&Value>) -> Result<bool> {
    let Some(answer) = answer else { return Ok(false) };
    let text = match answer {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok(),
        Value::SimpleString(text) => Some(text.as_str()),
        _ => None,
    };
    let found = text.and_then(Version::parse).ok_or_else(|| {
        Error::new(ErrorKind::Reply, format!("{VERSION} answered {answer:?}, not a version"))
    })?;
    if !PROTOCOL.compatible(found) {
        return Err(Error::new(ErrorKind::OtherMajor { host: PROTOCOL, found }, "the echomq module"));
    }
    if found.minor < echomq_core::MODULE_SINCE.minor {
        return Err(Error::new(ErrorKind::OlderMinor { host: PROTOCOL, found }, "the echomq module"));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::io::tcp::TcpSettings;

    #[test]
    fn the_module_is_used_at_the_hosts_major_and_refused_at_another() {
        let answer = |text: &str| Value::BulkString(text.as_bytes().to_vec());
        assert!(!speaks(None).unwrap(), "no module: Lua");
        assert!(speaks(Some(&answer(&PROTOCOL.to_string()))).unwrap());
        // This minor's calls are the module's since MODULE_SINCE: an earlier one is refused.
        let since = echomq_core::MODULE_SINCE;
        assert!(speaks(Some(&answer(&since.to_string()))).unwrap(), "a module with every call it sends");
        let earlier = Version { minor: since.minor - 1, ..since };
        let refused = speaks(Some(&answer(&earlier.to_string()))).unwrap_err();
        assert!(
            matches!(refused.kind, ErrorKind::OlderMinor { host, found } if host == PROTOCOL && found == earlier)
        );
        assert!(refused.to_string().contains("upgrade the module"), "{refused}");
        let next_minor = Version { minor: PROTOCOL.minor + 1, ..PROTOCOL };
        assert!(speaks(Some(&answer(&next_minor.to_string()))).unwrap(), "a later minor only adds");
        let next_major = Version { major: PROTOCOL.major + 1, minor: 0 };
        let refused = speaks(Some(&answer(&next_major.to_string()))).unwrap_err();
        assert!(
            matches!(refused.kind, ErrorKind::OtherMajor { host, found } if host == PROTOCOL && found == next_major)
        );
        assert_eq!(
            refused.to_string(),
            format!("the echomq module speaks protocol {next_major}, this host {PROTOCOL}: another major, so nothing was written")
        );
        for junk in [answer("1"), answer("v1.0"), Value::Int(1), Value::Nil] {
            assert!(matches!(speaks(Some(&junk)), Err(Error { kind: ErrorKind::Reply, .. })), "{junk:?}");
        }
    }

    #[test]
    fn a_client_without_tcp_settings_gets_probes_and_one_with_its_own_keeps_them() {
        let plain = redis::Client::open("redis://127.0.0.1:1/").unwrap();
        let guarded = silent_peers_dropped(&plain).unwrap();
        let tcp = guarded.get_connection_info().tcp_settings();
        assert!(tcp.keepalive().is_some());
        #[cfg(target_os = "linux")]
        assert_eq!(tcp.user_timeout(), Some(SILENT_PEER));
        assert_eq!(guarded.get_connection_info().addr(), plain.get_connection_info().addr());

        #[cfg(target_os = "linux")]
        {
            let own = TcpSettings::default().set_user_timeout(Duration::from_secs(7));
            let client =
                redis::Client::open(plain.get_connection_info().clone().set_tcp_settings(own)).unwrap();
            let kept = silent_peers_dropped(&client).unwrap();
            let tcp = kept.get_connection_info().tcp_settings();
            assert_eq!(
                (tcp.user_timeout(), tcp.keepalive().is_some()),
                (Some(Duration::from_secs(7)), false)
            );
        }
    }
}
