// The SQS wire protocols (serve/sqs/protocol.hpp). The query forms below are
// what botocore 1.29's query serializer wrote for the same calls.
#include "serve/sqs/protocol.hpp"

#include <gtest/gtest.h>

namespace spool::serve::sqs {
namespace {

using nlohmann::json;

std::string code_of(const std::function<void()>& f) {
  try {
    f();
    return "ok";
  } catch (const error& e) {
    return e.code();
  }
}

TEST(sqs_protocol, a_json_request_is_chosen_by_its_target_and_keeps_its_body) {
  const auto r = decode("application/x-amz-json-1.0", "AmazonSQS.SendMessage",
                        R"({"QueueUrl":"http://h/000000000000/q","MessageBody":"hi","DelaySeconds":3})");
  EXPECT_EQ(r.wire, protocol::json);
  EXPECT_EQ(r.action, "SendMessage");
  EXPECT_EQ(r.params["MessageBody"], "hi");
  EXPECT_EQ(r.params["DelaySeconds"], 3);
}

TEST(sqs_protocol, a_query_batch_decodes_into_the_json_shape_with_entries_in_index_order) {
  const auto r =
      decode("application/x-www-form-urlencoded; charset=utf-8", "",
             "Action=SendMessageBatch&Version=2012-11-05&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq&"
             "SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x+y&"
             "SendMessageBatchRequestEntry.1.DelaySeconds=5&SendMessageBatchRequestEntry.1.MessageAttribute."
             "1.Name=k&"
             "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String&"
             "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=v&"
             "SendMessageBatchRequestEntry.1.MessageAttribute.2.Name=b&"
             "SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.DataType=Binary&"
             "SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.BinaryValue=AAE%3D&"
             "SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=2");
  EXPECT_EQ(r.wire, protocol::query);
  EXPECT_EQ(r.action, "SendMessageBatch");
  const json expected = {{"QueueUrl", "http://h/000000000000/q"},
                         {"Entries",
                          {{{"Id", "a"},
                            {"MessageBody", "x y"},
                            {"DelaySeconds", 5},
                            {"MessageAttributes",
                             {{"k", {{"DataType", "String"}, {"StringValue", "v"}}},
                              {"b", {{"DataType", "Binary"}, {"BinaryValue", "AAE="}}}}}},
                           {{"Id", "b"}, {"MessageBody", "2"}}}}};
  EXPECT_EQ(r.params, expected) << r.params.dump(2);
}

TEST(sqs_protocol, query_maps_and_lists_decode_as_the_json_protocol_names_them) {
  const auto create =
      decode("application/x-www-form-urlencoded", "",
             "Action=CreateQueue&Version=2012-11-05&QueueName=q.fifo&Attribute.1.Name=FifoQueue&"
             "Attribute.1.Value=true&Attribute.2.Name=VisibilityTimeout&Attribute.2.Value=30&"
             "Tag.1.Key=team&Tag.1.Value=a");
  EXPECT_EQ(create.params, (json{{"QueueName", "q.fifo"},
                                 {"Attributes", {{"FifoQueue", "true"}, {"VisibilityTimeout", "30"}}},
                                 {"tags", {{"team", "a"}}}}));
  const auto receive = decode("", "",
                              "Action=ReceiveMessage&Version=2012-11-05&QueueUrl=u&AttributeName.1=All&"
                              "MessageAttributeName.1=All&MaxNumberOfMessages=10&WaitTimeSeconds=20");
  EXPECT_EQ(receive.params, (json{{"QueueUrl", "u"},
                                  {"AttributeNames", {"All"}},
                                  {"MessageAttributeNames", {"All"}},
                                  {"MaxNumberOfMessages", 10},
                                  {"WaitTimeSeconds", 20}}));
  const auto untag = decode("", "", "Action=UntagQueue&QueueUrl=u&TagKey.2=b&TagKey.1=a");
  EXPECT_EQ(untag.params["TagKeys"], (json{"a", "b"}));  // by index, not by position
}

TEST(sqs_protocol, bad_requests_get_the_aws_error_codes) {
  EXPECT_EQ(code_of([] { (void)decode("application/x-amz-json-1.0", "AmazonSQS.Nope", "{}"); }),
            "InvalidAction");
  EXPECT_EQ(code_of([] { (void)decode("application/x-amz-json-1.0", "Other.SendMessage", "{}"); }),
            "InvalidAction");
  EXPECT_EQ(code_of([] { (void)decode("application/x-amz-json-1.0", "AmazonSQS.SendMessage", "{\"a\":"); }),
            "SerializationException");
  EXPECT_EQ(code_of([] { (void)decode("application/x-amz-json-1.0", "AmazonSQS.SendMessage", "[1]"); }),
            "SerializationException");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Version=2012-11-05"); }), "InvalidAction");
  EXPECT_EQ(code_of([] { (void)decode("text/plain", "", "Action=ListQueues"); }), "InvalidAction");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Action=ListQueues&QueueNamePrefix=%zz"); }),
            "InvalidParameterValue");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Action=UntagQueue&TagKey.0=a"); }), "InvalidParameterValue");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Action=UntagQueue&TagKey.x=a"); }), "InvalidParameterValue");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Action=ReceiveMessage&MaxNumberOfMessages=ten"); }),
            "InvalidParameterValue");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Action=CreateQueue&Attribute.1.Value=1"); }),
            "MissingParameter");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Action=SendMessageBatch&SendMessageBatchRequestEntry.1=x"); }),
            "InvalidParameterValue");
  EXPECT_EQ(code_of([] { (void)decode("", "", "Action=SendMessage&QueueUrl.Deep=x"); }),
            "InvalidParameterValue");
  // Found by fuzz/sqs_decode: every level of a deep name cost a copy of the
  // rest of every path (2 GB for 124 KB). Names of more than 16 parts are refused.
  std::string deep = "Action=SendMessageBatch&";
  for (int i = 0; i < 2000; ++i) deep += "SendMessageBatchRequestEntry.1.";
  deep += "Id=x";
  EXPECT_EQ(code_of([&] { (void)decode("", "", deep); }), "InvalidParameterValue");
}

TEST(sqs_protocol, query_results_are_xml_with_flattened_lists_and_name_value_maps) {
  const json result = {{"Messages",
                        {{{"MessageId", "m1"},
                          {"Body", "a<b & \"c\"\r\n"},
                          {"Attributes", {{"ApproximateReceiveCount", "1"}}},
                          {"MessageAttributes", {{"k", {{"DataType", "String"}, {"StringValue", "v"}}}}}}}}};
  const auto xml = result_to_xml("ReceiveMessage", result, "rid");
  EXPECT_EQ(
      xml.rfind(
          R"(<?xml version="1.0" encoding="UTF-8"?><ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ReceiveMessageResult>)",
          0),
      0U)
      << xml;
  EXPECT_NE(xml.find("</ReceiveMessageResult><ResponseMetadata><RequestId>rid</RequestId></"
                     "ResponseMetadata></ReceiveMessageResponse>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<Message><Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>"
                     "<Body>a&lt;b &amp; &quot;c&quot;&#xD;\n</Body>"),
            std::string::npos)
      << xml;
  EXPECT_NE(
      xml.find(
          "<MessageAttribute><Name>k</Name><Value><DataType>String</DataType><StringValue>v</StringValue>"
          "</Value></MessageAttribute><MessageId>m1</MessageId></Message>"),
      std::string::npos)
      << xml;
  const auto batch =
      result_to_xml("SendMessageBatch", {{"Successful", {{{"Id", "a"}}}}, {"Failed", json::array()}}, "r");
  EXPECT_NE(batch.find("<SendMessageBatchResult><SendMessageBatchResultEntry><Id>a</Id>"
                       "</SendMessageBatchResultEntry></SendMessageBatchResult>"),
            std::string::npos)
      << batch;
  const auto empty = result_to_xml("DeleteMessage", json::object(), "r");
  EXPECT_EQ(empty.find("Result>"), std::string::npos) << empty;
}

TEST(sqs_protocol, errors_carry_the_json_type_and_legacy_code_or_the_xml_error_response) {
  const error e("QueueDoesNotExist", "The specified queue does not exist.");
  const auto j = encode_error(protocol::json, e, "rid");
  EXPECT_EQ(j.status, 400);
  EXPECT_EQ(json::parse(j.body)["__type"], "com.amazonaws.sqs#QueueDoesNotExist");
  bool header = false;
  for (const auto& [k, v] : j.headers)
    header = header || (k == "x-amzn-query-error" && v == "AWS.SimpleQueueService.NonExistentQueue;Sender");
  EXPECT_TRUE(header);
  const auto x = encode_error(protocol::query, e, "rid");
  EXPECT_NE(x.body.find("<ErrorResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><Error>"
                        "<Code>AWS.SimpleQueueService.NonExistentQueue</Code>"),
            std::string::npos)
      << x.body;
  EXPECT_NE(x.body.find("<Type>Sender</Type><Detail/></Error><RequestId>rid</RequestId>"), std::string::npos)
      << x.body;
  const auto unknown = encode_error(protocol::json, error("NoSuchCodeHere", "x"), "r");
  EXPECT_EQ(unknown.status, 500);  // a typo is the server's fault, never the client's
}

}  // namespace
}  // namespace spool::serve::sqs
