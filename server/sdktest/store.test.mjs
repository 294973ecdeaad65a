// The official LangGraph JS client's client.store against Loom's
// long-term store: put, get, search, namespaces, delete and TTL, each API
// key with its own items. Run by TestLangGraphSDK (no embedder: queries
// rank by BM25) and by TestStoreSDK, which sets LOOM_STORE_SEMANTIC=1 and
// gives the server an embedder (queries rank by cosine).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.LOOM_URL;
const client = new Client({ apiUrl, apiKey: process.env.LOOM_KEY, callerOptions: { maxRetries: 0 } });
const other = new Client({ apiUrl, apiKey: process.env.LOOM_OTHER_KEY, callerOptions: { maxRetries: 0 } });
const semantic = process.env.LOOM_STORE_SEMANTIC === "1";
const run = `sdk${Date.now()}`; // this run's namespaces

async function rejectsWith(promise, status, text) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, `want HTTP ${status}, got ${err.status}: ${err.message}`);
    if (text) assert.match(err.message, text);
    return true;
  });
}

test("store: put, get, search, namespaces and delete, per key", async () => {
  const prefs = [run, "prefs", "driver-1"];
  await client.store.putItem(prefs, "climate", { temperature: 22, note: "likes the cabin warm" });
  await client.store.putItem([run, "prefs", "driver-2"], "climate", { temperature: 18, note: "keeps it cool" });
  await client.store.putItem([run, "sql", "shop"], "refunds", { question: "how many orders were refunded last month", sql: "SELECT count(*) FROM orders WHERE status = 'refunded'" }, { index: ["question"] });
  await client.store.putItem([run, "sql", "shop"], "hidden", { question: "refunded orders by day" }, { index: false });

  const item = await client.store.getItem(prefs, "climate");
  assert.deepEqual(item.namespace, prefs);
  assert.equal(item.key, "climate");
  assert.deepEqual(item.value, { temperature: 22, note: "likes the cabin warm" });
  assert.ok(!Number.isNaN(Date.parse(item.createdAt)) && !Number.isNaN(Date.parse(item.updatedAt)), "createdAt and updatedAt are times");
  assert.equal(await client.store.getItem(prefs, "nothing"), null, "a missing item is null");
  assert.equal(await other.store.getItem(prefs, "climate"), null, "another key does not see the item");

  // Overwrite keeps the creation time.
  await client.store.putItem(prefs, "climate", { temperature: 23, note: "likes the cabin warm" });
  const again = await client.store.getItem(prefs, "climate");
  assert.equal(again.value.temperature, 23);
  assert.equal(again.createdAt, item.createdAt);

  // A filter on values, with an operator.
  const warm = await client.store.searchItems([run, "prefs"], { filter: { temperature: { $gte: 20 } } });
  assert.deepEqual(warm.items.map((i) => i.namespace.at(-1)), ["driver-1"]);
  const exact = await client.store.searchItems([run], { filter: { temperature: 18 } });
  assert.deepEqual(exact.items.map((i) => i.namespace.at(-1)), ["driver-2"]);

  // A query ranks what its index holds; an item put with index false is
  // found by filters only.
  const found = await client.store.searchItems([run, "sql"], { query: "refunded orders last month", limit: 5 });
  assert.equal(found.items[0]?.key, "refunds", JSON.stringify(found));
  assert.ok(found.items[0].score > 0, "a query's results carry a score");
  assert.ok(!found.items.some((i) => i.key === "hidden"), "an item put with index false is not found by a query");

  // Paging.
  const page = await client.store.searchItems([run], { limit: 2, offset: 1 });
  assert.equal(page.items.length, 2);

  const ns = await client.store.listNamespaces({ prefix: [run], maxDepth: 2 });
  assert.deepEqual(ns.namespaces, [[run, "prefs"], [run, "sql"]]);
  const shops = await client.store.listNamespaces({ suffix: ["shop"], prefix: [run] });
  assert.deepEqual(shops.namespaces, [[run, "sql", "shop"]]);
  assert.deepEqual((await other.store.listNamespaces({ prefix: [run] })).namespaces, []);

  await client.store.deleteItem(prefs, "climate");
  assert.equal(await client.store.getItem(prefs, "climate"), null);
  assert.equal((await client.store.searchItems([run, "prefs"])).items.length, 1);
});

test("store: a query ranks by embeddings with an embedder, by words without", async () => {
  const ns = [run, "memories"];
  await client.store.putItem(ns, "warm", { text: "the driver likes the cabin warm at 24 degrees" });
  await client.store.putItem(ns, "invoices", { text: "invoices go out on day one of each month" });
  const res = await client.store.searchItems(ns, { query: "how warm does the driver like the cabin" });
  assert.equal(res.items[0]?.key, "warm", JSON.stringify(res));
  const keys = res.items.map((i) => i.key);
  if (semantic) {
    // Cosine ranks every indexed item, the unrelated one last.
    assert.deepEqual(keys, ["warm", "invoices"]);
    assert.ok(res.items[0].score > res.items[1].score);
  } else {
    // BM25 finds only items that share a word with the query.
    assert.deepEqual(keys, ["warm"]);
  }
});

test("store: items expire after their TTL, and a read refreshes it", async () => {
  const ns = [run, "ttl"];
  const ttl = 5 / 60; // five seconds, in minutes: wide margins for a busy machine
  await client.store.putItem(ns, "read", { v: 1 }, { ttl });
  await client.store.putItem(ns, "unread", { v: 2 }, { ttl });
  await client.store.putItem(ns, "kept", { v: 3 });
  await new Promise((r) => setTimeout(r, 3000));
  assert.ok(await client.store.getItem(ns, "read", { refreshTtl: true }), "read before it expired");
  await new Promise((r) => setTimeout(r, 3000));
  // Over 6 s after the put: "unread" expired, "read" was refreshed at 3 s.
  assert.equal(await client.store.getItem(ns, "unread", { refreshTtl: false }), null, "expired");
  assert.ok(await client.store.getItem(ns, "read", { refreshTtl: false }), "refreshed by the read");
  const left = await client.store.searchItems(ns, { refreshTtl: false });
  assert.deepEqual(left.items.map((i) => i.key).sort(), ["kept", "read"]);
});

test("store: malformed requests are refused, naming what is wrong", async () => {
  await rejectsWith(client.store.putItem([run], "k", { v: 1 }, { ttl: -1 }), 422, /ttl/);
  await rejectsWith(client.store.putItem([run], "x".repeat(600), { v: 1 }), 422, /key is 600 bytes/);
  await rejectsWith(client.store.putItem([], "k", { v: 1 }), 422, /namespace is empty/);
  await rejectsWith(client.store.putItem([run], "k", { big: "y".repeat(300 * 1024) }), 422, /bytes of JSON/);
  await rejectsWith(client.store.searchItems([run], { limit: 5000 }), 422, /limit is 5000/);
  await rejectsWith(client.store.listNamespaces({ maxDepth: 0 }), 422, /max_depth/);
  await assert.rejects(client.store.putItem(["a.b"], "k", {}), /periods/, "the SDK itself refuses a label with a period");
});
