//! A test's log kept in memory, to print when the test fails (the worker
//! and silent-peer tests): a `tracing` writer, and a runtime whose threads
//! log to it.

// Each test binary that includes it uses a part of it.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

/// What a test (or its runtime) logged, kept to print when the test fails.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    /// A runtime of two threads whose log (debug and up) goes here: each of
    /// its threads, and the one that blocks on it, has this log as its default
    /// subscriber, so other tests of the binary, on other threads, stay out.
    /// The guard keeps the calling thread's default, and a second, empty
    /// subscriber alive: with only one, `tracing` asks the thread that first
    /// reaches a log line (another test's, maybe) whether it is wanted, and
    /// keeps that answer for every thread.
    pub fn runtime(
        &self,
    ) -> (tokio::runtime::Runtime, (tracing::subscriber::DefaultGuard, tracing::Dispatch)) {
        let second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
        let dispatch = tracing::Dispatch::new(
            tracing_subscriber::fmt()
                .with_writer(self.clone())
                .with_ansi(false)
                .with_max_level(tracing::Level::DEBUG)
                .finish(),
        );
        let on_its_threads = dispatch.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            // For the thread's life: the guard is never dropped.
            .on_thread_start(move || std::mem::forget(tracing::dispatcher::set_default(&on_its_threads)))
            .build()
            .unwrap();
        (runtime, (tracing::dispatcher::set_default(&dispatch), second))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Log {
    type Writer = Log;

    fn make_writer(&'a self) -> Log {
        self.clone()
    }
}
