//! The single-host reader: one libsystemd handle on one journal (the
//! system's, a namespace, given files) on a thread of its own.
//!
//! The `sd_journal` handle is neither Send nor Sync, and libsystemd wants it
//! created, used and freed on one thread (man `sd_journal_open`). So it lives
//! on a dedicated OS thread that hands owned entries out in batches
//! ([`super::protocol`]). The thread ends when the receiver is dropped.
//!
//! Besides entries it reports [`ReaderEvent::Tail`]: everything written
//! before that point was sent. Asked with [`ReaderCtl::Sync`], it says so
//! once more after looking again, which is how the service confirms that
//! quiet time is quiet in the journal too (design section 4.1), even after
//! the whole process was stopped for a while.
//!
//! Waiting: a following reader polls the journal's fd and its control line
//! together ([`handle::wait`]), so a control message is answered at once.
//! The poll has a timeout of [`WAIT`] (1 s), busy or quiet: journald
//! says a file changed at most every 250 ms (its post-change timer
//! coalesces the appends in between), so a line is read within that of
//! its write, and polling more often while entries come would only wake
//! the thread more (a busy node's kubelet at 50 lines/s: 25 wakeups a
//! second with a 50 ms poll, 4 with journald's notifications alone; the
//! alert's latency stays well inside its 500 ms). On a file system without
//! inotify nothing would say so at all: the timeout is then the delay.

use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use systemd::journal::{Journal, JournalWaitResult};
use tokio::sync::mpsc;

use super::census::{Count, Walked, count};
use super::handle::{
    self, Intact, Interner, Start, Target, damaged, find_cursor, in_match, journal_files,
    read_entry, resume_whole, seqnum,
};
use super::protocol::{ControlLine, Mode, ReadError, Reader, ReaderCtl, ReaderEvent};
use super::{EntryFilter, SourceError};

/// What a single-host reader reads.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub target: Target,
    pub filter: EntryFilter,
    pub start: Start,
    pub mode: Mode,
    /// Entries per batch handed over the channel.
    pub batch: usize,
    /// A follower reopens its handles when the journal files it maps grew
    /// by this much ([`REMAP_AFTER`]; tests make it 0: at every wait).
    pub remap_after: u64,
}

/// An unfiltered second handle on the same journal: it tells the sequence
/// numbers at the head and the tail, which the filtered reader cannot see.
struct Probe {
    j: Journal,
}

impl Probe {
    fn open(spec: &Spec) -> Option<Self> {
        let unfiltered = EntryFilter {
            units: Vec::new(),
            identifiers: Vec::new(),
            containers: Vec::new(),
            context_units: Vec::new(),
            kernel: false,
            ..EntryFilter::default()
        };
        handle::open(&spec.target, &unfiltered, &Start::Head, spec.mode)
            .ok()
            .map(|j| Self { j })
    }

    fn head(&mut self) -> Option<(String, u64)> {
        self.j.seek_head().ok()?;
        (self.j.next().ok()? > 0).then_some(())?;
        seqnum(&self.j.cursor().ok()?)
    }

    fn tail(&mut self) -> Option<(String, u64)> {
        self.j.seek_tail().ok()?;
        (self.j.previous().ok()? > 0).then_some(())?;
        seqnum(&self.j.cursor().ok()?)
    }
}

/// How far the reader has got, in sequence numbers: everything up to here
/// was read or skipped by the match.
#[derive(Default)]
struct Progress {
    upto: Option<(String, u64)>,
}

impl Progress {
    fn advance(&mut self, to: Option<(String, u64)>) {
        if let Some((id, n)) = to {
            match &self.upto {
                Some((cur, m)) if *cur == id && *m >= n => {}
                _ => self.upto = Some((id, n)),
            }
        }
    }

    /// Entries between what was read and the journal's head: removed unread.
    fn lost_before(&self, head: Option<(String, u64)>) -> u64 {
        match (&self.upto, head) {
            (Some((id, upto)), Some((hid, h))) if *id == hid && h > upto + 1 => h - upto - 1,
            _ => 0,
        }
    }
}

/// How long a following reader waits for journald's change notification
/// (or a control message) before it looks again anyway.
const WAIT: Duration = Duration::from_secs(1);

/// How much the files a follower has mapped may grow before it reopens its
/// handle (see `Pump::release_mappings`).
pub(crate) const REMAP_AFTER: u64 = 8 << 20;

/// Bytes of files (and shared memory) this process has resident: the
/// third field of `/proc/self/statm`, in pages.
fn mapped_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(2)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

/// Where the pump is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Taking entries from the handle into batches.
    Reading,
    /// `next()` found nothing more: the short batch goes out.
    AtEnd,
    /// Following, at the end: answer what was asked, say `Tail` if owed.
    CaughtUp,
    /// Waiting for the journal to change or a control message.
    Waiting,
    /// Done: read to the end once, or the consumer is gone.
    Stopped,
}

/// The reader loop of one handle, as named states ([`State`]).
struct Pump<'a> {
    spec: &'a Spec,
    j: Journal,
    tx: &'a mpsc::Sender<ReaderEvent>,
    ctl: &'a ControlLine,
    /// After `seek_cursor`, `next()` lands on the cursor's entry when it
    /// still exists: that one was processed before.
    skip_cursor: Option<String>,
    /// Loss accounting, following only.
    probe: Option<Probe>,
    progress: Progress,
    batch: Vec<super::Entry>,
    names: Interner,
    /// Reading once, files also leave the handle when damaged (following,
    /// when vacuumed too: only a read to the end looks).
    intact: Intact,
    /// Reading without the match, after libsystemd gave up on a file.
    whole: bool,
    /// A read once from the head: what it walked, compared at its end with
    /// what the files record (`census`).
    walked: Option<Walked>,
    /// The cursor of the last entry sent.
    sent_upto: Option<String>,
    /// A Tail is owed after entries were sent, and once at the start.
    owe_tail: bool,
    /// The latest Sync asked.
    sync: u64,
    /// The handle was waited on once (`Journal::wait` makes its fd).
    waited: bool,
    /// What this process had mapped (`mapped_bytes`) when the handle was
    /// opened.
    mapped_at_open: Option<u64>,
}

impl<'a> Pump<'a> {
    fn new(
        spec: &'a Spec,
        j: Journal,
        tx: &'a mpsc::Sender<ReaderEvent>,
        ctl: &'a ControlLine,
    ) -> Self {
        Self {
            skip_cursor: match &spec.start {
                Start::After(c) => Some(c.clone()),
                _ => None,
            },
            probe: if spec.mode.follows() {
                Probe::open(spec)
            } else {
                None
            },
            progress: Progress::default(),
            batch: Vec::with_capacity(spec.batch),
            names: Interner::default(),
            intact: Intact::new(&j),
            whole: false,
            walked: (!spec.mode.follows() && spec.start == Start::Head).then(Walked::default),
            sent_upto: None,
            owe_tail: true,
            sync: 0,
            waited: false,
            mapped_at_open: mapped_bytes(),
            spec,
            j,
            tx,
            ctl,
        }
    }

    fn send(&self, ev: ReaderEvent) -> bool {
        self.tx.blocking_send(ev).is_ok()
    }

    fn run(&mut self) -> Result<(), ReadError> {
        if let (Some(p), Some(c)) = (self.probe.as_mut(), &self.skip_cursor) {
            self.progress.advance(seqnum(c));
            let lost = self.progress.lost_before(p.head());
            if lost > 0 && !self.send(ReaderEvent::Lost(lost)) {
                return Ok(());
            }
        }
        let mut state = State::Reading;
        loop {
            state = match state {
                State::Reading => self.read()?,
                State::AtEnd => self.at_end()?,
                State::CaughtUp => self.caught_up(),
                State::Waiting => self.wait()?,
                State::Stopped => return Ok(()),
            };
        }
    }

    fn cursor(&self) -> Result<String, ReadError> {
        self.j.cursor().map_err(ReadError::Cursor)
    }

    /// Reads entries until `next()` finds no more.
    fn read(&mut self) -> Result<State, ReadError> {
        loop {
            let n = self.j.next().map_err(ReadError::Next)?;
            if n == 0 {
                return Ok(State::AtEnd);
            }
            if let Some(c) = self.skip_cursor.take() {
                if self.j.test_cursor(c.as_str()).unwrap_or(false) {
                    continue;
                }
            }
            let Some(mut entry) =
                read_entry(&mut self.j, &mut self.names).map_err(ReadError::Entry)?
            else {
                continue;
            };
            if self.whole {
                if !in_match(&self.spec.filter, &entry) {
                    continue;
                }
                if entry.cursor.is_none() {
                    entry.cursor = Some(self.cursor()?);
                }
            }
            // The last entry of a batch is where a commit may land: it
            // always carries its cursor.
            if self.batch.len() + 1 >= self.spec.batch && entry.cursor.is_none() {
                entry.cursor = Some(self.cursor()?);
            }
            if self.probe.is_some() {
                self.progress
                    .advance(entry.cursor.as_deref().and_then(seqnum));
            }
            if let Some(w) = self.walked.as_mut() {
                w.count(&entry);
            }
            self.batch.push(entry);
            if self.batch.len() >= self.spec.batch {
                if !self.send_batch() {
                    return Ok(State::Stopped);
                }
                if !self.answer() {
                    return Ok(State::Stopped);
                }
            }
        }
    }

    /// Sends the batch. False when the consumer is gone.
    fn send_batch(&mut self) -> bool {
        let full = std::mem::replace(&mut self.batch, Vec::with_capacity(self.spec.batch));
        self.sent_upto = full.last().and_then(|e| e.cursor.clone());
        self.names.new_batch();
        if !self.send(ReaderEvent::Entries(full)) {
            return false;
        }
        self.owe_tail = true;
        true
    }

    /// At the end of what is there: the short batch goes out; a one-time
    /// read looks for a file libsystemd dropped, then ends.
    fn at_end(&mut self) -> Result<State, ReadError> {
        if let Some(last) = self.batch.last_mut() {
            // A short batch at the end of what is there: its last entry is
            // the one a commit lands on.
            if last.cursor.is_none() {
                // next() found nothing: the read pointer is still on it,
                // unless libsystemd dropped its file.
                let c = match self.j.cursor() {
                    Ok(c) => c,
                    Err(e) => Probe::open(self.spec)
                        .and_then(|mut p| find_cursor(&mut p.j, last))
                        .ok_or(ReadError::Cursor(e))?,
                };
                self.progress.advance(seqnum(&c));
                last.cursor = Some(c);
            }
            if !self.send_batch() {
                return Ok(State::Stopped);
            }
        }
        if self.spec.mode.follows() {
            return Ok(State::CaughtUp);
        }
        let files = journal_files(&self.spec.target);
        let Some(what) = self.intact.check(&self.j, &files) else {
            return Ok(self.counted(&files));
        };
        if !self.send(ReaderEvent::Warning(damaged(&what, self.whole))) {
            return Ok(State::Stopped);
        }
        if self.whole {
            return Ok(self.counted(&files));
        }
        let Some(mut p) = Probe::open(self.spec) else {
            return Ok(State::Stopped);
        };
        self.skip_cursor = resume_whole(&mut p.j, self.sent_upto.as_deref(), &self.spec.start)?;
        self.j = p.j;
        self.intact = Intact::new(&self.j);
        self.whole = true;
        Ok(State::Reading)
    }

    /// The end of a read once: says what the files record that it could
    /// not walk, if anything (`census`).
    fn counted(&mut self, files: &[std::path::PathBuf]) -> State {
        if let Some(walked) = self.walked.take()
            && let Count::Short(w) = count(files, &self.spec.filter, &walked)
        {
            let _ = self.send(ReaderEvent::Warning(w));
        }
        State::Stopped
    }

    /// Following, at the end of the filtered view: everything up to the
    /// tail was read or skipped. Said once per stretch of reading, or when
    /// asked.
    fn caught_up(&mut self) -> State {
        let asked = self.sync;
        if !self.answer() {
            return State::Stopped;
        }
        if self.sync != asked {
            // Asked to look again: look once more, then say Tail.
            self.owe_tail = true;
            return State::Reading;
        }
        if self.owe_tail {
            if let Some(p) = self.probe.as_mut() {
                self.progress.advance(p.tail());
            }
            if !self.send(ReaderEvent::Tail { sync: self.sync }) {
                return State::Stopped;
            }
            self.owe_tail = false;
        }
        if self.tx.is_closed() {
            return State::Stopped;
        }
        State::Waiting
    }

    /// Waits for the journal or a control message (see the module doc for
    /// the timeout). Invalidate (rotation, new files) also just means: call
    /// `next()` again, after counting what vacuum removed unread.
    fn wait(&mut self) -> Result<State, ReadError> {
        self.release_mappings();
        let changed = if self.waited {
            handle::wait(&mut self.j, self.ctl.fd(), WAIT)
        } else {
            self.waited = true;
            self.j.wait(Some(WAIT))
        }
        .map_err(ReadError::Wait)?;
        if matches!(changed, JournalWaitResult::Invalidate) {
            // Files were added or removed (rotation, vacuum).
            if let Some(p) = self.probe.as_mut() {
                let _ = p.j.wait(Some(Duration::ZERO));
                let head = p.head();
                let lost = self.progress.lost_before(head.clone());
                if lost > 0 {
                    self.progress.advance(head);
                    if !self.send(ReaderEvent::Lost(lost)) {
                        return Ok(State::Stopped);
                    }
                }
            }
        }
        Ok(State::Reading)
    }

    /// Caught up and following: when the journal files this process has
    /// mapped grew by `remap_after` ([`REMAP_AFTER`]) since the handle was
    /// opened, opens a new one after the last entry sent (and a new probe)
    /// and drops the old ones with their mappings. libsystemd keeps the
    /// windows it mapped until the handle is closed, so a follower's
    /// resident size would grow with journald's active file (by the file's
    /// size and more: windows overlap) until journald rotates it (64-128
    /// MiB on a large disk). A failed open keeps the old handle; the next
    /// wait tries again.
    fn release_mappings(&mut self) {
        if self.whole || !self.spec.mode.follows() {
            return;
        }
        let Some(now) = mapped_bytes() else {
            return;
        };
        let at_open = *self.mapped_at_open.get_or_insert(now);
        if now.saturating_sub(at_open) < self.spec.remap_after {
            return;
        }
        let Some(cursor) = self.sent_upto.clone() else {
            return;
        };
        let start = Start::After(cursor.clone());
        let Ok(j) = handle::open(&self.spec.target, &self.spec.filter, &start, self.spec.mode)
        else {
            return;
        };
        drop(std::mem::replace(&mut self.j, j));
        // The probe's handle maps the tail it looks at after each batch.
        if let Some(p) = Probe::open(self.spec) {
            self.probe = Some(p);
        }
        self.skip_cursor = Some(cursor);
        self.intact = Intact::new(&self.j);
        self.waited = false;
        self.mapped_at_open = mapped_bytes();
    }

    /// Handles what the reader was asked: pongs at once, a sync is noted
    /// (and a Tail owed). False when the consumer is gone.
    fn answer(&mut self) -> bool {
        for c in self.ctl.take() {
            match c {
                ReaderCtl::Sync(n) => self.sync = self.sync.max(n),
                ReaderCtl::Ping(n) => {
                    if !self.send(ReaderEvent::Pong(n)) {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// Starts the reader thread. Returns once the journal is open (or failed to
/// open, with the reason).
pub(crate) fn spawn(spec: Spec, capacity: usize) -> Result<Reader, SourceError> {
    let thread_err = |e: std::io::Error| SourceError::Journal {
        path: "journal thread".into(),
        message: e.to_string(),
    };
    let (tx, rx) = mpsc::channel::<ReaderEvent>(capacity);
    let (ctl_tx, ctl) = ControlLine::new().map_err(thread_err)?;
    let (opened_tx, opened_rx) = std_mpsc::sync_channel::<Result<(), SourceError>>(1);
    let handle = std::thread::Builder::new()
        .name("journal".into())
        .spawn(move || {
            // The handle is created, used and dropped on this thread only.
            let j = match handle::open(&spec.target, &spec.filter, &spec.start, spec.mode) {
                Ok(j) => {
                    let _ = opened_tx.send(Ok(()));
                    j
                }
                Err(e) => {
                    let _ = opened_tx.send(Err(e));
                    return;
                }
            };
            if let Err(e) = Pump::new(&spec, j, &tx, &ctl).run() {
                let _ = tx.blocking_send(ReaderEvent::Failed(e));
            }
        })
        .map_err(thread_err)?;
    match opened_rx.recv() {
        Ok(Ok(())) => Ok(Reader {
            events: rx,
            ctl: ctl_tx,
            thread: Some(handle),
        }),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => Err(SourceError::Journal {
            path: "journal thread".into(),
            message: "the reader thread ended while opening".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_counts_what_the_head_passed() {
        let c = "s=1f2e;i=1a;b=00;m=0;t=5f;x=9";
        let mut p = Progress::default();
        p.advance(seqnum(c));
        assert_eq!(p.lost_before(Some(("1f2e".into(), 27))), 0);
        assert_eq!(p.lost_before(Some(("1f2e".into(), 40))), 13);
        assert_eq!(p.lost_before(Some(("other".into(), 40))), 0);
        p.advance(Some(("1f2e".into(), 10)));
        assert_eq!(p.upto, Some(("1f2e".into(), 26)));
    }
}

#[cfg(test)]
mod following {
    use super::*;

    /// A following reader at rest answers its control line (it waits on
    /// it together with the journal's fd).
    #[test]
    fn an_idle_reader_answers_ping_and_sync() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.journal");
        super::super::handle::journal_remote(
            b"__REALTIME_TIMESTAMP=1\n_SYSTEMD_UNIT=kubelet.service\nMESSAGE=a\n\n",
            &file,
        );
        let spec = Spec {
            target: Target::Files(vec![file]),
            filter: EntryFilter::default(),
            start: Start::Head,
            mode: Mode::Follow,
            batch: 16,
            remap_after: REMAP_AFTER,
        };
        let mut r = spawn(spec, 4).unwrap();
        let mut next = || r.events.blocking_recv().unwrap();
        assert!(matches!(next(), ReaderEvent::Entries(v) if v.len() == 1));
        assert!(matches!(next(), ReaderEvent::Tail { sync: 0 }));
        r.ctl.send(ReaderCtl::Ping(3)).unwrap();
        assert!(matches!(
            r.events.blocking_recv().unwrap(),
            ReaderEvent::Pong(3)
        ));
        r.ctl.send(ReaderCtl::Sync(7)).unwrap();
        assert!(matches!(
            r.events.blocking_recv().unwrap(),
            ReaderEvent::Tail { sync: 7 }
        ));
    }

    /// A follower that reopens its handles at every wait (what it does
    /// after 8 MiB of mapped journal) reads every entry once, in order:
    /// what was there, and what is appended after each reopen.
    #[test]
    fn a_follower_that_reopens_its_handles_reads_each_entry_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.journal");
        let export = |from: u32, to: u32| -> Vec<u8> {
            (from..to)
                .flat_map(|n| {
                    format!(
                        "__REALTIME_TIMESTAMP={}\n_SYSTEMD_UNIT=kubelet.service\n\
                         _HOSTNAME=n1\nMESSAGE=line {n}\n\n",
                        1_000_000 + u64::from(n)
                    )
                    .into_bytes()
                })
                .collect()
        };
        super::super::handle::journal_remote(&export(0, 40), &file);
        let spec = Spec {
            target: Target::Files(vec![file.clone()]),
            filter: EntryFilter::default(),
            start: Start::Head,
            mode: Mode::Follow,
            batch: 16,
            remap_after: 0,
        };
        let mut r = spawn(spec, 4).unwrap();
        let mut seen = Vec::new();
        let until_tail = |r: &mut Reader, seen: &mut Vec<String>, want: u64| loop {
            match r.events.blocking_recv().unwrap() {
                ReaderEvent::Entries(v) => {
                    seen.extend(
                        v.iter()
                            .map(|e| String::from_utf8_lossy(&e.message).into_owned()),
                    );
                }
                ReaderEvent::Tail { sync } if sync >= want => return,
                _ => {}
            }
        };
        until_tail(&mut r, &mut seen, 0);
        for round in 1..=3u32 {
            // A sync makes the reader wait (and reopen) and look again.
            r.ctl
                .send(ReaderCtl::Sync(u64::from(round) * 2 - 1))
                .unwrap();
            until_tail(&mut r, &mut seen, u64::from(round) * 2 - 1);
            super::super::handle::journal_remote(&export(round * 40, round * 40 + 40), &file);
            r.ctl.send(ReaderCtl::Sync(u64::from(round) * 2)).unwrap();
            until_tail(&mut r, &mut seen, u64::from(round) * 2);
        }
        let want: Vec<String> = (0..160).map(|n| format!("line {n}")).collect();
        assert_eq!(seen, want);
    }
}
