// The Mermaid drawing of every agent, as GET /assistants/{id}/graph serves
// it, parsed by the mermaid package itself. Run by TestLangGraphSDK and
// TestMermaid (go test ./server/), which start the server and set LOOM_URL
// and LOOM_KEY; TestMermaid's server has every agent loom serve has.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";

// mermaid sanitises labels with DOMPurify, which needs a window: jsdom's.
const { window } = new JSDOM("");
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import("mermaid");

const apiUrl = process.env.LOOM_URL;
const headers = { "x-api-key": process.env.LOOM_KEY };

async function getJSON(path) {
  const res = await fetch(apiUrl + path, { headers });
  assert.equal(res.status, 200, `GET ${path}: ${res.status} ${await res.clone().text()}`);
  return res.json();
}

test("the parser rejects a node named end, so passing it means something", async () => {
  await assert.rejects(mermaid.parse("flowchart TD\n\tstart([START])\n\tend([END])\n\tstart --> end\n"), /Parse error/);
});

test("every agent's Mermaid drawing parses as a flowchart", async () => {
  const found = await fetch(apiUrl + "/assistants/search", {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ limit: 1000 }),
  }).then((r) => r.json());
  const ids = found.map((a) => a.assistant_id).sort();
  assert.ok(ids.length > 0, "the server lists no agents");
  for (const id of ids) {
    const g = await getJSON(`/assistants/${encodeURIComponent(id)}/graph`);
    assert.match(g.mermaid, /^flowchart TD\n/, `${id}: ${g.mermaid}`);
    let d;
    try {
      d = await mermaid.mermaidAPI.getDiagramFromText(g.mermaid);
    } catch (err) {
      assert.fail(`${id}: mermaid cannot parse its drawing: ${err.message}\n${g.mermaid}`);
    }
    assert.equal(d.type, "flowchart-v2", id);
    // The parsed flowchart is the graph the endpoint describes: its nodes
    // (labelled START, END or the node's name) and its edges, route
    // targets and loop exits dotted.
    const name = (v) => ({ START: "__start__", END: "__end__" })[v.text] ?? v.text;
    const vertices = [...d.db.getVertices().values()];
    assert.deepEqual(vertices.map(name).sort(), g.nodes.map((n) => n.id).sort(), `${id}: nodes`);
    const byId = new Map(vertices.map((v) => [v.id, name(v)]));
    const drawn = d.db.getEdges().map((e) => `${byId.get(e.start)} -> ${byId.get(e.end)}${e.stroke === "dotted" ? " (conditional)" : ""}`);
    const described = g.edges.map((e) => `${e.source} -> ${e.target}${e.conditional ? " (conditional)" : ""}`);
    assert.deepEqual(drawn.sort(), described.sort(), `${id}: edges`);
  }
});
