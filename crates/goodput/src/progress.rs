//! The live view of a run: progress, live TTFT and TPOT percentiles over the
//! most recent requests, output tokens/s, in-flight requests and failures by
//! kind. Full screen (ratatui) on a terminal, plain periodic lines otherwise.
//! The terminal is restored on every exit path: a guard on drop, a panic
//! hook, and Ctrl-C read as a key (raw mode swallows the signal).

use crate::cli::ProgressArg;
use goodput_core::analysis::metrics::{ms, RequestMetrics};
use goodput_core::{percentile, RequestRecord};
use goodput_load::{Control, LoadPlan};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::ExecutableCommand;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Gauge, LineGauge, Paragraph, Sparkline};
use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Latencies of the most recent requests, for live percentiles.
const RECENT: usize = 2000;

#[derive(Default)]
struct State {
    done: u64,
    /// Sessions whose last turn came back (or whose turn failed, which ends one).
    sessions_ended: u64,
    /// Planned turns that will not be sent: the rest of a session a failed
    /// turn ended, and a conversation shorter than `--turns N`.
    unplanned: u64,
    failed: BTreeMap<String, u64>,
    recent: VecDeque<(f64, Option<f64>)>,
    /// Output tokens per whole second of the run.
    per_second: Vec<u64>,
    /// Answers came whole with no output (embeddings, rerank): `recent`
    /// holds their E2E and `per_second` their input tokens.
    pooled: bool,
}

/// What the live view shows, fed by the run's record sink.
pub struct Progress {
    title: String,
    start: Instant,
    planned: Option<u64>,
    /// Sessions of a fixed number of turns (`--turns N`): that number.
    fixed_turns: Option<u32>,
    /// With sessions: `Some`, holding the sessions planned when known.
    sessions: Option<Option<u64>>,
    duration: Option<Duration>,
    /// A trace replay's last send, on the run's clock: its schedule, not
    /// the requests done, says when it ends.
    trace_end: Option<Duration>,
    sent: Arc<std::sync::atomic::AtomicU64>,
    state: Mutex<State>,
    /// The client's own CPU since the view started.
    cpu: Option<crate::cpu::Meter>,
}

/// One moment of the run.
pub struct Snapshot {
    pub elapsed: Duration,
    pub done: u64,
    /// Sessions ended, when the run has sessions.
    pub sessions_ended: Option<u64>,
    pub in_flight: u64,
    pub failed: BTreeMap<String, u64>,
    pub ttft: (Option<f64>, Option<f64>),
    pub tpot: (Option<f64>, Option<f64>),
    pub tokens_per_s: f64,
    pub per_second: Vec<u64>,
    /// Share done, when the run has a known end.
    pub fraction: Option<f64>,
    /// The time left, when the run has a known end and is under way.
    pub eta: Option<Duration>,
    /// Every request the run will send, when known: the plan's count less
    /// the turns that sessions will not send.
    pub planned: Option<u64>,
    /// The cores the client has kept busy since the start (Linux).
    pub client_cores: Option<f64>,
    /// An embeddings or rerank run: `ttft` holds E2E, `tokens_per_s` and
    /// `per_second` input tokens, and there is no TPOT.
    pub pooled: bool,
}

impl Progress {
    pub fn new(title: String, plan: &LoadPlan, control: &Control) -> Arc<Self> {
        let trace_end = trace_end(plan);
        let title = match trace_end {
            Some(end) => format!("{title} · trace replay over {}", span(end)),
            None => title,
        };
        Arc::new(Progress {
            title,
            trace_end,
            start: Instant::now(),
            planned: plan.total_requests(),
            fixed_turns: plan.sessions.as_ref().and_then(|s| s.turns.fixed()),
            sessions: plan.sessions.as_ref().map(|_| plan.counted()),
            duration: plan.sending_time(),
            sent: control.sent.clone(),
            state: Mutex::default(),
            cpu: crate::cpu::Meter::start(),
        })
    }

    pub fn observe(&self, r: &RequestRecord) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.done += 1;
        if let Some(t) = r.session {
            if t.turn == t.turns || !r.outcome.is_success() {
                s.sessions_ended += 1;
            }
            // The plan counted N turns a session: a shorter conversation, and
            // the turns a failure leaves unsent, will never come. A session's
            // turns go one after another, so its first turn comes back first.
            if t.turn == 1 {
                s.unplanned += u64::from(self.fixed_turns.map_or(0, |k| k.saturating_sub(t.turns)));
            }
            if !r.outcome.is_success() {
                s.unplanned += u64::from(t.turns.saturating_sub(t.turn));
            }
        }
        if let Some(k) = r.outcome.failure_kind() {
            *s.failed.entry(k.to_string()).or_default() += 1;
        }
        // A pooling answer (success, no output chunks): its E2E, and its
        // input tokens in the second it came back.
        if r.outcome.is_success() && r.chunks.is_empty() {
            s.pooled = true;
            if let Some(t) = r.e2e() {
                s.recent.push_back((ms(t), None));
                if s.recent.len() > RECENT {
                    s.recent.pop_front();
                }
            }
            let sec = r.end.as_secs() as usize;
            if s.per_second.len() <= sec {
                s.per_second.resize(sec + 1, 0);
            }
            s.per_second[sec] += r.input_tokens;
        }
        if r.outcome.is_success() {
            if let Some(t) = r.ttft() {
                s.recent.push_back((ms(t), r.tpot().map(ms)));
                if s.recent.len() > RECENT {
                    s.recent.pop_front();
                }
            }
        }
        // Tokens land in the second of the run their chunk arrived (the run
        // clock and this one start within microseconds of each other).
        for c in &r.chunks {
            let sec = c.t.as_secs() as usize;
            if s.per_second.len() <= sec {
                s.per_second.resize(sec + 1, 0);
            }
            s.per_second[sec] += c.tokens as u64;
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = self.start.elapsed();
        let pct = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (percentile(&v, 50.0), percentile(&v, 99.0))
        };
        let ttft = pct(s.recent.iter().map(|x| x.0).collect());
        let tpot = pct(s.recent.iter().filter_map(|x| x.1).collect());
        // Output rate over the last five whole seconds (requests report their
        // chunks when they complete, so recent seconds fill in late).
        let now = elapsed.as_secs() as usize;
        let from = now.saturating_sub(5);
        let tokens: u64 = s.per_second.iter().skip(from).take(now - from).sum();
        let planned = self.planned.map(|p| p.saturating_sub(s.unplanned));
        let fraction = match (planned, self.sessions.flatten(), self.duration) {
            (Some(n), _, _) if n > 0 => Some((s.done as f64 / n as f64).min(1.0)),
            // Sessions of drawn lengths: their count is what is known.
            (None, Some(n), _) if n > 0 => Some((s.sessions_ended as f64 / n as f64).min(1.0)),
            (None, _, Some(d)) => Some((elapsed.as_secs_f64() / d.as_secs_f64()).min(1.0)),
            _ => None,
        };
        // A trace's sends follow its schedule: a replay of 120 s with one
        // of five requests done at 5 s had been given 20 s to go.
        let eta = fraction.filter(|&x| x > 0.0 && x < 1.0).map(|x| elapsed.mul_f64((1.0 - x) / x));
        let eta = match self.trace_end {
            Some(end) if s.done < planned.unwrap_or(u64::MAX) => {
                Some(eta.unwrap_or_default().max(end.saturating_sub(elapsed)))
            }
            _ => eta,
        };
        Snapshot {
            elapsed,
            eta,
            done: s.done,
            sessions_ended: self.sessions.map(|_| s.sessions_ended),
            in_flight: self.sent.load(Ordering::Relaxed).saturating_sub(s.done),
            failed: s.failed.clone(),
            ttft,
            tpot,
            tokens_per_s: tokens as f64 / (now - from).max(1) as f64,
            per_second: s.per_second.clone(),
            fraction,
            planned,
            client_cores: self.cpu.as_ref().and_then(|m| m.cores()),
            pooled: s.pooled,
        }
    }

    fn line(&self) -> String {
        let s = self.snapshot();
        let f = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or("-".into());
        let of = s.planned.map(|p| format!("/{p}")).unwrap_or_default();
        let eta = eta(s.eta);
        let failed: u64 = s.failed.values().sum();
        let sessions = match (s.sessions_ended, self.sessions.flatten()) {
            (Some(e), Some(n)) => format!(" · {e}/{n} sessions"),
            (Some(e), None) => format!(" · {e} sessions"),
            _ => String::new(),
        };
        let kinds = if s.failed.is_empty() {
            String::new()
        } else {
            format!(" ({})", s.failed.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", "))
        };
        if s.pooled {
            return format!(
                "[{:>6.1}s] {}{of} done{sessions}{eta} · {} in flight · {failed} failed{kinds} · E2E p50 {} p99 {} ms · {:.0} in tok/s{}",
                s.elapsed.as_secs_f64(),
                s.done,
                s.in_flight,
                f(s.ttft.0),
                f(s.ttft.1),
                s.tokens_per_s,
                client(s.client_cores)
            );
        }
        format!(
            "[{:>6.1}s] {}{of} done{sessions}{eta} · {} in flight · {failed} failed{kinds} · TTFT p50 {} p99 {} ms · TPOT p50 {} p99 {} ms · {:.0} out tok/s{}",
            s.elapsed.as_secs_f64(),
            s.done,
            s.in_flight,
            f(s.ttft.0),
            f(s.ttft.1),
            f(s.tpot.0),
            f(s.tpot.1),
            s.tokens_per_s,
            client(s.client_cores)
        )
    }
}

/// The client's busy cores, as the live view shows them after the output rate.
fn client(cores: Option<f64>) -> String {
    cores.map(|c| format!(" · client {c:.2} cores")).unwrap_or_default()
}

/// A running live view; `finish` stops it and gives the terminal back.
pub struct LiveView {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveView {
    /// Starts the view the flags ask for (`None` when there is nothing to show).
    pub fn start(mode: ProgressArg, quiet: bool, progress: Arc<Progress>, control: Control) -> Option<LiveView> {
        let tty = std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
        let mode = match (mode, quiet) {
            (ProgressArg::Auto, true) | (ProgressArg::None, _) => return None,
            (ProgressArg::Auto, false) if tty => ProgressArg::Tui,
            (ProgressArg::Auto, false) => ProgressArg::Plain,
            (m, _) => m,
        };
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let thread = match mode {
            ProgressArg::Tui => std::thread::Builder::new()
                .name("goodput-live".into())
                .spawn(move || {
                    if let Err(e) = tui(&progress, &control, &d) {
                        goodput_core::tell!("warning: the live view stopped: {e}");
                    }
                })
                .ok(),
            _ => std::thread::Builder::new()
                .name("goodput-live".into())
                .spawn(move || {
                    // The plain view has no title bar: a replay's span is said once.
                    if let Some(end) = progress.trace_end {
                        goodput_core::tell!("replaying the trace: its last request is due at {}", span(end));
                    }
                    let mut next = Instant::now() + Duration::from_secs(5);
                    while !d.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(100));
                        if Instant::now() >= next {
                            goodput_core::tell!("{}", progress.line());
                            next += Duration::from_secs(5);
                        }
                    }
                })
                .ok(),
        };
        Some(LiveView { done, thread })
    }

    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Raw mode and the alternate screen, undone on drop whatever happens.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> std::io::Result<TerminalGuard> {
        enable_raw_mode()?;
        let guard = TerminalGuard;
        std::io::stderr().execute(EnterAlternateScreen)?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        Ok(guard)
    }
}

fn restore() {
    let _ = std::io::stderr().execute(LeaveAlternateScreen);
    let _ = disable_raw_mode();
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Waits up to `timeout` for a key; true for q or Ctrl-C (raw mode turns
/// Ctrl-C into a key instead of a signal).
fn quit_pressed(timeout: Duration) -> std::io::Result<bool> {
    if !event::poll(timeout)? {
        return Ok(false);
    }
    Ok(match event::read()? {
        Event::Key(k) => {
            let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
            k.kind == KeyEventKind::Press && (ctrl_c || k.code == KeyCode::Char('q'))
        }
        _ => false,
    })
}

/// ` · ETA 12s`, or nothing.
fn eta(left: Option<Duration>) -> String {
    left.map(|d| format!(" · ETA {:.0}s", d.as_secs_f64())).unwrap_or_default()
}

/// When a trace replay's last request is due on the run's clock (at its
/// --trace-speed): the last of the requests the plan sends (its -n and
/// warm-up), within its --duration. `None` without a trace.
fn trace_end(plan: &LoadPlan) -> Option<Duration> {
    let t = plan.trace.as_ref()?;
    let sent = match plan.requests {
        Some(n) if plan.warmup_time.is_zero() => (n.saturating_add(plan.warmup)).min(t.len() as u64) as usize,
        _ => t.len(),
    };
    let last = *t.get(sent.checked_sub(1)?)?;
    Some(plan.sending_time().map_or(last, |d| last.min(d)))
}

/// A span as the live view names it: `45 s`, `2.0 min`, `3.5 h`.
fn span(d: Duration) -> String {
    match d.as_secs_f64() {
        s if s < 180.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.1} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

/// A rate chart's title with its scale: bars run from 0 (the bottom) to the
/// highest second shown (the top), and the last second's value.
fn rate_title(what: &str, data: &[u64]) -> String {
    match (data.iter().max(), data.last()) {
        (Some(top), Some(now)) => format!("{what} · top of the chart {top} · last second {now}"),
        _ => what.to_string(),
    }
}

fn tui(p: &Progress, control: &Control, done: &AtomicBool) -> std::io::Result<()> {
    let _guard = TerminalGuard::enter()?;
    let backend = ratatui::backend::CrosstermBackend::new(std::io::stderr());
    let mut term = ratatui::Terminal::new(backend)?;
    let mut note = String::from("q or Ctrl-C: stop sending and finish · twice: cancel in-flight requests");
    while !done.load(Ordering::Relaxed) {
        let s = p.snapshot();
        term.draw(|f| {
            let area = f.area();
            let rows = Layout::vertical([
                Constraint::Length(3),
                Constraint::Length(7),
                Constraint::Min(4),
                Constraint::Length(1),
            ])
            .split(area);
            let sessions = s.sessions_ended.map(|e| format!(" · {e} sessions ended")).unwrap_or_default();
            // The words beside the bar, not on it: drawn over the bar's
            // colour they could not be read.
            let label = match s.fraction {
                Some(x) => format!(
                    "{} done{sessions} · {:.1}s · {:.0}%{} ",
                    s.done,
                    s.elapsed.as_secs_f64(),
                    x * 100.0,
                    eta(s.eta)
                ),
                None => format!("{} done{sessions} · {:.1}s ", s.done, s.elapsed.as_secs_f64()),
            };
            f.render_widget(
                LineGauge::default()
                    .block(Block::default().borders(Borders::ALL).title(p.title.as_str()))
                    .filled_style(Style::default().fg(Color::Cyan))
                    .ratio(s.fraction.unwrap_or(0.0).clamp(0.0, 1.0))
                    .label(label),
                rows[0],
            );
            let fmt = |v: Option<f64>| v.map(|x| format!("{x:>8.1}")).unwrap_or(format!("{:>8}", "-"));
            let failed: u64 = s.failed.values().sum();
            let mut lines = if s.pooled {
                vec![
                    Line::from(format!("in flight {:>6}    failed {:>6}", s.in_flight, failed)),
                    Line::from(format!("E2E ms    p50 {}   p99 {}", fmt(s.ttft.0), fmt(s.ttft.1))),
                    Line::from(format!("input     {:>8.0} tok/s (last 5 s){}", s.tokens_per_s, client(s.client_cores))),
                ]
            } else {
                vec![
                    Line::from(format!("in flight {:>6}    failed {:>6}", s.in_flight, failed)),
                    Line::from(format!("TTFT ms   p50 {}   p99 {}", fmt(s.ttft.0), fmt(s.ttft.1))),
                    Line::from(format!("TPOT ms   p50 {}   p99 {}", fmt(s.tpot.0), fmt(s.tpot.1))),
                    Line::from(format!("output    {:>8.0} tok/s (last 5 s){}", s.tokens_per_s, client(s.client_cores))),
                ]
            };
            if !s.failed.is_empty() {
                lines.push(Line::from(format!(
                    "failures  {}",
                    s.failed.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(" · ")
                )));
            }
            f.render_widget(
                Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title("live (last 2,000 requests)")),
                rows[1],
            );
            let width = rows[2].width.saturating_sub(2) as usize;
            let data: Vec<u64> = s.per_second.iter().rev().take(width).rev().copied().collect();
            f.render_widget(
                Sparkline::default()
                    .block(Block::default().borders(Borders::ALL).title(rate_title(
                        if s.pooled { "input tokens per second" } else { "output tokens per second" },
                        &data,
                    )))
                    .data(&data)
                    .style(Style::default().fg(Color::Green)),
                rows[2],
            );
            f.render_widget(Paragraph::new(note.as_str()), rows[3]);
        })?;
        if quit_pressed(Duration::from_millis(250))? {
            if control.stop.is_cancelled() {
                control.abort.cancel();
                note = "cancelling in-flight requests".into();
            } else {
                control.stop.cancel();
                note = "stopping: no new requests; in-flight ones finish (again to cancel them)".into();
            }
        }
    }
    Ok(())
}

/// What a serving simulator shows in its live view.
pub struct ServeStatus {
    pub lines: Vec<String>,
    /// Tokens generated so far, for the rate chart.
    pub tokens_total: u64,
    /// KV-cache use, 0..1, when the profile has one.
    pub kv: Option<f64>,
}

/// The full-screen view of `goodput serve` on a terminal, until `stop`
/// fires or the user presses q or Ctrl-C (which fires `stop`).
pub fn serve_view(
    title: String,
    status: Box<dyn Fn() -> ServeStatus + Send>,
    stop: tokio_util::sync::CancellationToken,
) -> Option<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("goodput-live".into())
        .spawn(move || {
            let run = || -> std::io::Result<()> {
                let _guard = TerminalGuard::enter()?;
                let mut term = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stderr()))?;
                let start = Instant::now();
                let mut rates: Vec<u64> = Vec::new();
                let (mut last_total, mut last_t) = (0u64, Instant::now());
                while !stop.is_cancelled() {
                    let s = status();
                    if last_t.elapsed() >= Duration::from_secs(1) {
                        rates.push(s.tokens_total.saturating_sub(last_total));
                        last_total = s.tokens_total;
                        last_t = Instant::now();
                    }
                    term.draw(|f| {
                        let rows = Layout::vertical([
                            Constraint::Length(s.lines.len() as u16 + 2),
                            Constraint::Length(3),
                            Constraint::Min(4),
                            Constraint::Length(1),
                        ])
                        .split(f.area());
                        let lines: Vec<Line> = s.lines.iter().map(|l| Line::from(l.as_str())).collect();
                        f.render_widget(
                            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title.as_str())),
                            rows[0],
                        );
                        f.render_widget(
                            Gauge::default()
                                .block(Block::default().borders(Borders::ALL).title("KV cache"))
                                .gauge_style(Style::default().fg(Color::Magenta))
                                .ratio(s.kv.unwrap_or(0.0).clamp(0.0, 1.0))
                                .label(s.kv.map(|k| format!("{:.1}%", k * 100.0)).unwrap_or("-".into())),
                            rows[1],
                        );
                        let width = rows[2].width.saturating_sub(2) as usize;
                        let data: Vec<u64> = rates.iter().rev().take(width).rev().copied().collect();
                        f.render_widget(
                            Sparkline::default()
                                .block(
                                    Block::default()
                                        .borders(Borders::ALL)
                                        .title(rate_title("tokens generated per second", &data)),
                                )
                                .data(&data)
                                .style(Style::default().fg(Color::Green)),
                            rows[2],
                        );
                        f.render_widget(
                            Paragraph::new(format!(
                                "up {:.0}s · q or Ctrl-C: stop the server",
                                start.elapsed().as_secs_f64()
                            )),
                            rows[3],
                        );
                    })?;
                    if quit_pressed(Duration::from_millis(250))? {
                        stop.cancel();
                    }
                }
                Ok(())
            };
            if let Err(e) = run() {
                goodput_core::tell!("warning: the live view stopped: {e}");
            }
        })
        .ok()
}

/// Whether a full-screen view fits: both streams on a terminal.
pub fn on_terminal() -> bool {
    std::io::stderr().is_terminal() && std::io::stdout().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::{Outcome, SessionTurn};
    use goodput_load::{LengthDist, Sessions, ThinkTime, Turns};

    fn turn(id: u64, turn: u32, turns: u32, ok: bool) -> RequestRecord {
        let mut r = RequestRecord::new(id, Duration::ZERO, Duration::ZERO);
        r.outcome = if ok { Outcome::Success } else { Outcome::Cancelled };
        r.session = Some(SessionTurn { id, turn, turns });
        // A generation that succeeded has output.
        if ok {
            let t = Duration::from_millis(5);
            r.chunks.push(goodput_core::OutputChunk { t, tokens: 1, channel: goodput_core::Channel::Content });
        }
        r
    }

    /// Four sessions of `turns`, two users at a time.
    fn four_sessions(turns: Turns) -> LoadPlan {
        LoadPlan {
            requests: Some(4),
            duration: None,
            warmup: 0,
            warmup_time: Duration::ZERO,
            concurrency: Some(2),
            rate: None,
            trace: None,
            trace_source: None,
            ramp_up: Duration::ZERO,
            sessions: Some(Sessions { turns, think: ThinkTime::Fixed(Duration::ZERO) }),
            seed: 0,
            grace: Duration::from_secs(1),
            shard: None,
            user_steps: Vec::new(),
            cancel: None,
        }
    }

    #[test]
    fn sessions_of_drawn_lengths_show_progress_by_sessions_ended() {
        let plan = four_sessions(Turns::Drawn(LengthDist::Uniform { lo: 2, hi: 4 }));
        let p = Progress::new("t".into(), &plan, &Control::default());
        // Session 0 ends with its last turn, session 1 with a turn cut short; session 2 goes on.
        for r in [turn(0, 1, 2, true), turn(0, 2, 2, true), turn(1, 1, 3, false), turn(2, 1, 4, true)] {
            p.observe(&r);
        }
        let s = p.snapshot();
        assert_eq!((s.done, s.sessions_ended, s.fraction), (4, Some(2), Some(0.5)));
        assert!(p.line().contains("4 done · 2/4 sessions"), "{}", p.line());
    }

    #[test]
    fn turns_that_will_never_be_sent_leave_the_planned_count() {
        // --turns 3, four sessions: 12 requests planned.
        let plan = four_sessions(Turns::Drawn(LengthDist::Fixed(3)));
        let p = Progress::new("t".into(), &plan, &Control::default());
        assert_eq!(p.snapshot().planned, Some(12));
        // Session 0 fails its first turn: its two other turns never go.
        // Session 1 is a two-turn conversation (a dataset's): one turn fewer.
        for r in [turn(0, 1, 3, false), turn(1, 1, 2, true), turn(1, 2, 2, true), turn(2, 1, 3, true)] {
            p.observe(&r);
        }
        let s = p.snapshot();
        assert_eq!((s.done, s.planned), (4, Some(12 - 2 - 1)));
        assert_eq!(s.fraction, Some(4.0 / 9.0));
        assert!(p.line().contains("4/9 done · 2/4 sessions"), "{}", p.line());
        if cfg!(target_os = "linux") {
            assert!(s.client_cores.is_some() && p.line().contains(" out tok/s · client "), "{}", p.line());
        }
    }

    /// A trace replay's ETA follows its schedule: one of five requests
    /// done 5 s into a 120 s replay leaves about 115 s, not the 20 s the
    /// share done gave.
    #[test]
    fn a_trace_replay_s_eta_follows_its_schedule() {
        let mut plan = four_sessions(Turns::Drawn(LengthDist::Fixed(1)));
        (plan.sessions, plan.concurrency, plan.requests) = (None, None, None);
        let at = [0u64, 30, 60, 90, 120].map(Duration::from_secs);
        plan.trace = Some(Arc::new(at.to_vec()));
        assert_eq!(trace_end(&plan), Some(Duration::from_secs(120)));
        let p = Progress::new("bench".into(), &plan, &Control::default());
        assert!(p.title.contains("trace replay over 120 s"), "{}", p.title);
        let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.outcome = Outcome::Success;
        p.observe(&r);
        let s = p.snapshot();
        assert_eq!((s.done, s.planned), (1, Some(5)));
        let left = s.eta.unwrap();
        // The schedule's 120 s less the time gone (a test's few ms).
        assert!(left > Duration::from_secs(110) && left <= Duration::from_secs(120), "{left:?}");
        // -n 2 ends the replay at the second request's time; a --duration sooner.
        plan.requests = Some(2);
        assert_eq!(trace_end(&plan), Some(Duration::from_secs(30)));
        plan.duration = Some(Duration::from_secs(10));
        assert_eq!(trace_end(&plan), Some(Duration::from_secs(10)));
        plan.trace = None;
        assert_eq!(trace_end(&plan), None);
    }

    #[test]
    fn a_pooling_run_shows_e2e_and_input_tokens() {
        let mut plan = four_sessions(Turns::Drawn(LengthDist::Fixed(1)));
        plan.sessions = None;
        let p = Progress::new("t".into(), &plan, &Control::default());
        // Embeddings answers: whole, no output chunks, 40 ms and 64 input tokens each.
        for id in 0..3 {
            let mut r = RequestRecord::new(id, Duration::ZERO, Duration::ZERO);
            r.outcome = Outcome::Success;
            (r.end, r.stream_end, r.input_tokens) = (Duration::from_millis(40), Some(Duration::from_millis(40)), 64);
            p.observe(&r);
        }
        let s = p.snapshot();
        assert!(s.pooled && s.tpot == (None, None), "no TPOT");
        assert_eq!((s.ttft.0, s.per_second.first()), (Some(40.0), Some(&192)), "E2E and input tokens");
        let line = p.line();
        assert!(line.contains("E2E p50 40.0 p99 40.0 ms") && line.contains(" in tok/s"), "{line}");
        assert!(!line.contains("TTFT") && !line.contains("TPOT"), "{line}");
    }
}
