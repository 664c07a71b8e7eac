// docket as the judge and the memory of an OpenAI Agents SDK agent: a tool
// input guardrail asks `docket serve` (POST /v1/judge/evaluate) before a
// function tool runs, and a tool output guardrail writes what the tool
// returned back to docket (POST /v1/judge/decisions).
//
//   allow                      → the tool runs
//   block / revise / escalate  → rejectContent: the tool does not run and
//                                the model reads docket's reason
//   block or escalate of a     → throwException: the run stops with a
//   high_risk call               ToolInputGuardrailTripwireTriggered
//   docket unreachable, slow   → fail closed: rejectContent (throwException
//   or answering an error        for high_risk); the tool does not run
//
// Needs Node 20+ (global fetch, AbortSignal.timeout) and @openai/agents.
import { createHash } from 'node:crypto';
import {
  defineToolInputGuardrail,
  defineToolOutputGuardrail,
  ToolGuardrailFunctionOutputFactory as Out,
} from '@openai/agents';

const PROPOSAL_SCHEMA = 'openbrain.judge.action_proposal.v1';
const DECISION_SCHEMA = 'openbrain.judge.decision.v1';

// canonicalJSON encodes v the way docket's canonjson does: object keys
// sorted by their UTF-8 bytes, no white space, no HTML escaping, U+2028
// and U+2029 escaped (as Go's encoder does). Its
// SHA-256 is the proposal's arguments_digest.
export function canonicalJSON(v) {
  if (v === null || typeof v !== 'object') {
    if (typeof v === 'string') {
      return JSON.stringify(v)
        .replace(/\u2028/g, '\\u2028')
        .replace(/\u2029/g, '\\u2029');
    }
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return '[' + v.map(canonicalJSON).join(',') + ']';
  const keys = Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return '{' + keys.map((k) => canonicalJSON(k) + ':' + canonicalJSON(v[k])).join(',') + '}';
}

export function sha256(text) {
  return 'sha256:' + createHash('sha256').update(text, 'utf8').digest('hex');
}

function clip(s, n) {
  s = String(s ?? '');
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// docketGuardrails returns {input, output} guardrails for function tools.
//
//   url        docket serve's base URL, e.g. http://127.0.0.1:7420
//   token      a runtime token (docket token create --role runtime)
//   session    the docket session the decisions are recorded under
//              (1-128 of [A-Za-z0-9._-]): the app's conversation id
//   workspace  the workspace recall and write-back are scoped to; a token
//              bound to workspaces (--workspace) must be bound to this one
//   riskClass  (toolName, args) → read_only | reversible_write |
//              external_side_effect | high_risk; docket's tools registry
//              may only make it stricter (default external_side_effect)
//   timeoutMs  budget for each call to docket (default 10000)
//   log        optional (event) => void, for tests and audits
export function docketGuardrails({ url, token, session, workspace = 'agents-sdk', riskClass, timeoutMs = 10000, agentId = 'agents-sdk', log = () => {} }) {
  const base = url.replace(/\/+$/, '');
  const classOf = (name, args) => (riskClass ? riskClass(name, args) : 'external_side_effect');

  async function post(path, body) {
    const res = await fetch(base + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: reported below
    }
    if (!res.ok) {
      const msg = json?.error ? `${json.error.code ?? res.status}: ${json.error.message}${json.error.field ? ` (${json.error.field})` : ''}` : clip(text, 200);
      throw new Error(`docket answered ${res.status}: ${msg}`);
    }
    return json;
  }

  function parseArgs(toolCall) {
    if (!toolCall.arguments) return {};
    try {
      const v = JSON.parse(toolCall.arguments);
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : { value: v };
    } catch {
      return { unparsed_arguments: String(toolCall.arguments) };
    }
  }

  const input = defineToolInputGuardrail({
    name: 'docket_judge',
    async run({ toolCall }) {
      const args = parseArgs(toolCall);
      const canon = canonicalJSON(args);
      const digest = sha256(canon);
      const risk = classOf(toolCall.name, args);
      const callId = toolCall.callId || toolCall.id || digest.slice(7, 31);
      const proposal = {
        schema_version: PROPOSAL_SCHEMA,
        workspace_id: workspace,
        task_id: session,
        action_id: callId,
        idempotency_key: `${session}:${callId}`,
        runtime: { name: 'openai-agents-js', adapter: 'docket-agents-sdk-guardrail' },
        actor: { agent_id: agentId },
        tool: { name: toolCall.name, kind: 'function_tool' },
        action: { risk_class: risk, description: clip(`${toolCall.name} ${canon}`, 500), arguments_digest: digest },
        tool_input: JSON.parse(canon),
      };
      let d;
      try {
        d = await post('/v1/judge/evaluate', proposal);
      } catch (err) {
        const reason = `docket could not judge this call, so it was not run (fail closed): ${err.message}`;
        log({ guardrail: 'input', tool: toolCall.name, decision: 'unavailable', reason });
        return risk === 'high_risk' ? Out.throwException({ reason }) : Out.rejectContent(reason, { reason });
      }
      const info = { decision_id: d.decision_id, decision: d.decision, reason: d.reason, approval_id: d.approval_id, risk_class: d.risk_class };
      log({ guardrail: 'input', tool: toolCall.name, ...info });
      const highRisk = d.risk_class === 'high_risk' || risk === 'high_risk';
      switch (d.decision) {
        case 'allow':
          return Out.allow(info);
        case 'revise':
          return Out.rejectContent(`docket asks for a revision of ${toolCall.name}: ${d.required_revision || d.reason}`, info);
        case 'escalate':
          if (highRisk) return Out.throwException(info);
          return Out.rejectContent(`docket escalated ${toolCall.name} to a human (approval ${d.approval_id}, ${d.approval_status}): ${d.reason}`, info);
        default: // block, and anything unknown: fail closed
          if (highRisk) return Out.throwException(info);
          return Out.rejectContent(`docket blocked ${toolCall.name}: ${d.reason}`, info);
      }
    },
  });

  const output = defineToolOutputGuardrail({
    name: 'docket_writeback',
    async run({ toolCall, output }) {
      const args = parseArgs(toolCall);
      const text = typeof output === 'string' ? output : JSON.stringify(output);
      const callId = toolCall.callId || toolCall.id || sha256(text).slice(7, 31);
      const decision = {
        schema_version: DECISION_SCHEMA,
        workspace_id: workspace,
        task_id: session,
        session,
        action_id: callId,
        idempotency_key: `${session}:${callId}:result`,
        decision: 'allow',
        reasoning_summary: clip(`${toolCall.name} ran and returned ${Buffer.byteLength(text)} bytes (${sha256(text)}): ${text}`, 600),
        confidence: 'high',
        judge: { kind: 'rule' },
        checks: { quality_check: 'pass' },
        tool_name: toolCall.name,
        arguments_digest: sha256(canonicalJSON(args)),
      };
      try {
        const r = await post('/v1/judge/decisions', decision);
        log({ guardrail: 'output', tool: toolCall.name, writeback: r.decision_id, replayed: r.replayed });
        return Out.allow({ writeback: r.decision_id });
      } catch (err) {
        // the tool already ran; its result stands, the missing record is
        // reported
        log({ guardrail: 'output', tool: toolCall.name, writeback_error: err.message });
        return Out.allow({ writeback_error: err.message });
      }
    },
  });

  return { input, output };
}
