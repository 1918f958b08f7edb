//! Every mutant in `loom-tests/mutants` still applies to the runtime's sources, so a change to
//! the runtime cannot silently retire one (`mutants/check.sh` then runs each against its
//! model under loom). Runs in the normal test suite; skipped outside a git checkout.
#![cfg(not(loom))]

use std::path::Path;
use std::process::Command;

#[test]
fn every_mutant_applies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let in_git = Command::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .current_dir(&root)
        .output()
        .is_ok_and(|out| out.status.success());
    if !in_git {
        eprintln!("not a git checkout: skipping");
        return;
    }
    let mut patches: Vec<_> = std::fs::read_dir(root.join("loom-tests/mutants"))
        .expect("the mutants directory")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "patch"))
        .collect();
    patches.sort();
    assert!(patches.len() >= 9, "found the mutants");
    for patch in patches {
        let status = Command::new("git")
            .arg("apply")
            .arg("--check")
            .arg(&patch)
            .current_dir(&root)
            .status()
            .expect("git runs");
        assert!(
            status.success(),
            "{} no longer applies: regenerate it",
            patch.display()
        );
    }
}
