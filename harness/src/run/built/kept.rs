//! A crash state kept on disk beside the case written from it, so that `killpoint run` of the
//! file starts where the case that failed started: from the same data dir, world and progress,
//! not from a re-run of the workload's prefix. The state is the case's built state, or, for a
//! case explore re-ran, the one its last kill left ([`super::after_kill`]).
//!
//! Why: with operations in flight together, a re-run of the prefix reaches the case's kill with
//! the other operations elsewhere from one run to the next (issue 33 measured replays of written
//! wave cases failing 1 to 10 times in 10). The state the case failed from is what it failed
//! from; kept, it replays every time.
//!
//! `case.toml` keeps its state in `case.state/`: `state.json` (where it stands — a record run's
//! point, or just after a kill —, the world's snapshot, the harness's and the tracer's progress,
//! the faults fired, and the [`Key`] it is valid for), `data/` (the data dir a kill there left;
//! for a machine crash, what was synced) and `logs/`.
//!
//! A state is used only for what built it: the same scenario (its text as written, without its
//! description), the same runtime command with the same bytes in its program and in every
//! argument that names a file, and the same probe and crash mode. Anything else re-runs the
//! prefix, and says why. What the key cannot see — a module a script imports, a library a binary
//! loads — is why `killpoint run --rerun-prefix` exists: a fix to the steps before the kill shows
//! only in a run that makes them again.

use super::{At, BuiltState, DiskImage, Fired};
use crate::model::crash::Crash;
use crate::run::driver::record::Mark;
use crate::run::incarnation::Target;
use crate::run::traced::TraceProgress;
use crate::scenario::Scenario;
use fake_tool::WorldSnapshot;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The format of `state.json`; a state of another format is not read.
const FORMAT: u32 = 1;

/// What a kept state is valid for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// SHA-256 of the scenario's text as `Scenario::to_toml` writes it, its description left out.
    pub scenario: String,
    /// The runtime's program and arguments, as given.
    pub command: Vec<String>,
    /// SHA-256 of the program and of every argument that names a file, in that order.
    pub files: Vec<(String, Option<String>)>,
    pub probe: bool,
    pub crash: Crash,
}

impl Key {
    /// The key of a run of `scenario` against `target`, with the probe or not, under `crash`.
    pub fn of(scenario: &Scenario, target: &Target, probe: bool, crash: Crash) -> Key {
        let mut text = scenario.clone();
        text.description.clear();
        let program = target.program.display().to_string();
        let command: Vec<String> = std::iter::once(program.clone()).chain(target.args.iter().cloned()).collect();
        let files = command
            .iter()
            .filter(|arg| *arg == &program || Path::new(arg).is_file())
            .map(|arg| (arg.clone(), sha256_of(Path::new(arg))))
            .collect();
        Key { scenario: hex(&Sha256::digest(text.to_toml())), command, files, probe, crash }
    }

    /// What differs between the key a state was kept for (`self`) and the run's, in words.
    fn differs(&self, now: &Key) -> Option<String> {
        if self.scenario != now.scenario {
            Some("the scenario is not the one it was kept for (edited since, or run with --operations)".to_owned())
        } else if self.command != now.command {
            Some(format!("it was kept for the runtime `{}`, not `{}`", self.command.join(" "), now.command.join(" ")))
        } else if self.files != now.files {
            let changed: Vec<&str> = self
                .files
                .iter()
                .zip(&now.files)
                .filter(|(was, is)| was != is)
                .map(|((path, _), _)| path.as_str())
                .collect();
            Some(format!("the runtime's files changed since it was kept: {}", changed.join(", ")))
        } else if (self.probe, self.crash) != (now.probe, now.crash) {
            let mode = |probe: bool, crash: Crash| {
                format!("{} crashes {} the probe", crash.name(), if probe { "with" } else { "without" })
            };
            Some(format!("it was kept for {}, not {}", mode(self.probe, self.crash), mode(now.probe, now.crash)))
        } else {
            None
        }
    }
}

/// SHA-256 of the file at `path`, hex (`None`: unreadable). Read once per process while its size
/// and modification time stay the same: an exploration makes a key for each failing case, and the
/// runtime's binary is megabytes (20 ms to hash the reference's release build, 65 ms its debug one).
fn sha256_of(path: &Path) -> Option<String> {
    type Seen = std::collections::HashMap<PathBuf, (u64, std::time::SystemTime, Option<String>)>;
    static SEEN: std::sync::Mutex<Option<Seen>> = std::sync::Mutex::new(None);
    let stat = std::fs::metadata(path).ok()?;
    let (len, modified) = (stat.len(), stat.modified().ok()?);
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen.get_or_insert_with(Seen::new);
    match seen.get(path) {
        Some((l, m, hash)) if (*l, *m) == (len, modified) => hash.clone(),
        _ => {
            let hash = std::fs::read(path).ok().map(|bytes| hex(&Sha256::digest(bytes)));
            seen.insert(path.to_owned(), (len, modified, hash.clone()));
            hash
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `state.json`: everything of a [`BuiltState`] but its data dir and logs, which are files.
#[derive(Serialize, Deserialize)]
struct StateFile {
    format: u32,
    key: Key,
    at: At,
    world: WorldSnapshot,
    timeline: Vec<Mark>,
    trace: TraceProgress,
    fired: Vec<Fired>,
    /// The logs' names under `logs/`.
    logs: Vec<String>,
}

/// Where the state of the case written to `case_file` is kept: `case.toml` → `case.state`.
pub fn beside(case_file: &Path) -> PathBuf {
    case_file.with_extension("state")
}

/// The name of a kept state's directory among a failing case's artifacts (explore keeps it there
/// when it keeps the case, and copies it beside the case's file when it writes that).
pub const IN_ARTIFACTS: &str = "crash-state";

/// Puts the state kept among a failing case's `artifacts` ([`keep_among`]) beside `case_file`,
/// or, with none there, removes what an earlier case of that name left: a state is never left
/// beside a file it was not kept for.
pub fn put_beside(artifacts: Option<&Path>, case_file: &Path) -> std::io::Result<()> {
    let dir = beside(case_file);
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    match artifacts.map(|a| a.join(IN_ARTIFACTS)).filter(|kept| kept.is_dir()) {
        Some(kept) => super::disk::copy_dir(&kept, &dir),
        None => Ok(()),
    }
}

/// Keeps the crash state a failing case's recovery started from (`None`: it has none; `Err`: why
/// it could not be taken) among its `artifacts`, for the key `key` makes (made only when there
/// is a state: it reads the runtime's files); why it could not be kept ends the case's `story`.
pub fn keep_among(
    artifacts: &Path,
    state: Option<Result<&BuiltState, &str>>,
    key: impl FnOnce() -> Key,
    story: &mut Option<String>,
) {
    let kept = match state {
        None => return,
        Some(Ok(state)) => keep(state, key(), &artifacts.join(IN_ARTIFACTS)).map_err(|e| e.to_string()),
        Some(Err(why)) => Err(why.to_owned()),
    };
    if let Err(why) = kept {
        let line = format!("killpoint could not keep the crash state this case's recovery started from: {why}\n");
        story.get_or_insert_with(String::new).push_str(&line);
    }
}

/// Writes `state`, built for `key`, into `dir` (which must not exist).
pub fn keep(state: &BuiltState, key: Key, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("logs"))?;
    state.disk.write_to(&dir.join("data"))?;
    for (name, bytes) in &state.logs {
        std::fs::write(dir.join("logs").join(name), bytes)?;
    }
    let file = StateFile {
        format: FORMAT,
        key,
        at: state.at.clone(),
        world: state.world.clone(),
        timeline: state.timeline.clone(),
        trace: state.trace.clone(),
        fired: state.fired.clone(),
        logs: state.logs.iter().map(|(name, _)| name.clone()).collect(),
    };
    let json = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("state.json"), json)
}

/// A crash state read back from disk, to start a run from.
pub struct Kept {
    pub dir: PathBuf,
    pub state: BuiltState,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kept {{ dir: {:?}, {} }}", self.dir, self.state.told())
    }
}

/// What is beside a case file.
pub enum Found {
    /// No kept state.
    Nothing,
    /// One that cannot be used for this run: why.
    Unusable(String),
    Usable(Arc<Kept>),
}

impl Found {
    /// The state, when it can be used for this run.
    pub fn usable(self) -> Option<Arc<Kept>> {
        match self {
            Found::Usable(kept) => Some(kept),
            Found::Nothing | Found::Unusable(_) => None,
        }
    }
}

/// The state kept beside `case_file`, if it is valid for `key`.
pub fn find(case_file: &Path, key: &Key) -> Found {
    find_in(beside(case_file), key)
}

/// The state kept in `dir`, if it is valid for `key`.
pub fn find_in(dir: PathBuf, key: &Key) -> Found {
    if !dir.is_dir() {
        return Found::Nothing;
    }
    match read(&dir) {
        Err(why) => Found::Unusable(format!("{} cannot be read: {why}", dir.display())),
        Ok((kept, state)) => match kept.differs(key) {
            Some(why) => Found::Unusable(format!("{} is not for this run: {why}", dir.display())),
            None => Found::Usable(Arc::new(Kept { dir, state })),
        },
    }
}

fn read(dir: &Path) -> Result<(Key, BuiltState), String> {
    let path = dir.join("state.json");
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file: StateFile = serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if file.format != FORMAT {
        return Err(format!("{}: expected format {FORMAT}, found {}", path.display(), file.format));
    }
    let data = dir.join("data");
    if !data.is_dir() {
        return Err(format!("expected the data dir at {}, found none", data.display()));
    }
    let logs = file
        .logs
        .iter()
        .map(|name| {
            let log = dir.join("logs").join(name);
            std::fs::read(&log).map(|bytes| (name.clone(), bytes)).map_err(|e| format!("{}: {e}", log.display()))
        })
        .collect::<Result<_, _>>()?;
    let state = BuiltState {
        at: file.at,
        disk: Arc::new(DiskImage::AsKilled(data)),
        world: file.world,
        timeline: file.timeline,
        trace: file.trace,
        logs,
        fired: file.fired,
    };
    Ok((file.key, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case written again in the same place never keeps the state an earlier case left there:
    /// it gets its own, or none.
    #[test]
    fn a_state_is_put_beside_its_case_in_place_of_an_earlier_one_or_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let case = tmp.path().join("case.toml");
        let stale = beside(&case).join("state.json");
        std::fs::create_dir_all(beside(&case)).unwrap();
        std::fs::write(&stale, "an earlier case's").unwrap();
        let artifacts = tmp.path().join("artifacts");
        let kept = artifacts.join(IN_ARTIFACTS);
        std::fs::create_dir_all(kept.join("data")).unwrap();
        std::fs::write(kept.join("state.json"), "this case's").unwrap();

        put_beside(Some(&artifacts), &case).unwrap();
        assert_eq!(std::fs::read_to_string(&stale).unwrap(), "this case's");
        assert!(beside(&case).join("data").is_dir(), "the data dir goes with it");

        put_beside(None, &case).unwrap();
        assert!(!beside(&case).exists(), "a case written without a state left {}", beside(&case).display());
        assert!(matches!(find(&case, &key()), Found::Nothing));
    }

    /// What a run differs in from the run a state was kept for is said, each in its own words;
    /// an unreadable state is said with its path.
    #[test]
    fn a_state_kept_for_another_run_is_refused_saying_what_differs() {
        let text = "description = \"one charge\"\n\n[[operation]]\nid = \"charge\"\ntool = \"charge_card\"\nexpect = \"succeeded\"\n";
        let scenario = Scenario::parse(Path::new("case.toml"), text).expect("a scenario");
        let target = Target { program: "/bin/sh".into(), args: vec!["--flag".into()] };
        let kept = Key::of(&scenario, &target, false, Crash::Process);
        assert_eq!(kept.differs(&Key::of(&scenario, &target, false, Crash::Process)), None);
        let described = Scenario { description: "found by explore".into(), ..scenario.clone() };
        assert_eq!(
            kept.differs(&Key::of(&described, &target, false, Crash::Process)),
            None,
            "the description is not the key"
        );

        let longer = Scenario { deadline: scenario.deadline * 2, ..scenario.clone() };
        let why = kept.differs(&Key::of(&longer, &target, false, Crash::Process)).expect("another scenario");
        assert!(why.starts_with("the scenario is not the one it was kept for"), "{why}");
        let other = Target { program: "/bin/sh".into(), args: vec!["--other".into()] };
        let why = kept.differs(&Key::of(&scenario, &other, false, Crash::Process)).expect("another runtime");
        assert_eq!(why, "it was kept for the runtime `/bin/sh --flag`, not `/bin/sh --other`");
        let why = kept.differs(&Key::of(&scenario, &target, true, Crash::Process)).expect("another mode");
        assert_eq!(why, "it was kept for process crashes without the probe, not process crashes with the probe");

        let tmp = tempfile::tempdir().unwrap();
        let script = tmp.path().join("runtime.py");
        std::fs::write(&script, "print('one')\n").unwrap();
        let python = Target { program: "/usr/bin/python3".into(), args: vec![script.display().to_string()] };
        let before = Key::of(&scenario, &python, false, Crash::Process);
        std::fs::write(&script, "print('another')\n").unwrap();
        let why = before.differs(&Key::of(&scenario, &python, false, Crash::Process)).expect("a changed script");
        assert_eq!(why, format!("the runtime's files changed since it was kept: {}", script.display()));

        let case = tmp.path().join("case.toml");
        std::fs::create_dir_all(beside(&case)).unwrap();
        std::fs::write(beside(&case).join("state.json"), "{").unwrap();
        match find(&case, &kept) {
            Found::Unusable(why) => assert!(why.contains("state.json") && why.contains("cannot be read"), "{why}"),
            _ => panic!("an unreadable state was not refused"),
        }
    }

    fn key() -> Key {
        Key { scenario: String::new(), command: Vec::new(), files: Vec::new(), probe: false, crash: Crash::Process }
    }
}
