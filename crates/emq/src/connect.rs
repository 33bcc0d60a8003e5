//! Where the server is and which executor speaks to it.

use std::sync::Arc;

use echomq::{Executor, Lua, Native, Queue};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// The server, as every command but `demo` takes it.
#[derive(clap::Args, Debug)]
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
    #[arg(long, global = true, value_enum, default_value_t = Via::Auto)]
    via: Via,
    /// For rediss:// URLs: the CA certificate (PEM) that signed the server's,
    /// instead of the system's roots.
    #[arg(long, global = true, env = "ECHOMQ_TLS_CA_CERT")]
    tls_ca_cert: Option<std::path::PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Auto,
    Lua,
    Native,
}

pub type Error = Box<dyn std::error::Error + Send + Sync>;

impl Server {
    /// A client for the server.
    pub fn client(&self) -> Result<redis::Client, Error> {
        let Some(ca) = &self.tls_ca_cert else { return Ok(redis::Client::open(self.url.as_str())?) };
        let root_cert = std::fs::read(ca).map_err(|err| format!("{}: {err}", ca.display()))?;
        let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(root_cert) };
        Ok(redis::Client::build_with_tls(self.url.as_str(), certificates)?)
    }

    /// A reconnecting connection with no response time-out (blocking claims wait).
    pub async fn connection(&self) -> Result<ConnectionManager, Error> {
        Ok(ConnectionManager::new_with_config(self.client()?, config()).await?)
    }

    /// The executor `--via` asks for.
    pub async fn executor(&self) -> Result<Arc<dyn Executor>, Error> {
        Ok(match self.via {
            Via::Auto => echomq::connect_with(&self.client()?, config()).await?,
            Via::Lua => Arc::new(Lua::new(self.connection().await?)),
            Via::Native => {
                // A connection of its own for each waiting claim (`emq work` over several queues).
                let client = self.client()?;
                let native = Native::new(self.connection().await?);
                Arc::new(native.with_blocking_connections(move || {
                    ConnectionManager::new_with_config(client.clone(), config())
                }))
            }
        })
    }

    /// Queue `name` on the server.
    pub async fn queue(&self, name: &str) -> Result<Queue, Error> {
        Ok(Queue::with_executor(self.executor().await?, name)?)
    }
}

/// Connections for a command-line tool: it fails fast when the server is not
/// there (a worker's own loop retries later), and waits as long as a blocking
/// claim takes.
fn config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new().set_response_timeout(None).set_number_of_retries(1)
}
