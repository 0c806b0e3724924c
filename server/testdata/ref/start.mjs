// Starts LangGraph's own JS server (@langchain/langgraph-api) on the
// graphs of graphs.mjs, offline (the recipe of the reference notes: no
// key, no network, tracing off), on 127.0.0.1 and a free port, with its
// persistence in a fresh temporary folder, and a second HTTP server for
// the slow graph's gate (GET /__test/started, POST /__test/release, as the
// Go test harness serves them). Prints one line
//   ready <api url> <harness url>
// and serves until SIGTERM, SIGINT or the end of its standard input (so
// that it stops when the process that started it with a pipe dies).
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

process.env.LANGSMITH_TRACING = "false";
process.env.LANGCHAIN_TRACING_V2 = "false";

const here = dirname(fileURLToPath(import.meta.url));
const graphFile = join(here, "graphs.mjs");
const { gate } = await import(graphFile); // the same module instance the server loads
const { startServer } = await import("@langchain/langgraph-api/server");

const harness = createServer(async (req, res) => {
  const ac = new AbortController();
  res.on("close", () => ac.abort());
  try {
    let out;
    if (req.method === "GET" && req.url === "/__test/started") out = await gate.started.recv(ac.signal);
    else if (req.method === "POST" && req.url === "/__test/release") out = (await gate.release.send(true, ac.signal), true);
    else return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
  } catch {
    res.destroy();
  }
});
await new Promise((resolve) => harness.listen(0, "127.0.0.1", resolve));

const cwd = mkdtempSync(join(tmpdir(), "langgraph-api-ref-"));
const freePort = await new Promise((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});
const { host, cleanup } = await startServer({
  port: freePort,
  nWorkers: 8,
  host: "127.0.0.1",
  cwd,
  graphs: { agent: graphFile + ":agent", slow: graphFile + ":slow", boom: graphFile + ":boom" },
});
console.log(`ready http://${host} http://127.0.0.1:${harness.address().port}`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(0), 3000).unref(); // a flush that hangs does not keep it alive
  harness.close();
  harness.closeAllConnections();
  await cleanup().catch(() => {});
  process.exit(0);
};
process.on("exit", () => rmSync(cwd, { recursive: true, force: true }));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.resume();
