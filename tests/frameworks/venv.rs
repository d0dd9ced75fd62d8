//! The frameworks' virtualenv (`target/frameworks-venv`), made once for every test process that
//! needs it. Under nextest each trial is a process of its own, and each would otherwise check and
//! make the same virtualenv at once: one `pip install` into a directory another is removing or
//! still filling (seen: a stale virtualenv remade mid-run, without the framework a trial
//! imported). An exclusive lock on a file beside it makes check-and-make one step: the first
//! process makes it, the others wait for it and then find it made (`frameworks::venv_lock`).

use super::installed::within;
use libtest_mimic::Failed;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long a process waits for another to make the virtualenv: uv downloading and installing
/// the frameworks on a slow network and a loaded machine.
const MAKING_DEADLINE: Duration = Duration::from_secs(20 * 60);

/// uv, pinned: it installs the frameworks into the virtualenv in about 6 s where pip took 27 s
/// (24 s of them CPU: resolving, unpacking, compiling bytecode one file after another), and the
/// virtualenv is made in every cold `cargo test --workspace`. It installs exactly the pins of the
/// requirements file, as pip did (the same 70 distributions); pip is still what users are told
/// to use, and tests/frameworks/installed.rs installs the kit with pip as they do.
const UV: &str = "uv==0.13.9";

/// `python3 -m venv VENV` and the pinned frameworks with the kit, unless VENV already holds
/// exactly these requirements (a marker file keeps the requirements it was made from).
pub fn make_venv(root: &Path, venv: &Path) -> Result<(), String> {
    let requirements = root.join("examples/frameworks/requirements.txt");
    let kit = root.join("probe-kit/python");
    // The kit is installed too: a change to it (a new contract version) remakes the virtualenv,
    // as a change to the requirements or to uv's pin does.
    let wanted = std::fs::read_to_string(&requirements).map_err(|e| format!("{}: {e}", requirements.display()))?
        + &kit_sources(&kit)?
        + &format!("\n# installed by {UV}\n");
    let waiting = |lock: &Path| {
        eprintln!(
            "waiting (at most {MAKING_DEADLINE:?}) for another test process to make the frameworks' virtualenv at {} (it holds {})",
            venv.display(),
            lock.display()
        )
    };
    made_once(venv, &wanted, MAKING_DEADLINE, waiting, || {
        eprintln!(
            "making the frameworks' virtualenv at {} (once; pinned in {})",
            venv.display(),
            requirements.display()
        );
        let minutes = |n: u64| Duration::from_secs(60 * n);
        let failed = |e: libtest_mimic::Failed| e.message().unwrap_or("failed").to_owned();
        let python = venv.join("bin/python");
        // Without pip of its own (ensurepip is most of a virtualenv's making): the machine's pip
        // installs uv into it (`pip --python`), and uv the rest.
        let mut make = Command::new("python3");
        make.args(["-m", "venv", "--clear", "--without-pip"]).arg(venv);
        within(minutes(2), &mut make, "python3 -m venv --clear --without-pip").map_err(failed)?;
        let mut uv = Command::new("python3");
        uv.args(["-m", "pip", "--python"]).arg(&python).args(["install", "--quiet", UV]);
        within(minutes(5), &mut uv, &format!("pip install {UV}")).map_err(failed)?;
        // Its cache beside the virtualenv, and its temp dir in it (it leaves a lock file there
        // after building the kit, which `.ci/run` found left behind), all gone once the frameworks
        // are in: hard links keep what was installed from the cache.
        let cache = PathBuf::from(format!("{}.uv-cache", venv.display()));
        let tmp = cache.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut install = Command::new(venv.join("bin/uv"));
        install
            .env("TMPDIR", &tmp)
            .args(["pip", "install", "--quiet", "--compile-bytecode", "--cache-dir"])
            .arg(&cache);
        install.arg("--python").arg(&python).arg("-r").arg(&requirements).arg(&kit);
        let installed = within(
            minutes(15),
            &mut install,
            "uv pip install --compile-bytecode -r examples/frameworks/requirements.txt probe-kit/python",
        );
        let _ = std::fs::remove_dir_all(&cache);
        installed.map(drop).map_err(failed)
    })
}

/// The Python kit's sources (`killpoint_probe.py`, `killpoint_shell/*.py`, `pyproject.toml`), in
/// a stable order, each after its name.
fn kit_sources(kit: &Path) -> Result<String, String> {
    let mut files = vec![kit.join("killpoint_probe.py"), kit.join("pyproject.toml")];
    let shell = kit.join("killpoint_shell");
    let listed = std::fs::read_dir(&shell).map_err(|e| format!("{}: {e}", shell.display()))?;
    let mut modules: Vec<PathBuf> =
        listed.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "py")).collect();
    modules.sort();
    files.extend(modules);
    let mut text = String::new();
    for file in files {
        let body = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        text.push_str(&format!("\n# {}\n{body}", file.strip_prefix(kit).unwrap_or(&file).display()));
    }
    Ok(text)
}

/// Runs `make` unless `dir` holds a marker with exactly `wanted` — both under an exclusive lock
/// on `<dir>.lock`, so that of several processes at once one makes it and the others, told by
/// `waiting`, wait at most `deadline` for it and then find the marker. The marker is written
/// last, and removed before `make`: a maker killed half-way leaves a directory the next one remakes.
pub fn made_once(
    dir: &Path,
    wanted: &str,
    deadline: Duration,
    waiting: impl FnOnce(&Path),
    make: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let marker = dir.join("killpoint-requirements.txt");
    let lock_path = PathBuf::from(format!("{}.lock", dir.display()));
    if let Some(parent) = lock_path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let _held = locked(lock, &lock_path, deadline, waiting)?;
    if std::fs::read_to_string(&marker).is_ok_and(|made| made == wanted) {
        return Ok(());
    }
    match std::fs::remove_file(&marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{}: {e}", marker.display())),
        _ => {}
    }
    make()?;
    std::fs::write(&marker, wanted).map_err(|e| format!("{}: {e}", marker.display()))
}

/// `lock` locked exclusively: at once if free, else (after `waiting`) once its holder lets go,
/// within `deadline`. Released when the returned file is dropped (or the process ends).
fn locked(lock: File, path: &Path, deadline: Duration, waiting: impl FnOnce(&Path)) -> Result<File, String> {
    match lock.try_lock() {
        Ok(()) => return Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => waiting(path),
        Err(std::fs::TryLockError::Error(e)) => return Err(format!("{}: cannot lock: {e}", path.display())),
    }
    // A blocking lock has no timeout: it waits on a thread of its own, and this one on it.
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let result = lock.lock().map(|()| lock);
        let _ = sender.send(result);
    });
    match receiver.recv_timeout(deadline) {
        Ok(Ok(lock)) => Ok(lock),
        Ok(Err(e)) => Err(format!("{}: cannot lock: {e}", path.display())),
        Err(_) => Err(format!(
            "expected the process making {} to finish within {deadline:?}, found {} still locked",
            path.with_extension("").display(),
            path.display()
        )),
    }
}

/// `frameworks::venv_lock`: two makers at once (two threads here; the lock is per open file,
/// as between processes) make the directory once. The first is held inside its `make` until the
/// second says it waits; a second that runs `make` instead fails the trial.
pub fn two_makers_make_it_once() -> Result<(), Failed> {
    let tmp = tempfile::Builder::new().prefix("killpoint-venv-lock-").tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path().join("venv");
    let deadline = Duration::from_secs(60);
    let (events, seen) = std::sync::mpsc::channel::<&str>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let first = {
        let (dir, events) = (dir.clone(), events.clone());
        std::thread::spawn(move || {
            made_once(
                &dir,
                "wanted",
                deadline,
                |_| {},
                || {
                    let _ = events.send("first makes");
                    released.recv_timeout(deadline).map_err(|_| "expected to be released, found no word".to_owned())?;
                    std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))
                },
            )
        })
    };
    let expect = |what: &str| match seen.recv_timeout(deadline) {
        Ok(event) if event == what => Ok(()),
        Ok(event) => Err(format!("expected `{what}`, found `{event}`: both made the directory at once")),
        Err(_) => Err(format!("expected `{what}` within {deadline:?}, found nothing")),
    };
    expect("first makes")?;
    let second = {
        let (dir, waits, makes) = (dir.clone(), events.clone(), events);
        std::thread::spawn(move || {
            made_once(
                &dir,
                "wanted",
                deadline,
                |_| {
                    let _ = waits.send("second waits");
                },
                || {
                    let _ = makes.send("second makes");
                    Ok(())
                },
            )
        })
    };
    let order = expect("second waits");
    let _ = release.send(());
    let results = (first.join(), second.join());
    order?;
    match results {
        (Ok(Ok(())), Ok(Ok(()))) => {}
        other => return Err(format!("expected both makers to succeed, found {other:?}").into()),
    }
    if let Ok(event) = seen.try_recv() {
        return Err(format!("expected the second to find the directory made, found `{event}`").into());
    }
    let marker = std::fs::read_to_string(dir.join("killpoint-requirements.txt")).map_err(|e| e.to_string())?;
    if marker != "wanted" {
        return Err(format!("expected the marker `wanted`, found `{marker}`").into());
    }
    Ok(())
}
