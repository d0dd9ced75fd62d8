//! What the tracer needs to know, read from the environment the harness gives the runtime: the
//! data dir and the fake world's URLs, the trace socket and the log.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::point::Peer;
use super::schedule::choice::Schedule;

/// One of the fake world's URLs: where it listens and the path prefix that names the part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldUrl {
    pub address: SocketAddr,
    pub path: String,
    pub peer: Peer,
}

/// What the tracer needs to know, from the environment the harness gives the runtime.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// `$KILLPOINT_DATA_DIR`, as given and canonical (fds resolve to canonical paths; path
    /// arguments are as the program wrote them).
    pub data_dirs: Vec<PathBuf>,
    /// The fake world's URLs.
    pub world: Vec<WorldUrl>,
    /// `$KILLPOINT_TRACE_SOCKET`; without it the tracer only counts points.
    pub socket: Option<PathBuf>,
    /// `$KILLPOINT_TRACE_LOG`: every point is also appended there as it happens (a SIGKILLed
    /// tracer prints no summary; this file is what a run leaves of its points).
    pub log: Option<PathBuf>,
    /// The declared services' addresses (`$KILLPOINT_SERVICE_<NAME>_ADDR`): the runtime may
    /// reach them as it reaches the world (CONTRACT.md §2, "Services").
    pub services: Vec<SocketAddr>,
    /// `$KILLPOINT_TRACE_ESCAPES`: where writes outside the data dir and contact outside the world
    /// are reported (see `escape`); without it they are not looked for.
    pub escapes: Option<PathBuf>,
    /// `$KILLPOINT_SCHEDULE`: a controlled schedule (see `schedule`), or why its value is not one.
    pub schedule: Option<Result<Schedule, String>>,
}

impl Config {
    pub fn from_env() -> Config {
        let data_dirs = std::env::var_os("KILLPOINT_DATA_DIR").map(|d| Config::dirs_of(PathBuf::from(d)));
        let world = [
            ("KILLPOINT_PROVIDER_URL", Peer::Provider),
            ("KILLPOINT_CONSUMERS_URL", Peer::Consumers),
            ("KILLPOINT_POLICY_URL", Peer::Policy),
            ("KILLPOINT_MODEL_URL", Peer::Model),
        ]
        .into_iter()
        .filter_map(|(name, peer)| {
            let (address, path) = split_url(&std::env::var(name).ok()?)?;
            Some(WorldUrl { address, path, peer })
        })
        .collect();
        Config {
            data_dirs: data_dirs.unwrap_or_default(),
            world,
            socket: std::env::var_os("KILLPOINT_TRACE_SOCKET").map(PathBuf::from),
            log: std::env::var_os("KILLPOINT_TRACE_LOG").map(PathBuf::from),
            services: service_addresses(std::env::vars()),
            escapes: std::env::var_os(ESCAPES_VARIABLE).map(PathBuf::from),
            schedule: std::env::var(Schedule::VARIABLE).ok().map(|v| Schedule::from_variable(&v)),
        }
    }

    /// `dir` as given and, when it differs, canonical: what `data_dirs` holds.
    pub fn dirs_of(dir: PathBuf) -> Vec<PathBuf> {
        match dir.canonicalize() {
            Ok(canonical) if canonical != dir => vec![dir, canonical],
            _ => vec![dir],
        }
    }

    pub(super) fn is_data(&self, path: &Path) -> bool {
        self.data_dirs.iter().any(|dir| path.starts_with(dir))
    }

    pub(super) fn is_world(&self, address: SocketAddr) -> bool {
        self.world.iter().any(|url| url.address == address)
    }

    /// The part of the world at `address` that a request for `path` goes to (the longest
    /// matching prefix); without a path, the part only if it is the only one at that address.
    pub fn peer_of(&self, address: SocketAddr, path: Option<&str>) -> Option<Peer> {
        let mut here = self.world.iter().filter(|url| url.address == address);
        match path {
            Some(path) => here
                .filter(|url| path.starts_with(url.path.as_str()))
                .max_by_key(|url| url.path.len())
                .map(|url| url.peer),
            None => {
                let first = here.next()?;
                here.next().is_none().then_some(first.peer)
            }
        }
    }
}

/// The variable naming the file escapes are appended to.
pub const ESCAPES_VARIABLE: &str = "KILLPOINT_TRACE_ESCAPES";

/// The addresses of `KILLPOINT_SERVICE_<NAME>_ADDR` variables among `vars`.
fn service_addresses(vars: impl Iterator<Item = (String, String)>) -> Vec<SocketAddr> {
    vars.filter(|(name, _)| name.starts_with("KILLPOINT_SERVICE_") && name.ends_with("_ADDR"))
        .filter_map(|(_, value)| value.parse().ok())
        .collect()
}

/// `http://127.0.0.1:8080/provider` → (127.0.0.1:8080, "/provider"). Only IP literals: the
/// harness's world listens on loopback addresses, never on names.
pub(super) fn split_url(url: &str) -> Option<(SocketAddr, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    Some((authority.parse().ok()?, format!("/{}", path.trim_end_matches('/'))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracer::exchange::request_path;

    #[test]
    fn world_urls_give_addresses_and_paths() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(split_url("http://127.0.0.1:41000"), Some((at("127.0.0.1:41000"), "/".to_owned())));
        assert_eq!(split_url("http://127.0.0.1:41000/policy"), Some((at("127.0.0.1:41000"), "/policy".to_owned())));
        assert_eq!(split_url("http://localhost:41000"), None);
    }

    #[test]
    fn declared_services_are_read_from_their_address_variables() {
        let vars = [
            ("KILLPOINT_SERVICE_KV_ADDR", "127.0.0.1:42000"),
            ("KILLPOINT_SERVICE_KV_PORT", "42000"),
            ("KILLPOINT_SERVICE_DATA_DIR", "/tmp/x"),
            ("KILLPOINT_PROVIDER_URL", "http://127.0.0.1:41000/provider"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()));
        assert_eq!(service_addresses(vars.into_iter()), vec!["127.0.0.1:42000".parse::<SocketAddr>().unwrap()]);
    }

    #[test]
    fn requests_name_the_part_of_the_world_by_path() {
        let address: SocketAddr = "127.0.0.1:41000".parse().unwrap();
        let url = |path: &str, peer| WorldUrl { address, path: path.to_owned(), peer };
        let config = Config {
            world: vec![
                url("/provider", Peer::Provider),
                url("/consumers", Peer::Consumers),
                url("/policy", Peer::Policy),
            ],
            ..Config::default()
        };
        let path = request_path(b"POST /consumers/ledger HTTP/1.1\r\nhost: x\r\n").unwrap();
        assert_eq!(path, "/consumers/ledger");
        assert_eq!(config.peer_of(address, Some(path)), Some(Peer::Consumers));
        assert_eq!(config.peer_of(address, Some("/elsewhere")), None);
        assert_eq!(config.peer_of(address, None), None, "three parts share the address");
        assert_eq!(request_path(b"{\"amount\":3}"), None, "a body is no request line");
    }
}
