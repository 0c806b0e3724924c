// The client scenario of server/'s smoke test, written once for two uses:
// smoke.mjs runs it against the Go server with asserting checks (the first
// failed check throws), compare.mjs runs it against the Go server and
// LangGraph's own JS server with recording checks and compares what each
// server answered. It imports nothing: the caller passes the clients of
// the official SDK it loaded.
//
// The arguments: client and badClient (the same SDK Client with the right
// key and a wrong one), harness(method, path) to drive the slow graph's
// gate, and check (asserting() or recording()).
import assert from "node:assert/strict";

export async function scenario({ client, badClient, harness, check }) {
  let thread, history, t2;

  await check.section("assistants", async () => {
    const assistants = await client.assistants.search({ graphId: "agent" });
    check.equal("assistants.search count", assistants.length, 1);
    check.equal("assistants.search id", assistants[0].assistant_id, "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
    check.observe("assistant", assistants[0]);
    const graph = await client.assistants.getGraph("agent");
    check.ok("getGraph has node ask", graph.nodes.some((n) => n.id === "ask"));
    // Nodes and edges in a stable order: the servers list them differently.
    const byText = (a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1);
    check.observe("getGraph", { nodes: [...graph.nodes].sort((a, b) => (a.id < b.id ? -1 : 1)), edges: [...graph.edges].sort(byText) });
  });

  await check.section("stream with an interrupt", async () => {
    thread = await client.threads.create({ metadata: { owner: "smoke" } });
    check.equal("new thread status", thread.status, "idle");
    check.observe("new thread", thread);
    // Stream a run that pauses at an interrupt.
    let created = null;
    const seen = [];
    for await (const chunk of client.runs.stream(thread.thread_id, "agent", {
      input: { topic: "cats" },
      streamMode: ["values", "updates", "custom"],
      onRunCreated: (meta) => { created = meta; },
    })) {
      seen.push(chunk);
    }
    check.ok("onRunCreated fired from Content-Location", created && created.run_id);
    check.equal("onRunCreated thread_id", created?.thread_id, thread.thread_id);
    check.equal("stream event names", seen.map((c) => c.event), ["metadata", "values", "custom", "updates", "values", "updates", "values", "end"]);
    check.observe("stream events", seen);
    check.equal("custom event", seen[2]?.data, { progress: "planning cats" });
    const interrupt = seen[5]?.data?.__interrupt__?.[0];
    check.equal("interrupt value", interrupt?.value, { question: "approve cats?" });
  });

  await check.section("state at the interrupt", async () => {
    const state = await client.threads.getState(thread.thread_id);
    check.equal("state.next", state.next, ["ask"]);
    check.equal("state task interrupt", state.tasks[0]?.interrupts[0]?.value, { question: "approve cats?" });
    check.observe("state", state);
    const th = await client.threads.get(thread.thread_id);
    check.equal("thread status", th.status, "interrupted");
    check.observe("interrupted thread", th);
  });

  await check.section("resume, history, update, fork", async () => {
    // Resume with a Command through wait.
    const final = await client.runs.wait(thread.thread_id, "agent", { command: { resume: "yes" } });
    check.equal("resumed log", final.log, ["plan:cats", "ask", "finish"]);
    check.equal("resumed answer", final.answer, "yes");
    check.observe("resumed values", final);

    history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
    check.equal("history steps", history.map((h) => h.metadata.step), [3, 2, 1, 0, -1]);
    check.observe("history", history);

    // Update state, then read it back.
    const upd = await client.threads.updateState(thread.thread_id, { values: { answer: "edited" } });
    check.observe("updateState", upd);
    const state = await client.threads.getState(thread.thread_id);
    check.equal("updated answer", state.values.answer, "edited");

    // Fork from the first checkpoint.
    const first = history[history.length - 1].checkpoint.checkpoint_id;
    const forked = await client.runs.wait(thread.thread_id, "agent", { checkpointId: first, input: null });
    check.ok("the fork paused at ask again", forked.__interrupt__);
    check.observe("forked", forked);
  });

  await check.section("background run, join, list", async () => {
    // Background run, join, list.
    t2 = await client.threads.create();
    const run = await client.runs.create(t2.thread_id, "agent", { input: { topic: "dogs" } });
    check.ok("new run pending or running", ["pending", "running"].includes(run.status));
    check.observe("run", run);
    const joined = await client.runs.join(t2.thread_id, run.run_id);
    check.ok("joined at the interrupt", joined.__interrupt__);
    check.observe("joined", joined);
    const runs = await client.runs.list(t2.thread_id);
    check.equal("runs.list count", runs.length, 1);
    check.equal("run status after the interrupt", (await client.runs.get(t2.thread_id, run.run_id)).status, "success");
    await client.runs.cancel(t2.thread_id, run.run_id, true);
  });

  await check.section("multitask strategies and cancel", async () => {
    // The "slow" graph's step waits until the harness releases it (GET
    // /__test/started blocks until a step started and answers its topic;
    // POST /__test/release lets one step finish).
    const t3 = await client.threads.create();
    const r1 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "a" } });
    check.equal("started a", await harness("GET", "/__test/started"), "a");
    await check.rejects(
      "reject while busy",
      client.runs.create(t3.thread_id, "slow", { input: { topic: "b" }, multitaskStrategy: "reject" }),
      /409/,
    );
    const r2 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "b" }, multitaskStrategy: "enqueue" });
    check.equal("enqueued run status", r2.status, "pending");
    const r3 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "c" }, multitaskStrategy: "enqueue" });
    await client.runs.cancel(t3.thread_id, r3.run_id); // pending: taken off the queue
    await harness("POST", "/__test/release"); // a finishes; b starts
    check.equal("started b", await harness("GET", "/__test/started"), "b");
    await client.runs.cancel(t3.thread_id, r2.run_id, true); // running: cancelled, waited for
    check.equal("finished run status", (await client.runs.get(t3.thread_id, r1.run_id)).status, "success");
    check.equal("cancelled running run status", (await client.runs.get(t3.thread_id, r2.run_id)).status, "interrupted");
    check.equal("cancelled pending run status", (await client.runs.get(t3.thread_id, r3.run_id)).status, "interrupted");
    // interrupt: a running run is stopped for the new one.
    const r4 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "d" } });
    check.equal("started d", await harness("GET", "/__test/started"), "d");
    const r5 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "e" }, multitaskStrategy: "interrupt" });
    check.equal("started e", await harness("GET", "/__test/started"), "e");
    await harness("POST", "/__test/release");
    const last = await client.runs.join(t3.thread_id, r5.run_id);
    check.equal("log after interrupt", last.log, ["step:a", "step:e"]);
    check.equal("interrupted run status", (await client.runs.get(t3.thread_id, r4.run_id)).status, "interrupted");
  });

  await check.section("store", async () => {
    await client.store.putItem(["users", "u1"], "prefs", { theme: "dark" });
    const item = await client.store.getItem(["users", "u1"], "prefs");
    check.equal("store item value", item.value, { theme: "dark" });
    check.observe("store item", item);
    check.equal("missing store item", await client.store.getItem(["users", "u1"], "nope"), null);
    // A value comes back with its keys in the order sent, at every level.
    await client.store.putItem(["users", "u1"], "order", { b: 1, a: { d: 2, c: 3 } });
    const ordered = await client.store.getItem(["users", "u1"], "order");
    check.equal("store value key order", Object.keys(ordered.value), ["b", "a"]);
    check.equal("store nested key order", Object.keys(ordered.value.a), ["d", "c"]);
    const orderedFound = await client.store.searchItems(["users"], { filter: { b: 1 } });
    check.equal("store search key order", Object.keys(orderedFound.items[0]?.value ?? {}), ["b", "a"]);
    await client.store.deleteItem(["users", "u1"], "order");
    const found = await client.store.searchItems(["users"], { filter: { theme: "dark" } });
    check.equal("store search count", found.items.length, 1);
    const ns = await client.store.listNamespaces({ prefix: ["users"] });
    check.equal("store namespaces", ns.namespaces, [["users", "u1"]]);
    await client.store.deleteItem(["users", "u1"], "prefs");
    check.equal("deleted store item", await client.store.getItem(["users", "u1"], "prefs"), null);
  });

  await check.section("threads search and delete", async () => {
    const mine = await client.threads.search({ metadata: { owner: "smoke" } });
    check.equal("threads.search by metadata", mine.length, 1);
    await client.threads.delete(t2.thread_id);
  });

  await check.section("auth", async () => {
    // A wrong key is refused (403 is not retried by the client).
    await check.rejects("wrong key", badClient.threads.create(), /403/);
  });
}

// asserting returns the checks of the smoke test: each one asserts.
export function asserting() {
  return {
    equal: (label, actual, expected) => assert.deepEqual(actual, expected, label),
    ok: (label, value) => assert.ok(value, label),
    rejects: (label, promise, re) => assert.rejects(promise, re, label),
    observe: () => {},
    section: (name, fn) => fn(),
  };
}

// recording returns checks that record what the server answered, whether
// it met the smoke test's expectation, and carry on; records holds them in
// order. A section that throws is recorded and the next one runs; a
// section that takes longer than timeoutMs is recorded as hung.
export function recording(timeoutMs = 60000) {
  const records = [];
  let section = "";
  const put = (kind, label, actual, pass) => records.push({ section, kind, label, actual, pass });
  return {
    records,
    equal: (label, actual, expected) => {
      let pass = true;
      try { assert.deepEqual(actual, expected); } catch { pass = false; }
      put("check", label, actual, pass);
    },
    ok: (label, value) => put("check", label, Boolean(value), Boolean(value)),
    rejects: async (label, promise, re) => {
      try {
        put("check", label, { resolved: await promise }, false);
      } catch (err) {
        put("check", label, { rejected: String(err?.message ?? err) }, re.test(String(err?.message ?? err)));
      }
    },
    observe: (label, value) => put("observe", label, value, true),
    section: async (name, fn) => {
      section = name;
      let timer;
      const hung = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`hung for ${timeoutMs} ms`)), timeoutMs); });
      try {
        await Promise.race([fn(), hung]);
      } catch (err) {
        put("check", "section completes", { threw: String(err?.message ?? err) }, false);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

// statusOf resolves to "ok" when the call succeeds and to "HTTP <status>"
// when it fails (the error bodies' wording is compared elsewhere).
async function statusOf(promise) {
  try {
    await promise;
    return "ok";
  } catch (err) {
    return /HTTP \d+/.exec(String(err?.message))?.[0] ?? String(err?.message ?? err);
  }
}

// extras are further scenarios of the reference notes' conformance plan
// (§14) that only compare.mjs runs: the Go tests cover them with their
// own checks, and here each server's answers are compared.
export async function extras({ client, harness, check }) {
  await check.section("a failing run", async () => {
    const t = await client.threads.create();
    const res = await client.runs.wait(t.thread_id, "boom", { input: { topic: "x" }, raiseError: false });
    check.observe("wait result", res);
    check.equal("thread status after a failure", (await client.threads.get(t.thread_id)).status, "error");
    check.equal("failed run status", (await client.runs.list(t.thread_id)).map((r) => r.status), ["error"]);
    const events = [];
    for await (const c of client.runs.stream(t.thread_id, "boom", { input: { topic: "y" } })) events.push(c);
    check.observe("stream of a failing run", events);
  });

  await check.section("messages-tuple stream", async () => {
    const t = await client.threads.create();
    const chunks = [];
    for await (const c of client.runs.stream(t.thread_id, "agent", { input: { topic: "m" }, streamMode: ["messages-tuple"] })) chunks.push(c);
    const msgs = chunks.filter((c) => c.event === "messages");
    check.observe("event names", [...new Set(chunks.map((c) => c.event))]);
    check.equal("the message's text", msgs.map((c) => c.data[0].content).join(""), "thinking");
    check.observe("one message id", new Set(msgs.map((c) => c.data[0].id)).size);
    check.observe("chunk", msgs[0]?.data[0]);
    check.observe("metadata", msgs[0]?.data[1]);
  });

  await check.section("stateless run", async () => {
    check.observe("stateless wait", await client.runs.wait(null, "agent", { input: { topic: "s" } }));
  });

  await check.section("interrupt_before", async () => {
    const t = await client.threads.create();
    const res = await client.runs.wait(t.thread_id, "agent", { input: { topic: "ib" }, interruptBefore: ["ask"] });
    check.observe("result", res);
    const st = await client.threads.getState(t.thread_id);
    check.equal("next", st.next, ["ask"]);
    check.equal("thread status", (await client.threads.get(t.thread_id)).status, "interrupted");
    const cont = await client.runs.wait(t.thread_id, "agent", { input: null });
    check.observe("continued with null input", cont);
  });

  await check.section("join a resumable run from the start", async () => {
    const t = await client.threads.create();
    const run = await client.runs.create(t.thread_id, "agent", { input: { topic: "j" }, streamMode: ["values", "updates"], streamResumable: true });
    await client.runs.join(t.thread_id, run.run_id);
    const events = [];
    for await (const c of client.runs.joinStream(t.thread_id, run.run_id, { lastEventId: "-1" })) events.push(c);
    check.observe("replayed events", events.map((c) => c.event));
  });

  await check.section("rollback", async () => {
    const t = await client.threads.create();
    const r1 = await client.runs.create(t.thread_id, "slow", { input: { topic: "r1" } });
    check.equal("started r1", await harness("GET", "/__test/started"), "r1");
    const r2 = await client.runs.create(t.thread_id, "slow", { input: { topic: "r2" }, multitaskStrategy: "rollback" });
    check.equal("started r2", await harness("GET", "/__test/started"), "r2");
    await harness("POST", "/__test/release");
    const last = await client.runs.join(t.thread_id, r2.run_id);
    check.equal("log after rollback", last.log, ["step:r2"]);
    check.observe("rolled-back run", await statusOf(client.runs.get(t.thread_id, r1.run_id)));
  });

  await check.section("not found", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    check.observe("get a missing thread", await statusOf(client.threads.get(missing)));
    check.observe("state of a missing thread", await statusOf(client.threads.getState(missing)));
    check.observe("run on a missing thread", await statusOf(client.runs.create(missing, "agent", { input: { topic: "m" } })));
    check.observe("run of a missing graph", await statusOf(client.runs.create((await client.threads.create()).thread_id, "nope", { input: {} })));
    check.observe("a malformed thread id", await statusOf(client.threads.get("not-a-uuid")));
    check.observe("an unknown input field", await statusOf(client.runs.create((await client.threads.create()).thread_id, "agent", { input: { nope: 1 } })));
  });

  await check.section("assistants", async () => {
    const a = await client.assistants.create({ graphId: "agent", name: "mine", metadata: { team: "x" }, config: { configurable: { k: 1 } } });
    check.observe("created", a);
    const b = await client.assistants.update(a.assistant_id, { metadata: { more: true } });
    check.observe("updated", b);
    check.observe("versions", (await client.assistants.getVersions(a.assistant_id)).map((v) => v.version));
    check.observe("set latest", (await client.assistants.setLatest(a.assistant_id, 1)).version);
    check.observe("search by name", (await client.assistants.search({ name: "min" })).map((x) => x.name));
    check.observe("search by metadata", (await client.assistants.search({ metadata: { team: "x" } })).length);
    check.observe("delete", await statusOf(client.assistants.delete(a.assistant_id)));
    check.observe("get deleted", await statusOf(client.assistants.get(a.assistant_id)));
  });

  await check.section("threads", async () => {
    const t = await client.threads.create({ metadata: { kind: "counted" } });
    check.observe("count by metadata", await client.threads.count({ metadata: { kind: "counted" } }));
    check.observe("patch metadata", (await client.threads.update(t.thread_id, { metadata: { extra: 1 } })).metadata);
    check.observe("search by status", (await client.threads.search({ status: "error" })).length);
    check.observe("copy", await statusOf(client.threads.copy(t.thread_id)));
  });
}
