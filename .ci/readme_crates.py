#!/usr/bin/env python3
"""Builds every README snippet as a crate of its own, with only the dependencies written beside it.

Each ```rust block must be preceded, in its section, by a ```toml block holding the
`[dependencies]` lines it needs: that block is the crate's whole dependency list, as a newcomer
would paste it into a new crate. `agentic-runtime = { path = ... }` (and each crate of CRATES) is
pointed at this checkout. An `ignore` block (one the runtime's doc tests, which run the README,
cannot build: it needs an integration's crate) is built too when it is a whole program (`fn main`);
otherwise it is a fragment, read as prose.
A hidden line (`# `, rustdoc's) is an error: GitHub shows it as it is, so what a reader copies
would not compile. A snippet without `fn main` is wrapped in one, as rustdoc wraps it. The crates share one target directory (CARGO_TARGET_DIR, else
target/readme-crates) and are checked with `cargo check`: what a new crate would fail to compile,
this fails on, naming the snippet's line in the README.

Usage: .ci/readme_crates.py [README.md]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blocks(text):
    """(line, info, body, section) of each fenced block, in order."""
    section = ""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("## "):
            section = line
        if line.startswith("```"):
            info = line[3:].strip()
            start = index + 1
            end = start
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            yield start, info, "\n".join(lines[start:end]), section
            index = end + 1
            continue
        index += 1


def as_program(body):
    """The snippet as rustdoc compiles it (it has no hidden lines): wrapped in `fn main` if it has none."""
    code = body
    if re.search(r"\bfn main\s*\(", code):
        return code
    uses = [line for line in code.split("\n") if line.startswith("use ")]
    rest = [line for line in code.split("\n") if not line.startswith("use ")]
    return "\n".join(uses) + "\n\nfn main() {\n" + "\n".join(rest) + "\n}\n"


# The workspace's crates a snippet may depend on, and their folders in this checkout.
CRATES = {"agentic-runtime": "runtime", "agentic-mcp": "integrations/mcp", "agentic-restate": "integrations/restate"}


def dependencies(toml):
    """The dependency lines of a toml block, each crate of CRATES pointed at this checkout (its
    `features` and `default-features` kept)."""
    out = []
    for line in toml.split("\n"):
        if line.strip().startswith("[dependencies]"):
            continue
        named = re.match(r"^\s*([a-z-]+)\s*=", line)
        if named and named.group(1) in CRATES:
            crate = named.group(1)
            kept = re.finditer(r"(features\s*=\s*\[[^\]]*\]|default-features\s*=\s*false)", line)
            extra = "".join(", " + found.group(1) for found in kept)
            line = f'{crate} = {{ path = "{os.path.join(ROOT, CRATES[crate])}"{extra} }}'
        out.append(line)
    return "\n".join(out)


# The flags `.cargo/config.toml` gives builds inside the repository (these crates are outside it):
# the same flags, so their build shares the target directory's dependencies where features agree.
# The cfg turns on nothing in a crate outside the repository.
WORKSPACE_RUSTFLAGS = "--cfg agentic_workspace"


def main():
    readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "README.md")
    text = open(readme, encoding="utf-8").read()
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target", "readme-crates")
    work = tempfile.mkdtemp(prefix="readme-crates-")
    deps = None
    deps_section = None
    built = 0
    failed = []
    try:
        for line, info, body, section in blocks(text):
            if info == "toml" and "[dependencies]" in body:
                deps, deps_section = body, section
                continue
            kind = info.split(",")
            if kind[0] != "rust":
                continue
            if "ignore" in kind and "fn main" not in body:
                continue
            if deps is None or deps_section != section:
                failed.append(f"{readme}:{line}: no ```toml [dependencies] block before this snippet in its section")
                continue
            hidden = [number for number, code in enumerate(body.split("\n"), line + 1) if re.match(r"^\s*#( |$)", code)]
            if hidden:
                failed.append(f"{readme}:{hidden[0]}: a hidden line (`# `), which GitHub shows as it is: write it out")
                continue
            name = f"readme-snippet-{line}"
            crate = os.path.join(work, name)
            os.makedirs(os.path.join(crate, "src"))
            with open(os.path.join(crate, "Cargo.toml"), "w", encoding="utf-8") as manifest:
                manifest.write(f'[package]\nname = "{name}"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n')
                manifest.write("[dependencies]\n" + dependencies(deps) + "\n\n[workspace]\n")
            with open(os.path.join(crate, "src", "main.rs"), "w", encoding="utf-8") as source:
                source.write(as_program(body))
            print(f"=== {readme}:{line} ({section.lstrip('# ')})", flush=True)
            lock = os.path.join(ROOT, "Cargo.lock")
            if os.path.exists(lock):
                # The workspace's versions, as a new crate resolving today would mostly get.
                shutil.copy(lock, os.path.join(crate, "Cargo.lock"))
            result = subprocess.run(
                ["cargo", "check", "--quiet", "--manifest-path", os.path.join(crate, "Cargo.toml")],
                env={**os.environ, "CARGO_TARGET_DIR": target, "RUSTFLAGS": WORKSPACE_RUSTFLAGS},
            )
            built += 1
            if result.returncode != 0:
                failed.append(f"{readme}:{line}: the snippet does not compile as a crate of its own (see above)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failed:
        print(f"error: {failure}", file=sys.stderr)
    print(f"{built} README snippets checked as crates of their own, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
