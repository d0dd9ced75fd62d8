//! Embeds the standard scenarios (`scenarios/*.toml`, a link to the repository's `scenarios/` in a
//! checkout, the files themselves in a packaged crate) into the library, with their file names, so
//! an installed `killpoint` certifies from any directory.

use std::path::PathBuf;

fn main() {
    let dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the standard scenarios in {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut code = String::from("&[\n");
    for path in &files {
        let name = path.file_name().expect("a listed file has a name").to_string_lossy();
        code.push_str(&format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("standard_scenarios.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
