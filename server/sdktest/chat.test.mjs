// The chat conventions with the official clients: the LangGraph JS client
// sending {messages: [...]} and reading values.messages, and the OpenAI JS
// client holding a conversation without a thread id. Run by
// TestLangGraphSDK (go test ./server/).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";
import OpenAI from "openai";

const client = new Client({ apiUrl: process.env.LOOM_URL, apiKey: process.env.LOOM_KEY, callerOptions: { maxRetries: 0 } });
const openai = new OpenAI({ baseURL: process.env.LOOM_URL + "/v1", apiKey: process.env.LOOM_KEY, maxRetries: 0 });

test("LangGraph SDK: a messages-shaped conversation with the demo", async () => {
  const t = await client.threads.create();
  const first = await client.runs.wait(t.thread_id, "demo", { input: { messages: [{ type: "human", content: "launch" }] } });
  assert.deepEqual(first.messages.map((m) => m.type), ["human", "ai"]);
  assert.equal(first.messages[0].content, "launch");
  assert.match(first.messages[1].content, /Approve\?/);
  assert.ok(first.messages.every((m) => typeof m.id === "string" && m.id !== ""));

  const events = [];
  for await (const e of client.runs.stream(t.thread_id, "demo", {
    input: { messages: [{ type: "human", content: "yes" }] },
    streamMode: ["values", "messages-tuple"],
  })) events.push(e);
  const values = events.filter((e) => e.event === "values").at(-1).data;
  assert.equal(values.approved, true);
  assert.deepEqual(values.messages.map((m) => m.type), ["human", "ai", "human", "ai"]);

  const state = await client.threads.getState(t.thread_id);
  assert.deepEqual(state.values.messages.map((m) => m.content).slice(0, 3), ["launch", first.messages[1].content, "yes"]);
  assert.equal(state.values.messages[3].id, values.messages[3].id);
});

test("LangGraph SDK: a messages input with another field is refused", async () => {
  await assert.rejects(client.runs.wait(null, "demo", { input: { messages: [{ type: "human", content: "x" }], title: "x" } }), (err) => err.status === 422);
});

test("OpenAI SDK: three turns with the demo and no thread id", async () => {
  const history = [{ role: "user", content: "launch-" + crypto.randomUUID() }];
  const first = await openai.chat.completions.create({ model: "demo", messages: history });
  assert.match(first.choices[0].message.content, /Approve\?/);
  history.push(first.choices[0].message, { role: "user", content: "yes" });
  const second = await openai.chat.completions.create({ model: "demo", messages: history });
  assert.equal(second.thread_id, first.thread_id);
  assert.match(second.choices[0].message.content, /"approved":true/);
  history.push(second.choices[0].message, { role: "user", content: "release" });
  const stream = await openai.chat.completions.create({ model: "demo", messages: history, stream: true });
  let text = "", thread = "";
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    thread ||= chunk.thread_id;
  }
  assert.equal(thread, first.thread_id);
  assert.match(text, /Checklist \\"release\\"/);
});
