//! The docs' lists cannot drift from the tree: design.md's contents line names every section,
//! its crate map every example, and the README's layout table every crate folder.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate sits in the workspace").to_owned()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

#[test]
fn the_contents_line_lists_every_section_in_order() {
    let design = read("docs/design.md");
    let headings: Vec<u32> =
        design.lines().filter_map(|line| line.strip_prefix("## ")?.split_once(". ")?.0.parse().ok()).collect();
    assert!(headings.len() > 10, "{headings:?}");
    let contents = design.split("Contents:").nth(1).expect("a contents line").split("\n\n").next().unwrap();
    let listed: Vec<u32> = contents
        .split('§')
        .skip(1)
        .map(|entry| entry.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().expect("§N"))
        .collect();
    assert_eq!(listed, headings, "docs/design.md's contents line and its `## N.` headings differ");
}

#[test]
fn the_crate_map_names_every_example() {
    let design = read("docs/design.md");
    let row = design.lines().find(|line| line.starts_with("| `examples/`")).expect("the examples row");
    for entry in std::fs::read_dir(root().join("examples/examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "rs") {
            let name = path.file_stem().unwrap().to_str().unwrap();
            assert!(row.contains(&format!("`{name}`")), "docs/design.md §2 leaves out the example `{name}`: {row}");
        }
    }
}

#[test]
fn the_readme_layout_names_every_crate_folder() {
    let manifest = read("Cargo.toml");
    let members = manifest.split("members = [").nth(1).unwrap().split(']').next().unwrap();
    let readme = read("README.md");
    let layout = readme.split("## Layout").nth(1).expect("a Layout section").split("\n## ").next().unwrap();
    for member in members.split(',').map(|member| member.trim().trim_matches('"')) {
        assert!(layout.contains(&format!("| `{member}/` |")), "the README's layout table leaves out `{member}/`");
    }
}

/// The runtime's module map in docs/design.md §2 names each module of `runtime/src` (a folder as
/// `name/`, a file as `name.rs`), and names no module that is not there.
#[test]
fn the_module_map_matches_the_runtimes_modules() {
    let design = read("docs/design.md");
    let map = design
        .split("The runtime's modules (`runtime/src/`)")
        .nth(1)
        .expect("the module map")
        .split("\n## ")
        .next()
        .unwrap();
    let listed: Vec<String> =
        map.lines().filter_map(|line| line.strip_prefix("- `")?.split('`').next().map(str::to_owned)).collect();
    let mut present = Vec::new();
    for entry in std::fs::read_dir(root().join("runtime/src")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            present.push(format!("{name}/"));
        } else if name.ends_with(".rs") {
            present.push(name);
        }
    }
    for module in &present {
        assert!(listed.contains(module), "docs/design.md §2's module map leaves out `runtime/src/{module}`");
    }
    for module in &listed {
        let without_feature = module.split(' ').next().unwrap();
        assert!(
            present.iter().any(|present| present == without_feature),
            "docs/design.md §2 maps `{module}`, which `runtime/src` does not have"
        );
    }
}
