//! Where the server is and which executor speaks to it.

use std::sync::Arc;

use echomq::{Executor, Lua, Native, Queue};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// The server, as every command but `demo` takes it.
#[derive(clap::Args, Debug)]
pub struct Server {
    /// The Redis URL: redis://[user:password@]host:port/db (ACL user and password in the URL).
    #[arg(long, global = true, env = "ECHOMQ_URL", default_value = "redis://127.0.0.1:6379/")]
    url: String,
    /// The executor: auto (the native module when loaded, else Lua), lua or native.
    #[arg(long, global = true, value_enum, default_value_t = Via::Auto)]
    via: Via,
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
        Ok(redis::Client::open(self.url.as_str())?)
    }

    /// A reconnecting connection with no response time-out (blocking claims wait).
    pub async fn connection(&self) -> Result<ConnectionManager, Error> {
        let config = ConnectionManagerConfig::new().set_response_timeout(None);
        Ok(ConnectionManager::new_with_config(self.client()?, config).await?)
    }

    /// The executor `--via` asks for.
    pub async fn executor(&self) -> Result<Arc<dyn Executor>, Error> {
        Ok(match self.via {
            Via::Auto => echomq::connect(&self.client()?).await?,
            Via::Lua => Arc::new(Lua::new(self.connection().await?)),
            Via::Native => {
                let native = Native::new(self.connection().await?);
                Arc::new(native.with_blocking_connection(self.connection().await?))
            }
        })
    }

    /// Queue `name` on the server.
    pub async fn queue(&self, name: &str) -> Result<Queue, Error> {
        Ok(Queue::with_executor(self.executor().await?, name)?)
    }
}
