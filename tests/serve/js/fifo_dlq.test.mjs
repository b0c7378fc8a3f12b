// FIFO queues and dead-letter redrive (move tasks) of spool serve, as the AWS
// SDK for JavaScript v3 uses them (AWS JSON 1.0, signed). Run: node --test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  CreateQueueCommand, SendMessageCommand, SendMessageBatchCommand, ReceiveMessageCommand, DeleteMessageCommand,
  GetQueueAttributesCommand, StartMessageMoveTaskCommand, ListMessageMoveTasksCommand,
  CancelMessageMoveTaskCommand, ChangeMessageVisibilityCommand,
} from "@aws-sdk/client-sqs";
import { startServer, errorOf, sleep } from "./support.mjs";

let s;
before(async () => { s = await startServer(); });
after(async () => { await s?.stop(); });

const arnOf = async (QueueUrl) =>
  (await s.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;

async function drain(QueueUrl) {
  const bodies = [];
  for (;;) {
    const { Messages = [] } = await s.sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
    if (Messages.length === 0) return bodies;
    for (const m of Messages) {
      bodies.push(m.Body);
      await s.sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m.ReceiptHandle }));
    }
  }
}

test("a FIFO batch keeps each group's order and returns increasing sequence numbers", async () => {
  const { QueueUrl } = await s.sqs.send(new CreateQueueCommand({
    QueueName: "js-orders.fifo", Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" } }));
  const Entries = Array.from({ length: 10 }, (_, i) => ({ Id: `e${i}`, MessageBody: `m${i}`, MessageGroupId: `g${i % 2}` }));
  const { Successful, Failed = [] } = await s.sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries }));
  assert.deepEqual(Failed, []);
  const seq = Successful.map((e) => BigInt(e.SequenceNumber));
  assert.deepEqual([...seq].sort((a, b) => (a < b ? -1 : 1)), seq);
  const got = await drain(QueueUrl);
  assert.deepEqual(got.filter((b) => Number(b.slice(1)) % 2 === 0), ["m0", "m2", "m4", "m6", "m8"]);
  assert.deepEqual(got.filter((b) => Number(b.slice(1)) % 2 === 1), ["m1", "m3", "m5", "m7", "m9"]);
  assert.equal(await errorOf(s.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "x" }))), "MissingParameter");
});

test("a move task redrives a dead-letter queue back to the source queue", async () => {
  const dlq = (await s.sqs.send(new CreateQueueCommand({ QueueName: "js-dlq" }))).QueueUrl;
  const dlqArn = await arnOf(dlq);
  const src = (await s.sqs.send(new CreateQueueCommand({
    QueueName: "js-src", Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 }) } }))).QueueUrl;
  for (let i = 0; i < 3; i++) await s.sqs.send(new SendMessageCommand({ QueueUrl: src, MessageBody: `poison-${i}` }));
  // Each is received once and released; the next receive moves it to the dead-letter queue.
  for (let i = 0; i < 3; i++) {
    const { Messages = [] } = await s.sqs.send(new ReceiveMessageCommand({ QueueUrl: src, MaxNumberOfMessages: 10 }));
    for (const m of Messages) {
      await s.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: src, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
    }
  }
  assert.deepEqual((await s.sqs.send(new ReceiveMessageCommand({ QueueUrl: src }))).Messages ?? [], []);
  const counts = await s.sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ["ApproximateNumberOfMessages"] }));
  assert.equal(counts.Attributes.ApproximateNumberOfMessages, "3");

  const srcArn = await arnOf(src);
  assert.equal(await errorOf(s.sqs.send(new StartMessageMoveTaskCommand({ SourceArn: srcArn }))), "InvalidParameterValue");
  const { TaskHandle } = await s.sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn }));
  assert.ok(TaskHandle);
  let task;
  for (let i = 0; i < 200; i++) {
    [task] = (await s.sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }))).Results;
    if (task.Status !== "RUNNING") break;
    await sleep(50);
  }
  assert.equal(task.Status, "COMPLETED");
  assert.equal(task.ApproximateNumberOfMessagesMoved, 3);
  assert.equal(task.ApproximateNumberOfMessagesToMove, 3);
  assert.deepEqual((await drain(src)).sort(), ["poison-0", "poison-1", "poison-2"]);
  assert.deepEqual(await drain(dlq), []);
  assert.equal(await errorOf(s.sqs.send(new CancelMessageMoveTaskCommand({ TaskHandle }))), "ResourceNotFoundException");
});

test("a slow move task can be cancelled and keeps what it has not moved", async () => {
  const dlq = (await s.sqs.send(new CreateQueueCommand({ QueueName: "js-dlq2" }))).QueueUrl;
  const dlqArn = await arnOf(dlq);
  const dest = (await s.sqs.send(new CreateQueueCommand({
    QueueName: "js-src2", Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 5 }) } }))).QueueUrl;
  const Entries = Array.from({ length: 10 }, (_, i) => ({ Id: `e${i}`, MessageBody: `dead-${i}` }));
  await s.sqs.send(new SendMessageBatchCommand({ QueueUrl: dlq, Entries }));
  await s.sqs.send(new SendMessageBatchCommand({ QueueUrl: dlq, Entries }));
  const { TaskHandle } = await s.sqs.send(new StartMessageMoveTaskCommand({
    SourceArn: dlqArn, DestinationArn: await arnOf(dest), MaxNumberOfMessagesPerSecond: 1 }));
  assert.equal(await errorOf(s.sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn }))), "UnsupportedOperation");
  await sleep(300);
  const { ApproximateNumberOfMessagesMoved: moved } = await s.sqs.send(new CancelMessageMoveTaskCommand({ TaskHandle }));
  let task;
  for (let i = 0; i < 200; i++) {
    [task] = (await s.sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }))).Results;
    if (task.Status === "CANCELLED") break;
    await sleep(50);
  }
  assert.equal(task.Status, "CANCELLED");
  assert.ok(moved < 20, `moved ${moved}`);
  const left = await s.sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq,
    AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }));
  const inDest = await drain(dest);
  assert.equal(inDest.length, task.ApproximateNumberOfMessagesMoved);
  assert.equal(Number(left.Attributes.ApproximateNumberOfMessages) + Number(left.Attributes.ApproximateNumberOfMessagesNotVisible) +
               inDest.length, 20);
});
