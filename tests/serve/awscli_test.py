#!/usr/bin/python3
"""spool serve as Debian's `aws` CLI (/usr/bin/aws, the query protocol) sees it.

Starts the real `spool serve` with a credentials file on the engine of
SPOOL_SQS_ENGINE (sqlite, or postgres on the CTest fixture's server), and
runs `aws --endpoint-url URL sqs …` in a subprocess with the keys in its
environment and a temporary HOME, so no configuration of the machine is
read: the queue and message actions with their outputs, the checksums
against an independent MD5, and the CLI's error path (a missing queue, a
wrong secret). Needs SPOOL_CLI.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from sqs_support import Server, fresh_database, md5_of_attributes  # noqa: E402

AWS = "/usr/bin/aws"
KEY, SECRET, ACCOUNT = "AKIDSPOOLCLI", "cli/Secret+key", "210987654321"


class AwsCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="spool-awscli-")
        d = cls.dir.name
        creds = os.path.join(d, "keys")
        with open(creds, "w") as f:
            f.write(f"{KEY} {SECRET} {ACCOUNT}\n")
        home = os.path.join(d, "home")
        os.mkdir(home)
        # Only what the CLI needs; no AWS_* of the machine's environment.
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        cls.env.update(HOME=home, AWS_CONFIG_FILE=os.path.join(home, "config"),
                       AWS_SHARED_CREDENTIALS_FILE=os.path.join(home, "credentials"),
                       AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="eu-west-1",
                       AWS_PAGER="", AWS_EC2_METADATA_DISABLED="true", AWS_MAX_ATTEMPTS="1")
        cls.server = Server(fresh_database(d), "--credentials", creds)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.dir.cleanup()
        assert code == 0, f"spool serve exited {code} on SIGTERM"

    def run_aws(self, *args, env=None):
        return subprocess.run([AWS, "--endpoint-url", self.server.url, "--output", "json", "sqs", *args],
                              capture_output=True, text=True, timeout=120, env=env or self.env)

    def aws(self, *args):
        """The command's JSON output ({} when it prints nothing); fails the test on a non-zero exit."""
        p = self.run_aws(*args)
        self.assertEqual(p.returncode, 0, f"aws sqs {' '.join(args)}: {p.stderr}")
        return json.loads(p.stdout) if p.stdout.strip() else {}

    def receive_all(self, url, count):
        """Receives until count messages came (bounded), with every attribute."""
        got = []
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            out = self.aws("receive-message", "--queue-url", url, "--max-number-of-messages", "10",
                           "--attribute-names", "All", "--message-attribute-names", "All",
                           "--wait-time-seconds", "2")
            got += out.get("Messages", [])
        self.assertEqual(len(got), count, got)
        return got

    def test_queue_and_message_actions(self):
        url = self.aws("create-queue", "--queue-name", "cli-orders",
                       "--attributes", "VisibilityTimeout=30")["QueueUrl"]
        self.assertTrue(url.startswith(self.server.url + f"/{ACCOUNT}/"), url)
        self.assertEqual(url.rsplit("/", 1)[1], "cli-orders")
        self.assertIn(url, self.aws("list-queues")["QueueUrls"])
        self.assertEqual(self.aws("get-queue-url", "--queue-name", "cli-orders")["QueueUrl"], url)

        attributes = {"color": {"DataType": "String", "StringValue": "red"},
                      "count": {"DataType": "Number", "StringValue": "42"}}
        sent = self.aws("send-message", "--queue-url", url, "--message-body", '{"order": 1}',
                        "--message-attributes", json.dumps(attributes))
        self.assertEqual(sent["MD5OfMessageBody"], hashlib.md5(b'{"order": 1}').hexdigest())
        self.assertEqual(sent["MD5OfMessageAttributes"], md5_of_attributes(attributes))
        batch = self.aws("send-message-batch", "--queue-url", url, "--entries", json.dumps(
            [{"Id": "a", "MessageBody": "two"}, {"Id": "b", "MessageBody": "three", "DelaySeconds": 0}]))
        self.assertEqual(sorted(e["Id"] for e in batch["Successful"]), ["a", "b"])
        self.assertEqual(batch.get("Failed", []), [])
        for e in batch["Successful"]:
            self.assertEqual(e["MD5OfMessageBody"], hashlib.md5({"a": b"two", "b": b"three"}[e["Id"]]).hexdigest())

        got = {m["Body"]: m for m in self.receive_all(url, 3)}
        self.assertEqual(set(got), {'{"order": 1}', "two", "three"})
        first = got['{"order": 1}']
        self.assertEqual(first["MessageId"], sent["MessageId"])
        self.assertEqual(first["MD5OfBody"], sent["MD5OfMessageBody"])
        self.assertEqual(first["MessageAttributes"], attributes)
        self.assertEqual(first["MD5OfMessageAttributes"], md5_of_attributes(attributes))
        self.assertEqual(first["Attributes"]["ApproximateReceiveCount"], "1")
        self.assertIn("SentTimestamp", first["Attributes"])
        self.assertNotIn("MessageAttributes", got["two"])

        counts = self.aws("get-queue-attributes", "--queue-url", url, "--attribute-names", "All")["Attributes"]
        self.assertEqual(counts["VisibilityTimeout"], "30")
        self.assertEqual(counts["ApproximateNumberOfMessagesNotVisible"], "3")
        self.assertEqual(counts["QueueArn"], f"arn:aws:sqs:us-east-1:{ACCOUNT}:cli-orders")

        # Visibility 0 releases "two" at once; it comes back, received a second time.
        self.aws("change-message-visibility", "--queue-url", url, "--receipt-handle",
                 got["two"]["ReceiptHandle"], "--visibility-timeout", "0")
        again = self.receive_all(url, 1)[0]
        self.assertEqual(again["Body"], "two")
        self.assertEqual(again["Attributes"]["ApproximateReceiveCount"], "2")
        for m in (first, got["three"], again):
            self.aws("delete-message", "--queue-url", url, "--receipt-handle", m["ReceiptHandle"])
        counts = self.aws("get-queue-attributes", "--queue-url", url, "--attribute-names", "All")["Attributes"]
        self.assertEqual((counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]),
                         ("0", "0"))

        self.aws("tag-queue", "--queue-url", url, "--tags", "team=spool,env=test")
        self.assertEqual(self.aws("list-queue-tags", "--queue-url", url)["Tags"], {"team": "spool", "env": "test"})

        self.aws("send-message", "--queue-url", url, "--message-body", "purged")
        self.aws("purge-queue", "--queue-url", url)
        counts = self.aws("get-queue-attributes", "--queue-url", url, "--attribute-names",
                          "ApproximateNumberOfMessages")["Attributes"]
        self.assertEqual(counts["ApproximateNumberOfMessages"], "0")

        self.aws("delete-queue", "--queue-url", url)
        self.assertNotIn(url, self.aws("list-queues").get("QueueUrls", []))

    def test_a_missing_queue_is_an_error_of_the_cli(self):
        p = self.run_aws("get-queue-url", "--queue-name", "cli-no-such-queue")
        self.assertIn(p.returncode, (254, 255), p.stderr)
        self.assertRegex(p.stderr, r"QueueDoesNotExist|NonExistentQueue")
        self.assertEqual(p.stdout.strip(), "")

    def test_a_wrong_secret_is_refused(self):
        p = self.run_aws("list-queues", env=dict(self.env, AWS_SECRET_ACCESS_KEY="not-the-secret"))
        self.assertIn(p.returncode, (254, 255), p.stderr)
        self.assertIn("SignatureDoesNotMatch", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
