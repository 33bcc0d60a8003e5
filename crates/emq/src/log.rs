//! Where `emq` says what happens: a `tracing` subscriber writing to stderr,
//! at info unless `-v`, `-q` or `RUST_LOG` say otherwise, as text for people
//! or as JSON lines for log shippers. The library's own events (leases lost,
//! refused acks, outages, the `maxmemory-policy` warning) come out here.

use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer, Registry};

/// How `emq` logs.
#[derive(clap::Args, Debug)]
pub struct Logging {
    /// Say more on stderr: -v for debug, -vv for trace.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Say less on stderr: -q for warnings and errors only, -qq for errors only.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    quiet: u8,
    /// The log's format on stderr: text for people, json (one object a line) for log shippers.
    #[arg(long, global = true, value_enum, env = "ECHOMQ_LOG_FORMAT", default_value_t = Format::Text)]
    log_format: Format,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
}

const LEVELS: [LevelFilter; 5] =
    [LevelFilter::ERROR, LevelFilter::WARN, LevelFilter::INFO, LevelFilter::DEBUG, LevelFilter::TRACE];

impl Logging {
    /// Install the subscriber, `usual` being the command's level before `-v`
    /// and `-q`, and `quieter` directives that hold unless `-v` is given
    /// (the demo's `echomq::worker::sink=error`: its deaths are by design).
    /// `RUST_LOG`, when set, is the filter instead (e.g.
    /// `RUST_LOG=info,echomq=debug`), as in any Rust program.
    ///
    /// `spans`, when given, is a layer beside the log's, with its own
    /// filter: OpenTelemetry's (`emq`'s `otel` feature).
    pub fn install(
        &self,
        usual: LevelFilter,
        quieter: &str,
        spans: Option<Box<dyn Layer<Registry> + Send + Sync>>,
    ) {
        let usual = LEVELS.iter().position(|level| *level == usual).unwrap_or(2);
        let level = (usual + usize::from(self.verbose)).saturating_sub(usize::from(self.quiet));
        let level = LEVELS[level.min(LEVELS.len() - 1)];
        let from_env = std::env::var("RUST_LOG").ok().filter(|directives| !directives.trim().is_empty());
        let (filter, bad) = match from_env.map(|directives| EnvFilter::try_new(&directives)) {
            Some(Ok(filter)) => (filter, None),
            Some(Err(err)) => (EnvFilter::new(level.to_string()), Some(err)),
            None if self.verbose == 0 && !quieter.is_empty() => {
                (EnvFilter::new(format!("{level},{quieter}")), None)
            }
            None => (EnvFilter::new(level.to_string()), None),
        };
        let log = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
        let log = match self.log_format {
            Format::Text => log.with_target(false).boxed(),
            Format::Json => log.json().with_current_span(true).with_span_list(false).boxed(),
        };
        let layers: Vec<_> = std::iter::once(log.with_filter(filter).boxed()).chain(spans).collect();
        tracing_subscriber::registry().with(layers).init();
        if let Some(err) = bad {
            tracing::warn!("RUST_LOG is not a filter ({err}); logging at {level} instead");
        }
    }

    /// The options that make another `emq` log as this one does: for the
    /// guard `emq work` starts (`RUST_LOG` it inherits).
    pub fn options(&self) -> Vec<String> {
        let format = clap::ValueEnum::to_possible_value(&self.log_format).expect("no format is skipped");
        let mut options = vec!["--log-format".to_owned(), format.get_name().to_owned()];
        options.extend(std::iter::repeat_n("-v".to_owned(), usize::from(self.verbose)));
        options.extend(std::iter::repeat_n("-q".to_owned(), usize::from(self.quiet)));
        options
    }
}
