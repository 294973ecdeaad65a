// Loom's A2A endpoint tested with the official A2A JavaScript SDK
// (@a2a-js/sdk), unchanged: its 1.0 client by default, and its v0.3
// client through the compatibility layer. Run by TestA2ASDK in ../
// (go test ./server/), against a server with the agents loom serve has.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ClientFactory, JsonRpcTransportFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";

const url = process.env.LOOM_URL;
const key = process.env.LOOM_KEY;

// keyed is fetch with the API key.
const keyed = (k) => (input, init = {}) => {
  const headers = new Headers(init.headers);
  if (k) headers.set("Authorization", `Bearer ${k}`);
  return fetch(input, { ...init, headers });
};

async function client(assistant, { k = key, legacy = false } = {}) {
  const legacyCompat = legacy ? { enabled: true } : undefined;
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: keyed(k), legacyCompat })],
    cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
  });
  if (legacy) {
    // The card as an A2A 0.3 server writes it: without the 1.0 interfaces.
    const card = await (await fetch(`${url}/a2a/${assistant}/.well-known/agent-card.json`)).json();
    delete card.supportedInterfaces;
    return factory.createFromAgentCard(card);
  }
  // The trailing slash keeps the assistant in the card's path.
  return factory.createFromUrl(`${url}/a2a/${assistant}/`);
}

const userText = (text, extra = {}) => ({
  message: { messageId: crypto.randomUUID(), role: 1 /* ROLE_USER */, parts: [{ content: { $case: "text", value: text } }], ...extra },
});

const partsText = (parts = []) => parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
const statusText = (task) => partsText(task.status?.message?.parts);

const TASK_STATE = { WORKING: 2, COMPLETED: 3, FAILED: 4, CANCELED: 5, INPUT_REQUIRED: 6 };

test("fetches a card for an assistant and the default one", async () => {
  const res = await fetch(`${url}/a2a/cabin/.well-known/agent-card.json`);
  assert.equal(res.status, 200);
  const card = await res.json();
  assert.equal(card.name, "cabin");
  assert.ok(card.supportedInterfaces.some((i) => i.protocolBinding === "JSONRPC" && i.protocolVersion === "1.0" && i.url === `${url}/a2a/cabin`), JSON.stringify(card.supportedInterfaces));
  assert.equal(card.capabilities.streaming, true);
  const root = await (await fetch(`${url}/.well-known/agent-card.json`)).json();
  assert.ok(root.url.startsWith(`${url}/a2a/`), root.url);
});

test("a call without the key is refused", async () => {
  const c = await client("cabin", { k: "" });
  await assert.rejects(c.sendMessage(userText("open the windows")));
});

test("sends a message to the cabin", async () => {
  const c = await client("cabin");
  const task = await c.sendMessage(userText("open the windows"));
  assert.equal(task.status.state, TASK_STATE.COMPLETED, JSON.stringify(task.status));
  assert.match(statusText(task), /window|窗/i);
  assert.equal(task.id, task.contextId);
  const again = await c.getTask({ id: task.id });
  assert.equal(again.status.state, TASK_STATE.COMPLETED);
});

test("streams a report run", async () => {
  const c = await client("report");
  const seen = [];
  let artifact = "";
  let last;
  for await (const ev of c.sendMessageStream(userText("帮我生成一个销售报表"))) {
    seen.push(ev.payload.$case);
    if (ev.payload.$case === "artifactUpdate") artifact += JSON.stringify(ev.payload.value.artifact.parts);
    last = ev.payload.value;
  }
  assert.equal(seen[0], "task", seen.join(","));
  assert.ok(seen.filter((k) => k === "statusUpdate").length >= 2, seen.join(","));
  assert.equal(last.status.state, TASK_STATE.COMPLETED, JSON.stringify(last.status));
  assert.match(statusText(last), /第 1 版/);
  assert.match(artifact, /jasperReport/, "the artifact lacks the template");
});

test("answers the demo's input-required task", async () => {
  const c = await client("demo");
  const asked = await c.sendMessage(userText("launch"));
  assert.equal(asked.status.state, TASK_STATE.INPUT_REQUIRED, JSON.stringify(asked.status));
  assert.ok(statusText(asked).length > 0);
  const done = await c.sendMessage(userText("yes", { taskId: asked.id }));
  assert.equal(done.id, asked.id);
  assert.equal(done.status.state, TASK_STATE.COMPLETED, JSON.stringify(done.status));
  assert.ok(done.artifacts.length > 0);
});

test("the v0.3 client answers the demo's question too", async () => {
  const c = await client("demo", { legacy: true });
  const asked = await c.sendMessage(userText("release"));
  assert.equal(asked.status.state, TASK_STATE.INPUT_REQUIRED, JSON.stringify(asked.status));
  const done = await c.sendMessage(userText("yes", { taskId: asked.id }));
  assert.equal(done.status.state, TASK_STATE.COMPLETED, JSON.stringify(done.status));
});
