"""No module cycles: for each crate's src/ given, the graph of its top-level modules (a file or a
folder), with an edge wherever one module's non-test code names `crate::<other>`; then, inside each
module that is a folder (at any depth), the graph of its own modules, with an edge wherever one
names a sibling as `super::<sibling>` (`use super::{a, b::C}` too) or `crate::<path>::<sibling>`.
Prints each graph's size and every cycle (a strongly connected component of more than one module);
exits 1 if any.

    python3 .ci/module_cycles.py runtime/src cli/src
"""
import os, re, sys


def code(path):
    """A file's non-test code without comments: what can make a dependency."""
    text = open(path).read()
    text = text.split('#[cfg(test)]')[0]  # unit tests (at the end of a file) may use any module
    return re.sub(r'//[^\n]*', '', text)  # comments and docs do not make a dependency


def modules(folder, top):
    """The modules of `folder`: name -> the files of its code (a folder module: all of them)."""
    mods = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name in (('lib.rs', 'main.rs') if top else ('mod.rs',)):
            continue
        if name.endswith('.rs'):
            mods[name[:-3]] = [path]
        elif os.path.isdir(path):
            mods[name] = [os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs if f.endswith('.rs')]
    return mods


def named(text, prefix):
    """The first path segment after each `prefix::` in `text`, braces (`prefix::{a, b::C}`) opened."""
    found = re.findall(prefix + r'::(\w+)', text)
    for group in re.findall(prefix + r'::\{([^}]*)\}', text):
        found += re.findall(r'(?:^|,)\s*(\w+)', group)
    return found


def strong_components(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in sorted(edges):
        if v not in index: strong(v)
    return out


def cycles(folder, path_in_crate):
    """The cycles among `folder`'s modules, then inside each of its folder modules."""
    top = not path_in_crate
    mods = modules(folder, top)
    edges = {m: set() for m in mods}
    crate_path = r'crate' + ''.join(r'::' + segment for segment in path_in_crate)
    for m, files in mods.items():
        for f in files:
            text = code(f)
            deps = named(text, crate_path)
            # In a module's own file (`x.rs`, `x/mod.rs`), `super::` is the folder: a sibling follows.
            if not top and f in (os.path.join(folder, m + '.rs'), os.path.join(folder, m, 'mod.rs')):
                deps += named(text, r'(?<![\w:])super')
            for dep in deps:
                if dep in mods and dep != m:
                    edges[m].add(dep)
    out = strong_components(edges)
    if mods:
        print(f"{folder}: {len(mods)} modules, {sum(len(e) for e in edges.values())} edges, cycles: {out or 'none'}")
    for m in mods:
        sub = os.path.join(folder, m)
        if os.path.isdir(sub):
            out += cycles(sub, path_in_crate + [m])
    return out


found = [cycle for src in sys.argv[1:] for cycle in cycles(src.rstrip('/'), [])]
sys.exit(1 if found else 0)
