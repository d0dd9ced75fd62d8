//! `killpoint-tracer -- PROGRAM ARGS…`: runs PROGRAM and stops it at every durable write and every
//! exchange with the fake world, announcing each as a crash point on `$KILLPOINT_TRACE_SOCKET`
//! (see `killpoint::syscalls`). Exits with PROGRAM's status, 128 + the signal that killed it, or
//! 125 when the system does not allow tracing.

use std::ffi::OsString;

fn main() {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    if args.is_empty() {
        eprintln!("usage: killpoint-tracer -- PROGRAM [ARGS…]");
        std::process::exit(2);
    }
    let program = args.remove(0);
    match killpoint::syscalls::run(&program, &args, killpoint::syscalls::Config::from_env()) {
        Ok(status) => std::process::exit(status),
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(error.exit_code());
        }
    }
}
