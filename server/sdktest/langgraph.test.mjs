// The official LangGraph JS client against Loom's server, unchanged.
// Run by TestLangGraphSDK (go test ./server/), which starts the server and
// sets LOOM_URL, LOOM_KEY and LOOM_OTHER_KEY.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.LOOM_URL;
const client = new Client({ apiUrl, apiKey: process.env.LOOM_KEY, callerOptions: { maxRetries: 0 } });
const other = new Client({ apiUrl, apiKey: process.env.LOOM_OTHER_KEY, callerOptions: { maxRetries: 0 } });

async function collect(stream) {
  const events = [];
  for await (const e of stream) events.push(e);
  return events;
}

async function rejectsWith(promise, status) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, `want HTTP ${status}, got ${err.status}: ${err.message}`);
    return true;
  });
}

test("assistants are Loom's agents", async () => {
  const found = await client.assistants.search({ limit: 10 });
  assert.deepEqual(found.map((a) => a.assistant_id), ["demo", "echo", "slow"]);
  const demo = await client.assistants.get("demo");
  assert.equal(demo.graph_id, "demo");
  assert.equal(demo.description, "the demo checklist");
  const g = await client.assistants.getGraph("demo");
  const names = g.nodes.map((n) => n.id);
  for (const n of ["__start__", "draft", "check", "fix", "confirm", "__end__"]) assert.ok(names.includes(n), `graph has ${n}: ${names}`);
  assert.ok(g.edges.some((e) => e.source === "check" && e.target === "fix" && e.conditional));
  const schemas = await client.assistants.getSchemas("demo");
  assert.equal(schemas.input_schema.properties.title.type, "string");
  assert.equal(schemas.state_schema.properties.items.type, "array", "the state schema is the demo's Doc");
  assert.equal(schemas.state_schema.properties.approved.type, "boolean");
  assert.deepEqual(schemas.output_schema, schemas.state_schema);
  await rejectsWith(client.assistants.get("nope"), 404);
});

test("threads: create, get, search, update, delete; another key sees none", async () => {
  const t = await client.threads.create({ metadata: { suite: "sdk", n: 1 } });
  assert.equal(t.status, "idle");
  assert.equal(t.metadata.suite, "sdk");
  const got = await client.threads.get(t.thread_id);
  assert.equal(got.thread_id, t.thread_id);
  const found = await client.threads.search({ metadata: { suite: "sdk", n: 1 } });
  assert.ok(found.some((x) => x.thread_id === t.thread_id));
  const updated = await client.threads.update(t.thread_id, { metadata: { n: 2 } });
  assert.equal(updated.metadata.n, 2);
  assert.equal(updated.metadata.suite, "sdk");
  await rejectsWith(other.threads.get(t.thread_id), 404);
  assert.equal((await other.threads.search({ metadata: { suite: "sdk" } })).length, 0);
  await client.threads.delete(t.thread_id);
  await rejectsWith(client.threads.get(t.thread_id), 404);
});

test("wait to the interrupt, read state and history, resume with a command", async () => {
  const t = await client.threads.create();
  const first = await client.runs.wait(t.thread_id, "demo", { input: { title: "launch" } });
  assert.equal(first.title, "launch");
  assert.equal(first.__interrupt__.length, 1);
  assert.match(first.__interrupt__[0].value.summary, /Approve\?/);

  const thread = await client.threads.get(t.thread_id);
  assert.equal(thread.status, "interrupted");
  const state = await client.threads.getState(t.thread_id);
  assert.deepEqual(state.next, ["confirm"]);
  assert.equal(state.tasks[0].name, "confirm");
  assert.equal(state.tasks[0].interrupts[0].id, first.__interrupt__[0].id);
  assert.deepEqual(state.values.items, ["Write the launch notes", "Check the launch build", "Tell the team"]);

  const history = await client.threads.getHistory(t.thread_id, { limit: 100 });
  assert.equal(history.length, 10); // input, 8 steps, the interrupt
  assert.equal(history[0].checkpoint.checkpoint_id, state.checkpoint.checkpoint_id);
  assert.equal(history[1].checkpoint.checkpoint_id, state.parent_checkpoint.checkpoint_id);
  const older = await client.threads.getState(t.thread_id, history[3].checkpoint.checkpoint_id);
  assert.deepEqual(older.values, history[3].values);

  const done = await client.runs.wait(t.thread_id, "demo", { command: { resume: { accept: true, note: "ship it" } } });
  assert.equal(done.approved, true);
  assert.equal(done.note, "ship it");
  assert.equal(done.__interrupt__, undefined);
  assert.equal((await client.threads.get(t.thread_id)).status, "idle");
  await rejectsWith(client.runs.wait(t.thread_id, "demo", { command: { resume: { accept: true } } }), 409);

  await client.threads.updateState(t.thread_id, { values: { note: "edited" } });
  const edited = await client.threads.getState(t.thread_id);
  assert.equal(edited.values.note, "edited");
  assert.equal(edited.metadata.source, "update");
});

test("stream with values, updates, messages-tuple, custom and events", async () => {
  const t = await client.threads.create();
  const events = await collect(client.runs.stream(t.thread_id, "echo", {
    input: { text: "hello world", ask: true },
    streamMode: ["values", "updates", "messages-tuple", "custom", "events"],
  }));
  const kinds = events.map((e) => e.event);
  assert.equal(kinds[0], "metadata");
  assert.equal(events[0].data.thread_id, t.thread_id);
  for (const k of ["values", "updates", "messages", "custom", "events"]) assert.ok(kinds.includes(k), `has ${k}: ${kinds}`);
  const text = events.filter((e) => e.event === "messages").map((e) => e.data[0].content).join("");
  assert.equal(text, "you said: hello world ");
  assert.equal(events.find((e) => e.event === "messages").data[1].langgraph_node, "think");
  const custom = events.filter((e) => e.event === "custom").map((e) => e.data.kind);
  assert.deepEqual(custom, ["status", "tool_call", "tool_result", "note"]);
  const updates = events.filter((e) => e.event === "updates").map((e) => Object.keys(e.data)[0]);
  assert.deepEqual(updates, ["think", "__interrupt__"]);
  const lastValues = events.filter((e) => e.event === "values").at(-1).data;
  assert.equal(lastValues.__interrupt__[0].value.question, "Send it?");
  const ev = events.filter((e) => e.event === "events").map((e) => e.data.event);
  for (const k of ["on_chain_start", "on_chat_model_stream", "on_tool_start", "on_tool_end", "on_chain_end"]) assert.ok(ev.includes(k), `events has ${k}`);

  const resumed = await collect(client.runs.stream(t.thread_id, "echo", { command: { resume: { accept: true } }, streamMode: "updates" }));
  assert.deepEqual(resumed.filter((e) => e.event === "updates").map((e) => Object.keys(e.data)[0]), ["confirm"]);
  assert.equal(resumed.at(-1).data.confirm.approved, true);
});

test("stream mode messages sends partial and complete messages", async () => {
  const t = await client.threads.create();
  const events = await collect(client.runs.stream(t.thread_id, "echo", { input: { text: "abc" }, streamMode: "messages" }));
  const partial = events.filter((e) => e.event === "messages/partial");
  assert.ok(partial.length >= 2);
  assert.equal(partial.at(-1).data[0].content, "you said: abc ");
  const complete = events.find((e) => e.event === "messages/complete");
  assert.equal(complete.data[0].content, "you said: abc ");
  assert.ok(events.some((e) => e.event === "messages/metadata"));
});

test("background run: create, join, join a stream that is already going", async () => {
  const t = await client.threads.create();
  const run = await client.runs.create(t.thread_id, "slow", { input: { steps: 3, ms: 20 } });
  assert.ok(["pending", "running"].includes(run.status));
  const values = await client.runs.join(t.thread_id, run.run_id);
  assert.equal(values.done, 3);
  assert.equal((await client.runs.get(t.thread_id, run.run_id)).status, "success");

  const run2 = await client.runs.create(t.thread_id, "slow", { input: { steps: 4, ms: 50 }, streamMode: ["values"] });
  await new Promise((r) => setTimeout(r, 80)); // join while it runs
  const events = await collect(client.runs.joinStream(t.thread_id, run2.run_id));
  const done = events.filter((e) => e.event === "values").map((e) => e.data.done);
  assert.equal(done.at(-1), 4);
  const list = await client.runs.list(t.thread_id);
  assert.deepEqual(list.map((r) => r.run_id).sort(), [run.run_id, run2.run_id].sort());
});

test("cancel a run; it stops, checkpointed, and the thread is idle", async () => {
  const t = await client.threads.create();
  const run = await client.runs.create(t.thread_id, "slow", { input: { steps: 1000, ms: 20 } });
  await new Promise((r) => setTimeout(r, 100));
  await client.runs.cancel(t.thread_id, run.run_id, true);
  assert.equal((await client.runs.get(t.thread_id, run.run_id)).status, "interrupted");
  const thread = await client.threads.get(t.thread_id);
  assert.equal(thread.status, "idle");
  assert.ok(thread.values.done > 0 && thread.values.done < 1000);
});

test("multitask strategies on a busy thread: reject, enqueue, interrupt, rollback", async () => {
  const t = await client.threads.create();
  const slow = { input: { steps: 5, ms: 40 } };
  const first = await client.runs.create(t.thread_id, "slow", slow);
  await rejectsWith(client.runs.create(t.thread_id, "slow", { ...slow, multitaskStrategy: "reject" }), 409);
  const queued = await client.runs.create(t.thread_id, "slow", { input: { steps: 2, ms: 1 }, multitaskStrategy: "enqueue" });
  assert.equal(queued.status, "pending");
  assert.equal((await client.runs.join(t.thread_id, queued.run_id)).done, 2);
  assert.equal((await client.runs.get(t.thread_id, first.run_id)).status, "success");

  const long = await client.runs.create(t.thread_id, "slow", { input: { steps: 1000, ms: 20 } });
  await new Promise((r) => setTimeout(r, 60));
  const newer = await client.runs.create(t.thread_id, "slow", { input: { steps: 1, ms: 1 }, multitaskStrategy: "interrupt" });
  assert.equal((await client.runs.join(t.thread_id, newer.run_id)).done, 1);
  assert.equal((await client.runs.get(t.thread_id, long.run_id)).status, "interrupted");

  const before = await client.threads.getState(t.thread_id);
  const doomed = await client.runs.create(t.thread_id, "slow", { input: { steps: 1000, ms: 20 } });
  await new Promise((r) => setTimeout(r, 60));
  const after = await client.runs.create(t.thread_id, "slow", { input: null, multitaskStrategy: "rollback" });
  await client.runs.join(t.thread_id, after.run_id);
  assert.equal((await client.runs.get(t.thread_id, doomed.run_id)).status, "interrupted");
  const now = await client.threads.getState(t.thread_id);
  assert.deepEqual(now.values, before.values, "the cancelled run's steps were undone");
});

test("a run without a thread, and a run with if_not_exists create", async () => {
  const values = await client.runs.wait(null, "demo", { input: { title: "solo" } });
  assert.equal(values.title, "solo");
  assert.equal(values.__interrupt__.length, 1);
  const id = crypto.randomUUID();
  const made = await client.runs.wait(id, "echo", { input: { text: "x" }, ifNotExists: "create" });
  assert.equal(made.reply, "you said: x ");
  assert.equal((await client.threads.get(id)).thread_id, id);
});

test("bad input is a client error", async () => {
  const t = await client.threads.create();
  await rejectsWith(client.runs.wait(t.thread_id, "demo", { input: { title: 5 } }), 422);
  await rejectsWith(client.runs.wait(t.thread_id, "nope", { input: {} }), 404);
  await rejectsWith(client.runs.wait("no-such-thread", "demo", { input: {} }), 404);
});
