//! `killpoint-tracer [--log PATH] [--data-dir DIR] -- PROGRAM ARGS…`: runs PROGRAM and stops it at
//! every durable write and every exchange with the fake world, announcing each as a crash point on
//! `$KILLPOINT_TRACE_SOCKET` (see `killpoint::tracer`). `--log PATH` (or `$KILLPOINT_TRACE_LOG`)
//! also appends every point to PATH. `--data-dir DIR` is the directory whose changes are points,
//! instead of `$KILLPOINT_DATA_DIR` (a service's, `$KILLPOINT_SERVICE_DATA_DIR`, in machine-crash
//! mode: the harness does not give a service the worker's variable). Exits with PROGRAM's status, 128 + the signal that killed
//! it, or 125 when the system does not allow tracing.
//!
//! `--die-with PID`: first of all, die (SIGKILL) when the parent, PID, dies, with no signal
//! blocked; `--exec`: then become PROGRAM instead of tracing it (exit 127 when exec fails). How the
//! harness starts every child without forking itself (`killpoint::tracer::tether`).

use std::ffi::OsString;
use std::path::PathBuf;

const USAGE: &str =
    "usage: killpoint-tracer [--die-with PID] [--exec | --log PATH | --data-dir DIR] -- PROGRAM [ARGS…]";

fn main() {
    let mut args = std::env::args_os().skip(1).peekable();
    let mut config = killpoint::tracer::Config::from_env();
    let mut exec = false;
    while let Some(arg) = args.next_if(|a| a.to_str().is_some_and(|a| a.starts_with("--"))) {
        match arg.to_str() {
            Some("--") => break,
            Some("--die-with") => match args.next().and_then(|pid| pid.to_str()?.parse::<i32>().ok()) {
                Some(parent) => {
                    if let Err(problem) = killpoint::tracer::tether::die_with(parent) {
                        eprintln!("killpoint-tracer: {problem}");
                        std::process::exit(1);
                    }
                }
                None => usage("--die-with needs the parent's PID"),
            },
            Some("--exec") => exec = true,
            Some("--log") => match args.next() {
                Some(path) => config.log = Some(PathBuf::from(path)),
                None => usage("--log needs a PATH"),
            },
            Some("--data-dir") => match args.next() {
                Some(dir) => config.data_dirs = killpoint::tracer::Config::dirs_of(PathBuf::from(dir)),
                None => usage("--data-dir needs a DIR"),
            },
            Some(other) => usage(&format!("unknown option {other}")),
            None => unreachable!("only UTF-8 options pass the filter"),
        }
    }
    let mut rest: Vec<OsString> = args.collect();
    if rest.is_empty() {
        usage("no PROGRAM given");
    }
    let program = rest.remove(0);
    if exec {
        eprintln!("killpoint-tracer: {}", killpoint::tracer::tether::exec(&program, &rest));
        std::process::exit(127);
    }
    match killpoint::tracer::run(&program, &rest, config) {
        Ok(status) => std::process::exit(status),
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(error.exit_code());
        }
    }
}

fn usage(problem: &str) -> ! {
    eprintln!("killpoint-tracer: {problem}\n{USAGE}");
    std::process::exit(2);
}
