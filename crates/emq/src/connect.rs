//! Where the server is and which executor speaks to it.

use std::sync::Arc;
use std::time::Duration;

use echomq::{Executor, Lua, Native, Queue};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// The server, as every command but `demo` takes it (the demo takes its
/// own `--redis`, with the other settings).
#[derive(clap::Args, Clone, Debug)]
pub struct Server {
    /// The Redis URL: redis://[user:password@]host:port/db (ACL user and password in the URL).
    // `--help` never shows the environment's value: it may hold a password.
    #[arg(
        long,
        global = true,
        env = "ECHOMQ_URL",
        hide_env_values = true,
        default_value = "redis://127.0.0.1:6379/"
    )]
    url: String,
    /// The executor: auto (the native module when loaded, else Lua), lua or native.
    #[arg(long, global = true, value_enum, env = "ECHOMQ_VIA", default_value_t = Via::Auto)]
    via: Via,
    /// For rediss:// URLs: the CA certificate (PEM) that signed the server's,
    /// instead of the system's roots.
    #[arg(long, global = true, env = "ECHOMQ_TLS_CA_CERT")]
    tls_ca_cert: Option<std::path::PathBuf>,
    /// The URL is one node of a Redis Cluster: the others are found from it,
    /// each queue is reached on its node, and scans cover every master.
    #[arg(long, global = true, env = "ECHOMQ_CLUSTER")]
    cluster: bool,
    /// How long a command waits for each answer from the server (a frozen
    /// or overloaded one) before it gives up: exit 3, or 4 when a write may
    /// have been done. 0 waits for ever. `work`, `events`, `result --wait`
    /// and `dashboard` wait as long as their work takes.
    #[arg(
        long,
        global = true,
        env = "ECHOMQ_RESPONSE_TIMEOUT",
        value_parser = humantime::parse_duration,
        default_value = "30s"
    )]
    response_timeout: Duration,
    /// Whether the command waits on the server as long as its work takes
    /// (`--response-timeout` does not apply): set by [`Server::waiting`].
    #[arg(skip)]
    waits: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Auto,
    Lua,
    Native,
}

pub type Error = Box<dyn std::error::Error + Send + Sync>;

impl Server {
    /// The same settings, for a command that waits on the server as long as
    /// its work takes (a blocking claim, a log followed): no `--response-timeout`.
    pub fn waiting(self) -> Server {
        Server { waits: true, ..self }
    }

    /// How long one call may wait for its answer: `--response-timeout`, unless the
    /// command waits (or it is 0).
    fn answer_within(&self) -> Option<Duration> {
        (!self.waits && !self.response_timeout.is_zero()).then_some(self.response_timeout)
    }

    /// Connections for a command-line tool: it fails fast when the server
    /// is not there (a worker's own loop retries later), and waits for an
    /// answer as long as [`Server::answer_within`] says.
    fn config(&self) -> ConnectionManagerConfig {
        ConnectionManagerConfig::new().set_response_timeout(self.answer_within()).set_number_of_retries(1)
    }

    /// [`Server::config`] for a cluster's connections.
    fn cluster_config(&self) -> ClusterConfig {
        let config = ClusterConfig::new();
        match self.answer_within() {
            Some(timeout) => config.set_response_timeout(timeout),
            None => config,
        }
    }

    /// The same settings (`--via`, TLS, `--cluster`) for the server at `url`.
    pub fn at(&self, url: &str) -> Server {
        Server { url: url.to_owned(), ..self.clone() }
    }

    /// The CA the server's certificate is checked against, when one was given.
    fn certificates(&self) -> Result<Option<redis::TlsCertificates>, Error> {
        let Some(ca) = &self.tls_ca_cert else { return Ok(None) };
        let root_cert = std::fs::read(ca).map_err(|err| format!("{}: {err}", ca.display()))?;
        Ok(Some(redis::TlsCertificates { client_tls: None, root_cert: Some(root_cert) }))
    }

    /// `--url` checked before anything is sent: a URL the client cannot
    /// read is a usage error in words (never echoed: it may hold a password).
    pub fn check(&self) -> Result<(), crate::failure::Exit> {
        if redis::Client::open(self.url.as_str()).is_ok() {
            return Ok(());
        }
        let scheme = match self.url.split_once("://") {
            Some((scheme, _)) if !scheme.contains('@') => format!(" ({scheme}:// is not one)"),
            _ => String::new(),
        };
        Err(crate::failure::Exit::usage(format!(
            "--url is not a Redis URL{scheme}: redis://[user:password@]host[:port][/db], \
             rediss://… for TLS, or unix:///path/to/redis.sock"
        )))
    }

    /// These settings as `emq` reads them from the environment: what `emq
    /// work` hands its command, so that an `emq` it runs (`emq progress`)
    /// reaches the same server the same way.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        use clap::ValueEnum;
        let via = self.via.to_possible_value().map_or("auto".to_owned(), |value| value.get_name().to_owned());
        let mut vars = vec![("ECHOMQ_URL", self.url.clone()), ("ECHOMQ_VIA", via)];
        if let Some(ca) = &self.tls_ca_cert {
            vars.push(("ECHOMQ_TLS_CA_CERT", ca.display().to_string()));
        }
        if self.cluster {
            vars.push(("ECHOMQ_CLUSTER", "true".to_owned()));
        }
        vars
    }

    /// Where the server is, for messages: its host and port (never the
    /// URL, which may hold a password).
    pub fn address(&self) -> String {
        match redis::Client::open(self.url.as_str()) {
            Ok(client) => client.get_connection_info().addr().to_string(),
            Err(_) => "the server".to_owned(),
        }
    }

    /// A client for the server, whose connections to a server gone silent
    /// (no reset, no answer) are dropped and reconnect (`echomq::executor::SILENT_PEER`).
    pub fn client(&self) -> Result<redis::Client, Error> {
        let client = match self.certificates()? {
            Some(certificates) => redis::Client::build_with_tls(self.url.as_str(), certificates)?,
            None => redis::Client::open(self.url.as_str())?,
        };
        let info =
            client.get_connection_info().clone().set_tcp_settings(echomq::executor::silent_peer_settings());
        Ok(redis::Client::open(info)?)
    }

    /// A client for the cluster the URL's node belongs to, whose connections
    /// to a node gone silent are dropped (`echomq::executor::silent_peer_settings`).
    fn cluster_client(&self) -> Result<ClusterClient, Error> {
        let mut builder = ClusterClient::builder([self.url.as_str()])
            .tcp_settings(echomq::executor::silent_peer_settings());
        if let Some(timeout) = self.answer_within() {
            builder = builder.response_timeout(timeout);
        }
        Ok(match self.certificates()? {
            Some(certificates) => builder.certs(certificates),
            None => builder,
        }
        .build()?)
    }

    /// A connection for the commands `emq` sends itself: reconnecting, with no
    /// response time-out; over every node of a cluster with `--cluster`.
    pub async fn connection(&self) -> Result<Conn, Error> {
        self.connect().await.map_err(connecting)
    }

    async fn connect(&self) -> Result<Conn, Error> {
        Ok(if self.cluster {
            Conn::Cluster(
                self.cluster_client()?.get_async_connection_with_config(self.cluster_config()).await?,
            )
        } else {
            Conn::Single(ConnectionManager::new_with_config(self.client()?, self.config()).await?)
        })
    }

    /// The executor `--via` asks for.
    pub async fn executor(&self) -> Result<Arc<dyn Executor>, Error> {
        self.open_executor().await.map_err(connecting)
    }

    async fn open_executor(&self) -> Result<Arc<dyn Executor>, Error> {
        if self.cluster {
            return self.cluster_executor().await;
        }
        Ok(match self.via {
            // A command that waits may block: `connect_with` lifts the
            // response time-out, and opens connections of its own for waits.
            Via::Auto if self.waits => echomq::connect_with(&self.client()?, self.config()).await?,
            Via::Auto => {
                let conn = ConnectionManager::new_with_config(self.client()?, self.config()).await?;
                echomq::executor::detect(conn).await?
            }
            via => {
                // A connection of its own for each waiting claim (`emq work`
                // over several queues) and each read of an event log.
                let client = self.client()?;
                let config = self.config();
                let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
                let open = move || ConnectionManager::new_with_config(client.clone(), config.clone());
                match via {
                    Via::Lua => Arc::new(Lua::new(conn).with_blocking_connections(open).on_one_server()),
                    _ => {
                        self.check_module(&conn).await?;
                        Arc::new(Native::new(conn).with_blocking_connections(open).on_one_server())
                    }
                }
            }
        })
    }

    /// `--via native` on a server without the module: refused before
    /// anything is sent, in words, rather than every call failing with
    /// `unknown command`.
    async fn check_module(&self, conn: &ConnectionManager) -> Result<(), Error> {
        let answer: redis::RedisResult<Value> =
            redis::cmd("EMQ.VERSION").query_async(&mut conn.clone()).await;
        match answer {
            Err(err)
                if err.code() == Some("ERR")
                    && err.detail().is_some_and(|d| d.contains("unknown command")) =>
            {
                Err(Box::new(echomq::Error::new(
                    echomq::ErrorKind::Argument,
                    format!(
                        "--via native, but {} has no echomq module: load it (redis-server --loadmodule \
                         …/libechomq_module.so), or use --via lua (or auto)",
                        self.address()
                    ),
                )))
            }
            _ => Ok(()),
        }
    }

    async fn cluster_executor(&self) -> Result<Arc<dyn Executor>, Error> {
        let client = self.cluster_client()?;
        Ok(match self.via {
            Via::Auto => echomq::connect_cluster(&client).await?,
            via => {
                let conn = client.get_async_connection().await?;
                let open = move || {
                    let client = client.clone();
                    async move { client.get_async_connection_with_config(ClusterConfig::new()).await }
                };
                match via {
                    Via::Lua => Arc::new(Lua::new(conn).with_blocking_connections(open)),
                    // Each native command to its first key's node (not its key count's).
                    _ => {
                        let open = move || {
                            let opened = open();
                            async move { opened.await.map(echomq::ByFirstKey) }
                        };
                        Arc::new(Native::new(echomq::ByFirstKey(conn)).with_blocking_connections(open))
                    }
                }
            }
        })
    }

    /// The executor `--via` picks, by name, for the log: with `auto`, native
    /// when the server has the module's commands, else lua.
    pub async fn executor_name(&self) -> &'static str {
        let module = async {
            let mut conn = self.connection().await.ok()?;
            let info: Value =
                redis::cmd("COMMAND").arg("INFO").arg("EMQ.CLAIM").query_async(&mut conn).await.ok()?;
            Some(matches!(&info, Value::Array(entries) if entries.iter().any(|e| *e != Value::Nil)))
        };
        match self.via {
            Via::Lua => "lua",
            Via::Native => "native",
            Via::Auto => match module.await {
                Some(true) => "native (auto)",
                Some(false) => "lua (auto)",
                None => "auto",
            },
        }
    }

    /// The partitioned queue `name` (protocol 1.8), or `None` for an ordinary queue.
    pub async fn partitioned(&self, name: &str) -> Result<Option<echomq::Partitioned>, Error> {
        Ok(echomq::Partitioned::find(self.executor().await?, name).await?)
    }

    /// Queue `name` on the server.
    pub async fn queue(&self, name: &str) -> Result<Queue, Error> {
        Ok(Queue::new(self.executor().await?, name)?)
    }
}

/// A failure met while connecting, marked so (nothing was sent yet).
fn connecting(err: Error) -> Error {
    Box::new(crate::failure::Connecting(err))
}

/// The connection `emq`'s own commands (SCAN, ZRANGE) go over: to one server,
/// or to a cluster, where a key's command goes to its node.
#[derive(Clone)]
pub enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Every key matching `pattern`, on the server or on every master.
    pub async fn scan(&mut self, pattern: &str) -> Result<Vec<String>, Error> {
        let nodes = match self {
            Conn::Single(_) => vec![None],
            Conn::Cluster(conn) => masters(conn).await?.into_iter().map(Some).collect(),
        };
        let mut keys = Vec::new();
        for node in nodes {
            let mut cursor = 0u64;
            loop {
                let mut command = redis::cmd("SCAN");
                command.arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(1000);
                let reply = match (&mut *self, &node) {
                    (Conn::Cluster(conn), Some((host, port))) => {
                        let node = SingleNodeRoutingInfo::ByAddress { host: host.clone(), port: *port };
                        conn.route_command(command, RoutingInfo::SingleNode(node)).await?
                    }
                    (conn, _) => command.query_async(conn).await?,
                };
                let (next, batch): (u64, Vec<String>) = redis::from_redis_value(reply)?;
                keys.extend(batch);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(keys)
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
        }
    }
}

/// Each master's address, as `CLUSTER SLOTS` names it.
async fn masters(conn: &mut ClusterConnection) -> Result<Vec<(String, u16)>, Error> {
    let slots: Value = redis::cmd("CLUSTER").arg("SLOTS").query_async(conn).await?;
    let mut masters = std::collections::BTreeSet::new();
    if let Value::Array(ranges) = slots {
        for range in ranges {
            let Value::Array(range) = range else { continue };
            if let Some(Value::Array(master)) = range.get(2) {
                if let (Some(Value::BulkString(host)), Some(Value::Int(port))) =
                    (master.first(), master.get(1))
                {
                    masters.insert((String::from_utf8_lossy(host).into_owned(), *port as u16));
                }
            }
        }
    }
    Ok(masters.into_iter().collect())
}
