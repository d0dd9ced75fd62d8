//! Reading a services file (`--services FILE`):
//!
//! ```toml
//! [[service]]
//! name = "kv"                        # [a-z][a-z0-9_]*: logs/service-kv.log, KILLPOINT_SERVICE_KV_*
//! command = ["python3", "kv.py"]     # run in this file's directory
//! ready = "port"                     # default; or a command that exits 0 once it is: ["pg_isready", "-h", "127.0.0.1"]
//! ready_timeout_seconds = 10         # default 10
//! ports = ["admin", "node"]          # default none: more ports besides its own, each named
//! ```
//!
//! Every mistake is reported with the file, line and column, as a scenario file's are.

use super::{PortName, Ready, Service, ServiceName, Services};
use crate::scenario::line_col;
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// The default of `ready_timeout_seconds`: as long as a worker has for its ready line.
const DEFAULT_READY_SECONDS: u64 = 10;

/// A services file that cannot be used: where (`path:line:col`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line_col.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
pub struct ServicesError {
    pub path: PathBuf,
    pub line_col: Option<(usize, usize)>,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default, rename = "service")]
    services: Vec<Spanned<ServiceFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceFile {
    name: Spanned<String>,
    command: Spanned<Vec<String>>,
    ready: Option<Spanned<ReadyFile>>,
    ready_timeout_seconds: Option<Spanned<u64>>,
    ports: Option<Spanned<Vec<Spanned<String>>>>,
}

/// At most this many named ports for one service: a server with a few listeners, not a range.
const MAX_PORTS: usize = 8;

#[derive(Deserialize)]
#[serde(untagged)]
enum ReadyFile {
    Word(String),
    Command(Vec<String>),
}

impl Services {
    /// Reads and checks the services file at `path`.
    pub fn load(path: &Path) -> Result<Services, ServicesError> {
        let text = std::fs::read_to_string(path).map_err(|e| ServicesError {
            path: path.to_owned(),
            line_col: None,
            message: format!("cannot read the services file: {e}"),
        })?;
        Services::parse(path, &text)
    }

    /// Checks `text`, the services file at `path` (whose directory the services run in).
    pub fn parse(path: &Path, text: &str) -> Result<Services, ServicesError> {
        let at = |span: Option<Range<usize>>, message: String| ServicesError {
            path: path.to_owned(),
            line_col: span.map(|s| line_col(text, s.start)),
            message,
        };
        let file: File = toml::from_str(text).map_err(|e| at(e.span(), e.message().to_owned()))?;
        if file.services.is_empty() {
            return Err(at(None, "expected at least one [[service]] table, found none".into()));
        }
        let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_owned()),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        let mut list: Vec<Service> = Vec::new();
        for service in file.services {
            let service = service.into_inner();
            let name_span = service.name.span();
            let name = ServiceName::new(service.name.get_ref()).map_err(|m| at(Some(service.name.span()), m))?;
            if list.iter().any(|s| s.name == name) {
                return Err(at(
                    Some(service.name.span()),
                    format!("a second service named `{name}`: names must differ"),
                ));
            }
            let (program, args) =
                command(service.command.get_ref()).map_err(|m| at(Some(service.command.span()), m))?;
            let ready = match service.ready {
                None => Ready::Port,
                Some(ready) => readiness(ready.get_ref()).map_err(|m| at(Some(ready.span()), m))?,
            };
            let seconds = match service.ready_timeout_seconds {
                Some(s) if *s.get_ref() == 0 => {
                    return Err(at(Some(s.span()), "expected ready_timeout_seconds of at least 1, found 0".into()));
                }
                Some(s) => *s.get_ref(),
                None => DEFAULT_READY_SECONDS,
            };
            let ready_timeout = Duration::from_secs(seconds);
            let ports = match service.ports {
                None => Vec::new(),
                Some(ports) => port_names(&ports).map_err(|(span, m)| at(Some(span), m))?,
            };
            let service = Service { name, program, args, dir: dir.clone(), ready, ready_timeout, ports };
            if let Some(clash) = clashing_variable(&list, &service) {
                return Err(at(Some(name_span.clone()), clash));
            }
            list.push(service);
        }
        Ok(Services { file: Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())), list })
    }
}

/// The program and its arguments: a non-empty list whose first word is not empty.
fn command(command: &[String]) -> Result<(PathBuf, Vec<String>), String> {
    match command.split_first() {
        Some((program, args)) if !program.is_empty() => Ok((PathBuf::from(program), args.to_vec())),
        _ => Err("expected command = [\"program\", \"argument\", …], found an empty command".into()),
    }
}

/// The declared port names: distinct, valid, at most [`MAX_PORTS`]; an error has the span to show.
fn port_names(ports: &Spanned<Vec<Spanned<String>>>) -> Result<Vec<PortName>, (Range<usize>, String)> {
    if ports.get_ref().len() > MAX_PORTS {
        let found = ports.get_ref().len();
        return Err((ports.span(), format!("expected at most {MAX_PORTS} ports, found {found}")));
    }
    let mut names: Vec<PortName> = Vec::new();
    for port in ports.get_ref() {
        let name = PortName::new(port.get_ref()).map_err(|m| (port.span(), m))?;
        if names.contains(&name) {
            return Err((port.span(), format!("a second port named `{name}`: names must differ")));
        }
        names.push(name);
    }
    Ok(names)
}

/// A worker variable of `service` that one of `earlier` has too (`a` with port `b_c`, `a_b` with
/// port `c`: both `KILLPOINT_SERVICE_A_B_C_ADDR`), said as a message.
fn clashing_variable(earlier: &[Service], service: &Service) -> Option<String> {
    let variables = |s: &Service| -> Vec<String> {
        let mut names = vec![s.name.variable("ADDR")];
        names.extend(s.ports.iter().map(|p| s.name.port_variable(p, "ADDR")));
        names
    };
    let mine = variables(service);
    earlier.iter().find_map(|other| {
        variables(other).into_iter().find(|v| mine.contains(v)).map(|v| {
            format!(
                "service `{}` and service `{}` would both set {v} for the worker: rename a service or a port",
                other.name, service.name
            )
        })
    })
}

fn readiness(ready: &ReadyFile) -> Result<Ready, String> {
    match ready {
        ReadyFile::Word(word) if word == "port" => Ok(Ready::Port),
        ReadyFile::Word(word) => {
            Err(format!("expected ready = \"port\" or a command such as [\"pg_isready\"], found \"{word}\""))
        }
        ReadyFile::Command(command) => match command.split_first() {
            Some((program, args)) if !program.is_empty() => {
                Ok(Ready::Command { program: program.clone(), args: args.to_vec() })
            }
            _ => Err("expected ready = [\"program\", \"argument\", …], found an empty command".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Services, ServicesError> {
        Services::parse(Path::new("/nowhere/services.toml"), text)
    }

    #[test]
    fn a_service_with_the_defaults_waits_for_its_port_for_ten_seconds() {
        let services = parse("[[service]]\nname = \"kv\"\ncommand = [\"python3\", \"kv.py\"]\n").unwrap();
        let kv = &services.list[0];
        assert_eq!(
            (kv.name.as_str(), kv.program.as_path(), &kv.args[..]),
            ("kv", Path::new("python3"), &["kv.py".to_owned()][..])
        );
        assert_eq!((&kv.ready, kv.ready_timeout), (&Ready::Port, Duration::from_secs(10)));
        assert_eq!(kv.dir, Path::new("/nowhere"));
        assert_eq!(kv.name.variable("PORT"), "KILLPOINT_SERVICE_KV_PORT");
        assert!(kv.ports.is_empty());
    }

    #[test]
    fn named_ports_are_kept_in_order_and_named_for_the_worker() {
        let text = "[[service]]\nname = \"restate\"\ncommand = [\"x\"]\nports = [\"admin\", \"node\"]\n";
        let restate = parse(text).unwrap().list.remove(0);
        let names: Vec<&str> = restate.ports.iter().map(PortName::as_str).collect();
        assert_eq!(names, ["admin", "node"]);
        assert_eq!(restate.name.port_variable(&restate.ports[0], "ADDR"), "KILLPOINT_SERVICE_RESTATE_ADMIN_ADDR");
    }

    #[test]
    fn a_ready_command_is_kept_as_written() {
        let text = "[[service]]\nname = \"pg\"\ncommand = [\"postgres\"]\nready = [\"pg_isready\", \"-q\"]\nready_timeout_seconds = 3\n";
        let pg = parse(text).unwrap().list.remove(0);
        assert_eq!(pg.ready, Ready::Command { program: "pg_isready".into(), args: vec!["-q".into()] });
        assert_eq!(pg.ready_timeout, Duration::from_secs(3));
    }

    #[test]
    fn mistakes_are_named_with_their_line_and_column() {
        let cases = [
            ("[[service]]\nname = \"Kv\"\ncommand = [\"x\"]\n", "/nowhere/services.toml:2:8: expected a service name"),
            ("[[service]]\nname = \"kv\"\ncommand = []\n", "/nowhere/services.toml:3:11: expected command = "),
            (
                "[[service]]\nname = \"kv\"\ncommand = [\"x\"]\nready = \"tcp\"\n",
                "/nowhere/services.toml:4:9: expected ready = \"port\"",
            ),
            (
                "[[service]]\nname = \"kv\"\ncommand = [\"x\"]\nready_timeout_seconds = 0\n",
                ":4:25: expected ready_timeout_seconds of at least 1",
            ),
            (
                "[[service]]\nname = \"kv\"\ncommand = [\"x\"]\n[[service]]\nname = \"kv\"\ncommand = [\"y\"]\n",
                ":5:8: a second service named `kv`",
            ),
            ("[[service]]\nname = \"kv\"\ncommand = [\"x\"]\nport = 5\n", ":4:1: unknown field `port`"),
            ("", "/nowhere/services.toml: expected at least one [[service]] table"),
            (
                "[[service]]\nname = \"kv\"\ncommand = [\"x\"]\nports = [\"admin\", \"Node\"]\n",
                "/nowhere/services.toml:4:19: expected a port name",
            ),
            (
                "[[service]]\nname = \"kv\"\ncommand = [\"x\"]\nports = [\"admin\", \"admin\"]\n",
                ":4:19: a second port named `admin`",
            ),
            (
                "[[service]]\nname = \"kv\"\ncommand = [\"x\"]\nports = [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\"]\n",
                ":4:9: expected at most 8 ports, found 9",
            ),
            (
                "[[service]]\nname = \"a\"\ncommand = [\"x\"]\nports = [\"b_c\"]\n[[service]]\nname = \"a_b\"\ncommand = [\"y\"]\nports = [\"c\"]\n",
                ":6:8: service `a` and service `a_b` would both set KILLPOINT_SERVICE_A_B_C_ADDR",
            ),
            ("[[service]]\nname = \"kv\"\ncommand = [\"x\"]\nports = \"admin\"\n", ":4:9: invalid type"),
        ];
        for (text, expected) in cases {
            let error = parse(text).expect_err(text).to_string();
            assert!(error.contains(expected), "for {text:?}: expected {expected:?} in {error:?}");
        }
    }
}
