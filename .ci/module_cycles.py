"""No module cycles: for each crate's src/ given, the graph of its top-level modules (a file or a
folder), with an edge wherever one module's non-test code names `crate::<other>`. Prints the graph's
size and every cycle (a strongly connected component of more than one module); exits 1 if any.

    python3 .ci/module_cycles.py runtime/src cli/src
"""
import os, re, sys


def cycles(src):
    mods = {}
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if name in ('lib.rs', 'main.rs'):
            continue
        if name.endswith('.rs'):
            mods[name[:-3]] = [path]
        elif os.path.isdir(path):
            mods[name] = [os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs if f.endswith('.rs')]
    edges = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            text = open(f).read()
            text = text.split('#[cfg(test)]')[0]  # unit tests (at the end of a file) may use any module
            text = re.sub(r'//[^\n]*', '', text)  # comments and docs do not make a dependency
            for dep in re.findall(r'crate::(\w+)', text):
                if dep in mods and dep != m:
                    edges[m].add(dep)
    # Tarjan
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
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
    for v in mods:
        if v not in index: strong(v)
    print(f"{src}: {len(mods)} modules, {sum(len(e) for e in edges.values())} edges, cycles: {out or 'none'}")
    return out


found = [cycle for src in sys.argv[1:] for cycle in cycles(src)]
sys.exit(1 if found else 0)
