//! The picture in ARCHITECTURE.md, kept true: its `layers` block lists, for each crate of the
//! workspace, the crate's modules from the lowest layer to the highest, and this test reads every
//! source file's own paths (`crate::…`, `super::…`, `self::…`, and in a crate's binaries the
//! library's name) and fails on a module the block does not place, an import from a lower layer to
//! a higher one, an import circle between files, or a path the document names that does not exist.
//!
//! Run it alone with `cargo test --test integration layers::`. Like `../shared/tools/rust_layers.py`, it reads
//! paths as text (doc links included: a doc link up a layer is a dependency a reader follows) and
//! stops reading a file at its first `#[cfg(test)] mod`, since tests may reach anywhere.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate's line of the `layers` block: `harness/src (killpoint): model tracer | scenario | …`.
struct Crate {
    src: PathBuf,
    /// The library's name as the crate's binaries (`main.rs`, `bin/`) spell it.
    library: Option<String>,
    /// Modules by layer, lowest first: a module is a folder or a file directly under `src/`.
    layers: Vec<Vec<String>>,
}

impl Crate {
    fn layer_of(&self, module: &str) -> Option<usize> {
        self.layers.iter().position(|layer| layer.iter().any(|m| m == module))
    }
}

fn layers_block(architecture: &str, root: &Path) -> Result<Vec<Crate>, String> {
    let block = architecture
        .split("```layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .ok_or("expected a ```layers fenced block in ARCHITECTURE.md, found none")?;
    let line = Regex::new(r"^(\S+)(?: \((\w+)\))?: (.+)$").expect("a valid pattern");
    let mut crates = Vec::new();
    for text in block.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let c = line
            .captures(text)
            .ok_or_else(|| format!("ARCHITECTURE.md layers: expected `DIR (LIBRARY): a b | c | …`, found `{text}`"))?;
        crates.push(Crate {
            src: root.join(&c[1]),
            library: c.get(2).map(|m| m.as_str().to_owned()),
            layers: c[3].split('|').map(|l| l.split_whitespace().map(str::to_owned).collect()).collect(),
        });
    }
    Ok(crates)
}

/// A source file: where it is, its module path under `src/`, and its text up to its tests.
struct Source {
    path: PathBuf,
    module: Vec<String>,
    text: String,
}

fn sources(src: &Path) -> Vec<Source> {
    let tests = Regex::new(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{").expect("a valid pattern");
    let mut out = Vec::new();
    let mut dirs = vec![src.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let text = tests.find(&text).map_or(text.clone(), |m| text[..m.start()].to_owned());
                let relative = path.strip_prefix(src).expect("under src").with_extension("");
                let mut module: Vec<String> =
                    relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                if module.len() > 1 && module.last().is_some_and(|m| m == "mod") {
                    module.pop();
                }
                out.push(Source { path, module, text });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The file that defines `parts`, as deep as files exist (`crate::run::driver::Run` → run/driver.rs).
fn defining_file(src: &Path, parts: &[String]) -> Option<PathBuf> {
    let (mut best, mut dir) = (None, src.to_owned());
    for part in parts {
        let (file, folder) = (dir.join(format!("{part}.rs")), dir.join(part).join("mod.rs"));
        best = Some(if file.is_file() {
            file
        } else if folder.is_file() {
            folder
        } else {
            break;
        });
        dir = dir.join(part);
    }
    best
}

/// Each path a file names into its own crate, as module parts from the crate root, with its line.
fn references(source: &Source, library: Option<&str>) -> Vec<(Vec<String>, usize)> {
    let binary = matches!(source.module.first().map(String::as_str), Some("main" | "bin"));
    let roots = match library {
        Some(name) if binary => format!("crate|super|self|{name}"),
        _ => "crate|super|self".to_owned(),
    };
    let path = Regex::new(&format!(r"\b({roots})((?:::\w+)*)(::\{{)?")).expect("a valid pattern");
    let mut out = Vec::new();
    for found in path.captures_iter(&source.text) {
        let whole = found.get(0).expect("a match");
        if whole.as_str() == &found[1] {
            continue; // the bare word, not a path
        }
        let line = source.text[..whole.start()].matches('\n').count() + 1;
        let mut base: Vec<String> = match &found[1] {
            "super" => source.module[..source.module.len().saturating_sub(1)].to_vec(),
            "self" => source.module.clone(),
            _ => Vec::new(),
        };
        let prefix: Vec<&str> = found[2].split("::").filter(|s| !s.is_empty()).collect();
        let tails: Vec<String> = match found.get(3) {
            Some(brace) => group_items(&source.text[brace.end()..]),
            None => vec![String::new()],
        };
        let supers = prefix.iter().take_while(|s| **s == "super").count();
        base.truncate(base.len().saturating_sub(supers));
        for tail in tails {
            let parts: Vec<String> = prefix[supers..]
                .iter()
                .copied()
                .chain(tail.split("::"))
                .filter(|s| !s.is_empty() && *s != "self")
                .map(str::to_owned)
                .collect();
            out.push((base.iter().cloned().chain(parts).collect(), line));
        }
    }
    out
}

/// The first segments of a `use crate::{a::b, c, d::{e, f}}` group, read from just after its `{`.
fn group_items(text: &str) -> Vec<String> {
    let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => items.push(std::mem::take(&mut item)),
            c if depth == 0 && !c.is_whitespace() => item.push(c),
            _ => {}
        }
    }
    items.push(item);
    items.into_iter().filter(|i| !i.is_empty()).collect()
}

/// Every problem with one crate: modules placed in no layer, imports up a layer, file circles.
fn problems(krate: &Crate, root: &Path) -> Vec<String> {
    let shown = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let sources = sources(&krate.src);
    let mut problems = Vec::new();
    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let top = |module: &[String]| module.first().cloned().unwrap_or_default();
    for listed in krate.layers.iter().flatten() {
        if !sources.iter().any(|s| top(&s.module) == *listed) {
            problems.push(format!("{}: the layers name `{listed}`, which is no module of it", shown(&krate.src)));
        }
    }
    for source in &sources {
        graph.entry(source.path.clone()).or_default();
        let here = top(&source.module);
        let Some(from) = krate.layer_of(&here) else {
            problems.push(format!("{}: module `{here}` is in no layer of ARCHITECTURE.md", shown(&source.path)));
            continue;
        };
        for (parts, line) in references(source, krate.library.as_deref()) {
            let Some(target) = defining_file(&krate.src, &parts) else {
                if let Some(item) = parts.first().filter(|_| from + 1 < krate.layers.len()) {
                    problems.push(format!(
                        "{}:{line}: names `crate::{item}`, an item of the crate root: name it from its module",
                        shown(&source.path)
                    ));
                }
                continue;
            };
            let module = top(&parts);
            if let Some(to) = krate.layer_of(&module).filter(|to| *to > from) {
                problems.push(format!(
                    "{}:{line}: `{here}` (layer {}) imports `{}` from `{module}` (layer {}): a lower layer must not import a higher one",
                    shown(&source.path),
                    from + 1,
                    parts.join("::"),
                    to + 1
                ));
            }
            if target != source.path {
                graph.entry(source.path.clone()).or_default().insert(target);
            }
        }
    }
    for circle in circles(&graph) {
        let files: Vec<String> = circle.iter().map(|p| shown(p)).collect();
        problems.push(format!("import circle between files: {}", files.join(" ")));
    }
    problems
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g PathBuf, (usize, usize)>,
        stack: Vec<&'g PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g PathBuf) -> usize {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            let mut low = n;
            for w in self.graph.get(v).into_iter().flatten() {
                let w = self.graph.get_key_value(w).map_or(w, |(k, _)| k);
                low = match self.index.get(w) {
                    None => low.min(self.visit(w)),
                    Some(&(i, _)) if self.stack.contains(&w) => low.min(i),
                    Some(_) => low,
                };
            }
            self.index.insert(v, (n, low));
            if low == n {
                let at = self.stack.iter().position(|x| *x == v).expect("on the stack");
                let component: Vec<PathBuf> = self.stack.drain(at..).cloned().collect();
                if component.len() > 1 {
                    self.out.push(component);
                }
            }
            low
        }
    }
    let mut walk = Walk { graph, index: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.out
}

/// The paths ARCHITECTURE.md names in backticks (with a `/`, no pattern characters; a bare file
/// name is read in the context of the folder its paragraph is about).
fn missing_paths(architecture: &str, root: &Path) -> Vec<String> {
    let quoted = Regex::new(r"`([^`\s]+)`").expect("a valid pattern");
    quoted
        .captures_iter(architecture)
        .map(|c| c[1].trim_end_matches([',', '.', ':', ')']).to_owned())
        .filter(|p| p.contains('/') && !p.contains(['*', '<', '{', '$']))
        .filter(|p| !p.contains("::") && !p.starts_with("--") && !p.starts_with("http"))
        .filter(|p| !root.join(p).exists())
        .map(|p| format!("ARCHITECTURE.md names `{p}`, which does not exist"))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn check(root: &Path) -> Vec<String> {
    let architecture = match std::fs::read_to_string(root.join("ARCHITECTURE.md")) {
        Ok(text) => text,
        Err(e) => return vec![format!("expected ARCHITECTURE.md at {}: {e}", root.display())],
    };
    let crates = match layers_block(&architecture, root) {
        Ok(crates) => crates,
        Err(e) => return vec![e],
    };
    let mut out: Vec<String> = crates.iter().flat_map(|c| problems(c, root)).collect();
    out.extend(missing_paths(&architecture, root));
    out
}

#[test]
fn the_code_keeps_the_layers_architecture_md_states() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let problems = check(root);
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    assert!(readme.contains("(ARCHITECTURE.md)"), "README.md must link ARCHITECTURE.md");
}

/// The check itself can fail: a small tree with each kind of mistake is reported for each.
#[test]
fn an_upward_import_a_circle_an_unplaced_module_and_a_missing_path_are_each_reported() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("ARCHITECTURE.md", "`src/low.rs` `src/gone.rs`\n```layers\nsrc (lib): low | high | lib\n```\n");
    write("src/lib.rs", "pub mod low;\npub mod high;\npub mod stray;\n");
    write("src/low.rs", "use crate::high::Thing;\n");
    write("src/high/mod.rs", "pub mod a;\npub mod b;\npub struct Thing;\nuse crate::low;\n");
    write("src/high/a.rs", "use super::b::B;\npub struct A;\n");
    write(
        "src/high/b.rs",
        "use crate::high::{a::A, Thing};\npub struct B;\n#[cfg(test)]\nmod tests { use crate::stray; }\n",
    );
    write("src/stray.rs", "");
    let problems = check(dir.path()).join("\n");
    assert!(
        problems.contains("src/low.rs:1: `low` (layer 1) imports `high::Thing` from `high` (layer 2)"),
        "{problems}"
    );
    assert!(problems.contains("import circle between files: src/high/a.rs src/high/b.rs"), "{problems}");
    assert!(problems.contains("src/stray.rs: module `stray` is in no layer"), "{problems}");
    assert!(problems.contains("names `src/gone.rs`, which does not exist"), "{problems}");
    assert!(!problems.contains("src/low.rs`, which"), "{problems}");
}
