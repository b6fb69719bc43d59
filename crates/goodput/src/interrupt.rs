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
                        goodput_core::util::duration_text(grace)
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
/// and the servers a sweep had started orphaned. A SIGHUP ignored when
/// goodput starts (`nohup goodput sweep … &`) stays ignored: taking it over
/// had let a logout stop a sweep that nohup was to keep running.
pub struct StopSignals {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

/// Whether `sig` is ignored now (as nohup leaves SIGHUP).
#[cfg(unix)]
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter, and with a null
    // new action sigaction only reads the disposition.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    let read = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
    read && old.sa_sigaction == libc::SIG_IGN
}

impl StopSignals {
    /// Takes Ctrl-C and SIGHUP (each unless ignored) and SIGTERM over from now on,
    /// each a stream kept until it is dropped, so that none is lost between
    /// two waits. (Ctrl-C had been taken only when first awaited, so one
    /// sent before killed goodput, and one sent between two waits was lost.)
    pub fn listen() -> StopSignals {
        #[cfg(unix)]
        use tokio::signal::unix::{signal, SignalKind};
        StopSignals {
            // Ignored at start (a script's `goodput … &` without job control,
            // whose shell leaves its background jobs deaf to the terminal's
            // Ctrl-C), it stays ignored, as SIGHUP under nohup does.
            #[cfg(unix)]
            int: if ignored(libc::SIGINT) { None } else { signal(SignalKind::interrupt()).ok() },
            #[cfg(unix)]
            term: signal(SignalKind::terminate()).ok(),
            #[cfg(unix)]
            hup: if ignored(libc::SIGHUP) { None } else { signal(SignalKind::hangup()).ok() },
        }
    }

    /// The next stop signal's name; `None` when none can come any more.
    #[cfg(unix)]
    pub async fn next(&mut self) -> Option<&'static str> {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
            match s.as_mut() {
                Some(t) => t.recv().await,
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            Some(()) = recv(&mut self.int) => Some("Ctrl-C"),
            Some(()) = recv(&mut self.term) => Some("SIGTERM"),
            Some(()) = recv(&mut self.hup) => Some("SIGHUP"),
            else => None,
        }
    }

    /// The next stop signal's name; `None` when none can come any more.
    #[cfg(not(unix))]
    pub async fn next(&mut self) -> Option<&'static str> {
        tokio::signal::ctrl_c().await.ok().map(|_| "Ctrl-C")
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A Ctrl-C that comes after `listen` but before the first wait, and one
    /// between two waits, are each taken (the first had killed the process,
    /// the second been lost). Run in a child process of the test binary, as
    /// the signal is the whole process's.
    #[test]
    fn a_ctrl_c_before_a_wait_is_kept() {
        const CHILD: &str = "GOODPUT_TEST_SIGINT_CHILD";
        if std::env::var_os(CHILD).is_some() {
            // A suite run as a background job of a shell without job control
            // starts with Ctrl-C ignored, which `listen` rightly keeps so:
            // the child takes it back, as a terminal's process has it.
            // SAFETY: setting a signal's disposition to its default is sound.
            unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let mut s = StopSignals::listen();
                for _ in 0..2 {
                    // SAFETY: raise is safe to call; the signal is taken by the stream above.
                    unsafe { libc::raise(libc::SIGINT) };
                    let got = tokio::time::timeout(Duration::from_secs(20), s.next()).await;
                    assert_eq!(got, Ok(Some("Ctrl-C")));
                }
            });
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "interrupt::tests::a_ctrl_c_before_a_wait_is_kept", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "{}", String::from_utf8_lossy(&out.stdout));
    }
}
