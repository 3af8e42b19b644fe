//! Progress on long runs (`bench`, `tune`, `verify`) and the logger.
//!
//! Bars and spinners draw on stderr through one [`MultiProgress`], and only
//! when stderr is a terminal (indicatif's `ProgressDrawTarget::stderr`
//! draws nothing otherwise): CI logs and redirected output stay as they
//! were. Lines for stdout go through [`println`], and log records through
//! the logger [`init_logger`] installs, both with the bars cleared while
//! they print, so neither tears a bar.
//!
//! The logger is `env_logger` reading `CONVGRAD_LOG` (`error`, `warn`,
//! `info`, `debug`, `trace`, or per module like `convgrad=debug`; default
//! `warn`), to stderr.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::sync::LazyLock;
use std::time::Duration;

/// Every bar and spinner of the process, drawn together on stderr.
static BARS: LazyLock<MultiProgress> = LazyLock::new(MultiProgress::new);

/// A bar of `len` steps, `what` at its left, the current item as its message.
pub fn bar(len: usize, what: &str) -> ProgressBar {
    let style = ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} (eta {eta}) {wide_msg}",
    )
    .expect("a valid template")
    .progress_chars("=> ");
    let b = BARS.add(ProgressBar::new(len as u64).with_style(style).with_prefix(what.to_string()));
    b.enable_steady_tick(Duration::from_millis(500));
    b
}

/// A spinner with the time elapsed, for work of unknown length.
pub fn spinner(msg: impl Into<String>) -> ProgressBar {
    let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_msg}").expect("a valid template");
    let s = BARS.add(ProgressBar::new_spinner().with_style(style).with_message(msg.into()));
    s.enable_steady_tick(Duration::from_millis(200));
    s
}

/// Runs `f` with the bars cleared (they are drawn again after it).
pub fn suspend<R>(f: impl FnOnce() -> R) -> R {
    BARS.suspend(f)
}

/// Prints a line on stdout without tearing a bar.
pub fn println(line: impl std::fmt::Display) {
    suspend(|| println!("{line}"));
}

/// `env_logger` behind [`suspend`].
struct Logger(env_logger::Logger);

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        self.0.enabled(m)
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.0.matches(r) {
            suspend(|| self.0.log(r));
        }
    }
    fn flush(&self) {
        self.0.flush();
    }
}

/// Installs the logger: `CONVGRAD_LOG` as `env_logger` filters, default `warn`.
pub fn init_logger() {
    let logger = env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .parse_env(env_logger::Env::new().filter("CONVGRAD_LOG").write_style("CONVGRAD_LOG_STYLE"))
        .build();
    let level = logger.filter();
    // A second call (tests) keeps the first logger.
    if log::set_boxed_logger(Box::new(Logger(logger))).is_ok() {
        log::set_max_level(level);
    }
}
