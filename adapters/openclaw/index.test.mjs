// Unit tests of the plugin's decisions: node --test index.test.mjs
// (run by plugin_test.go). docket is faked with a fetch stub, except
// where the test is about reaching it (a closed port, a server that
// never answers).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createHooks, resolveConfig, sessionOf, canonicalJSON, sha256 } from "./index.js";

const ctx = { agentId: "main", sessionKey: "agent:main:main", runId: "run-1", toolCallId: "call_1|fc_1" };

function fake(answers) {
  const calls = [];
  const fetch = async (url, init) => {
    const path = new URL(url).pathname;
    const body = init.body ? JSON.parse(init.body) : null;
    calls.push({ path, body, auth: init.headers.authorization, signal: init.signal });
    const a = typeof answers === "function" ? answers(path, body, calls.length) : answers[calls.length - 1];
    if (a instanceof Error) throw a;
    return new Response(JSON.stringify(a.body), { status: a.status || 201 });
  };
  return { fetch, calls };
}

function hooks(answers, cfg = {}) {
  const f = fake(answers);
  const logs = [];
  const h = createHooks(resolveConfig({ serverUrl: "http://127.0.0.1:9", token: "dkt_x", ...cfg }, {}), { fetch: f.fetch, log: (r) => logs.push(r) });
  return { h, calls: f.calls, logs };
}

const exec = (command) => ({ toolName: "exec", params: { command }, runId: "run-1", toolCallId: "call_1|fc_1" });

test("allow runs the call; the proposal carries the input and its canonical digest", async () => {
  const { h, calls, logs } = hooks([{ body: { decision: "allow", decision_id: "dec_1", memory_used: [] } }]);
  assert.equal(await h.beforeToolCall(exec("ls"), ctx), undefined);
  const p = calls[0].body;
  assert.equal(calls[0].path, "/v1/judge/evaluate");
  assert.equal(calls[0].auth, "Bearer dkt_x");
  assert.ok(calls[0].signal, "no timeout budget on the judge call");
  assert.deepEqual(p.tool_input, { command: "ls" });
  assert.equal(p.action.arguments_digest, sha256(canonicalJSON({ command: "ls" })));
  assert.equal(p.flow_id, sessionOf(ctx, {}, "dkt_x"));
  assert.equal(p.tool.kind, "shell");
  assert.equal(logs[0].decision, "allow");
});

test("block carries the judge's reason", async () => {
  const { h } = hooks([{ body: { decision: "block", reason: "reads a key" } }]);
  const r = await h.beforeToolCall(exec("cat ~/.local/state/docket/keys/hmac.key"), ctx);
  assert.equal(r.block, true);
  assert.match(r.blockReason, /reads a key/);
});

test("a mechanical revision runs as params only once the amended call is allowed", async () => {
  const amended = { command: "git push --force-with-lease origin main" };
  let t = hooks([{ body: { decision: "revise", reason: "force push", revised_arguments: amended } }, { body: { decision: "allow" } }]);
  assert.deepEqual(await t.h.beforeToolCall(exec("git push --force origin main"), ctx), { params: amended });
  assert.deepEqual(t.calls[1].body.tool_input, amended);
  assert.notEqual(t.calls[1].body.idempotency_key, t.calls[0].body.idempotency_key);
  t = hooks([{ body: { decision: "revise", reason: "force push", revised_arguments: amended } }, { body: { decision: "escalate", reason: "still main" } }]);
  const r = await t.h.beforeToolCall(exec("git push --force origin main"), ctx);
  assert.equal(r.block, true);
  assert.equal(r.params, undefined);
});

test("a revision that is not mechanical blocks with what to change", async () => {
  const { h } = hooks([{ body: { decision: "revise", reason: "too broad", required_revision: "name the file" } }]);
  const r = await h.beforeToolCall(exec("rm -r build"), ctx);
  assert.equal(r.block, true);
  assert.match(r.blockReason, /name the file/);
});

test("an escalation blocks naming the approval; an approval inside the wait lets it run", async () => {
  let t = hooks([{ body: { decision: "escalate", reason: "merge", approval_id: "apr_1" } }]);
  const r = await t.h.beforeToolCall(exec("gh pr merge 1"), ctx);
  assert.equal(r.block, true);
  assert.match(r.blockReason, /apr_1/);
  t = hooks(
    (path, body, n) => (n === 1 ? { body: { decision: "escalate", reason: "merge", approval_id: "apr_1" } } : { status: 200, body: { status: n < 3 ? "pending" : "approved" } }),
    { approvalWaitMs: 5000 },
  );
  assert.equal(await t.h.beforeToolCall(exec("gh pr merge 1"), ctx), undefined);
  assert.equal(t.calls[1].path, "/v1/approvals/apr_1");
  t = hooks((path, body, n) => (n === 1 ? { body: { decision: "escalate", reason: "merge", approval_id: "apr_2" } } : { status: 200, body: { status: "rejected" } }), {
    approvalWaitMs: 5000,
  });
  assert.equal((await t.h.beforeToolCall(exec("gh pr merge 1"), ctx)).block, true);
});

test("a decision the plugin does not know blocks", async () => {
  const { h } = hooks([{ body: { decision: "maybe", reason: "?" } }]);
  assert.equal((await h.beforeToolCall(exec("ls"), ctx)).block, true);
});

test("docket refusing the proposal blocks", async () => {
  const { h } = hooks([{ status: 400, body: { error: { code: "invalid_request", field: "tool_input", message: "bad" } } }]);
  const r = await h.beforeToolCall(exec("ls"), ctx);
  assert.equal(r.block, true);
  assert.match(r.blockReason, /tool_input: bad/);
});

test("unreachable docket: fail closed, read-only tools pass only when configured", async () => {
  const closed = { serverUrl: "http://127.0.0.1:1", token: "t", timeoutMs: 2000 };
  const real = (cfg) => createHooks(resolveConfig(cfg, {}), { log: () => {} });
  let r = await real(closed).beforeToolCall(exec("echo hi"), ctx);
  assert.equal(r.block, true);
  assert.match(r.blockReason, /unreachable.*fail closed/);
  const read = { toolName: "read", params: { path: "README.md" } };
  assert.equal((await real(closed).beforeToolCall(read, ctx)).block, true);
  assert.equal(await real({ ...closed, failOpenReadOnly: true }).beforeToolCall(read, ctx), undefined);
  // failOpenReadOnly never lets a side-effecting call through
  assert.equal((await real({ ...closed, failOpenReadOnly: true }).beforeToolCall(exec("echo hi"), ctx)).block, true);
});

test("a docket that does not answer within the budget blocks", async () => {
  const srv = createServer(() => {}); // never answers
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${srv.address().port}`;
  const t0 = Date.now();
  const r = await createHooks(resolveConfig({ serverUrl: url, token: "t", timeoutMs: 300 }, {}), { log: () => {} }).beforeToolCall(exec("echo hi"), ctx);
  srv.closeAllConnections();
  srv.close();
  assert.equal(r.block, true);
  assert.match(r.blockReason, /no answer within 300 ms/);
  assert.ok(Date.now() - t0 < 5000, "the budget was not kept");
});

test("after_tool_call records params, result, error and duration under the session", async () => {
  const { h, calls } = hooks([{ body: { seq: 3, kind: "tool_failure" } }]);
  await h.afterToolCall({ ...exec("gh pr merge 1"), error: "blocked", durationMs: 7, result: { content: [] } }, ctx);
  assert.equal(calls[0].path, `/v1/ledger/${sessionOf(ctx, {}, "dkt_x")}/entries`);
  const b = calls[0].body;
  assert.deepEqual([b.tool_name, b.tool_call_id, b.error, b.duration_ms, b.session_key], ["exec", "call_1|fc_1", "blocked", 7, "agent:main:main"]);
  assert.deepEqual(b.params, { command: "gh pr merge 1" });
  // a huge result is cut, not sent whole past docket's body limit
  const big = hooks([{ body: { seq: 4 } }]);
  await big.h.afterToolCall({ ...exec("cat big"), result: { text: "x".repeat(2 << 20) } }, ctx);
  assert.equal(big.calls[0].body.result.truncated, true);
  // docket down: the hook still returns
  const down = hooks([new TypeError("fetch failed")]);
  assert.equal(await down.h.afterToolCall(exec("ls"), ctx), undefined);
});

test("before_agent_finalize revises with the gate's reason, and fails closed", async () => {
  let t = hooks([{ status: 200, body: { decision: "block", reason: "claim tests_pass: run docket validate …", claims: [{ type: "tests_pass" }] } }], { maxRevisions: 2 });
  let r = await t.h.beforeAgentFinalize({ lastAssistantMessage: "All done — tests pass.", stopHookActive: false, cwd: "/w" }, ctx);
  assert.equal(r.action, "revise");
  assert.match(r.reason, /docket validate/);
  assert.equal(r.retry.maxAttempts, 2);
  assert.deepEqual([t.calls[0].path, t.calls[0].body.cwd], [`/v1/gate/${sessionOf(ctx, {}, "dkt_x")}/check`, "/w"]);
  t = hooks([{ status: 200, body: { decision: "allow", claims: [] } }]);
  assert.equal(await t.h.beforeAgentFinalize({ lastAssistantMessage: "I read the file." }, ctx), undefined);
  t = hooks([new TypeError("fetch failed")]);
  r = await t.h.beforeAgentFinalize({ lastAssistantMessage: "Shipped." }, ctx);
  assert.equal(r.action, "revise");
  assert.equal(r.retry.maxAttempts, 1);
  // a relative cwd is not sent
  t = hooks([{ status: 200, body: { decision: "allow", claims: [] } }]);
  await t.h.beforeAgentFinalize({ lastAssistantMessage: "ok", cwd: "rel" }, ctx);
  assert.equal(t.calls[0].body.cwd, undefined);
});

test("before_prompt_build prepends recalled memories with provenance", async () => {
  const { h, calls } = hooks([{ status: 200, body: { memories: [{ memory_id: "mem_1", summary: "never drop invoices", use_policy: "can_use_as_instruction", provenance: { status: "user_confirmed" } }] } }]);
  const r = await h.beforePromptBuild({ prompt: "continue the billing flow" }, ctx);
  assert.match(r.prependContext, /\[mem_1\] \(can_use_as_instruction, user_confirmed\) never drop invoices/);
  assert.equal(calls[0].body.query.summary, "continue the billing flow");
  const off = hooks([], { recall: false });
  assert.equal(await off.h.beforePromptBuild({ prompt: "x" }, ctx), undefined);
});

test("session ids are valid ledger ids and keep distinct keys apart", () => {
  const ok = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
  const a = sessionOf({ sessionKey: "agent:main:main" });
  const b = sessionOf({ sessionKey: "agent:main/main" });
  assert.match(a, ok);
  assert.match(b, ok);
  assert.notEqual(a, b);
  assert.match(sessionOf({ sessionKey: "../../etc/passwd" }), ok);
  assert.match(sessionOf({ sessionKey: "x".repeat(500) }), ok);
  assert.equal(sessionOf({ sessionKey: "plain-key" }), "oc-plain-key");
  assert.equal(sessionOf({}, { runId: "r1" }), "oc-r1");
});

test("session ids are the token's: two tokens never share one, one token keeps its own", () => {
  const ok = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
  for (const ctx of [{ sessionKey: "agent:main:main" }, { sessionKey: "plain-key" }, {}]) {
    const a = sessionOf(ctx, {}, "dkt_a");
    const b = sessionOf(ctx, {}, "dkt_b");
    assert.match(a, ok);
    assert.match(b, ok);
    assert.notEqual(a, b, JSON.stringify(ctx));
    assert.equal(sessionOf(ctx, {}, "dkt_a"), a);
    assert.ok(!a.includes("dkt_a"), a);
  }
  assert.notEqual(sessionOf({ sessionKey: "k1" }, {}, "dkt_a"), sessionOf({ sessionKey: "k2" }, {}, "dkt_a"));
  assert.match(sessionOf({ sessionKey: "agent:main:main" }, {}, "dkt_a"), /^oc-agent_main_main-[0-9a-f]{8}$/);
});

test("every route a hook calls names the token's session", async () => {
  const ctx = { sessionKey: "agent:main:main", runId: "run-1", toolCallId: "call-1" };
  const one = hooks([{ status: 201, body: { seq: 0 } }], { token: "dkt_one" });
  const two = hooks([{ status: 201, body: { seq: 0 } }], { token: "dkt_two" });
  await one.h.afterToolCall({ toolName: "read", params: { path: "a" }, result: {} }, ctx);
  await two.h.afterToolCall({ toolName: "read", params: { path: "a" }, result: {} }, ctx);
  assert.equal(one.calls[0].path, `/v1/ledger/${sessionOf(ctx, {}, "dkt_one")}/entries`);
  assert.equal(two.calls[0].path, `/v1/ledger/${sessionOf(ctx, {}, "dkt_two")}/entries`);
  assert.notEqual(one.calls[0].path, two.calls[0].path);
});

test("the token is read from tokenFile; an unreadable file leaves none", async () => {
  const { mkdtempSync, writeFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { tmpdir } = await import("node:os");
  const dir = mkdtempSync(join(tmpdir(), "docket-oc-"));
  writeFileSync(join(dir, "t"), "dkt_from_file\n");
  assert.equal(resolveConfig({ tokenFile: join(dir, "t") }, {}).token, "dkt_from_file");
  assert.equal(resolveConfig({ tokenFile: join(dir, "missing") }, {}).token, "");
  assert.equal(resolveConfig({ token: "inline", tokenFile: join(dir, "t") }, {}).token, "inline");
});
