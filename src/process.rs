//! The process around a command: what is set up before its arguments are
//! read (the allocator's settings, the host's log on stderr, the OTLP
//! exporter) and what runs it (the file mode mask, the async runtime,
//! SIGXFSZ) and turns its error into an exit code.
//!
//! Why apart from `main.rs`: that file is the command line (its grammar and
//! where each command goes); this one knows nothing of commands, only of a
//! future that ends in an exit code.

use std::future::Future;
use std::process::ExitCode;

use anyhow::Result;

use crate::allocator;
use crate::exit::Exit;

/// The process, set up (see [`Process::begin`]).
pub struct Process {
    #[cfg(feature = "otlp")]
    exporter: Option<crate::otlp::Exporter>,
}

impl Process {
    /// Sets the process up; first thing in `main`, before any thread exists
    /// (see `allocator.rs`).
    pub fn begin() -> Process {
        let malloc = allocator::tune();
        #[cfg(feature = "otlp")]
        let (otlp, exporter) = match crate::otlp::layer() {
            Some((layer, exporter)) => (Some(layer), Some(exporter)),
            None => (None, None),
        };
        {
            use tracing_subscriber::prelude::*;
            // The host's log on stderr (`RUST_LOG`, warnings by default), and
            // the lines an MCP connection asked for about its own requests;
            // with `OTEL_EXPORTER_OTLP_ENDPOINT`, the spans to a collector.
            let filter = tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn".into());
            let subscriber = tracing_subscriber::registry()
                .with(
                    tracing_subscriber::fmt::layer()
                        .with_writer(std::io::stderr)
                        .with_filter(filter),
                )
                .with(glovebox_mcp::connection_log());
            #[cfg(feature = "otlp")]
            let subscriber = subscriber.with(otlp);
            subscriber.init();
        }
        allocator::report(malloc);
        Process {
            #[cfg(feature = "otlp")]
            exporter,
        }
    }

    /// Runs a command to its exit code: an error is printed (`error: ...`)
    /// and exits 2, a closed stdout ends it quietly.
    pub fn run(self, command: impl Future<Output = Result<ExitCode>>) -> ExitCode {
        let code = run(command);
        #[cfg(feature = "otlp")]
        if let Some(exporter) = self.exporter {
            exporter.shutdown();
        }
        code
    }
}

fn run(command: impl Future<Output = Result<ExitCode>>) -> ExitCode {
    // Everything this process creates is its user's alone: the store's files (sled
    // and SQLite open them with the default mode), snapshots, exports, and the
    // files tools create in read-write grants and scratch dirs (0600, dirs 0700).
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Failed.into();
        }
    };
    let result = runtime.block_on(async {
        // A file-size limit (`ulimit -f`) reached by a write makes that write
        // fail (EFBIG), as a full disk does, instead of killing the process
        // with SIGXFSZ: the store fails and is reopened once it can (see
        // `glovebox_store::Reopening`). Once handled, the signal stays
        // handled for the life of the process.
        let xfsz = tokio::signal::unix::SignalKind::from_raw(
            rustix::process::Signal::XFSZ.as_raw(),
        );
        if let Err(e) = tokio::signal::unix::signal(xfsz) {
            tracing::warn!(error = %e, "cannot handle SIGXFSZ: a file-size limit would stop the process");
        }
        command.await
    });
    // A blocking read of stdin (a stdio server stopped by a signal while its
    // client keeps stdin open) never ends by itself: don't wait for it.
    // Everything acknowledged is durable already.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            Exit::Usage.into()
        }
    }
}

/// The reader of our stdout went away: not an error of ours.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}
