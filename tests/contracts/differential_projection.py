#!/usr/bin/env python3
"""Differential test: the original relay's own projection against `maka-eval-helper project`.

Loads `_project_result` from the reference relay (its framework imports stubbed out), builds random
carriers that mix frames, noise, every line separator, odd lengths and base64 shapes and invalid UTF-8,
and requires both implementations to report identical JSON. Exit 77 (skipped) when the reference is absent.
"""
import argparse
import base64
import hashlib
import json
import random
import subprocess
import sys
import types
from pathlib import Path


def load_reference(path: Path):
    if not path.exists():
        print(f"reference relay not found at {path}; skipping")
        sys.exit(77)
    base = types.ModuleType("harbor.agents.base")
    base.BaseAgent = object
    sys.modules.update({"eval_framework": types.SimpleNamespace(selected=lambda: "harbor"),
                        "harbor": types.ModuleType("harbor"), "harbor.agents": types.ModuleType("harbor.agents"),
                        "harbor.agents.base": base})
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["_project_result"]


SEPARATORS = ["\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", ""]


def frame_line(rng: random.Random, token: str) -> str:
    payload = rng.choice([b"{}", b'{"status":"completed"}', "caf\u00e9 \U0001F600".encode(), b"\xff\xfe",
                          b"", bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))), b"x" * 2048,
                          b"x" * 2049])
    digest = hashlib.sha256(payload).hexdigest()
    if rng.random() < 0.1:
        digest = digest.upper()
    if rng.random() < 0.05:
        digest = "0" * 64
    encoded = base64.urlsafe_b64encode(payload).decode()
    shape = rng.random()
    if shape < 0.5:
        encoded = encoded.rstrip("=")
    elif shape < 0.6:
        encoded = base64.b64encode(payload).decode()
    elif shape < 0.65:
        encoded = encoded + "="
    elif shape < 0.7:
        encoded = "=" + encoded
    length = str(len(payload))
    lshape = rng.random()
    if lshape < 0.1:
        length = "+" + length
    elif lshape < 0.15:
        length = "0" + length
    elif lshape < 0.2:
        length = length[:1] + "_" + length[1:] if len(length) > 1 else "_" + length
    elif lshape < 0.25:
        length = "".join(chr(0x660 + int(d)) for d in length)
    elif lshape < 0.3:
        length = str(len(payload) + rng.choice([-1, 1]))
    elif lshape < 0.33:
        length = "\t" + length + "\u3000"
    frame_token = token if rng.random() < 0.9 else "f" * 32
    extra = " extra" if rng.random() < 0.05 else ""
    return f"MAKA-EVAL-RESULT-V1 {frame_token} {length} {digest} {encoded}{extra}"


def carrier(rng: random.Random, token: str) -> bytes:
    parts = []
    for _ in range(rng.randrange(0, 5)):
        kind = rng.random()
        if kind < 0.45:
            parts.append(frame_line(rng, token))
        elif kind < 0.55:
            parts.append(f"MAKA-EVAL-SCOPE-ERROR-V1 {token}")
        else:
            parts.append(rng.choice(["docker warning", "progress 10%", "", "x" * rng.randrange(100),
                                     "MAKA-EVAL-RESULT-V1 " + token]))
        parts.append(rng.choice(SEPARATORS))
    text = "".join(parts)
    raw = text.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.2:
        pos = rng.randrange(len(raw) + 1)
        raw = raw[:pos] + rng.choice([b"\xff", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf0\x9f"]) + raw[pos:]
    if rng.random() < 0.02:
        raw += b"y" * 65537
    return raw


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--helper", required=True)
    parser.add_argument("--reference", required=True, type=Path)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    project = load_reference(args.reference)
    rng = random.Random(args.seed)
    failures = 0
    for case in range(args.cases):
        token = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        capture = rng.random() < 0.9
        raw = carrier(rng, token)
        result = types.SimpleNamespace(stdout=raw.decode("utf-8", errors="replace"))
        stdout, diagnostic = project(result, {"resultToken": token, "captureStdout": capture})
        expected = json.dumps({"stdout": stdout, "diagnostic": diagnostic}, separators=(",", ":"))
        command = [args.helper, "project", "--result-token", token] + ([] if capture else ["--no-capture"])
        got = subprocess.run(command, input=raw, capture_output=True, check=False).stdout.decode().rstrip("\n")
        if got != expected:
            failures += 1
            if failures <= 5:
                print(f"case {case}: carrier {raw!r}\n  original {expected}\n  ours     {got}")
    print(f"{args.cases - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
