//! What a third party writes to certify its runtime: this whole file, plus
//! `[[test]] name = "…" harness = false` in Cargo.toml. Here it certifies the reference runtime,
//! so the README's snippet is proven to work as written.

fn main() -> std::process::ExitCode {
    killpoint::trials::certify_main(env!("CARGO_BIN_EXE_killpoint-runtime"))
}
