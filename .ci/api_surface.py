"""The crate root is a front page: `cargo doc` of agentic-runtime shows at most 25 items at its root
(modules, types, functions, macros and re-exports alike; hidden ones are not shown). Reads the
rustdoc HTML that `.ci/run`'s last doc step wrote (all features, as docs.rs) and fails naming every
item when there are more.

    python3 .ci/api_surface.py [target/doc]
"""
import os, re, sys

LIMIT = 25
doc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get('CARGO_TARGET_DIR', 'target'), 'doc')
index = open(os.path.join(doc, 'agentic_runtime', 'index.html')).read()
items = re.findall(r'<dt><a class="(\w+)" href="[^"]*"[^>]*>(.*?)</a>', index)
# Re-exports of other crates (`pub use schemars;`) are listed as code, not links.
items += [('reexport', name) for name in re.findall(r'<dt id="reexport\.(\w+)"', index)]
names = [f'{re.sub("<[^>]+>", "", name)} ({kind})' for kind, name in items]
print(f'agentic-runtime shows {len(names)} root items (at most {LIMIT}): {", ".join(names)}')
if not names:
    sys.exit('no item found: has rustdoc changed its HTML?')
if len(names) > LIMIT:
    sys.exit(f'{len(names) - LIMIT} too many: move the ones a first hour does not need into a module')
