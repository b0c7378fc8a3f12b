// spool serve as the AWS SDK for JavaScript v3 uses it: AWS JSON 1.0, every
// request signed (SigV4) with a key of the server's credentials file, on the
// engine of SPOOL_SQS_ENGINE (sqlite or postgres). Run: node --test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  CreateQueueCommand, GetQueueUrlCommand, SendMessageCommand, SendMessageBatchCommand,
  ReceiveMessageCommand, DeleteMessageCommand, DeleteMessageBatchCommand, ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand, ListQueuesCommand, TagQueueCommand, ListQueueTagsCommand, PurgeQueueCommand,
  DeleteQueueCommand,
} from "@aws-sdk/client-sqs";
import { startServer, errorOf, cli, key } from "./support.mjs";

let s, uri, endpoint, sqs;

before(async () => {
  s = await startServer();
  ({ uri, endpoint, sqs } = s);
});

after(async () => { await s?.stop(); });

const md5 = (text) => createHash("md5").update(text).digest("hex");

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
  const wrong = s.client({ accessKeyId: key.accessKeyId, secretAccessKey: "wrong" });
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
