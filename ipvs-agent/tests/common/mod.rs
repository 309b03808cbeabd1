//! What more than one integration test needs: the agent's log, captured as
//! the text the fmt layer writes (no colours, no targets), for the tests
//! that check log lines. Each such test runs in a process of its own:
//! tracing's callsite caches are global, so a subscriber set by one test is
//! not reliably seen while other tests log from the same callsites.

use std::sync::{Arc, Mutex};
use tracing::subscriber::DefaultGuard;

/// Collects what the text log format writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// This thread's log, captured from [`LogCapture::start`] until it is
/// dropped.
pub struct LogCapture {
    captured: Captured,
    _guard: DefaultGuard,
}

impl LogCapture {
    /// Sets a text subscriber writing to memory as this thread's default.
    pub fn start() -> Self {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_target(false)
            .finish();
        LogCapture {
            captured,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.captured.0.lock().unwrap().clone()).unwrap()
    }
}
