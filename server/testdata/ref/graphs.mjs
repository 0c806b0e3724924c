// The JS equivalents of the Go graphs server/'s smoke test serves
// (server/helpers_test.go): agent, slow and boom, on the same state.
import { HumanMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph";

// AgentState: topic and answer keep the last value, log appends, count sums
// (Go: state.Value, state.Append, state.Sum).
const AgentState = Annotation.Root({
  topic: Annotation(),
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  answer: Annotation(),
  count: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
});

// agent: plan (a custom event, and a model's message "thinking" on the
// messages stream, as the Go graph's MessageWriter) → ask (an interrupt) →
// finish.
export const agent = new StateGraph(AgentState)
  .addNode("plan", async (s, config) => {
    config.writer?.({ progress: "planning " + s.topic });
    await new FakeListChatModel({ responses: ["thinking"] }).invoke([new HumanMessage("plan " + s.topic)], config);
    return { log: ["plan:" + s.topic], count: 1 };
  })
  .addNode("ask", (s) => {
    const ans = interrupt({ question: "approve " + s.topic + "?" });
    return { answer: String(ans), log: ["ask"] };
  })
  .addNode("finish", () => ({ log: ["finish"] }))
  .addEdge(START, "plan")
  .addEdge("plan", "ask")
  .addEdge("ask", "finish")
  .addEdge("finish", END)
  .compile();

// chan is an unbuffered channel, like Go's: send resolves when a
// receiver took the value. Either side gives up when its signal aborts.
class Chan {
  #senders = []; // {value, resolve, reject}
  #receivers = []; // {resolve, reject}
  send(value, signal) {
    const r = this.#receivers.shift();
    if (r) {
      r.resolve(value);
      return Promise.resolve();
    }
    return this.#wait(this.#senders, { value }, signal);
  }
  recv(signal) {
    const s = this.#senders.shift();
    if (s) {
      s.resolve();
      return Promise.resolve(s.value);
    }
    return this.#wait(this.#receivers, {}, signal);
  }
  #wait(queue, entry, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
      Object.assign(entry, { resolve, reject });
      queue.push(entry);
      signal?.addEventListener("abort", () => {
        const i = queue.indexOf(entry);
        if (i >= 0) queue.splice(i, 1);
        reject(signal.reason ?? new Error("aborted"));
      }, { once: true });
    });
  }
}

// gate releases the slow graph's steps one at a time (Go: type gate); the
// harness routes of start.mjs drive it, as the Go test's /__test routes do.
export const gate = { started: new Chan(), release: new Chan() };

// slow: one node "step" that logs its topic once released.
export const slow = new StateGraph(AgentState)
  .addNode("step", async (s, config) => {
    await gate.started.send(s.topic, config.signal);
    await gate.release.recv(config.signal);
    return { log: ["step:" + s.topic] };
  })
  .addEdge(START, "step")
  .addEdge("step", END)
  .compile();

// boom: a node that fails.
export const boom = new StateGraph(AgentState)
  .addNode("boom", () => {
    throw new Error("kaboom");
  })
  .addEdge(START, "boom")
  .addEdge("boom", END)
  .compile();
