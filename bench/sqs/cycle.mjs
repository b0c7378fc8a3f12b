// The SQS benchmark's SDK side (bench/sqs/run.sh): N concurrent clients of
// the AWS SDK for JavaScript v3 (the one pinned for the tests), each with its
// own SQSClient, repeating SendMessageBatch of 10 → ReceiveMessage of 10 →
// DeleteMessageBatch against `spool serve` for SECONDS; then one JSON line
// with msgs/s (deleted messages) and p50/p99 per call.
//   node cycle.mjs ENDPOINT QUEUE_URL CLIENTS SECONDS PAYLOAD_BYTES
import { createRequire } from "node:module";

const require = createRequire(new URL("../../tests/serve/js/package.json", import.meta.url));
const { SQSClient, SendMessageBatchCommand, ReceiveMessageCommand, DeleteMessageBatchCommand } =
  require("@aws-sdk/client-sqs");

const [endpoint, QueueUrl, clientsArg, secondsArg, payloadArg] = process.argv.slice(2);
const clients = Number(clientsArg), seconds = Number(secondsArg), payload = Number(payloadArg);
const body = "x".repeat(payload);
const times = { send: [], receive: [], remove: [] };
let deleted = 0;
const end = performance.now() + seconds * 1000;

async function timed(list, promise) {
  const t = performance.now();
  const r = await promise;
  list.push(performance.now() - t);
  return r;
}

async function worker(i) {
  const sqs = new SQSClient({ endpoint, region: "us-east-1", maxAttempts: 1,
                              credentials: { accessKeyId: "bench", secretAccessKey: "bench" } });
  const Entries = Array.from({ length: 10 }, (_, n) => ({ Id: `m${n}`, MessageBody: body }));
  while (performance.now() < end) {
    await timed(times.send, sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries })));
    const { Messages = [] } = await timed(times.receive, sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 })));
    if (Messages.length === 0) continue;
    const r = await timed(times.remove, sqs.send(new DeleteMessageBatchCommand({ QueueUrl,
      Entries: Messages.map((m, n) => ({ Id: `d${n}`, ReceiptHandle: m.ReceiptHandle })) })));
    deleted += r.Successful?.length ?? 0;
  }
  sqs.destroy();
}

const pct = (v, p) => {
  if (v.length === 0) return 0;
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const cpuBefore = process.cpuUsage();
const started = performance.now();
await Promise.all(Array.from({ length: clients }, (_, i) => worker(i)));
const elapsed = (performance.now() - started) / 1000;
const r2 = (x) => Math.round(x * 100) / 100;
console.log(JSON.stringify({
  client: "js-sdk", workers: clients, seconds: r2(elapsed), payload_bytes: payload, messages: deleted,
  msgs_per_s: Math.round(deleted / elapsed),
  client_cpu_s: r2((process.cpuUsage(cpuBefore).user + process.cpuUsage(cpuBefore).system) / 1e6),
  send_p50_ms: r2(pct(times.send, 0.5)), send_p99_ms: r2(pct(times.send, 0.99)),
  receive_p50_ms: r2(pct(times.receive, 0.5)), receive_p99_ms: r2(pct(times.receive, 0.99)),
  delete_p50_ms: r2(pct(times.remove, 0.5)), delete_p99_ms: r2(pct(times.remove, 0.99)),
}));
