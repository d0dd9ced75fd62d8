//! The runtime's configuration, read from the environment the harness sets (CONTRACT.md §2).
//! Anything missing or malformed stops the runtime at start, with a message naming the variable,
//! what was expected and what was found.

use std::env;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use reqwest::Url;

/// The contract this runtime implements.
pub const CONTRACT: &str = "killpoint-contract/9";

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub provider_url: Url,
    pub consumers_url: Url,
    pub policy_url: Url,
    /// The model that decides tasks (CONTRACT.md section 12), as an OpenAI client's `base_url`.
    pub model_url: Option<Url>,
    /// `KILLPOINT_RESTORED`: this start is on a backup restored after the host was lost
    /// (CONTRACT.md section 13); its value names the restore.
    pub restored: Option<String>,
    /// Which life of the runtime this is: the fencing token (CONTRACT.md §9).
    pub incarnation: u32,
    /// `None` when the harness certifies without the probe.
    pub probe_socket: Option<PathBuf>,
    /// Sends of one delivery before it is dead-lettered.
    pub delivery_max_attempts: u32,
    /// Delay after the first failed send; later delays double.
    pub retry_base: Duration,
}

impl Config {
    pub fn from_env() -> Result<Config> {
        let contract = required("KILLPOINT_CONTRACT", "the contract version")?;
        if contract != CONTRACT {
            bail!("KILLPOINT_CONTRACT is {contract:?}, but this runtime implements {CONTRACT:?} only");
        }

        let listen = required("KILLPOINT_LISTEN", "an address to bind, like 127.0.0.1:0")?;
        let listen = listen.parse().map_err(|_| {
            anyhow::anyhow!("KILLPOINT_LISTEN should be an IP address and port like 127.0.0.1:0, found {listen:?}")
        })?;

        Ok(Config {
            data_dir: required("KILLPOINT_DATA_DIR", "a directory for durable state")?.into(),
            listen,
            provider_url: base_url("KILLPOINT_PROVIDER_URL")?,
            consumers_url: base_url("KILLPOINT_CONSUMERS_URL")?,
            policy_url: base_url("KILLPOINT_POLICY_URL")?,
            model_url: optional("KILLPOINT_MODEL_URL")?.map(|_| base_url("KILLPOINT_MODEL_URL")).transpose()?,
            incarnation: {
                // Required: without it this incarnation could not be told from the next one.
                required("KILLPOINT_INCARNATION", "which life of the runtime this is: 1, 2, …")?;
                number("KILLPOINT_INCARNATION", 1)?
            },
            probe_socket: optional("KILLPOINT_PROBE_SOCKET")?.map(PathBuf::from),
            restored: optional("KILLPOINT_RESTORED")?,
            delivery_max_attempts: number("KILLPOINT_DELIVERY_MAX_ATTEMPTS", 5)?,
            retry_base: Duration::from_millis(number("KILLPOINT_RETRY_BASE_MS", 25)?.into()),
        })
    }
}

/// An unset or empty variable counts as absent.
fn optional(name: &str) -> Result<Option<String>> {
    match env::var(name) {
        Ok(value) if value.is_empty() => Ok(None),
        Ok(value) => Ok(Some(value)),
        Err(env::VarError::NotPresent) => Ok(None),
        Err(env::VarError::NotUnicode(value)) => {
            bail!("{name} should be UTF-8 text, found {value:?}")
        }
    }
}

fn required(name: &str, expected: &str) -> Result<String> {
    match optional(name)? {
        Some(value) => Ok(value),
        None => bail!("{name} is not set; expected {expected} ({CONTRACT}, CONTRACT.md §2)"),
    }
}

fn base_url(name: &str) -> Result<Url> {
    let value = required(name, "an http:// base URL")?;
    match Url::parse(&value) {
        Ok(url) if url.scheme() == "http" && !url.cannot_be_a_base() => Ok(url),
        _ => bail!("{name} should be an http:// base URL like http://127.0.0.1:40123/provider, found {value:?}"),
    }
}

/// A positive whole number, or `default` when unset.
fn number(name: &str, default: u32) -> Result<u32> {
    match optional(name)? {
        None => Ok(default),
        Some(value) => match value.parse::<u32>() {
            Ok(number) if number > 0 => Ok(number),
            _ => bail!("{name} should be a whole number above 0, found {value:?}"),
        },
    }
}
