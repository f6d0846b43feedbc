//! Holding one thread at a sync point while the test changes the database
//! under it: the race window made as wide as the test needs.

use std::sync::{Arc, Condvar, Mutex};

use siftdb::sync_point::{SyncPoint, SyncPoints};

#[derive(Default)]
struct State {
    /// Pause the next thread to reach the point (one-shot).
    armed: bool,
    /// A thread is held at the point.
    held: bool,
    /// Let the held thread go on.
    released: bool,
}

/// Holds the first thread that reaches `point` after [`PauseOnce::arm`]
/// (and whose name satisfies the filter) until [`PauseOnce::release`].
/// Every other arrival passes straight through.
#[derive(Clone)]
pub struct PauseOnce {
    point: SyncPoint,
    state: Arc<(Mutex<State>, Condvar)>,
    thread_name: Option<&'static str>,
}

impl PauseOnce {
    /// A pause at `point`, not yet armed.
    pub fn new(point: SyncPoint) -> PauseOnce {
        PauseOnce {
            point,
            state: Arc::default(),
            thread_name: None,
        }
    }

    /// As [`PauseOnce::new`], pausing only threads named `name`.
    pub fn for_thread(point: SyncPoint, name: &'static str) -> PauseOnce {
        PauseOnce {
            thread_name: Some(name),
            ..PauseOnce::new(point)
        }
    }

    /// The callback to install in `Options::sync_points`.
    pub fn sync_points(&self) -> SyncPoints {
        let me = self.clone();
        SyncPoints::new(move |p| me.reached(p))
    }

    /// What the callback does at `p`; call it from a callback that serves
    /// several pauses.
    pub fn reached(&self, p: SyncPoint) {
        if p != self.point {
            return;
        }
        if let Some(name) = self.thread_name {
            if std::thread::current().name() != Some(name) {
                return;
            }
        }
        let (m, cv) = &*self.state;
        let mut s = m.lock().unwrap();
        if !s.armed {
            return;
        }
        s.armed = false;
        s.held = true;
        cv.notify_all();
        while !s.released {
            s = cv.wait(s).unwrap();
        }
    }

    /// Pauses the next arrival.
    pub fn arm(&self) {
        let (m, _) = &*self.state;
        *m.lock().unwrap() = State {
            armed: true,
            ..State::default()
        };
    }

    /// Waits until a thread is held at the point; panics after 10 s.
    pub fn wait_until_held(&self) {
        let (m, cv) = &*self.state;
        let s = m.lock().unwrap();
        let (s, timeout) = cv
            .wait_timeout_while(s, std::time::Duration::from_secs(10), |s| !s.held)
            .unwrap();
        assert!(
            s.held && !timeout.timed_out(),
            "no thread reached {:?}",
            self.point
        );
    }

    /// Whether a thread is held at the point now.
    pub fn is_held(&self) -> bool {
        let s = self.state.0.lock().unwrap();
        s.held && !s.released
    }

    /// Lets the held thread (if any) go on, and disarms.
    pub fn release(&self) {
        let (m, cv) = &*self.state;
        let mut s = m.lock().unwrap();
        s.armed = false;
        s.released = true;
        cv.notify_all();
    }
}
