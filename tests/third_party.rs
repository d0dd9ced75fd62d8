//! What a third party writes to certify its runtime: this whole file, plus
//! `[[test]] name = "…" harness = false` in Cargo.toml. Here it certifies the reference runtime
//! against the standard scenarios and a project's own (`tests/fixtures/own-scenarios/`), so the
//! README's snippets are proven to work as written (`certify_main(p)` is
//! `certify_main_with(p, [])`).

fn main() -> std::process::ExitCode {
    killpoint::trials::certify_main_with(
        env!("CARGO_BIN_EXE_killpoint-runtime"),
        [concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/own-scenarios")],
    )
}
