// spool serve as the AWS SDK for JavaScript v3 uses it: AWS JSON 1.0, every
// request signed (SigV4) with a key of the server's credentials file, on the
// engine of SPOOL_SQS_ENGINE (sqlite or postgres). Run: node --test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  SQSClient, CreateQueueCommand, GetQueueUrlCommand, SendMessageCommand, SendMessageBatchCommand,
  ReceiveMessageCommand, DeleteMessageCommand, DeleteMessageBatchCommand, ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand, ListQueuesCommand, TagQueueCommand, ListQueueTagsCommand, PurgeQueueCommand,
  DeleteQueueCommand,
} from "@aws-sdk/client-sqs";

const cli = process.env.SPOOL_CLI;
if (!cli) throw new Error("SPOOL_CLI must name the spool binary (it is set by CTest)");
const engine = process.env.SPOOL_SQS_ENGINE ?? "sqlite";
const dir = mkdtempSync(join(tmpdir(), "spool-sqs-js-"));
let uri, server, endpoint, sqs;

function freshDatabase() {
  if (engine === "sqlite") return `sqlite:${dir}/sqs.db`;
  if (engine !== "postgres") throw new Error(`SPOOL_SQS_ENGINE must be sqlite or postgres, not ${engine}`);
  const admin = readFileSync(join(process.env.SPOOL_TEST_PG_DIR, "uri"), "utf8").trim();
  const name = "sqs_js_" + randomBytes(6).toString("hex");
  execFileSync("psql", [admin, "-q", "-c", `CREATE DATABASE ${name}`]);
  return admin.slice(0, admin.lastIndexOf("/") + 1) + name;
}

before(async () => {
  uri = freshDatabase();
  execFileSync(cli, ["--db", uri, "migrate"]);
  const creds = join(dir, "credentials");
  writeFileSync(creds, "AKIDJSTEST js/Secret+Key 210987654321\n");
  server = spawn(cli, ["--db", uri, "serve", "--listen", "127.0.0.1:0", "--credentials", creds],
                 { stdio: ["ignore", "ignore", "pipe"] });
  endpoint = await new Promise((resolve, reject) => {
    let seen = "";
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      const m = seen.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`spool serve exited ${code}: ${seen}`)));
  });
  sqs = new SQSClient({ endpoint, region: "eu-central-1", maxAttempts: 1,
                        credentials: { accessKeyId: "AKIDJSTEST", secretAccessKey: "js/Secret+Key" } });
});

after(async () => {
  sqs?.destroy();
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on("exit", resolve));
    server.kill("SIGTERM");
    assert.equal(await exited, 0);
  }
  rmSync(dir, { recursive: true, force: true });
});

const md5 = (s) => createHash("md5").update(s).digest("hex");
async function errorOf(promise) {
  try {
    await promise;
  } catch (e) {
    return e.name;
  }
  throw new Error("the call succeeded");
}

test("a queue is created under the signing key's account and found by name", async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "js-orders", Attributes: { VisibilityTimeout: "9" } }));
  assert.equal(QueueUrl, `${endpoint}/210987654321/js-orders`);
  assert.equal((await sqs.send(new GetQueueUrlCommand({ QueueName: "js-orders" }))).QueueUrl, QueueUrl);
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["All"] }));
  assert.equal(Attributes.VisibilityTimeout, "9");
  assert.equal(Attributes.QueueArn, "arn:aws:sqs:us-east-1:210987654321:js-orders");
  const { QueueUrls } = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: "js-" }));
  assert.deepEqual(QueueUrls, [QueueUrl]);
});

test("a message round-trips with its attributes and the SDK's checksums hold", async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "js-body" }));
  const body = "{\"order\":42}\r\nünïcödé \u{1F680}";
  const attrs = { s: { DataType: "String", StringValue: "v" }, b: { DataType: "Binary", BinaryValue: new Uint8Array([0, 255, 7]) },
                  n: { DataType: "Number", StringValue: "3.14" } };
  const sent = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: body, MessageAttributes: attrs }));
  assert.equal(sent.MD5OfMessageBody, md5(body));
  const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ["All"],
                                                                  MessageSystemAttributeNames: ["All"] }));
  assert.equal(Messages.length, 1);
  const m = Messages[0];
  assert.equal(m.Body, body);
  assert.equal(m.MessageId, sent.MessageId);
  assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
  assert.deepEqual([...m.MessageAttributes.b.BinaryValue], [0, 255, 7]);
  assert.equal(m.MessageAttributes.n.StringValue, "3.14");
  assert.equal(m.Attributes.ApproximateReceiveCount, "1");
  await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m.ReceiptHandle }));
  const empty = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
  assert.equal((empty.Messages ?? []).length, 0);
});

test("batches report each entry, and whole-batch errors carry the AWS error names", async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "js-batch" }));
  const r = await sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: [
    { Id: "a", MessageBody: "1" }, { Id: "b", MessageBody: "\u0000" }, { Id: "c", MessageBody: "3" }] }));
  assert.deepEqual(r.Successful.map((e) => e.Id).sort(), ["a", "c"]);
  assert.deepEqual(r.Failed.map((e) => [e.Id, e.Code]), [["b", "InvalidMessageContents"]]);
  assert.equal(await errorOf(sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: [] }))), "EmptyBatchRequest");
  assert.equal(await errorOf(sqs.send(new SendMessageBatchCommand({ QueueUrl,
    Entries: Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: "m" })) }))), "TooManyEntriesInBatchRequest");
  assert.equal(await errorOf(sqs.send(new SendMessageBatchCommand({ QueueUrl,
    Entries: [{ Id: "x", MessageBody: "m" }, { Id: "x", MessageBody: "m" }] }))), "BatchEntryIdsNotDistinct");
  const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }));
  const d = await sqs.send(new DeleteMessageBatchCommand({ QueueUrl, Entries: [
    ...Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })), { Id: "junk", ReceiptHandle: "junk" }] }));
  assert.equal(d.Successful.length, Messages.length);
  assert.deepEqual(d.Failed.map((e) => [e.Id, e.Code]), [["junk", "ReceiptHandleIsInvalid"]]);
});

test("errors have the AWS names the SDK maps to its exception classes", async () => {
  assert.equal(await errorOf(sqs.send(new GetQueueUrlCommand({ QueueName: "js-none" }))), "QueueDoesNotExist");
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "js-errors" }));
  assert.equal(await errorOf(sqs.send(new CreateQueueCommand({ QueueName: "js-errors", Attributes: { DelaySeconds: "5" } }))),
               "QueueNameExists");
  assert.equal(await errorOf(sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: "junk", VisibilityTimeout: 5 }))),
               "ReceiptHandleIsInvalid");
  assert.equal(await errorOf(sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["Nope"] }))),
               "InvalidAttributeName");
  await sqs.send(new PurgeQueueCommand({ QueueUrl }));
  assert.equal(await errorOf(sqs.send(new PurgeQueueCommand({ QueueUrl }))), "PurgeQueueInProgress");
  await sqs.send(new TagQueueCommand({ QueueUrl, Tags: { team: "js" } }));
  assert.deepEqual((await sqs.send(new ListQueueTagsCommand({ QueueUrl }))).Tags, { team: "js" });
  await sqs.send(new DeleteQueueCommand({ QueueUrl }));
  assert.equal(await errorOf(sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "m" }))), "QueueDoesNotExist");
});

test("a request signed with a wrong secret is refused", async () => {
  const wrong = new SQSClient({ endpoint, region: "eu-central-1", maxAttempts: 1,
                                credentials: { accessKeyId: "AKIDJSTEST", secretAccessKey: "wrong" } });
  try {
    assert.equal(await errorOf(wrong.send(new ListQueuesCommand({}))), "SignatureDoesNotMatch");
  } finally {
    wrong.destroy();
  }
});

test("a JavaScript producer is read by spool mq poll", async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "js-to-cli" }));
  const sent = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "for the CLI" }));
  const out = JSON.parse(execFileSync(cli, ["--db", uri, "--json", "mq", "poll", "--queue", "js-to-cli"], { encoding: "utf8" }));
  assert.equal(out.messages.length, 1);
  assert.equal(out.messages[0].id, sent.MessageId);
  assert.equal(out.messages[0].message.body, "for the CLI");
});
