// Runs the smoke test's client scenario (scenario.mjs) against the Go
// server and against LangGraph's own JS server (start.mjs, on the graphs
// of graphs.mjs), with the same official client (@langchain/langgraph-sdk
// pinned here), normalises ids and timestamps, and prints every
// difference. Run by TestReferenceComparison (server/reference_test.go),
// which serves the Go side and sets:
//   GO_API_URL, GO_API_KEY   the Go server and its token
// Exit status: 0 when the differences are exactly those listed in
// known-differences.json (each classified there and in
// server/COMPARISON.md) and the Go server passes every check of the
// scenario; 1 otherwise, naming what is new or gone.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { Client } from "@langchain/langgraph-sdk";
import { extras, recording, scenario } from "./scenario.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const goURL = process.env.GO_API_URL;
if (!goURL) {
  console.error("compare: GO_API_URL is not set; run go test ./server -run TestReferenceComparison -v");
  process.exit(2);
}

// startJS starts the JS server and resolves to its urls and child process.
function startJS() {
  const child = spawn(process.execPath, [join(here, "start.mjs")], {
    cwd: here,
    env: { ...process.env, LANGSMITH_TRACING: "false", LANGCHAIN_TRACING_V2: "false", LANGGRAPH_API_KEY: "", LANGSMITH_API_KEY: "", LANGCHAIN_API_KEY: "" },
    stdio: ["pipe", "pipe", "pipe"], // its stdin closes when this process ends, however it ends
  });
  let log = "";
  child.stderr.on("data", (d) => { log += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the JS server did not start in 60 s:\n" + log)), 60000);
    child.on("exit", (code) => reject(new Error(`the JS server exited (${code}):\n${log}`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      log += line + "\n";
      const m = /^ready (\S+) (\S+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve({ api: m[1], harness: m[2], child });
      }
    });
  });
}

// observe runs the scenario against one server and returns its records.
async function observe(api, harnessURL, key) {
  const client = new Client({ apiUrl: api, apiKey: key });
  const badClient = new Client({ apiUrl: api, apiKey: "wrong" });
  const harness = async (method, path) =>
    (await fetch(harnessURL + path, { method, signal: AbortSignal.timeout(10000) })).json();
  const check = recording();
  await scenario({ client, badClient, harness, check });
  await extras({ client, harness, check });
  return check.records;
}

// normalise replaces what differs from run to run — ids, timestamps —
// with placeholders, and sorts object keys.
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const hex = /^[0-9a-f]{32}$/i;
const time = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
function normalise(v) {
  if (typeof v === "string") {
    if (uuid.test(v)) return v === "fe096781-5601-53d2-b2f6-0d3403f7e9ca" ? v : "<uuid>";
    if (hex.test(v)) return "<hex id>";
    if (time.test(v)) return "<time>";
    return v;
  }
  if (Array.isArray(v)) return v.map(normalise);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [uuid.test(k) ? "<uuid>" : hex.test(k) ? "<hex id>" : k, normalise(v[k])]));
  }
  return v;
}

// diff lists the paths where a and b differ.
function diff(a, b, path = "", out = []) {
  if (isDeepStrictEqual(a, b)) return out;
  const objs = a && b && typeof a === "object" && typeof b === "object" && Array.isArray(a) === Array.isArray(b);
  if (!objs) {
    out.push({ path: path || ".", go: a, js: b });
    return out;
  }
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  for (const k of keys) {
    const p = Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`;
    if (!(k in a)) out.push({ path: p, go: "(absent)", js: b[k] });
    else if (!(k in b)) out.push({ path: p, go: a[k], js: "(absent)" });
    else diff(a[k], b[k], p, out);
  }
  return out;
}

const show = (v) => {
  const s = JSON.stringify(v);
  return s === undefined ? "undefined" : s.length > 160 ? s.slice(0, 157) + "..." : s;
};

const started = Date.now();
const secs = (t) => ((Date.now() - t) / 1000).toFixed(1);
const js = await startJS();
const jsStarted = secs(started);
let goRecords, jsRecords, goTime, jsTime;
try {
  let t = Date.now();
  goRecords = await observe(goURL, process.env.GO_HARNESS_URL || goURL, process.env.GO_API_KEY);
  goTime = secs(t);
  t = Date.now();
  jsRecords = await observe(js.api, js.harness, null);
  jsTime = secs(t);
} finally {
  const exited = new Promise((resolve) => js.child.once("exit", resolve));
  js.child.kill("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
}

const keyOf = (r) => `${r.section} / ${r.label}`;
const byKey = (records) => {
  const m = new Map();
  for (const r of records) {
    let k = keyOf(r), n = 2;
    while (m.has(k)) k = `${keyOf(r)} #${n++}`;
    m.set(k, r);
  }
  return m;
};
const goBy = byKey(goRecords), jsBy = byKey(jsRecords);
const keys = [...new Set([...goBy.keys(), ...jsBy.keys()])];
// known-differences.json: rules {key, kind, note}; key is a regular
// expression matched against "<section> / <label> :: <path>" (array
// indexes written [*]); kind is deliberate, js-quirk or ours.
const rules = JSON.parse(readFileSync(join(here, "known-differences.json"), "utf8"))
  .map((r) => ({ ...r, re: new RegExp(r.key), used: false }));

let same = 0, differing = 0;
const unexplained = [];
const goFailed = [];
for (const k of keys) {
  const g = goBy.get(k), j = jsBy.get(k);
  if (g && !g.pass) goFailed.push(k);
  const gv = g ? normalise(g.actual) : "(not reached)";
  const jv = j ? normalise(j.actual) : "(not reached)";
  if (isDeepStrictEqual(gv, jv)) {
    same++;
    if (process.env.COMPARE_LIST_SAME) console.log(`same: ${k}`);
    continue;
  }
  differing++;
  const pass = (r) => (!r ? "not reached" : r.kind === "observe" ? "observed" : r.pass ? "meets the smoke check" : "FAILS the smoke check");
  console.log(`\n${k}  (go: ${pass(g)}; js: ${pass(j)})`);
  for (const d of diff(gv, jv)) {
    const id = `${k} :: ${d.path.replace(/\[\d+\]/g, "[*]")}`;
    const rule = rules.find((r) => r.re.test(id));
    if (rule) rule.used = true;
    else unexplained.push(id);
    console.log(`    ${rule ? rule.kind.padEnd(10) : "NEW".padEnd(10)} ${d.path}: go ${show(d.go)} | js ${show(d.js)}`);
  }
}
const gone = rules.filter((r) => !r.used);
console.log(`\ncompare: ${keys.length} records, ${same} the same, ${differing} different; ${unexplained.length} differences not in known-differences.json; ` +
  `${goFailed.length} smoke checks failed on Go; ${secs(started)} s (JS server start ${jsStarted} s, Go scenarios ${goTime} s, JS scenarios ${jsTime} s)`);
for (const k of [...new Set(unexplained)]) console.log(`compare: NEW difference: ${k}`);
for (const r of gone) console.log(`compare: known difference no longer seen: ${r.key}`);
for (const k of goFailed) console.log(`compare: the Go server fails the smoke check: ${k}`);
process.exit(unexplained.length || gone.length || goFailed.length ? 1 : 0);
