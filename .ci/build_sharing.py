#!/usr/bin/env python3
"""Checks that the README's commands share one build.

`cargo run --example quickstart`, then `cargo test --workspace`, then `cargo run -p agentic-cli`:
each later command must reuse what the earlier ones built rather than build a dependency again
with other features. Cargo picks a dependency's features from the packages a command builds, so
the quickstart's and the CLI's builds would differ from the tests' without the build-sharing
dependencies of examples/Cargo.toml and cli/Cargo.toml; this check fails, naming the crate and
its features, when one of those lists misses a feature (a dependency added or updated).

It compares the units each command builds (a unit is a crate with its features, named by the hash
in its file names), so it holds whatever the target directory already holds. Needs a build; run
from the repository's root.
"""

import json
import subprocess
import sys

WORKSPACE_PREFIX = "path+file://"
WORKSPACE_MARK = " (workspace)"

# Built twice whatever the features, and why.
TWICE = {
    "syn": "agentic-macros' tests link syn into a test binary; the quickstart builds syn only for "
    "the compiler's side (proc macros, built without debug info), a build of its own",
}


def units(args):
    """The units `cargo ARGS --message-format=json` builds: {crate and version: {hash: features}},
    the workspace's own crates marked by WORKSPACE_MARK in their key."""
    out = subprocess.run(
        ["cargo", *args, "--message-format=json"], check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    found = {}
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact":
            continue
        # "registry+https://...#tokio@1.54.1": two versions of a crate are two crates here.
        name = message["package_id"].rsplit("#", 1)[-1] + " " + message["target"]["name"]
        if message["package_id"].startswith(WORKSPACE_PREFIX):
            name += WORKSPACE_MARK
        for filename in message["filenames"]:
            stem = filename.rsplit("/", 1)[-1].split(".")[0]
            if "-" in stem:
                found.setdefault(name, {})[stem.rsplit("-", 1)[1]] = message["features"]
    return found


def dependencies_only(found):
    """`found` without the workspace's own crates."""
    return {name: hashes for name, hashes in found.items() if not name.endswith(WORKSPACE_MARK)}


def rebuilt(before, after):
    """The crates `after` builds again with other features than `before` did."""
    problems = []
    for name, hashes in sorted(after.items()):
        if name not in before or name.removesuffix(WORKSPACE_MARK).rsplit(" ", 1)[-1] in TWICE:
            continue  # a crate only the later command needs, or one built twice anyway
        for unit_hash, features in sorted(hashes.items()):
            if unit_hash not in before[name]:
                others = sorted(before[name].values())
                problems.append(f"  {name}: built again with features {features}; before: {others}")
    return problems


def main():
    quickstart = units(["build", "-p", "agentic-examples", "--example", "quickstart"])
    tests = units(["test", "--workspace", "--no-run"])
    cli = units(["build", "-p", "agentic-cli"])
    # The tests rebuild the workspace's own crates for their tests anyway: compared for the CLI only.
    quickstart = dependencies_only(quickstart)
    failures = []
    for label, before, after, fix in [
        ("cargo test --workspace after the quickstart", quickstart, dependencies_only(tests), "examples/Cargo.toml"),
        ("cargo run -p agentic-cli after the tests", tests, cli, "cli/Cargo.toml"),
    ]:
        problems = rebuilt(before, after)
        if problems:
            failures.append(
                f"{label} builds {len(problems)} crate(s) again; add their features to the "
                f"build-sharing dependencies of {fix}:\n" + "\n".join(problems)
            )
    if failures:
        print("\n\n".join(failures))
        return 1
    print(
        f"one build: the tests reuse the quickstart's build of its {len(quickstart)} dependencies, "
        f"and the CLI the tests' build of its {len(cli)} crates"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
