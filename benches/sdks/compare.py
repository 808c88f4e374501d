#!/usr/bin/env python3
"""The same faults against `agentic ask` (the default policy) and the official Python SDKs.

For each fault, a fresh `agentic chaos` server per run fails the first requests as the fault says,
each with `Retry-After: 1`, then answers. Three clients meet it:

- `agentic ask --json` (the default policy), timed by its own `elapsed_ms`;
- the SDK with its defaults (`max_retries=2`), timed with `time.perf_counter()` around the call;
- the SDK with `max_retries=11` (the default policy's twelve calls at most).

The Chat Completions faults go to `openai`'s client, the Anthropic ones to `anthropic`'s. Each cell
is the median of `--runs` runs (default 3): requests (the server's journal) and seconds, or
"fails after N" when the client gave up. Prints a Markdown table.

    python3 -m venv /tmp/sdk && /tmp/sdk/bin/pip install -r benches/sdks/requirements.txt
    cargo build -p agentic-cli
    /tmp/sdk/bin/python benches/sdks/compare.py            # --agentic PATH, --runs N

By hand, like the benches: it needs the SDKs from PyPI and takes about a minute.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

# (label, wire, status, times): `times` requests fail with `status` and `Retry-After: 1`.
FAULTS = [
    ("429 twice", "openai", 429, 2),
    ("503 five times", "openai", 503, 5),
    ("529 three times (Anthropic)", "anthropic", 529, 3),
]

PROMPT = "Say hi."


class Server:
    """An `agentic chaos` process serving one scenario, stopped on exit."""

    def __init__(self, agentic, status, times):
        scenario = {
            "steps": [{"kind": "http_error", "status": status, "retry_after": 1, "times": times}],
            "default": {"kind": "ok", "text": "hi"},
        }
        self.file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(scenario, self.file)
        self.file.close()
        self.process = subprocess.Popen(
            [agentic, "chaos", "--scenario", self.file.name], stdout=subprocess.PIPE, text=True
        )
        self.urls = {}
        for line in self.process.stdout:
            if line.startswith("serving"):
                break
            name, _, url = line.partition(":")
            self.urls[name.split()[0]] = url.strip()

    def requests(self):
        with urllib.request.urlopen(self.urls["journal"]) as answer:
            return len(json.load(answer))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.process.terminate()
        self.process.wait()
        os.unlink(self.file.name)


def agentic_run(agentic, wire, server):
    """`agentic ask --json`: (answered, seconds by its elapsed_ms)."""
    env = {key: value for key, value in os.environ.items() if not key.endswith(("_API_KEY", "_BASE_URL"))}
    out = subprocess.run(
        [agentic, "ask", "--provider", wire, "--base-url", server.urls[wire], "--json", "--quiet", PROMPT],
        capture_output=True,
        text=True,
        env=env,
    )
    line = json.loads(out.stdout.strip().splitlines()[-1])
    return "answer" in line, line["elapsed_ms"] / 1000


def sdk_run(wire, server, max_retries):
    """One call through the SDK: (answered, seconds)."""
    if wire == "openai":
        import openai

        client = openai.OpenAI(base_url=server.urls["openai"], api_key="test", max_retries=max_retries)
        call = lambda: client.chat.completions.create(model="m", messages=[{"role": "user", "content": PROMPT}])
        errors = openai.APIError
    else:
        import anthropic

        client = anthropic.Anthropic(base_url=server.urls["anthropic"], api_key="test", max_retries=max_retries)
        call = lambda: client.messages.create(
            model="m", max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
        )
        errors = anthropic.APIError
    start = time.perf_counter()
    try:
        call()
        answered = True
    except errors:
        answered = False
    return answered, time.perf_counter() - start


def cell(agentic, status, times, runs, run):
    """The median of `runs` runs of `run(server)`, as a table cell."""
    outcomes = []
    for _ in range(runs):
        with Server(agentic, status, times) as server:
            answered, seconds = run(server)
            outcomes.append((answered, server.requests(), seconds))
    answered = [outcome for outcome in outcomes if outcome[0]]
    if len(answered) < len(outcomes):
        failed = [outcome for outcome in outcomes if not outcome[0]]
        return f"fails after {statistics.median_low([requests for _, requests, _ in failed])}"
    requests = statistics.median_low([requests for _, requests, _ in answered])
    return f"{requests} requests, {statistics.median([seconds for _, _, seconds in answered]):.2f} s"


def main():
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agentic", default=os.path.join(target, "debug", "agentic"), help="the agentic binary")
    parser.add_argument("--runs", type=int, default=3, help="runs per cell; the median is shown")
    args = parser.parse_args()
    if not os.path.exists(args.agentic):
        sys.exit(f"error: no agentic binary at {args.agentic}: run `cargo build -p agentic-cli`, or give --agentic PATH")
    import anthropic
    import openai

    print(f"openai {openai.__version__}, anthropic {anthropic.__version__}; median of {args.runs} runs\n")
    print("| fault | agentic (default policy) | SDK default (`max_retries=2`) | SDK, `max_retries=11` |")
    print("|:---|:---|:---|:---|")
    for label, wire, status, times in FAULTS:
        row = [
            cell(args.agentic, status, times, args.runs, lambda server: agentic_run(args.agentic, wire, server)),
            cell(args.agentic, status, times, args.runs, lambda server: sdk_run(wire, server, 2)),
            cell(args.agentic, status, times, args.runs, lambda server: sdk_run(wire, server, 11)),
        ]
        print(f"| {label} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
