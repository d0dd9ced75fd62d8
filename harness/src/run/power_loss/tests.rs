//! The model against a real directory: the files are made as a runtime would make them, and the
//! points are the ones the tracer would announce for those calls.

use super::PowerLoss;
use crate::tracer::{Point, PointKind, When};
use std::path::Path;

fn point(call: &str, kind: PointKind, when: When, path: &Path, to: Option<&Path>) -> Point {
    Point {
        n: 0,
        when,
        call: call.to_owned(),
        kind,
        path: Some(path.display().to_string()),
        to: to.map(|t| t.display().to_string()),
        peer: None,
        bytes: None,
        ret: (when == When::After).then_some(0),
        synced: false,
        tid: 7,
        request: None,
        answer: None,
        thread: None,
        step: None,
    }
}

/// `fsync(path)` done: its `after` point.
fn fsync(model: &PowerLoss, path: &Path) {
    model.record(&point("fsync", PointKind::Sync, When::After, path, None));
}

fn rename(model: &PowerLoss, from: &Path, to: &Path) {
    model.record(&point("rename", PointKind::Rename, When::Before, from, Some(to)));
    std::fs::rename(from, to).unwrap();
    model.record(&point("rename", PointKind::Rename, When::After, from, Some(to)));
}

fn unlink(model: &PowerLoss, path: &Path) {
    model.record(&point("unlink", PointKind::Unlink, When::Before, path, None));
    std::fs::remove_file(path).unwrap();
    model.record(&point("unlink", PointKind::Unlink, When::After, path, None));
}

/// The data dir after the power loss: each file's name and text, sorted.
fn after_power_loss(model: &PowerLoss, dir: &Path) -> Vec<(String, String)> {
    model.restore().unwrap();
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    files.sort();
    files
}

fn files(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
}

#[test]
fn a_rename_over_a_file_survives_only_once_its_directory_is_synced() {
    for dir_synced in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (tmp, target) = (dir.path().join("state.tmp"), dir.path().join("state"));
        std::fs::write(&target, "old").unwrap();
        let model = PowerLoss::new(dir.path()).unwrap();
        std::fs::write(&tmp, "new").unwrap();
        fsync(&model, &tmp);
        rename(&model, &tmp, &target);
        if dir_synced {
            fsync(&model, dir.path());
        }
        let expected = if dir_synced { files(&[("state", "new")]) } else { files(&[("state", "old")]) };
        assert_eq!(after_power_loss(&model, dir.path()), expected, "directory synced: {dir_synced}");
    }
}

#[test]
fn a_file_created_and_synced_is_lost_without_its_directory_synced() {
    let dir = tempfile::tempdir().unwrap();
    let model = PowerLoss::new(dir.path()).unwrap();
    let (kept, lost) = (dir.path().join("kept"), dir.path().join("lost"));
    std::fs::write(&kept, "k").unwrap();
    fsync(&model, &kept);
    fsync(&model, dir.path());
    std::fs::write(&lost, "l").unwrap();
    fsync(&model, &lost);
    assert_eq!(after_power_loss(&model, dir.path()), files(&[("kept", "k")]));
}

#[test]
fn a_name_synced_before_its_bytes_is_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = PowerLoss::new(dir.path()).unwrap();
    std::fs::write(dir.path().join("log"), "unsynced").unwrap();
    fsync(&model, dir.path());
    assert_eq!(after_power_loss(&model, dir.path()), files(&[("log", "")]));
}

#[test]
fn an_overwrite_after_the_last_sync_is_lost_unless_written_o_sync() {
    for o_sync in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db");
        std::fs::write(&file, "v0").unwrap();
        let model = PowerLoss::new(dir.path()).unwrap();
        std::fs::write(&file, "v1").unwrap();
        fsync(&model, &file);
        std::fs::write(&file, "v2").unwrap();
        let write = Point { synced: o_sync, ..point("pwrite64", PointKind::Durable, When::After, &file, None) };
        model.record(&write);
        let expected = if o_sync { "v2" } else { "v1" };
        assert_eq!(after_power_loss(&model, dir.path()), files(&[("db", expected)]), "O_SYNC: {o_sync}");
    }
}

#[test]
fn an_unlinked_file_comes_back_with_its_synced_bytes_until_its_directory_is_synced() {
    for dir_synced in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (journal, other) = (dir.path().join("journal"), dir.path().join("other"));
        std::fs::write(&journal, "synced").unwrap();
        let model = PowerLoss::new(dir.path()).unwrap();
        unlink(&model, &journal);
        // A new file may get the unlinked one's inode: its bytes must not become the old name's.
        std::fs::write(&other, "reused?").unwrap();
        fsync(&model, &other);
        if dir_synced {
            fsync(&model, dir.path());
        }
        let expected = if dir_synced { files(&[("other", "reused?")]) } else { files(&[("journal", "synced")]) };
        assert_eq!(after_power_loss(&model, dir.path()), expected, "directory synced: {dir_synced}");
    }
}

#[test]
fn what_a_restore_leaves_is_the_next_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("db");
    std::fs::write(&file, "v1").unwrap();
    let model = PowerLoss::new(dir.path()).unwrap();
    std::fs::write(&file, "lost").unwrap();
    assert_eq!(after_power_loss(&model, dir.path()), files(&[("db", "v1")]));
    std::fs::write(&file, "lost again").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    assert_eq!(after_power_loss(&model, dir.path()), files(&[("db", "v1")]));
}
