// A billing assistant built with the OpenAI Agents SDK whose three function
// tools are judged by docket before they run and recorded after:
//
//   lookup_invoice   read_only             docket allows it; it runs
//   send_email       external_side_effect  a rule in docket's tools.yaml
//                                          blocks it; the model reads why
//   delete_customer  high_risk             docket escalates it to a human;
//                                          the guardrail stops the run
//
// Environment:
//   DOCKET_URL       docket serve's URL (default http://127.0.0.1:7420)
//   DOCKET_TOKEN     a runtime token, best bound to this example's workspace:
//                    docket token create --role runtime --name billing-agent --workspace billing
//   DOCKET_SESSION   the session decisions are recorded under (default agents-sdk-demo)
//   OPENAI_BASE_URL  the model's API base (e.g. a local server's http://127.0.0.1:PORT/v1)
//   OPENAI_API_KEY   the model's key
//   AGENTS_API       chat_completions (default) or responses
//   PROMPT           the user's request
//
// Prints one JSON line: the tools that ran, the guardrail events, the
// final output or the error that stopped the run. Exit 0 when the run ended
// as the guardrails decided (a tripwire included), 1 on any other failure.
import OpenAI from 'openai';
import {
  Agent,
  run,
  tool,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
  ToolCallError,
  ToolInputGuardrailTripwireTriggered,
} from '@openai/agents';
import { z } from 'zod';
import { docketGuardrails } from './guardrails.mjs';

const env = process.env;
setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY || 'unused' }));
setOpenAIAPI(env.AGENTS_API || 'chat_completions');

const events = [];
const executed = [];
const risk = { lookup_invoice: 'read_only', send_email: 'external_side_effect', delete_customer: 'high_risk' };
const { input, output } = docketGuardrails({
  url: env.DOCKET_URL || 'http://127.0.0.1:7420',
  token: env.DOCKET_TOKEN,
  session: env.DOCKET_SESSION || 'agents-sdk-demo',
  workspace: 'billing',
  riskClass: (name) => risk[name] ?? 'external_side_effect',
  log: (e) => events.push(e),
});
const guarded = { inputGuardrails: [input], outputGuardrails: [output] };

const lookupInvoice = tool({
  name: 'lookup_invoice',
  description: 'Look up an invoice by id.',
  parameters: z.object({ id: z.string() }),
  ...guarded,
  async execute({ id }) {
    executed.push(`lookup_invoice ${id}`);
    return `invoice ${id}: 1,200 EUR, due 2026-12-01, customer ACME-7`;
  },
});

const sendEmail = tool({
  name: 'send_email',
  description: 'Send an email.',
  parameters: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
  ...guarded,
  async execute({ to }) {
    executed.push(`send_email ${to}`);
    return `sent to ${to}`;
  },
});

const deleteCustomer = tool({
  name: 'delete_customer',
  description: 'Delete a customer and all their invoices.',
  parameters: z.object({ customer: z.string() }),
  ...guarded,
  async execute({ customer }) {
    executed.push(`delete_customer ${customer}`);
    return `deleted ${customer}`;
  },
});

const agent = new Agent({
  name: 'billing assistant',
  instructions: 'You help with invoices. Use the tools.',
  model: 'scripted',
  tools: [lookupInvoice, sendEmail, deleteCustomer],
});

const summary = { executed, events };
let code = 0;
try {
  const result = await run(agent, env.PROMPT || 'Remind ACME-7 about invoice INV-42, then close their account.');
  summary.finalOutput = result.finalOutput;
} catch (err) {
  const inner = err instanceof ToolCallError ? err.error : err;
  summary.error = { name: inner?.constructor?.name ?? 'Error', message: String(inner?.message ?? err) };
  if (inner instanceof ToolInputGuardrailTripwireTriggered) {
    summary.error.guardrail = inner.result?.guardrail?.name;
    summary.error.outputInfo = inner.result?.output?.outputInfo;
  } else {
    code = 1;
  }
}
process.stdout.write(JSON.stringify(summary) + '\n');
process.exitCode = code;
