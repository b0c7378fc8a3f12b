// The console in a real browser (Debian's chromium, headless), on the engine
// of SPOOL_CONSOLE_ENGINE: log in, the overview against the database, paging
// through 1,000 messages, a message and a quarantined row, redrive with the
// counts changing live, an op retried, an envelope replayed with its audit
// row, and the refusals (read-only mode, a missing CSRF token, forged input).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  cli, engine, freshDatabase, spoolJson, startServer, runUntil, launchBrowser, screenshot, tableRows, cleanup, openView, settled,
  sleep, writeFileSync, join,
} from "./support.mjs";

const token = "console-test-token";
const messages = 1000;

describe(`the console on ${engine}`, () => {
  let db;
  let server;
  let browser;
  let page;
  let failedOp;
  let deadEnvelope;

  before(async () => {
    db = freshDatabase();
    const lines = [];
    for (let i = 0; i < messages; i++) lines.push(JSON.stringify({ n: i, authToken: `secret-${i}` }));
    const file = join(db.dir, "messages.jsonl");
    writeFileSync(file, lines.join("\n") + "\n");
    spoolJson(db.uri, ["mq", "publish", "--queue", "orders", "--file", file]);
    // Two quarantined rows: a JSON payload and a poison row that is no JSON at all.
    db.sql(`INSERT INTO queue_messages_failed (id, queue_name, message_group_id, payload, error_message, receive_count, created_at, failed_at)
            VALUES ('q-json', 'orders', NULL, '{"id":"q-json","signingSecret":"hide-me","n":7}', 'handler gave up', 5, 1700000000, 1700000100),
                   ('q-poison', 'orders', 'g1', 'not json at all', 'undecodable payload', 1, 1700000000, 1700000200)`);
    // A failed op: one attempt, and a command that fails without retry.
    failedOp = spoolJson(db.uri, ["ops", "enqueue", "--type", "thumbnail", "--max-attempts", "1", "--payload", '{"image":42}']).id;
    await runUntil(["--db", db.uri, "ops", "work", "--type", "thumbnail", "--exec", "echo cannot decode >&2; exit 65"],
                   () => spoolJson(db.uri, ["ops", "get", failedOp]).status === "failed");
    // A dead envelope: one attempt at a sink that always fails.
    deadEnvelope = spoolJson(db.uri, ["outbox", "write", "--topic", "invoice.created"], '{"invoice":1}').id;
    await runUntil(["--db", db.uri, "relay", "--sink", "exec:false", "--max-attempts", "1"],
                   () => spoolJson(db.uri, ["outbox", "backlog"]).dead === 1);
    // An SQS queue with a dead-letter queue holding two messages, as the SQS API records them.
    const policy = JSON.stringify({ deadLetterTargetArn: "arn:aws:sqs:eu-west-1:000000000000:orders-dlq", maxReceiveCount: "3" });
    db.sql(`INSERT INTO spool_mq_queues (name, account, attributes, tags, created_at, modified_at)
            VALUES ('orders', '000000000000', '${JSON.stringify({ RedrivePolicy: policy }).replaceAll("'", "''")}', '{}', 1, 1),
                   ('orders-dlq', '000000000000', '{}', '{}', 1, 1)`);
    spoolJson(db.uri, ["mq", "publish", "--queue", "orders-dlq"], '{"n":"dead 1"}\n{"n":"dead 2"}\n');
    server = await startServer(db.uri, ["--console-token", token, "--console-sample-seconds", "1"]);
    browser = await launchBrowser();
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
    if (db) cleanup(db);
  });

  test("a browser opening the server's address is sent to the login, and a wrong token is refused", async () => {
    await page.goto(server.url + "/");
    assert.equal(new URL(page.url()).pathname, "/console/");
    await page.waitForSelector("#login");
    await screenshot(page, "login");
    await page.type("#login-token", "wrong");
    await page.click("#login button[type=submit]");
    await page.waitForFunction(() => document.querySelector("#login-error").textContent.includes("Wrong token"));
  });

  test("after logging in, the overview's counts equal the database's", async () => {
    await page.$eval("#login-token", (el) => { el.value = ""; });
    await page.type("#login-user", "alice");
    await page.type("#login-token", token);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("#mq-overview");
    const cookies = await page.cookies();
    const session = cookies.find((c) => c.name === "spool_console");
    assert.ok(session.httpOnly);
    assert.equal(session.sameSite, "Strict");
    const [row] = await tableRows(page, "#mq-overview");
    const visible = db.one("SELECT count(*) FROM queue_messages WHERE queue_name = 'orders' AND receipt_handle IS NULL");
    const quarantined = db.one("SELECT count(*) FROM queue_messages_failed WHERE queue_name = 'orders'");
    assert.deepEqual(row.slice(0, 5), ["orders", visible, "0", "0", quarantined]);
    assert.equal(visible, String(messages));
    assert.equal(row[5], "2", "the dead-letter queue's messages are the source queue's dead-lettered count");
    const stats = spoolJson(db.uri, ["ops", "stats"]);
    const failed = await page.$eval('#ops-overview [data-count="failed"] .big', (el) => el.textContent);
    assert.equal(failed, String(stats.failed));
    assert.equal(failed, "1");
    const dead = await page.$eval('#outbox-overview [data-count="dead"] .big', (el) => el.textContent);
    assert.equal(dead, String(spoolJson(db.uri, ["outbox", "backlog"]).dead));
    await screenshot(page, "overview");
  });

  test("the overview charts each queue's and op type's throughput, and the samples count every message sent", async () => {
    const burst = [];
    for (let i = 0; i < 50; i++) burst.push(JSON.stringify({ n: i }));
    spoolJson(db.uri, ["mq", "publish", "--queue", "burst"], burst.join("\n") + "\n");
    await openView(page, server.url + "/console/#/");
    await page.waitForSelector('[data-chart="ops:thumbnail"] polyline');
    const sent = async () => page.evaluate(async () => {
      const t = await (await fetch("/console/api/throughput")).json();
      const q = t.mq.queues.find((x) => x.queue === "burst");
      return q ? Math.round(q.points.reduce((sum, p) => sum + p.enqueued * p.seconds, 0)) : 0;
    });
    for (let i = 0; i < 100 && (await sent()) < 50; i++) await sleep(200);
    assert.equal(await sent(), 50);
    await page.waitForSelector('[data-chart="mq:burst"] polyline', { timeout: 15000 });
    const ops = await page.evaluate(async () => (await (await fetch("/console/api/throughput")).json()).ops.types);
    assert.deepEqual(ops.map((o) => o.type), ["thumbnail"]);
    assert.equal(Math.round(ops[0].points.reduce((sum, p) => sum + p.enqueued * 60, 0)), 1);
    const [types] = await tableRows(page, "#ops-types");
    assert.deepEqual(types.slice(0, 4), ["thumbnail", "0", "0", "1"]);
    await screenshot(page, "charts");
    spoolJson(db.uri, ["mq", "publish", "--queue", "later"], '{"n":"keep"}\n');
    db.sql("DELETE FROM queue_messages WHERE queue_name = 'burst'");
  });

  test("paging through 1,000 messages shows each once, in order, while new ones arrive", async () => {
    await openView(page, server.url + "/console/#/mq?queue=orders&limit=100");
    await page.waitForSelector("#messages");
    const seen = [];
    for (let pageNo = 0; ; pageNo++) {
      const ids = (await tableRows(page, "#messages")).map((r) => r[0]);
      assert.ok(ids.length > 0 && ids.length <= 100);
      seen.push(...ids);
      if (pageNo === 0) {
        await screenshot(page, "messages", false);
        // Rows that arrive while paging land after the cursor (their ids are newer), never twice.
        spoolJson(db.uri, ["mq", "publish", "--queue", "later"], '{"n":"elsewhere"}\n');
      }
      const next = await page.$("#page-next:not([disabled])");
      if (!next) break;
      const first = ids[0];
      await next.click();
      await page.waitForFunction((f) => document.querySelector("#messages tbody tr td")?.textContent !== f, {}, first);
    }
    assert.equal(seen.length, messages);
    assert.equal(new Set(seen).size, messages);
    assert.deepEqual([...seen].sort(), seen);
    // Back one page: the cursors of earlier pages are kept.
    await page.click("#page-prev");
    await page.waitForSelector("#messages");
  });

  test("filters narrow the messages: by state and by id prefix", async () => {
    const [first] = (await db.rows("SELECT id FROM queue_messages WHERE queue_name = 'orders' ORDER BY id LIMIT 1"))[0];
    await openView(page, server.url + `/console/#/mq?queue=orders&id_prefix=${encodeURIComponent(first)}`);
    await page.waitForFunction(() => document.querySelectorAll("#messages tbody tr").length === 1);
    await openView(page, server.url + "/console/#/mq?queue=orders&state=in_flight");
    await page.waitForSelector("#messages-empty");
  });

  test("a message shows its payload pretty-printed, with its authToken hidden", async () => {
    const id = db.one("SELECT id FROM queue_messages WHERE queue_name = 'orders' ORDER BY id LIMIT 1");
    await openView(page, server.url + `/console/#/mq/message?queue=orders&id=${encodeURIComponent(id)}`);
    await page.waitForSelector("#payload");
    const payload = await page.$eval("#payload", (el) => el.textContent);
    assert.match(payload, /"authToken": "\*\*\*"/);
    assert.doesNotMatch(payload, /secret-/);
    assert.match(payload, /\n  "n": /);
    await screenshot(page, "message");
  });

  test("a quarantined row shows its reason, and a poison row its raw text", async () => {
    await openView(page, server.url + "/console/#/mq/quarantined?queue=orders&id=q-poison");
    await page.waitForSelector("#payload");
    assert.equal(await page.$eval("#payload", (el) => el.textContent), "not json at all");
    assert.match(await page.$eval("main", (el) => el.textContent), /undecodable payload/);
    await openView(page, server.url + "/console/#/mq/quarantined?queue=orders&id=q-json");
    await page.waitForFunction(() => document.querySelector("#payload")?.textContent.includes("***"));
    assert.doesNotMatch(await page.$eval("#payload", (el) => el.textContent), /hide-me/);
    await screenshot(page, "quarantined");
  });

  test("redriving one row moves it back, the audit names the user and reason, and another tab's counts change without a reload", async () => {
    const live = await browser.newPage();
    await openView(live, server.url + "/console/#/");
    await live.waitForSelector("#mq-overview");
    await live.evaluate(() => { window.notReloaded = true; });
    const quarantinedCell = () => live.$$eval("#mq-overview tbody tr", (trs) =>
      trs.find((tr) => tr.children[0].textContent === "orders").children[4].textContent);
    assert.equal(await quarantinedCell(), "2");

    // Headless chromium draws only the front tab, and puppeteer's waits ride on its frames.
    await page.bringToFront();
    await openView(page, server.url + "/console/#/mq/quarantine?queue=orders");
    await page.waitForSelector("#quarantined");
    await page.click('input[aria-label="select q-json"]');
    await page.click("#redrive-selected");
    await page.waitForSelector("#confirm[open]");
    await screenshot(page, "redrive-confirm");
    await page.type("#confirm-reason", "fixed the handler");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("1 redriven"));

    await live.bringToFront();
    await live.waitForFunction(() => [...document.querySelectorAll("#mq-overview tbody tr")]
      .find((tr) => tr.children[0].textContent === "orders").children[4].textContent === "1", { timeout: 15000, polling: 100 });
    assert.equal(await live.evaluate(() => window.notReloaded), true);
    await live.close();
    await page.bringToFront();
    assert.equal(db.one("SELECT count(*) FROM queue_messages WHERE queue_name = 'orders' AND id = 'q-json'"), "1");
    assert.deepEqual(db.rows("SELECT actor, reason FROM spool_mq_redrive_log WHERE id = 'q-json'"),
                     [["console:alice", "fixed the handler"]]);
  });

  test("a claimed message can be extended and released through its current claim", async () => {
    spoolJson(db.uri, ["mq", "poll", "--queue", "orders", "--max", "1", "--visibility", "60"]);
    const id = db.one("SELECT id FROM queue_messages WHERE queue_name = 'orders' AND receipt_handle IS NOT NULL");
    assert.ok(id, "a message is claimed");
    const visibleAt = () => Number(db.one(`SELECT visible_at FROM queue_messages WHERE queue_name = 'orders' AND id = '${id}'`));
    const before = visibleAt();
    await openView(page, server.url + `/console/#/mq/message?queue=orders&id=${encodeURIComponent(id)}`);
    await page.waitForSelector("#extend");
    await page.$eval("#extend-seconds", (el) => { el.value = "3600"; });
    await page.click("#extend");
    await page.waitForSelector("#confirm[open]");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("Extended"));
    assert.ok(visibleAt() >= before + 3000, "the claim's window moved an hour on");
    await page.click("#release");
    await page.waitForSelector("#confirm[open]");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("Released"));
    assert.equal(db.one(`SELECT count(*) FROM queue_messages WHERE queue_name = 'orders' AND id = '${id}' AND receipt_handle IS NULL`), "1");
    assert.equal(await page.$("#release"), null, "a visible message offers no release");
  });

  test("purging a queue needs its name typed again, and deletes its messages only", async () => {
    await openView(page, server.url + "/console/#/mq?queue=later");
    await page.waitForSelector("#purge");
    await page.click("#purge");
    await page.waitForSelector("#confirm[open]");
    await page.type("#confirm-reason", "orders");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("repeat the queue"));
    assert.equal(db.one("SELECT count(*) FROM queue_messages WHERE queue_name = 'later'"), "2");
    await page.click("#purge");
    await page.waitForSelector("#confirm[open]");
    await page.type("#confirm-reason", "later");
    await page.click("#confirm-ok");
    await page.waitForSelector("#mq-overview");
    assert.equal(db.one("SELECT count(*) FROM queue_messages WHERE queue_name = 'later'"), "0");
    assert.equal(db.one("SELECT count(*) FROM queue_messages WHERE queue_name = 'orders'"), String(messages + 1));
  });

  test("retrying a failed op makes it pending again with its attempts reset", async () => {
    await openView(page, server.url + "/console/#/ops?status=failed");
    await page.waitForSelector("#ops");
    await screenshot(page, "ops");
    await page.click(`#ops a[href*="${failedOp}"]`);
    await settled(page, `#/ops/op?id=${encodeURIComponent(failedOp)}`);
    assert.match(await page.$eval("main", (el) => el.textContent), /cannot decode/);
    await page.click("#retry");
    await page.waitForSelector("#confirm[open]");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("pending again"));
    const op = spoolJson(db.uri, ["ops", "get", failedOp]);
    assert.equal(op.status, "pending");
    assert.equal(op.attempts, 0);
  });

  test("replaying a dead envelope needs a reason, and leaves an audit row naming the user", async () => {
    await openView(page, server.url + "/console/#/outbox?state=dead");
    await page.waitForSelector("#envelopes");
    await screenshot(page, "outbox");
    await page.click(`input[aria-label="select ${deadEnvelope}"]`);
    await page.click("#replay");
    await page.waitForSelector("#confirm[open]");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#confirm-error").textContent.includes("reason is required"));
    await page.type("#confirm-reason", "the sink is fixed");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("Replayed 1"));
    assert.equal(spoolJson(db.uri, ["outbox", "backlog"]).pending, 1);
    const audit = db.rows("SELECT requested_by, reason FROM outbox_messages_replay_audit");
    assert.deepEqual(audit, [["console:alice", "the sink is fixed"]]);
  });

  test("an action without the CSRF token, or with forged input, is refused and changes nothing", async () => {
    const before = db.one("SELECT count(*) FROM queue_messages_failed");
    const answers = await page.evaluate(async () => {
      const call = async (path, body, headers = {}) => {
        const res = await fetch(`/console/api/${path}`, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body });
        return [res.status, (await res.json()).error];
      };
      const session = await (await fetch("/console/api/session")).json();
      const csrf = { "X-Spool-CSRF": session.csrf };
      return [
        await call("mq/redrive", JSON.stringify({ queue: "orders", all: true })),
        await call("mq/redrive", JSON.stringify({ queue: "orders", all: true }), { "X-Spool-CSRF": "0".repeat(64) }),
        await call("mq/redrive", "{not json", csrf),
        await call("mq/redrive", JSON.stringify({ queue: "orders", ids: "q-poison" }), csrf),
        await call("mq/redrive", JSON.stringify({ queue: "x".repeat(5000), all: true }), csrf),
        await call("ops/retry", JSON.stringify({ id: "no-such-op" }), csrf),
        await call("outbox/replay", JSON.stringify({ ids: ["no-such-envelope"], reason: "r" }), csrf),
        await call("nothing/here", "{}", csrf),
      ];
    });
    assert.deepEqual(answers, [
      [403, "csrf_token_invalid"], [403, "csrf_token_invalid"], [400, "malformed_body"], [400, "invalid_member"],
      [400, "too_long"], [404, "not_found"], [409, answers[6][1]], [404, "unknown_route"],
    ]);
    assert.equal(db.one("SELECT count(*) FROM queue_messages_failed"), before);
    const unauthenticated = await fetch(server.url + "/console/api/overview");
    assert.equal(unauthenticated.status, 401);
  });

  test("read-only mode shows no action and refuses a forged one", async () => {
    const readOnly = await startServer(db.uri, ["--console-read-only"]);
    try {
      const ro = await browser.newPage();
      await openView(ro, readOnly.url + "/console/#/mq/quarantine?queue=orders");
      await ro.waitForSelector("#quarantined");
      assert.equal(await ro.$("#redrive-selected"), null);
      assert.match(await ro.$eval("#who", (el) => el.textContent), /read-only/);
      await screenshot(ro, "read-only");
      const answer = await ro.evaluate(async () => {
        const session = await (await fetch("/console/api/session")).json();
        const res = await fetch("/console/api/mq/redrive", {
          method: "POST", headers: { "Content-Type": "application/json", "X-Spool-CSRF": session.csrf },
          body: JSON.stringify({ queue: "orders", all: true }),
        });
        return [res.status, (await res.json()).error];
      });
      assert.deepEqual(answer, [403, "read_only"]);
      assert.equal(db.one("SELECT count(*) FROM queue_messages_failed"), "1");
      await ro.close();
    } finally {
      await readOnly.stop();
    }
  });
});
