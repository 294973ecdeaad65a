// The official OpenAI JS client against Loom's /v1 API: every agent is a
// model. Run by TestLangGraphSDK (go test ./server/).
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";

const openai = new OpenAI({ baseURL: process.env.LOOM_URL + "/v1", apiKey: process.env.LOOM_KEY, maxRetries: 0 });

test("models are the agents", async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ["demo", "echo", "slow"]);
});

test("a chat with the demo: question, then yes", async () => {
  const thread = "openai-js-" + crypto.randomUUID();
  const opts = { headers: { "X-Loom-Thread": thread } };
  const first = await openai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "launch" }] }, opts);
  assert.match(first.choices[0].message.content, /Approve\?/);
  assert.equal(first.thread_id, thread);
  assert.equal(first.status, "interrupted");
  assert.ok(first.ext.some((x) => x.kind === "confirm_request" && x.display_mode === "card"));

  const stream = await openai.chat.completions.create({ model: "demo", stream: true, messages: [{ role: "user", content: "yes, ship it" }] }, opts);
  let text = "";
  const exts = [];
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    if (chunk.ext) exts.push(chunk.ext);
  }
  assert.equal(exts.at(-1).kind, "assistant_text");
  assert.match(text, /approved/);
});

test("streamed ext carries reasoning, status, tools and the confirm card", async () => {
  const stream = await openai.chat.completions.create({ model: "echo", stream: true, messages: [{ role: "user", content: "please ask me" }] });
  const kinds = [];
  let text = "";
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    if (chunk.ext) kinds.push(chunk.ext.kind);
  }
  assert.deepEqual([...new Set(kinds)], ["reasoning_text", "status", "tool_call", "tool_result", "note", "assistant_text", "confirm_request", "interrupt"]);
  assert.match(text, /^you said: please ask me/);
});
