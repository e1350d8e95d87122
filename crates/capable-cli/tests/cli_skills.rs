//! `capable skills` end to end against the fixture's `skills` profile (2026-07-28 with
//! the skills extension): listing reads no file; `show` prints a skill only after its
//! `SKILL.md` matched its entry, and a supporting file the same way; a tampered skill
//! is refused with exit 6 and nothing of it is printed.

mod common;

use std::time::Duration;

use common::{capable_with, fixture};

const T: Duration = Duration::from_secs(30);

#[test]
fn listing_reads_no_skill_file() {
    let run = capable_with(&["--json", "--trace", "skills"], &fixture("skills"), T);
    run.expect_code(0);
    let skills = run.json();
    let names: Vec<&str> = skills
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["frontmatter"]["name"].as_str())
        .collect();
    assert_eq!(names, ["pdf-processing", "tampered"]);
    assert!(
        !run.sent_methods().iter().any(|m| m == "resources/read"),
        "{:?}",
        run.sent_methods()
    );
}

#[test]
fn a_faithful_skill_and_its_file_are_shown_verified() {
    let run = capable_with(
        &["--json", "skills", "show", "pdf-processing"],
        &fixture("skills"),
        T,
    );
    run.expect_code(0);
    let shown = run.json();
    assert_eq!(shown["verified"], true);
    assert_eq!(shown["body"], "\nUse the forms in references/FORMS.md.\n");
    let file = capable_with(
        &[
            "skills",
            "show",
            "skill://pdf-processing/SKILL.md",
            "--file",
            "references/FORMS.md",
        ],
        &fixture("skills"),
        T,
    );
    file.expect_code(0);
    assert_eq!(file.stdout, "Fill the fields top to bottom.\n");
}

#[test]
fn a_tampered_skill_is_refused_and_nothing_of_it_is_printed() {
    let run = capable_with(&["skills", "show", "tampered"], &fixture("skills"), T);
    run.expect_code(6);
    assert!(run.stderr.contains("refused as tampered"), "{}", run.stderr);
    assert!(!run.stdout.contains("nobody reviewed"), "{}", run.stdout);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
