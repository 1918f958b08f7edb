//! Concurrent code gets its primitives from the loom facade (`src/loom.rs`) and nowhere else,
//! so that `--cfg loom` swaps every one of them. This test reads the sources and fails on any
//! other import of `std::sync`, `std::thread`, `std::cell::UnsafeCell` or `parking_lot`.
//! Unit-test modules (`mod tests`, at the bottom of a file, or a `tests.rs` of their own) run
//! outside loom and are skipped.

use std::fs;
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("the source directory is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_the_facade_imports_sync_primitives() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 10, "found the sources");
    let forbidden = [
        "std::sync",
        "std::thread",
        "std::cell::UnsafeCell",
        "parking_lot",
        "core::sync",
    ];
    let mut offences = Vec::new();
    for file in files {
        if file.ends_with("loom.rs") || file.ends_with("tests.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).expect("a readable source file");
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("mod tests") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            if forbidden.iter().any(|f| code.contains(f)) {
                offences.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "sync primitives imported outside src/loom.rs:\n{}",
        offences.join("\n")
    );
}
