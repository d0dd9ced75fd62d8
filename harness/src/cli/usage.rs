//! The error every subcommand returns before anything runs: a usage or scenario-file mistake.

/// A usage or scenario-file error: printed as `killpoint: …`, exit status 2.
pub struct Usage(pub String);

impl<T: Into<String>> From<T> for Usage {
    fn from(message: T) -> Usage {
        Usage(message.into())
    }
}
