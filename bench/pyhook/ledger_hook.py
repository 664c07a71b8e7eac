#!/usr/bin/env python3
"""The same work as docket-ledger, in Python, as a benchmark baseline.

Reads a PostToolUse payload, stores the payload, input and stdout/stderr as
artifacts with a SHA-256 manifest, takes an exclusive flock, reads the head,
appends a hash-chained HMAC-SHA256 entry, fsyncs and rewrites the head.
It is what a careful hook written as a script costs to start and run.
"""
import fcntl, hashlib, hmac, json, os, sys, tempfile, time

root = os.environ["PYHOOK_HOME"]
payload = sys.stdin.buffer.read()
ev = json.loads(payload)
session = ev["session_id"]
key = bytes.fromhex(open(os.path.join(root, "hmac.key")).read().strip())

art_root = os.path.join(root, "artifacts", session)
os.makedirs(art_root, exist_ok=True)
tmp = tempfile.mkdtemp(dir=art_root, prefix=".tmp-")
files = {"payload.json": payload, "input.json": json.dumps(ev.get("tool_input"), sort_keys=True).encode()}
resp = ev.get("tool_response")
if isinstance(resp, dict):
    for k in ("stdout", "stderr"):
        if isinstance(resp.get(k), str):
            files[k] = resp[k].encode()
manifest = []
for name, data in files.items():
    with open(os.path.join(tmp, name), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    manifest.append({"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
mb = json.dumps({"files": manifest, "v": 1}, sort_keys=True, separators=(",", ":")).encode()
digest = hashlib.sha256(mb).hexdigest()
with open(os.path.join(tmp, "manifest.json"), "wb") as f:
    f.write(mb)
try:
    os.rename(tmp, os.path.join(art_root, digest))
except OSError:
    pass

ledger = os.path.join(root, session + ".jsonl")
head = os.path.join(root, session + ".head")
with open(os.path.join(root, session + ".lock"), "w") as lk:
    fcntl.flock(lk, fcntl.LOCK_EX)
    seq, prev = 0, "0" * 64
    if os.path.exists(head):
        seq, prev = open(head).read().split()
        seq = int(seq)
    args = hashlib.sha256(json.dumps(ev.get("tool_input"), sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    entry = {"v": 1, "seq": seq, "session": session, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
             "kind": "tool_call", "tool": ev.get("tool_name"), "args": "sha256:" + args,
             "manifest": "sha256:" + digest, "prev": prev, "hash": "", "mac": ""}
    h = hashlib.sha256(b"docket-ledger-entry-v1\n" + json.dumps(entry, separators=(",", ":")).encode()).hexdigest()
    entry["hash"] = h
    entry["mac"] = hmac.new(key, f"docket-ledger-mac-v1\n{session}\n{seq}\n{h}".encode(), hashlib.sha256).hexdigest()
    with open(ledger, "ab") as f:
        f.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
    with open(head + ".tmp", "w") as f:
        f.write(f"{seq + 1} {h}\n")
        f.flush()
        os.fsync(f.fileno())
    os.rename(head + ".tmp", head)
