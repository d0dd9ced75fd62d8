//! The harness's turn in a controlled schedule (`crate::tracer`'s `schedule`): before the tracer
//! lets the next held call of the runtime go, the harness delivers what it is about to send and
//! acts on what the runtime answered, so that its own requests land at the same place in the
//! order in every run.
//!
//! The tracer says `{"settled":{"step":S,"held":N,"asked":K,"heard":H,"said":A,"waiting":W}}` when
//! the runtime settled, and waits for `{"action":"decide"}` (let one call go) or
//! `{"action":"settle"}` (look again: the harness is not done). `asked` counts the probe
//! announcements no answer has reached yet, `heard` the runtime's receives on sockets that are
//! neither the world's nor Unix ones — its API's, reading the harness's requests —, `said` its
//! sends on them (its answers) and `waiting` the bytes unread on them. An announcement's answer
//! is waited for only while the driver listens to the probe ([`listening`]); while it submits,
//! reads or acts, it answers none until it is done, and the calls go meanwhile, as untraced.
//!
//! While the driver expects nothing (it waits on a wave to settle) every such report holding a
//! call and owing no probe answer would be answered `decide`; the harness tells the tracer so,
//! unasked, with `{"action":"free"}`, and it then lets calls go without reporting, until
//! `{"action":"ask"}` (the driver has a submission to send). A call that goes before the tracer
//! reads an `ask` is one that would have gone had the driver come a moment later. Not while an
//! incarnation starts: there the driver's reads and submissions again after a restart come when
//! the harness gets to them, and a free tracer would meanwhile take the recovery as far as that
//! timing let it (runs of one seed of `tests/fixtures/race_step_runtime.py` parted there, 1 in 4
//! explorations under 4 busy loops): each call goes at a report until the driver is done.
//!
//! The driver says what it is doing:
//! - [`Turn::submitting`], just before a submission: it waits for the next settled report (the
//!   tracer reports an idle runtime too, every `IDLE_LOOK`), answers it `settle`, and sends, so
//!   that the request lands while every thread is held or asleep rather than while one runs;
//!   then, until the runtime has read it (`heard`
//!   grows) or it waits in the socket the runtime read the last one from (`waiting`: `FIONREAD`
//!   there; a runtime whose every IO thread is held — tokio's workers read sockets between tasks
//!   — reads it only once a call goes), no call goes: else the request would land after
//!   whichever calls went meanwhile. On a new connection neither shows until it is read, so the
//!   harness looks in the runtime's side of its own connections for the request's bytes (the
//!   kernel holds them there, accepted or not); past [`DELIVERY_GRACE`] the request is taken as in
//!   its socket (each submission on a new connection waited the whole grace before that look).
//!   A request seen in a socket (rather than read: `heard`) at a report lets no call go at that
//!   report: the tracer looked at the runtime's threads before it answered, perhaps before the
//!   request landed, when the worker it wakes (asleep in `epoll_wait`) was still asleep; one
//!   more look sees that worker run. (Without it, the reference runtime's runs under one seed
//!   parted at their 11th decision in 6 of 8, quiet machine);
//! - then, until the driver has the answer: if the runtime sent an answer (`said` grew), no call
//!   goes until the driver has it; if not, the runtime must go on to answer;
//! - [`Turn::answered`], once the answer is in: the driver acts on it (fires an `after_submit`
//!   kill, submits the next one) before any call goes;
//! - [`Turn::waiting`], when it waits on the runtime (a wave settling, a restart);
//! - [`Turn::idle_since`], once a wave has settled: the wave ends at the next report of a runtime
//!   with nothing held, not at whichever decision the harness's last status read happened to land
//!   beside. A runtime's work after its answer (a marker removed after the record that answers
//!   `SUCCEEDED`) then goes in every run, and a fault at it is reached under every schedule.
//!
//! Each wait has a deadline (a runtime that never reads, a driver that never acts), past which
//! the call goes and the run is no longer sure to replay: counted in [`Turn::overdue`]. Left
//! open: a request on a new connection the harness's client has not written within
//! [`DELIVERY_GRACE`] while every thread of the runtime that could read it is held.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Whether a request the harness sent to the API on `port` waits unread in the runtime's side of
/// one of the harness's connections (accepted or not yet: the kernel holds it either way).
fn in_socket(port: u16) -> bool {
    port != 0 && crate::run::built::request_waiting(port)
}

/// How long a submission not yet read by the runtime is waited for before it is taken as in the
/// runtime's socket (see the file's comment).
pub const DELIVERY_GRACE: Duration = Duration::from_millis(300);

/// How long the runtime has to read a submission, or the driver to act, before calls go anyway.
pub const TURN_LIMIT: Duration = Duration::from_secs(2);

/// One settled report of the tracer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct Settled {
    pub step: u64,
    pub held: usize,
    /// Probe announcements the runtime made that no answer has reached yet.
    #[serde(default)]
    pub asked: u64,
    pub heard: u64,
    #[serde(default)]
    pub said: u64,
    /// Bytes unread in the sockets the runtime read the harness's requests from.
    #[serde(default)]
    pub waiting: u64,
}

/// A line of the tracer that is not a point.
#[derive(Debug, serde::Deserialize)]
pub(super) struct SettledLine {
    pub(super) settled: Settled,
}

#[derive(Debug, Clone, Copy)]
enum Expect {
    Nothing,
    /// An incarnation starting: its calls go, each at a settled report, until the driver is done
    /// with what it does after a start (reading, submitting again) and waits on the runtime.
    /// When it comes to do that is the harness's timing; a tracer told `free` meanwhile would
    /// take the runtime's recovery as far as it got by then, reports keep it a step at a time.
    Starting,
    /// The driver has a submission to send and waits for the runtime to settle.
    Ready,
    /// A submission sent at `since` to the API on `port` (0: unknown), when the runtime had
    /// `heard` receives.
    Delivery {
        heard: u64,
        since: Instant,
        port: u16,
    },
    /// A submission read by the runtime (at `since`), its answer not yet in the driver's hands;
    /// the runtime had `said` sends before it.
    Answer {
        said: u64,
        since: Instant,
    },
    Acting {
        since: Instant,
    },
}

/// What the driver and the tracer's answering task share in a scheduled run.
#[derive(Debug)]
pub struct Turn {
    expect: Mutex<Expect>,
    changed: Notify,
    heard: AtomicU64,
    said: AtomicU64,
    overdue: AtomicU64,
    /// Settled reports answered so far.
    reports: AtomicU64,
    /// Told at every settled report answered.
    settled: Notify,
    /// Settled reports of a runtime with nothing held.
    idle: AtomicU64,
    /// Whether the driver waits for the probe's next announcement ([`listening`]).
    listening: AtomicBool,
    /// Since when reports tell of a probe answer outstanding while the driver listens, and
    /// whether its wait was counted overdue.
    asked_since: Mutex<Option<(Instant, bool)>>,
    /// Whether the driver expects nothing: the tracer is then told `free` (it lets a call go
    /// without asking, see [`Turn::free`]), and `ask` once the driver expects something again.
    free: tokio::sync::watch::Sender<bool>,
}

/// Runs `wait` (the driver's wait for the probe's next announcement) with the turn told that the
/// driver listens: an announcement outstanding meanwhile gets its answer at once, so the tracer
/// waits for it before any call goes. Told no longer once `wait` ends or is dropped (the driver
/// went to handle something else, and answers nothing until it is back).
pub async fn listening<T>(turn: Option<Arc<Turn>>, wait: impl Future<Output = T>) -> T {
    struct Listening(Option<Arc<Turn>>);
    impl Drop for Listening {
        fn drop(&mut self) {
            if let Some(turn) = &self.0 {
                turn.listening.store(false, Ordering::SeqCst);
            }
        }
    }
    if let Some(turn) = &turn {
        turn.listening.store(true, Ordering::SeqCst);
    }
    let _told = Listening(turn);
    wait.await
}

impl Default for Turn {
    fn default() -> Turn {
        Turn {
            expect: Mutex::new(Expect::Starting),
            changed: Notify::new(),
            heard: AtomicU64::new(0),
            said: AtomicU64::new(0),
            overdue: AtomicU64::new(0),
            reports: AtomicU64::new(0),
            settled: Notify::new(),
            idle: AtomicU64::new(0),
            listening: AtomicBool::new(false),
            asked_since: Mutex::new(None),
            free: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl Turn {
    fn set(&self, expect: Expect) {
        *self.expect.lock().unwrap_or_else(|p| p.into_inner()) = expect;
        let free = matches!(expect, Expect::Nothing);
        self.free.send_if_modified(|was| std::mem::replace(was, free) != free);
        self.changed.notify_waiters();
    }

    /// Whether the tracer may let calls go without asking: true while the driver expects nothing,
    /// where every report of a runtime holding a call and owing no probe answer is answered
    /// `decide` (see [`Turn::reply`]). The tracer is told each change (`traced::answer`); the
    /// calls that go before it reads one are those that would have gone had the driver moved a
    /// moment later.
    pub(super) fn free(&self) -> tokio::sync::watch::Receiver<bool> {
        self.free.subscribe()
    }

    /// Before a submission: waits for a settled report after this call (answered `settle`: no
    /// call goes), so the request lands at a settled point of the order, not while a thread runs
    /// (an idle runtime is reported every `IDLE_LOOK` of the tracer); then holds every call until
    /// the runtime has the request. Past [`TURN_LIMIT`] it is sent anyway (counted). `api_port`:
    /// the runtime's API's, where the harness sees a request in the runtime's socket itself.
    pub async fn submitting(&self, api_port: u16) {
        let since = Instant::now();
        let before = self.reports.load(Ordering::SeqCst);
        self.set(Expect::Ready);
        loop {
            let settled = self.settled.notified();
            if self.reports.load(Ordering::SeqCst) > before {
                break;
            }
            let left = TURN_LIMIT.saturating_sub(since.elapsed());
            if left.is_zero() || tokio::time::timeout(left, settled).await.is_err() {
                self.overdue.fetch_add(1, Ordering::SeqCst);
                break;
            }
        }
        let heard = self.heard.load(Ordering::SeqCst);
        self.set(Expect::Delivery { heard, since: Instant::now(), port: api_port });
    }

    pub fn answered(&self) {
        self.set(Expect::Acting { since: Instant::now() });
    }

    pub fn waiting(&self) {
        self.set(Expect::Nothing);
    }

    /// An incarnation starts (see [`Expect::Starting`]); [`Turn::waiting`] ends it.
    pub fn starting(&self) {
        self.set(Expect::Starting);
    }

    /// Reports of a settled runtime with nothing held, so far: [`Turn::idle_since`]'s mark.
    pub fn idle_reports(&self) -> u64 {
        self.idle.load(Ordering::SeqCst)
    }

    /// Whether the runtime was reported settled with nothing held after `mark` reports (taken at
    /// `since`); past [`TURN_LIMIT`] (a runtime always at work) it is taken as idle, counted.
    pub fn idle_since(&self, mark: u64, since: Instant) -> bool {
        if self.idle_reports() > mark {
            return true;
        }
        let late = since.elapsed() >= TURN_LIMIT;
        if late {
            self.overdue.fetch_add(1, Ordering::SeqCst);
        }
        late
    }

    /// Turns whose deadline passed (the run may not replay).
    pub fn overdue(&self) -> u64 {
        self.overdue.load(Ordering::SeqCst)
    }

    /// Whether a call may go now, at a settled runtime that has `heard` receives and `said`
    /// sends on the API's sockets.
    fn decide(&self, (heard, said, waiting): (u64, u64, u64)) -> bool {
        self.heard.store(heard, Ordering::SeqCst);
        self.said.store(said, Ordering::SeqCst);
        let now = Instant::now();
        let mut expect = self.expect.lock().unwrap_or_else(|p| p.into_inner());
        let late = |since: Instant, limit: Duration| {
            let late = now.duration_since(since) >= limit;
            if late && limit == TURN_LIMIT {
                self.overdue.fetch_add(1, Ordering::SeqCst);
            }
            late
        };
        // Counted from when the runtime has the request: its sends until then (the answer to
        // the driver's previous request, read by the tracer after its last report) are not it.
        // A new connection's request shows in neither count until the runtime accepts it and
        // reads: the harness looks in the runtime's side of its own connections for it.
        if let Expect::Delivery { heard: before, since, port } = *expect
            && (heard > before || waiting > 0 || in_socket(port) || late(since, DELIVERY_GRACE))
        {
            *expect = Expect::Answer { said, since: now };
            // Seen here, the request may have landed after the tracer looked at the runtime's
            // threads: one it woke (a worker asleep in `epoll_wait`) was still asleep then. The
            // tracer looks again before any call goes; else the call would race that thread.
            if heard <= before {
                return false;
            }
        }
        match *expect {
            Expect::Nothing | Expect::Starting => true,
            Expect::Ready | Expect::Delivery { .. } => false,
            // The runtime has not answered: it must go on to.
            Expect::Answer { said: before, .. } if said <= before => true,
            // It answered: the driver reads the answer and acts on it first.
            Expect::Answer { since, .. } | Expect::Acting { since } => late(since, TURN_LIMIT),
        }
    }

    /// Whether the runtime waits for probe answers (`asked` of them) the driver is about to give:
    /// it answers at once while it [`listening`], and none until it listens again while it
    /// submits, reads or acts on an answer (which may need the runtime's calls to go), so only
    /// then is the answer waited for. Up to [`TURN_LIMIT`] (an answer that does not come), counted
    /// overdue once.
    fn probe_answer_coming(&self, asked: u64) -> bool {
        let mut since = self.asked_since.lock().unwrap_or_else(|p| p.into_inner());
        if asked == 0 || !self.listening.load(Ordering::SeqCst) {
            *since = None;
            return false;
        }
        let (start, counted) = since.get_or_insert((Instant::now(), false));
        if start.elapsed() < TURN_LIMIT {
            return true;
        }
        if !*counted {
            *counted = true;
            self.overdue.fetch_add(1, Ordering::SeqCst);
        }
        false
    }

    /// Whether what holds the calls is the driver's to do (send a submission, read an answer, act
    /// on it): it says when it moves on (`changed`). Else (a submission on its way to the runtime
    /// or landed and not yet read) the tracer is told at once to look again, and looks after a
    /// moment of its own (`SETTLE_AGAIN` in the tracer).
    fn driver_to_act(&self) -> bool {
        !matches!(
            *self.expect.lock().unwrap_or_else(|p| p.into_inner()),
            Expect::Delivery { .. } | Expect::Nothing | Expect::Starting
        )
    }

    /// The answer to one settled report: `decide` when a call may go, else `settle` once the
    /// driver moved on or a moment passed (the tracer looks again and reports again).
    pub(super) async fn reply(&self, settled: Settled) -> &'static [u8] {
        // A runtime blocked on a probe answer is not idle: its work goes on once answered.
        if settled.held == 0 && settled.asked == 0 {
            self.idle.fetch_add(1, Ordering::SeqCst);
        }
        let decide =
            self.decide((settled.heard, settled.said, settled.waiting)) && !self.probe_answer_coming(settled.asked);
        // Counted only once answered `settle` in `Ready` (a report answered before `Ready` may
        // have let a call go).
        if !decide {
            self.reports.fetch_add(1, Ordering::SeqCst);
            self.settled.notify_waiters();
        }
        if decide {
            return b"{\"action\":\"decide\"}\n";
        }
        if self.driver_to_act() {
            let _ = tokio::time::timeout(Duration::from_millis(1), self.changed.notified()).await;
        }
        b"{\"action\":\"settle\"}\n"
    }
}

/// What the tracer was told of [`Turn::free`] (it starts out asking), and the changes to tell it.
pub(super) struct Told {
    free: Option<tokio::sync::watch::Receiver<bool>>,
    told: bool,
}

impl Told {
    /// For a tracer answered with `turn` (none: not a scheduled run, nothing is ever told).
    pub(super) fn new(turn: Option<&Turn>) -> Told {
        Told { free: turn.map(Turn::free), told: false }
    }

    /// The line that tells the tracer a change it has not been told, if there is one.
    pub(super) fn news(&mut self) -> Option<&'static [u8]> {
        let free = *self.free.as_mut()?.borrow_and_update();
        if free == self.told {
            return None;
        }
        self.told = free;
        Some(if free { b"{\"action\":\"free\"}\n" } else { b"{\"action\":\"ask\"}\n" })
    }

    /// Until there may be news; never without a schedule (or once the turn is gone).
    pub(super) async fn changed(&mut self) {
        let changed = match &mut self.free {
            Some(free) => free.changed().await.is_ok(),
            None => false,
        };
        if !changed {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submission_holds_the_calls_until_the_runtime_read_it_and_the_driver_acted_on_its_answer() {
        let turn = Turn::default();
        assert!(turn.decide((4, 1, 0)), "nothing expected: a call goes");
        turn.set(Expect::Delivery { heard: 4, since: Instant::now(), port: 0 });
        assert!(!turn.decide((4, 1, 0)), "the runtime has not read the submission yet");
        assert!(!turn.decide((4, 1, 310)), "in its socket, unread: delivered, but the tracer looks again first");
        assert!(turn.decide((4, 1, 310)), "delivered, and not answered: a call goes");
        assert!(turn.decide((5, 1, 0)), "read, not answered: the runtime goes on to answer");
        assert!(!turn.decide((5, 2, 0)), "answered: the driver acts on the answer first");
        turn.answered();
        assert!(!turn.decide((5, 2, 0)), "the driver acts on the answer first");
        turn.waiting();
        assert!(turn.decide((5, 2, 0)));
        assert_eq!(turn.overdue(), 0);
    }

    #[test]
    fn a_submission_read_before_the_tracer_looked_lets_a_call_go_at_once() {
        let turn = Turn::default();
        turn.set(Expect::Delivery { heard: 4, since: Instant::now(), port: 0 });
        assert!(turn.decide((5, 1, 0)), "the runtime read it before this report's look: nothing it woke is left");
    }

    #[test]
    fn a_submission_the_runtime_cannot_read_yet_is_taken_as_delivered_after_the_grace() {
        let turn = Turn::default();
        turn.set(Expect::Delivery { heard: 0, since: Instant::now(), port: 0 });
        assert!(!turn.decide((0, 0, 0)));
        let deadline = Instant::now() + DELIVERY_GRACE;
        // Waits out the grace on the clock: the grace is what is under test.
        while Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(!turn.decide((0, 0, 0)), "past the grace the request is in the runtime's socket: one more look");
        assert!(turn.decide((0, 0, 0)), "then a call goes");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_submission_waits_for_a_settled_runtime_and_holds_it_meanwhile() {
        let turn = std::sync::Arc::new(Turn::default());
        let driver = tokio::spawn({
            let turn = turn.clone();
            async move { turn.submitting(0).await }
        });
        tokio::task::yield_now().await;
        assert!(!driver.is_finished(), "no settled report yet: the driver waits");
        let report = Settled { step: 7, held: 2, asked: 0, heard: 0, said: 0, waiting: 0 };
        assert_eq!(turn.reply(report).await, b"{\"action\":\"settle\"}\n", "no call goes while the driver sends");
        tokio::time::timeout(TURN_LIMIT, driver).await.expect("the driver went on once the runtime settled").unwrap();
        assert!(matches!(*turn.expect.lock().unwrap(), Expect::Delivery { .. }));
        assert_eq!(turn.overdue(), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_settled_wave_ends_at_the_next_report_of_a_runtime_with_nothing_held() {
        let turn = Turn::default();
        let mark = turn.idle_reports();
        let since = Instant::now();
        let holding = Settled { step: 9, held: 1, asked: 0, heard: 3, said: 3, waiting: 0 };
        assert_eq!(turn.reply(holding).await, b"{\"action\":\"decide\"}\n", "the held call goes");
        assert!(!turn.idle_since(mark, since), "a call was still held: the wave is not over");
        let idle = Settled { held: 0, step: 10, ..holding };
        turn.reply(idle).await;
        assert!(turn.idle_since(mark, since), "nothing held since the mark: over");
        assert_eq!(turn.overdue(), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_probe_answer_is_waited_for_only_while_the_driver_answers_the_probe() {
        let (decide, settle): (&[u8], &[u8]) = (b"{\"action\":\"decide\"}\n", b"{\"action\":\"settle\"}\n");
        let turn = Arc::new(Turn::default());
        let asking = Settled { step: 4, held: 1, asked: 1, heard: 2, said: 2, waiting: 0 };
        let (tell, told) = tokio::sync::oneshot::channel::<()>();
        let driver = tokio::spawn(listening(Some(turn.clone()), told));
        tokio::task::yield_now().await;
        assert_eq!(turn.reply(asking).await, settle, "the driver listens: the probe's answer is coming");
        let mark = turn.idle_reports();
        assert_eq!(turn.reply(Settled { held: 0, ..asking }).await, settle);
        assert!(!turn.idle_since(mark, Instant::now()), "a runtime blocked on the probe is not idle");
        tell.send(()).unwrap();
        driver.await.unwrap().unwrap();
        assert_eq!(
            turn.reply(asking).await,
            decide,
            "the driver does something else: no answer comes until it is done"
        );
        assert_eq!(turn.reply(Settled { asked: 0, ..asking }).await, decide, "answered: a call goes");
        assert_eq!(turn.overdue(), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_tracer_is_free_to_decide_only_while_the_driver_expects_nothing() {
        let turn = Arc::new(Turn::default());
        let mut told = Told::new(Some(&turn));
        assert_eq!(told.news(), None, "an incarnation starting: the tracer asks, as it starts out doing");
        let mut free = turn.free();
        assert!(!*free.borrow_and_update());
        assert!(
            turn.decide((0, 0, 0)),
            "starting, each call goes at a report, the runtime's recovery a step at a time"
        );
        turn.waiting();
        assert_eq!(told.news(), Some(&b"{\"action\":\"free\"}\n"[..]), "waiting on the runtime: told free");
        assert_eq!(told.news(), None, "told once");
        assert!(*free.borrow_and_update());
        let driver = tokio::spawn({
            let turn = turn.clone();
            async move { turn.submitting(0).await }
        });
        free.changed().await.unwrap();
        assert!(!*free.borrow_and_update(), "a submission to send: the tracer must ask");
        turn.reply(Settled { step: 1, held: 0, asked: 0, heard: 0, said: 0, waiting: 0 }).await;
        driver.await.unwrap();
        turn.answered();
        assert!(!*free.borrow(), "acting on an answer: still asking");
        assert!(!free.has_changed().unwrap(), "no change told while it stays asking");
        turn.waiting();
        assert!(free.has_changed().unwrap() && *free.borrow_and_update(), "waiting on the runtime: free again");
        assert_eq!(told.news(), None, "asked and freed again since last told: nothing new to tell");
        assert_eq!(Told::new(None).news(), None, "no schedule: nothing is ever told");
    }

    #[test]
    fn a_settled_line_is_told_from_a_point() {
        let line: SettledLine =
            serde_json::from_str(r#"{"settled":{"step":3,"held":2,"heard":7,"said":1,"waiting":0}}"#).unwrap();
        assert_eq!(line.settled, Settled { step: 3, held: 2, asked: 0, heard: 7, said: 1, waiting: 0 });
        assert!(serde_json::from_str::<SettledLine>(r#"{"n":1,"when":"before"}"#).is_err());
    }
}
