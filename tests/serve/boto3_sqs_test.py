#!/usr/bin/python3
"""spool serve's SQS actions as Debian's boto3 (the query protocol) uses them,
on the engine of SPOOL_SQS_ENGINE. Every scenario names what SQS promises."""
import hashlib
import json
import subprocess
import threading
import time
import unittest
import urllib.request

import sqs_support as s
from sqs_support import code_of


class SqsApi(s.ServedTestCase):
    def queue(self, name, **attributes):
        return self.sqs.create_queue(QueueName=name, Attributes={k: str(v) for k, v in attributes.items()})["QueueUrl"]

    # ---- queues ----
    def test_a_created_queue_has_a_url_under_its_account_and_is_found_by_name(self):
        url = self.queue("q-create", VisibilityTimeout=7)
        self.assertEqual(url, f"{self.server.url}/000000000000/q-create")
        self.assertEqual(self.sqs.get_queue_url(QueueName="q-create")["QueueUrl"], url)
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        self.assertEqual(attrs["VisibilityTimeout"], "7")
        self.assertEqual(attrs["QueueArn"], "arn:aws:sqs:us-east-1:000000000000:q-create")
        self.assertEqual(attrs["MaximumMessageSize"], "262144")

    def test_creating_again_with_the_same_attributes_returns_the_url_and_with_others_is_refused(self):
        url = self.queue("q-again", DelaySeconds=0)
        self.assertEqual(self.queue("q-again", DelaySeconds=0), url)
        self.assertEqual(code_of(self.queue, "q-again", DelaySeconds=5), "QueueAlreadyExists")

    def test_bad_queue_names_and_attributes_get_the_aws_errors(self):
        self.assertEqual(code_of(self.queue, "bad name"), "InvalidParameterValue")
        self.assertEqual(code_of(self.queue, "x" * 81), "InvalidParameterValue")
        self.assertEqual(code_of(self.queue, "q-bad-attr", Nope=1), "InvalidAttributeName")
        self.assertEqual(code_of(self.queue, "q-bad-attr", VisibilityTimeout=43201), "InvalidAttributeValue")
        self.assertEqual(code_of(self.sqs.get_queue_url, QueueName="q-never"), "AWS.SimpleQueueService.NonExistentQueue")
        url = self.queue("q-attr-names")
        self.assertEqual(code_of(self.sqs.get_queue_attributes, QueueUrl=url, AttributeNames=["Nope"]),
                         "InvalidAttributeName")

    def test_list_queues_filters_by_prefix_and_pages_with_a_token(self):
        for i in range(5):
            self.queue(f"page-{i}")
        first = self.sqs.list_queues(QueueNamePrefix="page-", MaxResults=2)
        self.assertEqual(len(first["QueueUrls"]), 2)
        seen = list(first["QueueUrls"])
        token = first.get("NextToken")
        while token:
            page = self.sqs.list_queues(QueueNamePrefix="page-", MaxResults=2, NextToken=token)
            seen += page["QueueUrls"]
            token = page.get("NextToken")
        self.assertEqual([u.rsplit("/", 1)[1] for u in seen], [f"page-{i}" for i in range(5)])

    def test_set_attributes_changes_the_visibility_window_of_later_receives(self):
        url = self.queue("q-set")
        self.sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "1"})
        self.assertEqual(self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
                         ["Attributes"], {"VisibilityTimeout": "1"})
        self.sqs.send_message(QueueUrl=url, MessageBody="m")
        first = self.sqs.receive_message(QueueUrl=url)["Messages"][0]
        again = self.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, AttributeNames=["ApproximateReceiveCount"])
        self.assertEqual(again["Messages"][0]["MessageId"], first["MessageId"])
        self.assertEqual(again["Messages"][0]["Attributes"]["ApproximateReceiveCount"], "2")

    def test_tags_are_added_removed_and_listed(self):
        url = self.sqs.create_queue(QueueName="q-tags", tags={"team": "a"})["QueueUrl"]
        self.sqs.tag_queue(QueueUrl=url, Tags={"env": "test", "team": "b"})
        self.sqs.untag_queue(QueueUrl=url, TagKeys=["env"])
        self.assertEqual(self.sqs.list_queue_tags(QueueUrl=url)["Tags"], {"team": "b"})

    def test_a_deleted_queue_and_its_messages_are_gone(self):
        url = self.queue("q-delete")
        self.sqs.send_message(QueueUrl=url, MessageBody="m")
        self.sqs.delete_queue(QueueUrl=url)
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="m"),
                         "AWS.SimpleQueueService.NonExistentQueue")
        url = self.queue("q-delete")
        self.assertNotIn("Messages", self.sqs.receive_message(QueueUrl=url))

    def test_purge_empties_the_queue_and_a_second_purge_within_60_s_is_refused(self):
        url = self.queue("q-purge")
        self.sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "m"} for i in range(3)])
        self.sqs.purge_queue(QueueUrl=url)
        self.assertNotIn("Messages", self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10))
        self.assertEqual(code_of(self.sqs.purge_queue, QueueUrl=url), "AWS.SimpleQueueService.PurgeQueueInProgress")

    # ---- messages ----
    def test_a_message_keeps_its_body_and_attributes_of_every_type_with_exact_checksums(self):
        url = self.queue("q-body")
        body = "héllo\r\n<world> & \"friends\" \U0001F600"
        attributes = {"s": {"DataType": "String", "StringValue": "v"},
                      "n": {"DataType": "Number.int", "StringValue": "-12.5"},
                      "b": {"DataType": "Binary", "BinaryValue": bytes(range(256))},
                      "c": {"DataType": "String.custom", "StringValue": "x"}}
        sent = self.sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)
        self.assertEqual(sent["MD5OfMessageBody"], hashlib.md5(body.encode()).hexdigest())
        self.assertEqual(sent["MD5OfMessageAttributes"], s.md5_of_attributes(attributes))
        got = self.sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], AttributeNames=["All"])
        m = got["Messages"][0]
        self.assertEqual(m["Body"], body)
        self.assertEqual(m["MessageId"], sent["MessageId"])
        self.assertEqual(m["MD5OfBody"], sent["MD5OfMessageBody"])
        self.assertEqual(m["MessageAttributes"], attributes)
        self.assertEqual(m["MD5OfMessageAttributes"], sent["MD5OfMessageAttributes"])
        self.assertEqual(m["Attributes"]["ApproximateReceiveCount"], "1")
        self.assertLessEqual(abs(int(m["Attributes"]["SentTimestamp"]) / 1000 - time.time()), 120)

    def test_only_the_message_attributes_asked_for_are_returned(self):
        url = self.queue("q-attr-filter")
        self.sqs.send_message(QueueUrl=url, MessageBody="m", MessageAttributes={
            "trace.id": {"DataType": "String", "StringValue": "1"}, "other": {"DataType": "String", "StringValue": "2"}})
        m = self.sqs.receive_message(QueueUrl=url, MessageAttributeNames=["trace.*"])["Messages"][0]
        self.assertEqual(list(m["MessageAttributes"]), ["trace.id"])

    def test_bad_messages_get_the_aws_errors_and_nothing_is_stored(self):
        url = self.queue("q-bad-msg", MaximumMessageSize=1024)
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="x" * 1025), "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="a\x01b"), "InvalidMessageContents")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="m", DelaySeconds=901),
                         "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url, MessageBody="m", MessageAttributes={
            "AWS.x": {"DataType": "String", "StringValue": "v"}}), "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.receive_message, QueueUrl=url, MaxNumberOfMessages=11), "InvalidParameterValue")
        self.assertEqual(code_of(self.sqs.send_message, QueueUrl=url.replace("q-bad-msg", "q-none"), MessageBody="m"),
                         "AWS.SimpleQueueService.NonExistentQueue")
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        self.assertEqual(attrs["Attributes"]["ApproximateNumberOfMessages"], "0")

    def test_a_batch_fails_entry_by_entry_and_whole_batches_get_the_batch_errors(self):
        url = self.queue("q-batch")
        r = self.sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": "ok1", "MessageBody": "1"}, {"Id": "bad", "MessageBody": "a\x01"},
            {"Id": "ok2", "MessageBody": "2", "DelaySeconds": 1}])
        self.assertEqual(sorted(e["Id"] for e in r["Successful"]), ["ok1", "ok2"])
        self.assertEqual([(e["Id"], e["Code"], e["SenderFault"]) for e in r["Failed"]],
                         [("bad", "InvalidMessageContents", True)])
        self.assertEqual(code_of(self.sqs.send_message_batch, QueueUrl=url, Entries=[]),
                         "AWS.SimpleQueueService.EmptyBatchRequest")
        self.assertEqual(code_of(self.sqs.send_message_batch, QueueUrl=url,
                                 Entries=[{"Id": str(i), "MessageBody": "m"} for i in range(11)]),
                         "AWS.SimpleQueueService.TooManyEntriesInBatchRequest")
        self.assertEqual(code_of(self.sqs.send_message_batch, QueueUrl=url,
                                 Entries=[{"Id": "a", "MessageBody": "m"}, {"Id": "a", "MessageBody": "m"}]),
                         "AWS.SimpleQueueService.BatchEntryIdsNotDistinct")
        self.assertEqual(code_of(self.sqs.send_message_batch, QueueUrl=url, Entries=[{"Id": "a b", "MessageBody": "m"}]),
                         "AWS.SimpleQueueService.InvalidBatchEntryId")
        got = []
        deadline = time.time() + 30
        while len(got) < 2 and time.time() < deadline:
            got += self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2).get("Messages", [])
        self.assertEqual(sorted(m["Body"] for m in got), ["1", "2"])
        d = self.sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": "x", "ReceiptHandle": got[0]["ReceiptHandle"]}, {"Id": "y", "ReceiptHandle": "not-a-receipt"}])
        self.assertEqual([e["Id"] for e in d["Successful"]], ["x"])
        self.assertEqual([(e["Id"], e["Code"]) for e in d["Failed"]], [("y", "ReceiptHandleIsInvalid")])

    def test_a_deleted_message_is_never_received_again(self):
        url = self.queue("q-ack", VisibilityTimeout=1)
        self.sqs.send_message(QueueUrl=url, MessageBody="m")
        m = self.sqs.receive_message(QueueUrl=url)["Messages"][0]
        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        self.assertNotIn("Messages", self.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2))
        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])  # stale: succeeds, deletes nothing
        self.assertEqual(code_of(self.sqs.delete_message, QueueUrl=url, ReceiptHandle="garbage"),
                         "ReceiptHandleIsInvalid")

    def test_visibility_changes_hide_a_message_longer_or_release_it_at_once(self):
        url = self.queue("q-vis", VisibilityTimeout=1)
        self.sqs.send_message(QueueUrl=url, MessageBody="m")
        m = self.sqs.receive_message(QueueUrl=url)["Messages"][0]
        self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=60)
        time.sleep(1.5)
        self.assertNotIn("Messages", self.sqs.receive_message(QueueUrl=url))
        self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
        again = self.sqs.receive_message(QueueUrl=url, AttributeNames=["ApproximateReceiveCount"])["Messages"][0]
        self.assertEqual(again["MessageId"], m["MessageId"])
        r = self.sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
            {"Id": "live", "ReceiptHandle": again["ReceiptHandle"], "VisibilityTimeout": 30},
            {"Id": "stale", "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 30}])
        self.assertEqual([e["Id"] for e in r["Successful"]], ["live"])
        self.assertEqual([(e["Id"], e["Code"]) for e in r["Failed"]],
                         [("stale", "MessageNotInflight")])

    def test_a_long_poll_is_woken_by_a_send_from_another_client(self):
        url = self.queue("q-long-poll")
        other = s.client(self.server.url)
        result = {}

        def poll():
            result["messages"] = self.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20).get("Messages", [])
            result["returned"] = time.monotonic()

        t = threading.Thread(target=poll)
        t.start()
        self.assertTrue(s.wait_for_waiting_long_polls(self.server.url, 1), "the long poll never waited")
        sent = time.monotonic()
        other.send_message(QueueUrl=url, MessageBody="wake")
        t.join(30)
        self.assertEqual([m["Body"] for m in result["messages"]], ["wake"])
        # Woken by the send, not by the server's 5 s fallback poll (nor the 20 s timeout).
        self.assertLess(result["returned"] - sent, 4.5)

    def test_a_cpp_producer_is_read_by_a_python_consumer(self):
        url = self.queue("q-from-cpp")
        wire = json.dumps({"id": "", "mediationType": "SQS", "mediationTarget": "q-from-cpp", "body": "from C++",
                           "messageAttributes": {"k": {"dataType": "String", "stringValue": "v"}}})
        subprocess.run([s.spool_cli(), "--db", self.uri, "mq", "publish", "--queue", "q-from-cpp"], input=wire,
                       text=True, check=True, capture_output=True, timeout=60)
        m = self.sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"][0]
        self.assertEqual(m["Body"], "from C++")
        self.assertEqual(m["MessageAttributes"], {"k": {"DataType": "String", "StringValue": "v"}})

    def test_unknown_actions_and_malformed_requests_get_the_aws_errors(self):
        def raw(body, headers):
            req = urllib.request.Request(self.server.url + "/", data=body.encode(), headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        form = {"Content-Type": "application/x-www-form-urlencoded"}
        status, text = raw("Action=Nope&Version=2012-11-05", form)
        self.assertEqual(status, 400)
        self.assertIn("<Code>InvalidAction</Code>", text)
        status, text = raw("{not json", {"Content-Type": "application/x-amz-json-1.0",
                                         "X-Amz-Target": "AmazonSQS.ListQueues"})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(text)["__type"], "com.amazonaws.sqs#SerializationException")
        status, _ = raw("Action=ListQueues&" + "x" * (3 << 20), form)
        self.assertEqual(status, 413)
        # A header of 64 KiB is refused before any action runs, and the server serves on.
        status, _ = raw("Action=ListQueues", {**form, "X-Huge": "h" * (64 << 10)})
        self.assertEqual(status, 400)
        self.assertEqual(self.sqs.list_queues()["ResponseMetadata"]["HTTPStatusCode"], 200)


class Shutdown(unittest.TestCase):
    def test_sigterm_ends_a_waiting_long_poll_empty_and_exits_cleanly(self):
        d = s.temp_dir()
        try:
            server = s.Server(s.fresh_database(d.name), "--no-auth")
            sqs = s.client(server.url, read_timeout=60)
            url = sqs.create_queue(QueueName="q-stop")["QueueUrl"]
            got = {}

            def poll():
                try:
                    got["r"] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)
                except Exception as e:  # recorded, so the assertion below names it
                    got["e"] = e

            t = threading.Thread(target=poll)
            t.start()
            self.assertTrue(s.wait_for_waiting_long_polls(server.url, 1), "the long poll never showed as waiting")
            self.assertEqual(server.stop(), 0)
            t.join(timeout=30)
            self.assertFalse(t.is_alive())
            self.assertNotIn("e", got)
            self.assertEqual(got["r"].get("Messages", []), [])
        finally:
            d.cleanup()


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", ResourceWarning)
    unittest.main(verbosity=2)
