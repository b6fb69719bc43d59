//! How a command is stopped: Ctrl-C, SIGTERM and SIGHUP, once to stop
//! sending, twice to cancel what is in flight.

use goodput_load::Control;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Ctrl-C or SIGTERM for a whole command: once, stop sending (each run's
/// in-flight requests then get its plan's grace, and a sweep runs no further
/// point); twice, cancel them at once. SIGTERM is how Kubernetes stops a pod
/// (SIGKILL follows its grace period) and how `timeout` stops a command, so
/// a run stopped either way still writes its result.
#[derive(Clone)]
pub struct Interrupt {
    stop: CancellationToken,
    abort: CancellationToken,
    /// Runs sending requests now ([`Interrupt::busy`]): the notice speaks of
    /// in-flight requests only while there are some to speak of.
    busy: Arc<AtomicUsize>,
}

/// A run sending requests, counted while it lives.
pub struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Interrupt {
    /// Listens for Ctrl-C and SIGTERM from now on; `what` names what stops
    /// ("the sweep", "the run").
    pub fn install(what: &'static str, grace: Duration) -> Interrupt {
        let i = Interrupt { stop: CancellationToken::new(), abort: CancellationToken::new(), busy: Arc::default() };
        let (stop, abort, busy) = (i.stop.clone(), i.abort.clone(), i.busy.clone());
        // Taken over here, before the command goes on, so that a SIGTERM
        // from the first moment is caught rather than ending the process.
        let mut signals = StopSignals::listen();
        tokio::spawn(async move {
            if let Some(name) = signals.next().await {
                if busy.load(Ordering::SeqCst) > 0 {
                    goodput_core::tell!(
                        "\nstopping {what} ({name}): no new requests; in-flight ones get {} to finish (Ctrl-C or \
                         SIGTERM again to cancel them now)",
                        humantime::format_duration(grace)
                    );
                } else {
                    // Between runs (a server starting or stopping): no request to speak of.
                    goodput_core::tell!("\nstopping {what} ({name}) (Ctrl-C or SIGTERM again to stop at once)");
                }
                stop.cancel();
                if signals.next().await.is_some() {
                    abort.cancel();
                }
            }
        });
        i
    }

    /// A run's control, stopped and aborted with the command (and able to
    /// be stopped on its own, as the runner does after its grace).
    pub fn control(&self) -> Control {
        Control { stop: self.stop.child_token(), abort: self.abort.child_token(), ..Control::default() }
    }

    pub fn stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Whether the command was stopped twice: whatever is left is to end now.
    pub fn aborted(&self) -> bool {
        self.abort.is_cancelled()
    }

    /// Waits until the command is stopped.
    pub async fn wait(&self) {
        self.stop.cancelled().await
    }

    /// An interrupt stopped and aborted with this one, and by [`Interrupt::end`]
    /// on its own: one server's sweep, ended when that server exits.
    pub fn child(&self) -> Interrupt {
        Interrupt { stop: self.stop.child_token(), abort: self.abort.child_token(), busy: self.busy.clone() }
    }

    /// Marks a run sending requests until the guard is dropped.
    pub fn busy(&self) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Busy(self.busy.clone())
    }

    /// Stops and aborts it (and its children) now.
    pub fn end(&self) {
        self.stop.cancel();
        self.abort.cancel();
    }
}

/// The signals that stop a command: Ctrl-C (SIGINT) and, on Unix, SIGTERM
/// and SIGHUP (the terminal closed, or an ssh session dropped), each taken
/// as SIGTERM is. SIGHUP had killed goodput outright, leaving no document
/// and the servers a sweep had started orphaned.
pub struct StopSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Takes SIGTERM and SIGHUP over from now on (Ctrl-C is taken when first
    /// awaited).
    pub fn listen() -> StopSignals {
        #[cfg(unix)]
        use tokio::signal::unix::{signal, SignalKind};
        StopSignals {
            #[cfg(unix)]
            term: signal(SignalKind::terminate()).ok(),
            #[cfg(unix)]
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    /// The next stop signal's name; `None` when none can come any more.
    pub async fn next(&mut self) -> Option<&'static str> {
        #[cfg(unix)]
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
            match s.as_mut() {
                Some(t) => t.recv().await,
                None => std::future::pending().await,
            }
        }
        #[cfg(unix)]
        let (term, hup) = (recv(&mut self.term), recv(&mut self.hup));
        #[cfg(not(unix))]
        let (term, hup) = (std::future::pending::<Option<()>>(), std::future::pending::<Option<()>>());
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.ok().map(|_| "Ctrl-C"),
            Some(()) = term => Some("SIGTERM"),
            Some(()) = hup => Some("SIGHUP"),
        }
    }
}
