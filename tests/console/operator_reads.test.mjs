// The console's operator reads in a real browser, on the engine of
// SPOOL_CONSOLE_ENGINE: envelopes narrowed by ordering key, id prefix and age;
// one envelope with its payload and metadata (secrets hidden) and its replay
// history; a dead-letter queue redriven to its sources; before and after a replay and after the row is pruned; ops narrowed
// by type from the overview; on PostgreSQL, the transaction horizon an open
// transaction holds, named on the overview; and the keyboard alone driving a
// page, a row's link, an action and its confirmation.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { engine, freshDatabase, spoolJson, startServer, launchBrowser, screenshot, tableRows, cleanup, openView, settled } from "./support.mjs";

const token = "operator-reads-token";

// Envelopes written as another service's writer would: chosen ids, keys,
// metadata and creation times (seconds ago). inv-1 is dead.
function insertEnvelopes(db) {
  const rows = [
    ["inv-1", "cust-1", 7200, '{"invoice":1,"authToken":"pay-secret"}', '{"trace":"t-1","authToken":"meta-secret"}', true],
    ["inv-2", "cust-2", 0, '{"invoice":2}', "{}", false],
    ["ref-1", "cust-1", 0, '{"refund":1}', "{}", false],
  ];
  const q = (s) => `'${s.replaceAll("'", "''")}'`;
  for (const [id, key, age, payload, metadata, dead] of rows) {
    if (engine === "sqlite") {
      const at = `(CAST(unixepoch() AS INTEGER) - ${age}) * 1000000`;
      db.sql(`INSERT INTO outbox_messages (id, topic, payload, payload_version, metadata, ordering_key, state, failure_count,
                available_at, created_at, updated_at, dead_lettered_at, last_error_code, last_error)
              VALUES (${q(id)}, 'billing', CAST(${q(payload)} AS BLOB), 1, ${q(metadata)}, ${q(key)},
                ${dead ? "'dead', 1" : "'pending', 0"}, ${at}, ${at}, ${at},
                ${dead ? `${at}, 'sink.refused', 'the sink said no'` : "NULL, NULL, NULL"})`);
    } else {
      const at = `clock_timestamp() - interval '${age} seconds'`;
      db.sql(`INSERT INTO outbox_messages (id, topic, payload, payload_version, metadata, ordering_key, state, failure_count,
                available_at, created_at, updated_at, dead_lettered_at, last_error_code, last_error)
              VALUES (${q(id)}, 'billing', convert_to(${q(payload)}, 'UTF8'), 1, ${q(metadata)}::jsonb, ${q(key)},
                ${dead ? "'dead', 1" : "'pending', 0"}, ${at}, ${at}, ${at},
                ${dead ? `${at}, 'sink.refused', 'the sink said no'` : "NULL, NULL, NULL"})`);
    }
  }
}

// Two SQS queues share the dead-letter queue billing-dlq, which holds what
// the SQS API moved there (the source recorded in the payload) and a message
// with no record of its source (d-3: with two sources, it has nowhere to go).
function insertDeadLetters(db) {
  const policy = JSON.stringify({ RedrivePolicy: JSON.stringify({
    deadLetterTargetArn: "arn:aws:sqs:eu-west-1:000000000000:billing-dlq", maxReceiveCount: "3" }) });
  db.sql(`INSERT INTO spool_mq_queues (name, account, attributes, tags, created_at, modified_at)
          VALUES ('billing', '000000000000', '${policy}', '{}', 1, 1), ('refunds', '000000000000', '${policy}', '{}', 1, 1),
                 ('billing-dlq', '000000000000', '{}', '{}', 1, 1)`);
  db.sql(`INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
          VALUES ('d-1', 'billing-dlq', NULL, NULL, 0, '{"n":1,"sqsSourceQueue":"billing"}', 1700000000, 4),
                 ('d-2', 'billing-dlq', NULL, NULL, 0, '{"n":2,"sqsSourceQueue":"refunds"}', 1700000001, 4),
                 ('d-3', 'billing-dlq', NULL, NULL, 0, '{"n":3}', 1700000002, 4),
                 ('e-1', 'billing-dlq', NULL, NULL, 0, '{"n":4,"sqsSourceQueue":"billing"}', 1700000003, 4)`);
  db.sql(`INSERT INTO queue_messages_failed (id, queue_name, message_group_id, payload, error_message, receive_count, created_at, failed_at)
          VALUES ('qa-1', 'billing', 'g1', '{}', 'undecodable payload', 1, 1700000000, 1700000100),
                 ('qa-2', 'billing', NULL, '{}', 'handler gave up', 5, 1700000000, 1700000100),
                 ('qa-3', 'billing', 'g1', '{}', 'handler gave up: timeout', 5, 1700000000, 1700000100)`);
}

describe(`the console's operator reads on ${engine}`, () => {
  let db;
  let server;
  let browser;
  let page;

  before(async () => {
    db = freshDatabase();
    insertEnvelopes(db);
    insertDeadLetters(db);
    for (const type of ["thumbnail", "thumbnail", "thumbnail", "email", "email"]) {
      spoolJson(db.uri, ["ops", "enqueue", "--type", type, "--payload", "{}"]);
    }
    server = await startServer(db.uri, ["--console-token", token]);
    browser = await launchBrowser();
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(server.url + "/console/");
    await page.waitForSelector("#login");
    await page.type("#login-user", "bob");
    await page.type("#login-token", token);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("#mq-overview, #ops-overview");
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
    if (db) cleanup(db);
  });

  const listedIds = async () => (await tableRows(page, "#envelopes")).map((r) => r[1]).sort();

  // Submits the outbox filter form with the given inputs (others cleared).
  async function filterOutbox({ key = "", prefix = "", age = "", unit = "3600" }) {
    await openView(page, server.url + "/console/#/outbox");
    await page.waitForSelector("#filters");
    await page.$$eval("#f-key, #f-prefix, #f-age", (els) => els.forEach((el) => { el.value = ""; }));
    if (key) await page.type("#f-key", key);
    if (prefix) await page.type("#f-prefix", prefix);
    if (age) await page.type("#f-age", age);
    await page.select("#f-age-unit", unit);
    const before = page.url();
    await page.click("#filters button[type=submit]");
    await page.waitForFunction((u) => location.href !== u, {}, before);
    await settled(page);
  }

  test("envelopes are narrowed by ordering key, by id prefix and by age", async () => {
    await filterOutbox({ key: "cust-1" });
    assert.deepEqual(await listedIds(), ["inv-1", "ref-1"]);
    await filterOutbox({ prefix: "inv" });
    assert.deepEqual(await listedIds(), ["inv-1", "inv-2"]);
    await filterOutbox({ age: "1" });
    assert.deepEqual(await listedIds(), ["inv-1"]);
    assert.match(page.url(), /older_than=3600/);
    await filterOutbox({ prefix: "inv%" });
    assert.ok(await page.$("#envelopes-empty"), "a % in a prefix is a byte, never a wildcard");
  });

  test("an envelope shows its payload and metadata with secrets hidden, and its replay history after a replay", async () => {
    await filterOutbox({ prefix: "inv-1" });
    await page.click('#envelopes a[href*="inv-1"]');
    await settled(page, "#/outbox/envelope?id=inv-1");
    const payload = await page.$eval("#payload", (el) => el.textContent);
    assert.match(payload, /"invoice": 1/);
    assert.doesNotMatch(payload, /pay-secret/);
    const metadata = Object.fromEntries(await tableRows(page, "#metadata"));
    assert.equal(metadata.trace, "t-1");
    assert.ok(metadata.authToken && metadata.authToken !== "meta-secret", `authToken shown as ${metadata.authToken}`);
    assert.match(await page.$eval("main", (el) => el.textContent), /the sink said no/);
    assert.ok(await page.$("#replays-empty"));

    await page.click("#replay-one");
    await page.waitForSelector("#confirm[open]");
    await page.type("#confirm-reason", "the sink accepts it now");
    await page.click("#confirm-ok");
    await page.waitForSelector("#replays");
    const replays = await tableRows(page, "#replays");
    assert.equal(replays.length, 1);
    assert.deepEqual(replays[0].slice(1, 4), ["console:bob", "the sink accepts it now", "dead"]);
    assert.equal(db.one("SELECT state FROM outbox_messages WHERE id = 'inv-1'"), "pending");
    assert.equal(await page.$("#replay-one"), null, "a pending envelope offers no replay");
    assert.doesNotMatch(await page.$eval("main", (el) => el.innerText), /^null$/m, "a part that does not apply is left out, not printed");
    await screenshot(page, "outbox-envelope");
  });

  test("a pruned envelope still shows its replay audit, and an unknown one is not found", async () => {
    db.sql("DELETE FROM outbox_messages WHERE id = 'inv-1'");
    await openView(page, server.url + "/console/#/outbox/envelope?id=inv-1");
    await page.waitForSelector("#pruned");
    assert.equal((await tableRows(page, "#replays")).length, 1);
    assert.equal(await page.$("#payload"), null);
    await openView(page, server.url + "/console/#/outbox/envelope?id=never-written");
    await page.waitForFunction(() => document.querySelector("main [role=alert]")?.textContent.length > 0);
    assert.match(await page.$eval("main [role=alert]", (el) => el.textContent), /no envelope/i);
  });

  test("a dead-letter queue's messages go back to their sources: the selected ones, then all that match a filter", async () => {
    const where = () => Object.fromEntries(db.rows("SELECT id, queue_name FROM queue_messages WHERE id IN ('d-1', 'd-2', 'd-3', 'e-1')"));
    await openView(page, server.url + "/console/#/mq?queue=billing");
    assert.equal(await page.$("#dead-letters"), null, "a queue that is no dead-letter queue offers no such redrive");
    await openView(page, server.url + "/console/#/mq?queue=billing-dlq");
    assert.match(await page.$eval("#dead-letters", (el) => el.textContent), /dead-letter queue of billing, refunds/);
    await page.click('input[aria-label="select d-1"]');
    await page.click("#dlq-redrive-selected");
    await page.waitForSelector("#confirm[open]");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.startsWith("1 redriven"));
    assert.deepEqual(where(), { "d-1": "billing", "d-2": "billing-dlq", "d-3": "billing-dlq", "e-1": "billing-dlq" });

    await openView(page, server.url + "/console/#/mq?queue=billing-dlq&id_prefix=d-");
    await page.click("#dlq-redrive-matching");
    await page.waitForSelector("#confirm[open]");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("redriven"));
    assert.equal(await page.$eval("#status", (el) => el.textContent), "1 redriven, 1 with no source queue to return to.");
    assert.deepEqual(where(), { "d-1": "billing", "d-2": "refunds", "d-3": "billing-dlq", "e-1": "billing-dlq" },
                     "d-3 records no source and has two: it stays; e-1 is outside the filter");

    const answers = await page.evaluate(async () => {
      const session = await (await fetch("/console/api/session")).json();
      const call = async (body) => {
        const res = await fetch("/console/api/mq/redrive_dead_letters", { method: "POST", body: JSON.stringify(body),
          headers: { "Content-Type": "application/json", "X-Spool-CSRF": session.csrf } });
        return [res.status, (await res.json()).error];
      };
      return [await call({ queue: "billing", all: true }), await call({ queue: "billing-dlq" }),
              await call({ queue: "billing-dlq", all: "yes" }), await call({ queue: "billing-dlq", ids: ["e-1"], all: true }),
              await call({ queue: "billing-dlq", all: true, min_age: -1 })];
    });
    assert.deepEqual(answers, [[409, "not_a_dead_letter_queue"], [400, "missing_member"], [400, "invalid_member"],
                               [400, "missing_member"], [400, "invalid_member"]]);
    assert.deepEqual(where(), { "d-1": "billing", "d-2": "refunds", "d-3": "billing-dlq", "e-1": "billing-dlq" });
    await screenshot(page, "dead-letter-redrive");
  });

  test("the quarantine is narrowed by a part of the reason, and redriving all that match moves those only", async () => {
    await openView(page, server.url + "/console/#/mq/quarantine?queue=billing");
    await page.type("#fq-reason", "gave up");
    await page.click("#quarantine-filters button[type=submit]");
    await settled(page, "#/mq/quarantine?queue=billing&reason=gave+up");
    assert.deepEqual((await tableRows(page, "#quarantined")).map((r) => r[1]), ["qa-2", "qa-3"]);
    assert.equal(await page.$eval("#redrive-all", (el) => el.textContent), "Redrive all that match");
    await page.click("#redrive-all");
    await page.waitForSelector("#confirm[open]");
    await page.type("#confirm-reason", "the handler is fixed");
    await page.click("#confirm-ok");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.startsWith("2 redriven"));
    assert.deepEqual(db.rows("SELECT id FROM queue_messages_failed WHERE queue_name = 'billing' ORDER BY id"), [["qa-1"]]);
    assert.deepEqual(db.rows("SELECT id FROM queue_messages WHERE queue_name = 'billing' AND id LIKE 'qa-%' ORDER BY id"),
                     [["qa-2"], ["qa-3"]]);
    assert.deepEqual(db.rows("SELECT DISTINCT actor, reason FROM spool_mq_redrive_log WHERE id IN ('qa-2', 'qa-3')"),
                     [["console:bob", "the handler is fixed"]]);
    assert.ok(await page.$("#quarantine-empty"));
  });

  test("an op type on the overview opens the ops of that type only", async () => {
    await openView(page, server.url + "/console/#/");
    await page.waitForSelector('a[href="#/ops?type=email"]');
    await page.click('a[href="#/ops?type=email"]');
    await settled(page, "#/ops?type=email");
    const rows = await tableRows(page, "#ops");
    assert.equal(rows.length, 2);
    assert.ok(rows.every((r) => r[1] === "email"), JSON.stringify(rows));
    assert.equal(await page.$eval("#f-type", (el) => el.value), "email");
    await page.$eval("#f-type", (el) => { el.value = ""; });
    await page.type("#f-type", "thumbnail");
    await page.click("#filters button[type=submit]");
    await page.waitForFunction(() => [...document.querySelectorAll("#ops tbody tr")].length === 3);
  });

  if (engine === "postgres") {
    test("the overview names the open transaction that holds ordered envelopes back", async () => {
      // A session that takes an xid and stays open: rows committed after it
      // are not claimable in order until it ends.
      const holder = spawn("psql", [db.uri, "-qAtX"], { stdio: ["pipe", "pipe", "inherit"] });
      const exited = new Promise((resolve) => holder.on("exit", resolve));
      try {
        const firstLine = new Promise((resolve) => holder.stdout.once("data", (d) => resolve(d.toString().trim())));
        holder.stdin.write("BEGIN;\nSELECT pg_backend_pid(), pg_current_xact_id();\n");
        const [pid, xid] = (await firstLine).split("|");
        assert.match(pid, /^\d+$/);
        assert.match(xid, /^\d+$/);
        for (let i = 0; i < 3; i++) spoolJson(db.uri, ["outbox", "write", "--topic", "billing", "--key", "held"], "{}");
        await openView(page, server.url + "/console/#/");
        await page.waitForFunction(() => Number(document.querySelector("#horizon-held .big")?.textContent) >= 3
          || document.querySelector("#horizon-held .big")?.textContent.startsWith(">"), { timeout: 20000 });
        assert.match(await page.$eval("#horizon-holder .big", (el) => el.textContent), /pid \d+/);
        await screenshot(page, "overview-horizon");
        holder.stdin.write("COMMIT;\n\\q\n");
        await exited;
        // Our session is gone: it is no longer named (another test's may be).
        await page.waitForFunction((p) => !document.querySelector("#horizon-holder .big").textContent.includes(`pid ${p})`),
          { timeout: 20000 }, pid);
      } finally {
        if (holder.exitCode === null) holder.kill("SIGKILL");
      }
    });
  } else {
    test("the overview shows no horizon on SQLite, whose writers never overtake each other", async () => {
      await openView(page, server.url + "/console/#/");
      await page.waitForSelector("#ops-overview");
      assert.equal(await page.$("#horizon-held"), null);
      const overview = await page.evaluate(async () => (await fetch("/console/api/overview")).json());
      assert.equal(overview.outbox.horizon?.applies ?? false, false);
    });
  }

  // Presses Tab until the focused element matches the selector.
  async function tabTo(selector, limit = 80) {
    for (let i = 0; i < limit; i++) {
      await page.keyboard.press("Tab");
      if (await page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector)) return;
    }
    throw new Error(`Tab never reached ${selector}`);
  }

  test("the keyboard alone reaches a page, a row, an action and its confirmation, and Escape changes nothing", async () => {
    await openView(page, server.url + "/console/#/");
    await tabTo('#nav a[href="#/ops"]');
    await page.keyboard.press("Enter");
    await settled(page, "#/ops");
    await tabTo("#ops tbody a");
    const href = await page.evaluate(() => document.activeElement.getAttribute("href"));
    const id = decodeURIComponent(href.split("id=")[1]);
    await page.keyboard.press("Enter");
    await settled(page, href);
    await tabTo("#cancel");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#confirm[open]");
    assert.ok(await page.evaluate(() => document.getElementById("confirm").contains(document.activeElement)),
              "the confirmation takes the focus");
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => !document.getElementById("confirm").open);
    assert.equal(spoolJson(db.uri, ["ops", "get", id]).status, "pending", "Escape cancels the action");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "cancel", "the focus returns to the action");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#confirm[open]");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent.includes("Cancelled"));
    assert.equal(spoolJson(db.uri, ["ops", "get", id]).status, "cancelled");
  });
});
